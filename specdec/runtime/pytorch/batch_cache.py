"""Several texts in one KV cache: ragged rows that accept, roll back and finish on their own.

In a batch every row keeps its own accepted length. One round, row 0 accepts 4 drafted tokens and
row 1 none; row 2 hit its end-of-sequence token and is done. A cache with one length for the whole
batch cannot hold that, and the classic bug of batched speculative decoding is to pretend it can:
advance (or roll back) every row by the same count, so some row keeps keys and values of tokens it
rejected, or loses tokens it accepted, and from then on its target reads a text that is not its own
(`specdec.bugs.batches` keeps that bug, to show what it does to the output).

The design here: one `DynamicCache` of width W for B rows, and beside it a mask `valid` [B, W] saying
which columns hold a token of each row's text. Nothing is ever shifted during a pass:

    columns:   0   1   2   3   4   5   6   7
    row 0:     .   .   a   b   c   d   e   f      six tokens; the prompt was left-padded
    row 1:     g   h   i   j   x   x   k   l      two rejected drafts (x) dropped by masking, not by moving
    valid:     per row, True where the text is

- A pass feeds each row its own new tokens (m_b of them, 0 to M), left-padded to M columns so the
  last token of every row sits in the pass's last column (one `logits_to_keep` serves all rows).
  The pass gets a 4-D attention mask [B, 1, M, W + M] (a row's queries see its valid columns and,
  among the new ones, what its own causal or tree mask says) and position ids [B, M]: row b's i-th
  new token sits at position length_b + offset_i, its own count of tokens, whatever the padding.
- Rolling a row back or keeping a tree's path only clears columns of `valid` (`rollback`, `keep`).
- `compact` then gathers each row's valid columns, right-aligned, into a narrower cache, and drops the
  rows that are done: the next pass reads no dead columns. Keys were computed at the right positions
  (rotary embeddings are applied before caching), so moving a column changes nothing it holds.

A row's keys and values are the ones it would have alone, and so are its logits, up to the last bits of
floating-point sums (a batched matrix product may add in another order than a single row's); the
tests hold every row's greedy output to its own run alone.

Sliding-window layers drop old tokens by their own count and read a mask of their own, so batches
refuse those models up front (`check_batchable`); one text at a time they run as before
(`specdec.runtime.pytorch.kv_cache`). The loop and the draft model speak to one kind of cache whatever the
number of texts (`rows_cache`): a `BatchCache` for several, a `OneRow` (a `CachedModel` seen as a batch
of one: no padding, no mask for a causal pass, sliding windows allowed) for one.

    cache = BatchCache(model, rows=2)
    logits, _ = cache.feed([torch.tensor([5, 6, 7]), torch.tensor([8])], last=1)   # [2, 1, V]
    cache.rollback(0, 2)          # row 0 forgets token 7
    cache.compact()               # the cache is as wide as its longest row
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from transformers import DynamicCache, PreTrainedModel

from specdec.runtime.pytorch.kv_cache import has_sliding_window, restricted_head
from specdec.runtime.pytorch.one_row import OneRow
from specdec.errors import SpecdecError

PAD_ID = 0  # the token fed in padding columns; nothing ever attends to them but themselves


def check_batchable(model: PreTrainedModel, role: str = "model") -> None:
    """Refuse a model whose cache cannot hold ragged rows (sliding-window layers)."""
    if has_sliding_window(model):
        raise SpecdecError(
            f"the {role} has sliding-window layers, which batches do not handle: give one prompt at a time"
        )


class BatchCache:
    """A transformers causal LM plus one `DynamicCache` holding B ragged rows, and the count of passes made."""

    def __init__(
        self,
        model: PreTrainedModel,
        rows: int | Sequence[int],
        output_rows: int | None = None,
        on_pass: Callable[[], None] | None = None,
    ) -> None:
        check_batchable(model)
        self.on_pass = on_pass  # told of every pass (`specdec.runtime.pytorch.torch_model` counts them)
        self.model = model
        self.cache = DynamicCache(config=model.config)
        self.rows = list(range(rows)) if isinstance(rows, int) else list(rows)  # the caller's row ids, in cache order
        self._at = {row: i for i, row in enumerate(self.rows)}  # row id -> its place in the cache
        self.lengths = [0] * len(self.rows)  # tokens of text each row holds
        self.valid = torch.zeros(len(self.rows), 0, dtype=torch.bool)  # [B, W]: which columns hold a row's text
        self.ids = torch.zeros(len(self.rows), 0, dtype=torch.long)  # [B, W]: the token in each column (for checks)
        self.passes = 0
        self.head = None
        if output_rows is not None:  # a draft computing only the first rows of its output layer
            self.head, _ = restricted_head(model, output_rows)

    @property
    def width(self) -> int:
        return int(self.valid.shape[1])

    def length(self, row: int) -> int:
        """Tokens of text the cache holds for `row` (a caller's row id)."""
        return self.lengths[self._at[row]]

    def feed(
        self,
        tokens: Sequence[torch.Tensor | None],
        last: int = 1,
        attend: Sequence[torch.Tensor | None] | None = None,
        offsets: Sequence[torch.Tensor | None] | None = None,
        hidden: bool = False,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """One forward pass: `tokens[i]` [m_i] (or None: nothing) appended to the i-th row in cache order.

        By default a row's new tokens attend causally; `attend[i]` [m_i, length_i + m_i] bool says what they see
        among the row's cached tokens and the new ones instead (a tree, extra rows) and `offsets[i]` [m_i] their
        positions after the row's length (`specdec.engine.model`). Returns the logits of every row's `last` new tokens,
        [B, last, V] (row i's own tokens are its last min(last, m_i)), and, when `hidden`, the hidden states per layer
        [B, M, H] (row i's last m_i).
        """
        if len(tokens) != len(self.rows):
            raise ValueError(f"feed takes one entry per row in the cache ({len(self.rows)}), got {len(tokens)}")
        counts = [0 if t is None else int(t.numel()) for t in tokens]
        if max(counts) == 0:
            raise ValueError("feed needs at least one token in some row")
        ids, positions, mask = self._pass_inputs(tokens, counts, attend, offsets)
        logits, output = self._forward(ids, positions, mask, last, hidden)
        self._append(ids, counts)
        self.passes += 1
        if self.on_pass is not None:
            self.on_pass()
        return logits, (tuple(output.hidden_states) if hidden else None)

    def _pass_inputs(
        self,
        tokens: Sequence[torch.Tensor | None],
        counts: list[int],
        attend: Sequence[torch.Tensor | None] | None,
        offsets: Sequence[torch.Tensor | None] | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The pass's token ids [B, M], left-padded, its position ids [B, M] and its attention mask [B, 1, M, W + M]."""
        m, b, w = max(counts), len(self.rows), self.width
        ids = torch.full((b, m), PAD_ID, dtype=torch.long)  # [B, M], left-padded
        positions = torch.zeros(b, m, dtype=torch.long)  # [B, M]
        mask = torch.zeros(b, 1, m, w + m, dtype=torch.bool)  # [B, 1, M, W + M]
        for i, (row_tokens, count) in enumerate(zip(tokens, counts)):
            start = m - count  # the row's first new column
            mask[i, 0, :, w:] = torch.eye(m, dtype=torch.bool)  # padding sees itself only
            if count == 0:
                continue
            ids[i, start:] = row_tokens.cpu()
            shift = offsets[i] if offsets is not None and offsets[i] is not None else torch.arange(count)
            if attend is None or attend[i] is None:
                mask[i, 0, start:, :w] = self.valid[i]  # the row's text ...
                # ... and causally its new tokens
                mask[i, 0, start:, w + start :] = torch.ones(count, count, dtype=torch.bool).tril()
            else:
                own = attend[i].cpu()  # [m_i, length_i + m_i]
                # the cached tokens it sees ...
                mask[i, 0, start:, self.valid[i].nonzero().flatten()] = own[:, : self.lengths[i]]
                mask[i, 0, start:, w + start :] = own[:, self.lengths[i] :]  # ... and the new ones
            positions[i, start:] = self.lengths[i] + shift.cpu().long()
        return ids, positions, mask

    def _forward(
        self, ids: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor, last: int, hidden: bool
    ) -> tuple[torch.Tensor, object]:
        """The model's pass over the cache: the logits of every row's `last` new tokens, and the model's output."""
        device, m = self.model.device, ids.shape[1]
        inputs = {
            "input_ids": ids.to(device),
            "cache": self.cache,
            "use_cache": True,
            "attention_mask": mask.to(device),
            "position_ids": positions.to(device),
        }
        if hidden:
            inputs["output_hidden_states"] = True
        last = min(max(last, 1), m)
        with torch.inference_mode():
            if self.head is None:
                output = self.model(**inputs, logits_to_keep=last)
                logits = output.logits[:, -last:]  # [B, last, V]
            else:
                output = self.model.base_model(**inputs)
                logits = self.head(output.last_hidden_state[:, -last:])  # [B, last, K]
        return logits, output

    def _append(self, ids: torch.Tensor, counts: list[int]) -> None:
        """The pass's M new columns join the cache: each row's own new tokens valid, its length grown by their count."""
        b, m = ids.shape
        new = torch.zeros(b, m, dtype=torch.bool)
        for i, count in enumerate(counts):
            new[i, m - count :] = True
            self.lengths[i] += count
        self.valid = torch.cat([self.valid, new], dim=1)
        self.ids = torch.cat([self.ids, ids], dim=1)

    def text(self, row: int) -> list[int]:
        """The tokens `row` holds, in order: what a fresh pass over its text would have cached."""
        i = self._at[row]
        return self.ids[i, self.valid[i]].tolist()

    def rollback(self, row: int, length: int) -> None:
        """Forget every cached token of `row` (a caller's row id) after its first `length`."""
        i = self._at[row]
        if not 0 <= length <= self.lengths[i]:
            raise ValueError(f"cannot roll row {row} back from {self.lengths[i]} tokens to {length}")
        self.keep(row, list(range(length)))

    def keep(self, row: int, tokens: list[int]) -> None:
        """Keep only the tokens of `row` at these indices of its
        text (increasing): a rollback, or a tree's accepted path."""
        i = self._at[row]
        if tokens and (
            any(b <= a for a, b in zip(tokens, tokens[1:])) or tokens[0] < 0 or tokens[-1] >= self.lengths[i]
        ):
            raise ValueError(f"tokens to keep must increase within 0..{self.lengths[i] - 1}, got {tokens}")
        columns = self.valid[i].nonzero().flatten()  # [length_i]: where the row's text is
        self.valid[i] = False
        self.valid[i, columns[tokens]] = True
        self.lengths[i] = len(tokens)

    def compact(self, rows: Sequence[int] | None = None) -> None:
        """Keep only `rows` (callers' ids, in this order; default:
        all), each row's text right-aligned, no dead columns."""
        rows = list(self.rows if rows is None else rows)
        order = [self._at[row] for row in rows]
        width = max((self.lengths[i] for i in order), default=0)
        if order == list(range(len(self.rows))) and width == self.width:
            return  # nothing to drop
        index = torch.zeros(len(order), width, dtype=torch.long)  # [B', W'] source column per new column
        ids = torch.zeros(len(order), width, dtype=torch.long)
        valid = torch.zeros(len(order), width, dtype=torch.bool)
        for j, i in enumerate(order):
            columns = self.valid[i].nonzero().flatten()
            index[j, width - columns.numel() :] = columns
            valid[j, width - columns.numel() :] = True
            ids[j, width - columns.numel() :] = self.ids[i, columns]
        device = self.model.device
        source_rows, index = torch.tensor(order, dtype=torch.long, device=device), index.to(device)
        with torch.inference_mode():
            self._gather_layers(source_rows, index)
        self.rows, self._at = rows, {row: i for i, row in enumerate(rows)}
        self.lengths = [self.lengths[i] for i in order]
        self.valid, self.ids = valid, ids

    def _gather_layers(self, source_rows: torch.Tensor, index: torch.Tensor) -> None:
        for layer in self.cache.layers:
            if getattr(layer, "is_initialized", True) and layer.keys is not None and layer.keys.numel():
                layer.keys = _gather(layer.keys, source_rows, index)  # [B', heads, W', head_dim]
                layer.values = _gather(layer.values, source_rows, index)


def _gather(states: torch.Tensor, rows: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """states [B, heads, W, dim] -> [B', heads, W', dim]: the given rows, and in row j the columns index[j]."""
    heads, dim = states.shape[1], states.shape[-1]
    return states.index_select(0, rows).gather(2, index[:, None, :, None].expand(-1, heads, -1, dim))


def rows_cache(
    model: PreTrainedModel,
    rows: Sequence[int],
    output_rows: int | None = None,
    on_pass: Callable[[], None] | None = None,
) -> BatchCache | OneRow:
    """The cache for texts `rows` (ids, in order): a `OneRow` for one text, a `BatchCache` for several."""
    rows = list(rows)
    return (
        OneRow(model, rows[0], output_rows, on_pass)
        if len(rows) == 1
        else BatchCache(model, rows, output_rows, on_pass)
    )
