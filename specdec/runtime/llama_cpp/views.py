"""Token trees in llama.cpp's KV cache: one temporary sequence id per new token, its "view" of the cache.

llama.cpp decides what a query token sees by sequence ids, not by a mask the caller passes. Every cell of
the KV cache holds one token and a set of sequence ids; a query token sees a cell when the cell's set holds
the query's own sequence id and the cell's position is not after the query's (the causal rule). So a token
tree is drawn with sequence ids, one per new token k, its view V_k:

    text t0 t1 t2 in the row's sequence S; a tree: a (position 3), its children b and c (position 4)

    cell    position   sequence ids            seen by
    t0..t2  0..2       S, V_a, V_b, V_c        everyone (copied into each view: llama_memory_seq_cp)
    a       3          V_a, V_b, V_c           a, b, c   (a is fed with these three ids)
    b       4          V_b                     b
    c       4          V_c                     c

Cells of the text join each view with `llama_memory_seq_cp` over position ranges before the pass; a new
token is fed with its own view and the views of every new token that sees it. After the pass the row keeps
one path (`keep`): the path's cells join S, every view is dropped.

A surprise of this llama.cpp generation: a batch token's sequence ids pass through a `std::unordered_set`
(`llama_batch_ext::token::seq_ids`), so which of them comes "first", the one its query reads, is not the
caller's to choose. The pattern works anyway when it is tree-consistent: if k sees j, the cells V_k holds at
positions up to j's are exactly what j sees, so under the causal rule every view j belongs to shows j the
same cells. `plan_views` refuses a pattern that is not (ValueError, one line); llama.cpp's own batch checks
(positions consecutive within each sequence, "coupled" sequences agreeing on their cached positions) then hold
by construction. The rule in one sentence: every new token sees exactly one token at each position from 0 to
its own, the new tokens it sees come before it in the pass, and it sees what they see.

    >>> import torch
    >>> attend = torch.tensor([[1, 1, 1, 1, 0, 0],           # a sees the text and itself
    ...                        [1, 1, 1, 1, 1, 0],           # b: the text, a, itself
    ...                        [1, 1, 1, 1, 0, 1]], dtype=torch.bool)   # c: the text, a, itself
    >>> plan = plan_views(committed=3, pending=[], positions=[3, 4, 4], attend=attend)
    >>> plan.committed_seen, plan.seen_by
    ([3, 3, 3], [[1, 2], [], []])
    >>> sees_a_sibling = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]], dtype=torch.bool)
    >>> plan_views(3, [], [3, 4, 4], sees_a_sibling)
    Traceback (most recent call last):
    ...
    ValueError: new token 2 sees 2 tokens at position 4: llama.cpp's cache draws text and tree paths only
    (one token per position)

Not handled: a token that does not see the whole text before its path (a window, a gap), and a new token
that sees one placed after it in the pass; both are refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ViewPlan:
    """How one row's new tokens see the cache: what to copy into each view before the pass, and which ids to feed."""

    committed_seen: list[int]  # per new token k: it sees the row's committed tokens at positions 0 .. n - 1
    pending_seen: list[list[int]]  # per new token k: the row's pending tokens (indices among them) it sees
    seen_by: list[list[int]]  # per new token j: the other new tokens that see it (their views join j's cell)


def is_plain_causal(pending: int, length: int, positions: list[int], attend: torch.Tensor | None) -> bool:
    """Whether a row's pass is a plain continuation: no pending tree tokens, positions length, length + 1, ..., and
    each new token seeing the whole text and the new tokens up to itself (then the row's own sequence serves).

    >>> is_plain_causal(0, 2, [2, 3], None), is_plain_causal(0, 2, [2, 3], torch.ones(2, 4, dtype=torch.bool))
    (True, False)
    """
    if pending or positions != list(range(length, length + len(positions))):
        return False
    if attend is None:
        return True
    m = len(positions)
    causal = torch.cat([torch.ones(m, length, dtype=torch.bool), torch.ones(m, m, dtype=torch.bool).tril()], dim=1)
    return bool(torch.equal(attend.cpu().bool(), causal))


def plan_views(committed: int, pending: list[int], positions: list[int], attend: torch.Tensor) -> ViewPlan:
    """The views of a row's new tokens (module docstring), or a ValueError saying why llama.cpp cannot draw `attend`.

    `committed`: tokens in the row's own sequence (positions 0 .. committed - 1); `pending`: the positions of the
    row's cached tree tokens not yet kept, in cache order; `positions`: the new tokens' positions; `attend`
    [m, committed + len(pending) + m] bool over the cached tokens (committed, then pending) and the new ones.
    """
    m, cached = len(positions), committed + len(pending)
    attend = attend.cpu().bool()
    if tuple(attend.shape) != (m, cached + m):
        raise ValueError(
            f"attend must be [{m}, {cached + m}] for {m} new tokens after {cached} cached, got {tuple(attend.shape)}"
        )
    at: list[dict[int, tuple[str, int]]] = []  # per new token: position -> the token it sees there
    committed_seen, pending_seen, seen_by = [], [], [[] for _ in range(m)]
    for k in range(m):
        seen, tokens, sees = _what_it_sees(k, attend[k], committed, pending, positions)
        for kind, index, _ in sees:
            if kind == "new" and index != k:
                seen_by[index].append(k)
        at.append(tokens)
        committed_seen.append(seen)
        pending_seen.append([index for kind, index, _ in sees if kind == "pending"])
    _check_tree_consistent(at, positions)
    return ViewPlan(committed_seen, pending_seen, seen_by)


def _what_it_sees(
    k: int, row: torch.Tensor, committed: int, pending: list[int], positions: list[int]
) -> tuple[int, dict[int, tuple[str, int]], list[tuple[str, int, int]]]:
    """What new token `k` sees (`row`, its line of `attend`): how much of the text, the token at each position (kind,
    index), and the cached pending and new tokens it sees (kind, index, position); a ValueError when llama.cpp cannot
    draw it."""
    m, cached = len(positions), committed + len(pending)
    if not row[cached + k]:
        raise ValueError(f"new token {k} does not see itself")
    text = row[:committed]
    seen = int(text.sum())
    if not bool(text[:seen].all()):
        raise ValueError(
            f"new token {k} sees part of the text with gaps: llama.cpp's cache draws a whole text prefix only"
        )
    tokens = {position: ("committed", position) for position in range(seen)}
    sees = [("pending", i, pending[i]) for i in range(len(pending)) if row[committed + i]]
    sees += [("new", j, positions[j]) for j in range(m) if row[cached + j]]
    for kind, index, position in sees:
        if position in tokens:
            raise ValueError(
                f"new token {k} sees 2 tokens at position {position}: llama.cpp's cache draws text and "
                "tree paths only (one token per position)"
            )
        tokens[position] = (kind, index)
        if kind == "new" and index > k:
            raise ValueError(
                f"new token {k} sees new token {index}, which comes after it: order the pass's tokens "
                "so that each comes after the ones it sees"
            )
    if sorted(tokens) != list(range(positions[k] + 1)):
        raise ValueError(
            f"new token {k} (position {positions[k]}) does not see one token at every position from 0 "
            "to its own: llama.cpp's cache draws text and tree paths only"
        )
    first_new = min(position for position, (kind, _) in tokens.items() if kind == "new")
    if any(kind != "new" for position, (kind, _) in tokens.items() if position > first_new):
        raise ValueError(
            f"new token {k} sees a cached token placed after a new one: llama.cpp needs the cached "
            "part of a view before its new part"
        )
    return seen, tokens, sees


def _check_tree_consistent(at: list[dict[int, tuple[str, int]]], positions: list[int]) -> None:
    """Refuse a pattern that is not tree-consistent: each new token k must see what the new tokens it sees see."""
    for k in range(len(at)):
        for j in [index for kind, index in at[k].values() if kind == "new" and index != k]:
            if any(at[k][position] != at[j][position] for position in range(positions[j] + 1)):
                raise ValueError(
                    f"new token {k} sees new token {j} but not what {j} sees: llama.cpp's cache draws "
                    "tree-consistent patterns only"
                )
