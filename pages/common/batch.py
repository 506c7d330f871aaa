"""A Playground batch: several prompts at once, speculative and plain, each row's text and rounds.

    run_batch(pair, [input_ids, ...], settings)        # both runs, with a status box each
    st.session_state[BATCH]                           # a `BatchRun`

The engine does the work (`specdec.engine.loop`, through `specdec.pairing`); this module keeps what the
page shows: every row's trace (`pages.common.trace`), whether each row's greedy tokens equal the target
alone's, and the two throughputs (`specdec.generation.run.batch_throughput`).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st
import torch

from pages.common.settings import Settings
from pages.common.trace import TraceBuilder, trace
from specdec import pairing
from specdec.engine.results import GenerationResult
from specdec.generation.run import batch_throughput
from specdec.pairing import LoadedPair

BATCH = "playground_batch"
MAX_ROWS = 8


@dataclass(frozen=True)
class BatchRun:
    """Both runs of one batch, with the settings they ran with."""

    settings: Settings
    prompts: tuple[str, ...]
    speculative: tuple[GenerationResult, ...]
    plain: tuple[GenerationResult, ...]
    traces: tuple[TraceBuilder, ...]              # per row: coloured spans and round rows of the speculative run
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


def run_batch(pair: LoadedPair, prompts: list[str], encoded: list[torch.Tensor], settings: Settings) -> BatchRun:
    """Speculative then plain decoding of the whole batch, each in a status box; the result is also kept in the session."""
    decode = lambda ids: pair.tokenizer.decode(ids, skip_special_tokens=False)   # noqa: E731
    rows = [ids.reshape(-1) for ids in encoded]
    with st.status(f"Speculative decoding of {len(rows)} prompts at once …", expanded=False) as status:
        speculative = pairing.generate_speculative_batch(pair, rows, settings.decoding, gamma=settings.schedule)
        status.update(label=f"Speculative decoding: {sum(r.stats.new_tokens for r in speculative)} tokens in "
                            f"{speculative[0].stats.wall_time_s:.2f} s", state="complete")
    with st.status(f"Plain decoding of the same {len(rows)} prompts at once …", expanded=False) as status:
        plain = pairing.generate_plain_batch(pair, rows, settings.decoding)
        status.update(label=f"Plain decoding: {sum(r.stats.new_tokens for r in plain)} tokens in {plain[0].stats.wall_time_s:.2f} s",
                      state="complete")
    run = BatchRun(settings, tuple(prompts), tuple(speculative), tuple(plain), tuple(trace(result, decode) for result in speculative),
                   tuple(decode(result.tokens) for result in plain))
    st.session_state[BATCH] = run
    return run
