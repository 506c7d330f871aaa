"""Every target pass cut into passes of sizes this machine proved exact: the rows of a cut pass are one-token steps'.

Notation: p is the target; k* the longest pass whose rows equal one-token steps bit for bit on this machine
(`specdec.kernels.batch_invariance` finds it at load); v(k) the cost of a pass over k tokens in one-token steps.

A kernel may multiply 12 rows in another order than 1 (oneDNN's bfloat16 switches at 12 rows on one CPU, its
one-row path is another kernel on another): the rows of a long verification pass then differ in the last bits
from the steps plain decoding takes, and greedy speculative output can part from the target's own. llama.cpp
splits every pass into ubatches of rows it proved exact; `CutRows` does the same for a torch model: a pass of
m tokens is fed as passes of the `sizes` the self-test checked (largest first, the rest in one checked size),
each seeing what the whole pass would have seen. The prompt pass (into an empty text) is not cut: plain and
speculative decoding make the same one, so it is the same bits either way.

    rows = CutRows(model.rows([0]), sizes=(2, 3, 4, 5, 6, 7, 8))    # k* = 8 here
    rows.feed([prompt])                                 # one pass: the prompt
    rows.feed([drafts], last=11)                        # 11 tokens: passes of 8 and 3, logits [1, 11, V]

>>> pieces(11, (2, 3, 4, 5, 6, 7, 8))
[8, 3]
>>> pieces(9, (2, 3, 4, 5, 6, 7, 8))
[8, 1]
>>> pieces(5, (2, 3, 4, 5, 6, 7, 8))
[5]
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def pieces(count: int, sizes: Sequence[int]) -> list[int]:
    """How a pass of `count` tokens is cut: the largest checked size while it fits, then the rest (1 is always a
    one-token step, and every size in `sizes` was checked)."""
    checked = sorted({1, *sizes})
    out: list[int] = []
    while count > 0:
        size = max(s for s in checked if s <= count)
        out.append(size)
        count -= size
    return out


class CutRows:
    """A model's rows (`specdec.engine.model.Rows`) whose passes are cut into the checked `sizes` (module docstring).

    With several texts each piece holds a column range of every text: the sizes count tokens per text, as the
    self-test checked them on one text (the batch tests hold each text's output to its own run alone).
    """

    def __init__(self, inner, sizes: Sequence[int]) -> None:
        self.inner = inner
        self.sizes = tuple(sizes)
        self.rows = inner.rows

    @property
    def passes(self) -> int:
        return self.inner.passes

    def length(self, row: int) -> int:
        return self.inner.length(row)

    def rollback(self, row: int, length: int) -> None:
        self.inner.rollback(row, length)

    def keep(self, row: int, tokens: list[int]) -> None:
        self.inner.keep(row, tokens)

    def compact(self, rows: Sequence[int] | None = None) -> None:
        self.inner.compact(rows)
        self.rows = self.inner.rows

    def feed(
        self,
        tokens: Sequence[torch.Tensor | None],
        last: int = 1,
        attend: Sequence[torch.Tensor | None] | None = None,
        offsets: Sequence[torch.Tensor | None] | None = None,
        hidden: bool = False,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """`Rows.feed`, as passes of checked sizes; the logits [B, last, V] and hidden states per layer [B, M, H] are
        the whole pass's, right-aligned per row as one pass gives them."""
        counts = [0 if t is None else int(t.numel()) for t in tokens]
        width = max(counts, default=0)
        lengths = [self.inner.length(row) for row in self.rows]
        cut = pieces(width, self.sizes)
        prompt = any(count and length == 0 for count, length in zip(counts, lengths))
        if len(cut) == 1 or prompt:
            return self.inner.feed(tokens, last=last, attend=attend, offsets=offsets, hidden=hidden)
        last = min(max(last, 1), width)
        logits, states, start = [], [], 0
        for size in cut:
            end = start + size  # columns [start, end) of the pass, whose last column is `width`
            part = [
                self._part(i, t, counts[i], width, start, end, lengths[i], attend, offsets)
                for i, t in enumerate(tokens)
            ]
            wanted = end - max(start, width - last)  # of this piece's columns, how many are among the last
            out, layers = self.inner.feed(
                [p[0] for p in part],
                last=max(wanted, 1),
                attend=None if attend is None else [p[1] for p in part],
                offsets=None if offsets is None else [p[2] for p in part],
                hidden=hidden,
            )
            if wanted > 0:
                logits.append(out[:, -wanted:])
            if hidden:
                states.append(layers)
            start = end
        joined = None if not hidden else tuple(torch.cat(layer, dim=1) for layer in zip(*states))
        return torch.cat(logits, dim=1), joined

    @staticmethod
    def _part(i, row_tokens, count, width, start, end, length, attend, offsets):
        """Row i's share of columns [start, end): its tokens there, what they attend to, their offsets after the
        length the row will have then."""
        first = width - count  # the row's first column
        a, b = max(start, first) - first, end - first  # token indices of the row in this piece
        if count == 0 or b <= 0:
            return None, None, None
        own = None if attend is None or attend[i] is None else attend[i][a:b, : length + b]
        shift = None
        if offsets is not None and offsets[i] is not None:
            shift = offsets[i][a:b] - a  # positions are counted from the row's length then: `length + a`
        elif own is not None:
            shift = torch.arange(b - a)
        return row_tokens[a:b], own, shift
