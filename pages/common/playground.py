"""One Playground run: load the pair, speculative decoding, then the target alone, in a job the page draws as it goes.

    jobs.start(RUN, playground_work(pair_loader(settings), prompt, chat, settings, also_plain, stream, turns), "a run")
    jobs.watch(RUN, draw=draw_run, finished=...)        # the page: the text so far, a bar, the job's Stop
    job.result                                          # a `PlaygroundRun`; after a Stop, job.progress["run"] so far

The engine calls back after every round (`on_round`) and, for plain decoding, every token (`on_token`);
the callbacks grow a `pages.common.trace.TraceBuilder` and, at most `UPDATES_PER_SECOND` times a second,
report the run so far to the job, which is also where the job's Stop ends the generation (the part done
stays). The work waits for its turn first (`pages.common.turns`): one heavy job at a time across tabs.

Streaming costs the runs a little time (decoding each token for display, a few reports a second),
counted in their "other" time; turn it off for the cleanest timings.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import streamlit as st
import torch

from pages.common.jobs import Job
from pages.common.models import draw_loading
from pages.common.settings import Settings
from pages.common.tokens_html import plain_text_html, tokens_html
from pages.common.trace import RoundRow, TokenSpan, TraceBuilder, trace, trace_json
from pages.common.turns import Turns
from specdec.pair import running
from specdec.bench.comparison import GreedyCheck, greedy_check_of_pair
from specdec.engine.results import GenerationResult
from specdec.pair.resources import LoadedPair
from specdec.planner import Plan
from specdec.store import about, seconds_left

RESULT = "playground_run"
RUN = "job:playground"
UPDATES_PER_SECOND = 4


@dataclass(frozen=True)
class PlaygroundRun:
    """What a run produced so far, with the settings it ran with."""

    settings: Settings
    device: str
    precision: str  # how each model ran: "target float32 int8, draft bfloat16 int4"
    target_precision: str  # how the target ran: "float32 int8", "float32 Q4_K_M"
    plan: str  # the planner's header line: what `specdec run` prints for the same settings
    prompt_tokens: int
    phase: str  # "speculative" or "plain" while running (or stopped), then "done"
    spans: tuple[TokenSpan, ...] = ()  # speculative output, rejected drafts included
    rounds: tuple[RoundRow, ...] = ()
    speculative: GenerationResult | None = None  # set once the speculative phase finished
    plain_text: str = ""
    plain: GenerationResult | None = None  # set once the target-alone phase finished
    greedy: GreedyCheck | None = None  # greedy runs with the target alone: are the tokens identical?
    trace_json: str = ""  # the speculative run's full trace, for download


class _Throttle:
    """True at most `per_second` times a second."""

    def __init__(self, per_second: float) -> None:
        self.interval, self.last = 1.0 / per_second, time.monotonic()

    def due(self) -> bool:
        now = time.monotonic()
        if now - self.last < self.interval:
            return False
        self.last = now
        return True


def _decoder(pair: LoadedPair):
    return lambda ids: pair.tokenizer.decode(ids, skip_special_tokens=False)


def _bar(total: int):
    """A report of the tokens generated so far as a progress bar, with the time left at the pace since the first report
    (the prompt pass before it would make the first estimates too long)."""
    first = []

    def bar(done: int) -> tuple[float, str]:
        now = time.monotonic()
        if not first:
            first.append((done, now))
        start_done, start_time = first[0]
        left = about(seconds_left(done - start_done, total - start_done, now - start_time))
        return min(done / total, 1.0), f"{done}/{total} tokens{left}"

    return bar


def _speculative_phase(
    job: Job, pair: LoadedPair, input_ids: torch.Tensor, run: PlaygroundRun, plan: Plan, stream: bool
) -> PlaygroundRun:
    builder, throttle, bar = (
        TraceBuilder(_decoder(pair)),
        _Throttle(UPDATES_PER_SECOND),
        _bar(run.settings.decoding.max_new_tokens),
    )

    def on_round(round_) -> None:
        builder.add_round(round_)
        if throttle.due():
            job.report(
                run=replace(run, spans=tuple(builder.spans), rounds=tuple(builder.rows)),
                bar=bar(sum(span.in_output for span in builder.spans)),
            )

    result = running.generate(pair, input_ids, run.settings.spec, on_round=on_round if stream else None, plan=plan)
    finished = builder if stream else trace(result, _decoder(pair))
    s, d = run.settings, run.settings.decoding
    about = {
        "draft": s.draft,
        "target": s.target,
        "device": run.device,
        "precision": run.precision,
        "plan": result.plan,
        "drafting": result.drafting,
        "temperature": d.temperature,
        "top_k": d.top_k,
        "top_p": d.top_p,
        "seed": d.seed,
        "max_new_tokens": d.max_new_tokens,
        "prompt_tokens": run.prompt_tokens,
    }
    return replace(
        run,
        spans=tuple(finished.spans),
        rounds=tuple(finished.rows),
        speculative=result,
        trace_json=json.dumps(trace_json(result, _decoder(pair), about), indent=1),
    )


def _plain_phase(
    job: Job, pair: LoadedPair, input_ids: torch.Tensor, run: PlaygroundRun, stream: bool
) -> PlaygroundRun:
    builder, throttle, bar, done = (
        TraceBuilder(_decoder(pair)),
        _Throttle(UPDATES_PER_SECOND),
        _bar(run.settings.decoding.max_new_tokens),
        [0],
    )

    def on_token(token: int) -> None:
        builder.add_token(token)
        done[0] += 1
        if throttle.due():
            job.report(run=replace(run, plain_text="".join(span.text for span in builder.spans)), bar=bar(done[0]))

    result = running.generate_plain(pair, input_ids, run.settings.decoding, on_token=on_token if stream else None)
    run = replace(run, plain_text=_decoder(pair)(result.tokens), plain=result)
    if run.settings.decoding.sampling.greedy:
        run = replace(run, greedy=greedy_check_of_pair(pair, input_ids, run.speculative.tokens, result.tokens))
    return run


def playground_work(
    load: Callable[[Job], LoadedPair],
    prompt: str,
    chat: bool,
    settings: Settings,
    also_plain: bool,
    stream: bool,
    turns: Turns,
) -> Callable[[Job], PlaygroundRun]:
    """The job of one run: its turn, the pair, both phases, each reported as it goes; returns the finished run."""

    def work(job: Job) -> PlaygroundRun:
        with turns.turn(
            on_wait=lambda ahead, running: job.report(waiting=(ahead, running)), label="a run in another tab"
        ):
            job.report(waiting=None)
            pair = load(job)
            input_ids = running.encode_prompt(pair.tokenizer, prompt, chat=chat)
            plan = pair.plan(settings.spec)
            described = pair.precisions + (f", draft tokenizer: {pair.tokenizer_note}" if pair.cross_tokenizer else "")
            run = PlaygroundRun(
                settings,
                str(pair.device),
                described,
                pair.precision,
                plan.header(),
                int(input_ids.shape[-1]),
                phase="speculative",
            )
            job.report(
                phase="speculative", run=run, bar=None, status=f"Speculative decoding: {plan.drafting.description} …"
            )
            run = replace(
                _speculative_phase(job, pair, input_ids, run, plan, stream), phase="plain" if also_plain else "done"
            )
            stats = run.speculative.stats
            done = f"Speculative decoding: {stats.new_tokens} tokens in {stats.wall_time_s:.2f} s"
            if also_plain:
                job.report(
                    phase="plain",
                    run=run,
                    bar=None,
                    done=done,
                    status=f"Plain decoding: {settings.target} alone, one pass per token …",
                )
                run = replace(_plain_phase(job, pair, input_ids, run, stream), phase="done")
            return run

    return work


def draw_run(job: Job) -> None:
    """A running job of the Playground: its place in line, its load, its phase with a bar, and the text so far."""
    progress = job.progress
    if progress.get("waiting"):
        ahead, running = progress["waiting"]
        st.info(
            f"Waiting for {running}: {'1 job' if ahead == 1 else f'{ahead} jobs'} ahead of your run. It starts as soon "
            "as "
            "they finish; Stop leaves the line.",
            icon=":material/hourglass_top:",
        )
        return
    draw_loading(job)
    if progress.get("phase") not in ("speculative", "plain"):
        return
    if progress.get("done"):
        st.caption(progress["done"])
    st.markdown(f"**{progress['status']}**")
    bar = progress.get("bar")
    st.progress(bar[0] if bar else 0.0, text=bar[1] if bar else "generating")
    run = progress.get("run")
    if run is not None:
        left, right = st.columns(2)
        left.html(tokens_html(run.spans))
        if run.plain_text:
            right.html(plain_text_html(run.plain_text))
