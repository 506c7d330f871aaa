"""One text's cache behind the batch cache's interface: a `CachedModel` seen as a batch of one row.

The loop and the draft model speak to one kind of cache whatever the number of texts
(`specdec.runtime.pytorch.batch_cache.rows_cache`). For one text it is a `OneRow`: no padding, no mask for a causal
pass (the fastest path, and sliding-window models work), a tree's mask over the whole cached text, and
nothing to compact (`specdec.runtime.pytorch.kv_cache.CachedModel` does the work).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from transformers import PreTrainedModel

from specdec.runtime.pytorch.kv_cache import CachedModel


class OneRow:
    """One text's `CachedModel` behind `BatchCache`'s interface: a batch of one row, id `row`, read without padding.

    A causal pass needs no mask here (the fastest path, and sliding-window models work); a tree or extra rows
    get their mask over the whole cached text. Logits come back as [1, last, V], hidden states per layer [1, M, H].
    """

    def __init__(
        self,
        model: PreTrainedModel,
        row: int = 0,
        output_rows: int | None = None,
        on_pass: Callable[[], None] | None = None,
    ) -> None:
        self.lm = CachedModel(model, output_rows)
        self.model = model
        self.rows = [row]
        self.on_pass = on_pass

    @property
    def passes(self) -> int:
        return self.lm.passes

    def length(self, row: int) -> int:
        return self.lm.length

    def feed(
        self,
        tokens: Sequence[torch.Tensor | None],
        last: int = 1,
        attend: Sequence[torch.Tensor | None] | None = None,
        offsets: Sequence[torch.Tensor | None] | None = None,
        hidden: bool = False,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """`BatchCache.feed` for the one row: `tokens[0]` [m] appended to the text."""
        new = tokens[0]
        own = attend[0] if attend is not None else None
        if own is None:
            logits, states = self.lm.feed_with_hidden(new, last=last, hidden=hidden)
        else:
            shift = offsets[0] if offsets is not None and offsets[0] is not None else torch.arange(new.numel())
            logits, states = self.lm.feed_with_hidden(
                new, last=last, attend=own.cpu(), positions=self.lm.length + shift.cpu(), hidden=hidden
            )
        if self.on_pass is not None:
            self.on_pass()
        return logits[None], (None if states is None else tuple(layer[None] for layer in states))

    def rollback(self, row: int, length: int) -> None:
        self.lm.rollback(length)

    def keep(self, row: int, tokens: list[int]) -> None:
        self.lm.keep(tokens)

    def compact(self, rows: Sequence[int] | None = None) -> None:
        """Nothing to gather: one text has no dead columns, and when it is done the cache is simply dropped."""
        if rows is not None:
            self.rows = [row for row in self.rows if row in rows]
