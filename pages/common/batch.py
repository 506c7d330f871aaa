"""A Playground batch: several prompts at once, speculative and plain, each row's text and rounds.

    # both runs, in a job
    jobs.start(BATCH_RUN, batch_work(pair_loader(settings), prompts, chat, settings, turns), "a batch")
    st.session_state[BATCH]                           # a `BatchRun`, kept by the page when the job ends

The engine does the work (`specdec.engine.loop`, through `specdec.pair.running`); this module keeps what the
page shows: every row's trace (`pages.common.trace`), whether each row's greedy tokens equal the target
alone's, and the two throughputs (`specdec.generation.run.batch_throughput`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pages.common.jobs import Job
from pages.common.settings import Settings
from pages.common.trace import TraceBuilder, trace
from pages.common.turns import Turns
from specdec.pair import running
from specdec.engine.results import GenerationResult
from specdec.generation.run import batch_throughput
from specdec.pair.resources import LoadedPair

BATCH = "playground_batch"
BATCH_RUN = "job:playground_batch"
MAX_ROWS = 8


@dataclass(frozen=True)
class BatchRun:
    """Both runs of one batch, with the settings they ran with."""

    settings: Settings
    prompts: tuple[str, ...]
    speculative: tuple[GenerationResult, ...]
    plain: tuple[GenerationResult, ...]
    traces: tuple[TraceBuilder, ...]  # per row: coloured spans and round rows of the speculative run
    plain_texts: tuple[str, ...]

    @property
    def speculative_throughput(self) -> float:
        return batch_throughput(self.speculative)

    @property
    def plain_throughput(self) -> float:
        return batch_throughput(self.plain)

    @property
    def gain(self) -> float:
        """Speculative over plain throughput of the same batch."""
        return self.speculative_throughput / self.plain_throughput

    @property
    def same_tokens(self) -> tuple[bool, ...]:
        """Per row: the speculative tokens equal the target alone's (the greedy check; meaningful when greedy)."""
        return tuple(s.tokens == p.tokens for s, p in zip(self.speculative, self.plain))


def prompt_lines(text: str) -> list[str]:
    """The batch's prompts: the non-empty lines of `text`.

    >>> prompt_lines("def add(a, b):\\n\\n  Translate: bonjour  \\n")
    ['def add(a, b):', 'Translate: bonjour']
    """
    return [line.strip() for line in text.splitlines() if line.strip()]


def batch_work(
    load: Callable[[Job], LoadedPair], prompts: list[str], chat: bool, settings: Settings, turns: Turns
) -> Callable[[Job], BatchRun]:
    """The job of one batch: its turn, the pair, speculative
    then plain decoding of every row at once (each reported)."""

    def work(job: Job) -> BatchRun:
        with turns.turn(
            on_wait=lambda ahead, running: job.report(waiting=(ahead, running)), label="a run in another tab"
        ):
            job.report(waiting=None)
            pair = load(job)
            decode = lambda ids: pair.tokenizer.decode(ids, skip_special_tokens=False)  # noqa: E731
            rows = [running.encode_prompt(pair.tokenizer, prompt, chat=chat).reshape(-1) for prompt in prompts]
            job.report(phase="speculative", status=f"Speculative decoding of {len(rows)} prompts at once …")
            speculative = running.generate_batch(pair, rows, settings.spec, on_round=lambda row, round_: job.report())
            job.report(
                phase="plain",
                status=f"Plain decoding of the same {len(rows)} prompts at once …",
                done=f"Speculative decoding: {sum(r.stats.new_tokens for r in speculative)} tokens in "
                f"{speculative[0].stats.wall_time_s:.2f} s",
            )
            plain = running.generate_plain_batch(pair, rows, settings.decoding)
            return BatchRun(
                settings,
                tuple(prompts),
                tuple(speculative),
                tuple(plain),
                tuple(trace(result, decode) for result in speculative),
                tuple(decode(result.tokens) for result in plain),
            )

    return work
