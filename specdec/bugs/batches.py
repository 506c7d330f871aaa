"""The classic bug of batched speculative decoding, kept to show what it breaks: one count for the whole batch.

Notation: p is the target, q the draft, gamma the drafted tokens per round.

In a batch every row accepts its own number of drafted tokens. A padded cache with a single length
cannot hold that, and the tempting shortcut is to advance every row by the same count: the count of the
row that kept most. A row that rejected early then keeps the keys and values of tokens it rejected, and
its target reads them from then on. The output tokens are still chosen row by row, so the first round is
right and the damage starts in the second: a test must look at the tokens of round 2 and later.

`UniformAdvanceCache` is the engine's `BatchCache` with that shortcut; `generate_with_one_count` runs
the engine's own loop (`specdec.engine.loop`) on it, so the lessons and the tests' negative controls
compute what the bug does to real output. The right bookkeeping is `BatchCache` itself: a length per row.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedModel

from specdec.runtime.pytorch.batch_cache import BatchCache
from specdec.runtime.pytorch.torch_model import TorchModel
from specdec.engine.contract import DraftCosts, Drafter
from specdec.engine.inputs import Decoding
from specdec.engine.loop import speculate
from specdec.engine.results import Round
from specdec.engine.schedule import FixedGamma


class UniformAdvanceCache(BatchCache):
    """THE CLASSIC BUG: after each round every row keeps as many of the pass's tokens as the row that kept most."""

    def feed(self, tokens, last=1, attend=None, offsets=None, hidden=False):
        self._before = list(self.lengths)
        return super().feed(tokens, last, attend, offsets, hidden)

    def keep(self, row: int, tokens: list[int]) -> None:
        self._kept = getattr(self, "_kept", {}) | {row: tokens}

    def compact(self, rows: Sequence[int] | None = None) -> None:
        kept = getattr(self, "_kept", {})
        if kept:
            before = dict(zip(self.rows, self._before))
            advance = max(len(tokens) - before[row] for row, tokens in kept.items())  # one count for every row
            for row in kept:
                i = self.rows.index(row)
                super().keep(row, list(range(min(before[row] + advance, self.lengths[i]))))
            self._kept = {}
        super().compact(rows)


def generate_with_one_count(
    target: PreTrainedModel, drafter: Drafter, prompts: Sequence[torch.Tensor], gamma: int, decoding: Decoding
) -> list[list[Round]]:
    """Each row's rounds when the batch's cache advances every row by one count (the engine's loop, the bug's cache).

    A row's new tokens are its rounds' `emitted` tokens, the prompt pass's first.
    """
    prompts = [prompt.to(target.device) for prompt in prompts]
    rounds: list[list[Round]] = [[] for _ in prompts]
    schedules = [FixedGamma(gamma) for _ in prompts]
    model = TorchModel(target)
    for decided in speculate(
        model,
        UniformAdvanceCache(target, len(prompts)),
        drafter,
        prompts,
        decoding,
        schedules,
        DraftCosts(0.0, 0.0),
        frozenset(),
    ):
        for row, round_ in decided:
            rounds[row].append(round_)
    return rounds
