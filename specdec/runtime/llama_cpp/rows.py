"""Several texts in one llama.cpp context: the `Rows` contract of `specdec.engine.model` on sequence ids.

Each text ("row") owns a sequence id S. Its tokens live in two places:

- committed: in S itself, at positions 0, 1, ..., committed - 1. A plain continuation (new tokens that see
  the whole text and each other causally, at the next positions) goes straight into S;
- pending: tokens of a tree or of any other attention pattern, each in its own temporary view sequence
  (`specdec.runtime.llama_cpp.views`), until `keep` says which of them the text goes on with.

    rows = model.rows([0, 1])
    logits, _ = rows.feed([prompt_a, prompt_b])                              # [2, 1, V]: both texts in one pass
    logits, _ = rows.feed([tree_tokens, None], last=4, attend=[mask, None], offsets=[depths, None])
    rows.keep(0, list(range(10)) + [10, 12])      # the path: its cells join S, every view is dropped
    rows.rollback(1, 4)                           # row 1 forgets its tokens after the fourth
    rows.compact([0])                             # row 1 is done

`keep`, `rollback` and `compact` never free a cell (`specdec.runtime.llama_cpp.context` says why): dropped
tokens wait in a sequence nobody reads until the cache is full, then the live texts are repacked.

Logits come back as float32 [B, last, V], right-aligned: row i's own tokens are its last min(last, m_i)
rows, as `specdec.runtime.pytorch.batch_cache.BatchCache` returns them. `output_rows=K` keeps the first K columns
(llama.cpp computes the whole output layer either way: no saving, only the same shape as torch's).

Not handled: hidden states (`feed(hidden=True)` is refused: llama.cpp's C API gives embeddings of the last
layer only, not per layer); a tree fed while the cache is too full to take it without repacking a text
that still has pending tokens (a `SpecdecError`: load with a larger context).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby

import numpy as np
import torch

from specdec.errors import SpecdecError
from specdec.runtime.llama_cpp.context import GARBAGE, Context, Entry
from specdec.runtime.llama_cpp.settings import BATCH_TOKENS
from specdec.runtime.llama_cpp.views import ViewPlan, is_plain_causal, plan_views


@dataclass
class Pending:
    """A fed token not yet kept: its position and the view sequence that holds its cell."""

    position: int
    view: int


@dataclass(frozen=True)
class RowPass:
    """One row's part of a pass: its new tokens, their positions, their views (None: a plain continuation), outputs."""

    ids: list[int]
    positions: list[int]
    plan: ViewPlan | None
    outputs: list[bool]  # which new tokens' logits are read (the last `last`)


@dataclass
class Text:
    """One row's place in the context: its sequence id, its committed length, its pending tokens."""

    sequence: int
    committed: int = 0
    pending: list[Pending] = field(default_factory=list)

    @property
    def length(self) -> int:
        return self.committed + len(self.pending)


class LlamaCppRows:
    """A KV cache for several texts on one llama.cpp context (module docstring)."""

    def __init__(self, model, context: Context, rows: Sequence[int], output_rows: int | None = None) -> None:
        self.model = model  # kept alive while this cache is: it frees the context with the weights
        self.context = context
        self.rows = list(rows)
        self.passes = 0
        self.output_rows = output_rows
        self._texts = {row: Text(context.acquire()) for row in self.rows}

    def length(self, row: int) -> int:
        return self._texts[row].length

    def feed(
        self,
        tokens: Sequence[torch.Tensor | None],
        last: int = 1,
        attend: Sequence[torch.Tensor | None] | None = None,
        offsets: Sequence[torch.Tensor | None] | None = None,
        hidden: bool = False,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """One pass over every row's new tokens
        (`specdec.engine.model.Rows.feed`): logits [B, last, V], right-aligned."""
        if hidden:
            raise SpecdecError(
                "the llama.cpp runtime has no per-layer hidden states: run methods that read them "
                "(trained heads, layer skipping) with --runtime torch"
            )
        if len(tokens) != len(self.rows):
            raise ValueError(f"feed takes one entry per row in the cache ({len(self.rows)}), got {len(tokens)}")
        ids = [[] if t is None else [int(x) for x in t.reshape(-1).tolist()] for t in tokens]
        counts = [len(row_ids) for row_ids in ids]
        if max(counts) == 0:
            raise ValueError("feed needs at least one token in some row")
        last = min(max(last, 1), max(counts))
        parts = [self._row_pass(i, ids[i], attend, offsets, last) for i in range(len(self.rows))]
        total = sum(counts)
        if total > BATCH_TOKENS and any(part is not None and part.plan is not None for part in parts):
            raise ValueError(f"a pass with a tree takes at most {BATCH_TOKENS} tokens in all, got {total}")
        if total > self.context.free:
            self._make_room(total)
        entries, after, views, prompts = [], [], [], set()
        try:
            for i, part in enumerate(parts):
                if part is not None:
                    text = self._texts[self.rows[i]]
                    if text.length == 0 and part.plan is None:
                        prompts.add(i)  # a text's first pass: its prompt, on the fastest kernels
                    row_entries, commit = self._entries(text, part, views)
                    entries += [(i, entry) for entry in row_entries]
                    after.append(commit)
            logits = self._run(entries, len(self.rows), last, counts, prompts)
        except BaseException:
            for view in views:  # a failed pass leaves no view behind
                self.context.release(view)
            raise
        for commit in after:
            commit()
        self.passes += 1
        self.model.passes += 1  # the model counts every cache's passes (a run reads it)
        return logits, None

    def _row_pass(self, i: int, ids: list[int], attend, offsets, last: int) -> RowPass | None:
        """Row i's part of the pass (None when it is fed nothing); a ValueError for a pattern llama.cpp cannot draw."""
        if not ids:
            return None
        text = self._texts[self.rows[i]]
        shift = offsets[i] if offsets is not None and offsets[i] is not None else torch.arange(len(ids))
        positions = [text.length + int(s) for s in shift.reshape(-1).tolist()]
        own = attend[i] if attend is not None else None
        outputs = [j >= len(ids) - last for j in range(len(ids))]
        if is_plain_causal(len(text.pending), text.length, positions, own):
            return RowPass(ids, positions, None, outputs)
        if own is None:  # causal over everything cached, pending tokens included
            own = torch.cat(
                [
                    torch.ones(len(ids), text.length, dtype=torch.bool),
                    torch.ones(len(ids), len(ids), dtype=torch.bool).tril(),
                ],
                dim=1,
            )
        plan = plan_views(text.committed, [p.position for p in text.pending], positions, own)
        return RowPass(ids, positions, plan, outputs)

    def _entries(self, text: Text, part: RowPass, acquired: list[int]):
        """The row's batch entries, after copying what each view sees into it; and what to record once the pass ran."""
        ids, positions, plan, outputs = part.ids, part.positions, part.plan, part.outputs
        if plan is None:
            entries = [Entry(t, p, (text.sequence,), o) for t, p, o in zip(ids, positions, outputs)]

            def commit() -> None:
                text.committed += len(ids)

            return entries, commit
        views = [self.context.acquire() for _ in ids]
        acquired += views
        for k, view in enumerate(views):
            if plan.committed_seen[k]:
                self.context.copy(text.sequence, view, 0, plan.committed_seen[k])
            for index in plan.pending_seen[k]:
                seen = text.pending[index]
                self.context.copy(seen.view, view, seen.position, seen.position + 1)
        entries = [
            Entry(t, p, (views[k],) + tuple(views[j] for j in plan.seen_by[k]), o)
            for k, (t, p, o) in enumerate(zip(ids, positions, outputs))
        ]

        def commit() -> None:
            text.pending += [Pending(p, view) for p, view in zip(positions, views)]

        return entries, commit

    def _run(
        self, entries: list[tuple[int, Entry]], rows: int, last: int, counts: list[int], prompts: set[int]
    ) -> torch.Tensor:
        """Decode the entries into right-aligned logits [B, last, V]: each row in `prompts` alone (its prompt pass, the
        same bits whatever else the pass holds), the rest together; in passes of `BATCH_TOKENS` (a tree must fit in
        one)."""
        width = self.context.vocab_size if self.output_rows is None else min(self.output_rows, self.context.vocab_size)
        slots = []  # (row, column) of each output
        seen = [0] * rows
        for i, entry in entries:
            if entry.output:
                slots.append((i, last - min(last, counts[i]) + seen[i]))
                seen[i] += 1
        read = []  # a prompt alone, the rest together; long: several decodes
        for prompt, group in groupby(entries, key=lambda item: item[0] if item[0] in prompts else None):
            group = [entry for _, entry in group]
            for start in range(0, len(group), BATCH_TOKENS):
                read += self.context.decode(group[start : start + BATCH_TOKENS], prompt=prompt is not None)
        if width == self.context.vocab_size and slots == [(i, column) for i in range(rows) for column in range(last)]:
            # every slot filled, in order (a plain step, a chain's pass): the rows read are the logits, not copied again
            return torch.from_numpy(np.stack(read) if len(read) > 1 else read[0][None]).view(rows, last, width)
        logits = torch.zeros(rows, last, width, dtype=torch.float32)  # [B, last, V]
        for (i, column), row in zip(slots, read):
            logits[i, column] = torch.from_numpy(row[:width])
        return logits

    def _make_room(self, needed: int) -> None:
        """Repack the cache when a pass would not fit (the texts'
        dropped cells freed); refuse if even that is not enough."""
        if any(text.pending for text in self._texts.values()):
            raise SpecdecError(
                f"the llama.cpp KV cache is full ({self.context.cells} cells) while a tree is pending: "
                "load the model with a larger context"
            )
        self.context.repack([text.sequence for text in self._texts.values()])
        if needed > self.context.free:
            raise SpecdecError(
                f"the llama.cpp KV cache is full ({self.context.cells} cells, {needed} more needed): "
                "load the model with a larger context"
            )

    def keep(self, row: int, tokens: list[int]) -> None:
        """Keep only the cached tokens of `row` at these indices (increasing): a rollback, or a tree's accepted path."""
        text = self._texts[row]
        if tokens and (tokens != sorted(set(tokens)) or tokens[0] < 0 or tokens[-1] >= text.length):
            raise ValueError(f"tokens to keep must increase within 0..{text.length - 1}, got {tokens}")
        prefix = bisect_left(tokens, text.committed)  # the committed tokens kept (built-ins: a round's text is long)
        if tokens[:prefix] != list(range(prefix)):
            raise ValueError(f"kept tokens must sit at positions 0, 1, 2, ...: {tokens} skips part of the text")
        kept = [text.pending[index - text.committed] for index in tokens[prefix:]]
        if [p.position for p in kept] != list(range(prefix, prefix + len(kept))):
            raise ValueError(f"kept tokens must sit at positions 0, 1, 2, ...: {tokens} does not follow one path")
        if prefix < text.committed:
            self.context.drop(text.sequence, prefix, -1)
        kept_views = {pending.view for pending in kept}
        for pending in text.pending:  # a view holds its own cell alone at its position
            target = text.sequence if pending.view in kept_views else GARBAGE
            self.context.copy(pending.view, target, pending.position, pending.position + 1)
        for pending in text.pending:
            self.context.release(pending.view)
        text.committed, text.pending = prefix + len(kept), []

    def rollback(self, row: int, length: int) -> None:
        """Forget every cached token of `row` after its first `length`."""
        if not 0 <= length <= self._texts[row].length:
            raise ValueError(f"cannot roll row {row} back from {self._texts[row].length} tokens to {length}")
        self.keep(row, list(range(length)))

    def compact(self, rows: Sequence[int] | None = None) -> None:
        """Keep only `rows` (the caller's ids, in this order; default: all): the others are done and leave the cache."""
        rows = list(self.rows if rows is None else rows)
        for row in self.rows:
            if row not in rows:
                self.keep(row, [])
                self.context.release(self._texts.pop(row).sequence)
        self.rows = rows
