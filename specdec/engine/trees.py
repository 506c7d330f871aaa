r"""Token trees: several drafted continuations per round, verified by the target in ONE pass.

A chain draft x_1..x_gamma loses the rest of its round at the first wrong guess. A tree keeps
several guesses where the draft is unsure (SpecInfer, Miao et al. 2024; Sequoia; EAGLE-2), and the
target picks the branch it agrees with. Nodes are numbered in breadth-first order, so a parent
always comes before its children; the root is the last token of the text (drafted from, never
drafted itself), written -1:

            root (the last accepted token, "the")
           /                       \
      0 "cat"                    1 "dog"            depth 1: two guesses for the next token
       /     \                      |
   2 "sat"  3 "ran"              4 "sat"            depth 2
      |
   5 "on"                                           depth 3

    tokens  = [cat, dog, sat, ran, sat, on]
    parents = (-1, -1, 0, 0, 1, 2)

The target reads the root and every node in one forward pass. Each node may only see the text,
the root and its own ancestors, so the pass gets a tree attention mask instead of the causal one,
and each node the position it would have in its own branch (text length + depth - 1):

    node:       root  0  1  2  3  4  5
    attends:    root  r0 r1 r02 r03 r14 r025   (r = the root; the text before it is seen by all)

Children of a node are listed in the order they were drawn: the acceptance rule tests them in
that order (`specdec.engine.tree_verification`).

A `DraftTree` is what every drafter proposes, every round: a chain is the tree of width one, parents
(-1, 0, 1, ...), made with `DraftTree.chain`; the target then reads it causally, without a mask, and
the chain rule of `specdec.engine.verification` decides (the tree walk would decide the same way).
A tree without q (`q=None`) proposes fixed candidates, each a point mass: model-free methods (prompt
lookup, Token Recycling, lookahead, suffix decoding) build theirs with `DraftTree.chain` or
`DraftTree.from_paths`. A proposal may also carry `ExtraRows`, rows of the drafter's own that ride
along in the same target pass (lookahead decoding's Jacobi window).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import torch

from specdec.errors import SpecdecError

ROOT = -1


@dataclass(frozen=True)
class ExtraRows:
    """Rows a drafter adds to the target's verification pass, seen by nothing but themselves.

    Every extra row sees the text before the root; `attend` says what else it sees, over the pass's
    rows in order: the root, the proposal's nodes, then the extra rows (themselves included). Positions
    are offsets from the root's position (the root is 0): a row at offset 3 is read as the third token
    after the root.

    >>> rows = ExtraRows(torch.tensor([7, 8]), torch.tensor([1, 2]), torch.tensor([[1, 1, 0], [1, 1, 1]],
    ...     dtype=torch.bool))
    >>> rows.size                                            # a chain of two after the root, beside an empty proposal
    2
    """

    tokens: torch.Tensor  # [E] long
    offsets: torch.Tensor  # [E] long, positions after the root's
    attend: torch.Tensor  # [E, 1 + N + E] bool: over (root, the N proposed nodes, the E extra rows)

    @property
    def size(self) -> int:
        return int(self.tokens.numel())


@dataclass(frozen=True)
class DraftTree:
    """What a drafter proposes in one round: the drafted tokens, their parents, and the laws they were drawn from.

    >>> tree = DraftTree(torch.tensor([5, 6, 7]), (-1, -1, 0), None)
    >>> tree.children(ROOT), tree.children(0), tree.depths.tolist(), tree.path_to(2), tree.is_chain
    ([0, 1], [2], [1, 1, 2], [0, 2], False)
    >>> DraftTree.chain(torch.tensor([5, 6, 7])).parents, DraftTree.chain(torch.tensor([5, 6, 7])).is_chain
    ((-1, 0, 1), True)
    """

    tokens: torch.Tensor  # [N] long, breadth-first: every parent before its children
    parents: tuple[int, ...]  # [N] the parent of each node; ROOT (-1) for the root's children
    q: torch.Tensor | None  # [R, V] float32, R <= N + 1: row 0 the law the root's children were drawn from,
    # row i + 1 node i's; trailing rows of nodes without children may be left out
    # (a chain of k: [k, V]); None: greedy, or fixed candidates (each a point mass)
    extra: ExtraRows | None = None  # rows of the drafter's own in the same target pass

    @classmethod
    def chain(cls, tokens: torch.Tensor, q: torch.Tensor | None = None, extra: ExtraRows | None = None) -> DraftTree:
        """The chain x_1..x_k: each token the child of the one before; `q` [k, V] the law each was drawn from."""
        return cls(tokens, chain_parents(tokens.numel()), q, extra)

    @classmethod
    def from_paths(
        cls, paths: Sequence[Sequence[int]], budget: int | None = None, extra: ExtraRows | None = None
    ) -> DraftTree:
        """The tree whose root-to-node paths are the prefixes of `paths`, in order of priority (fixed candidates,
        q=None).

        Shared prefixes become one node; children keep the order their first path gave them; nodes come out
        breadth-first, and with a `budget` only the first `budget` nodes of that order are kept.

        >>> tree = DraftTree.from_paths([[5, 6, 7], [5, 8], [9]])
        >>> tree.tokens.tolist(), tree.parents                  # 5 and 9 after the root, 6 and 8 after 5, 7 after 6
        ([5, 9, 6, 8, 7], (-1, -1, 0, 0, 2))
        """
        children: dict[tuple[int, ...], list[int]] = {}  # prefix -> next tokens, in order of priority
        for path in paths:
            for depth in range(len(path)):
                following = children.setdefault(tuple(path[:depth]), [])
                if path[depth] not in following:
                    following.append(int(path[depth]))
        tokens: list[int] = []
        parents: list[int] = []
        frontier: list[tuple[tuple[int, ...], int]] = [((), ROOT)]  # (prefix, its node) of the level being expanded
        while frontier and (budget is None or len(tokens) < budget):
            level: list[tuple[tuple[int, ...], int]] = []
            for prefix, node in frontier:
                for token in children.get(prefix, []):
                    if budget is not None and len(tokens) == budget:
                        break
                    level.append((prefix + (token,), len(tokens)))
                    tokens.append(token)
                    parents.append(node)
            frontier = level
        return cls(torch.tensor(tokens, dtype=torch.long), tuple(parents), None, extra)

    @classmethod
    def empty(cls) -> DraftTree:
        """Nothing drafted: the target adds its one token."""
        return cls(torch.empty(0, dtype=torch.long), (), None)

    @property
    def size(self) -> int:
        return len(self.parents)

    def children(self, node: int) -> list[int]:
        """The children of `node` (ROOT for the root) in the order they were drawn."""
        return self._children.get(node, [])

    @cached_property
    def _children(self) -> dict[int, list[int]]:
        children: dict[int, list[int]] = {}
        for node, parent in enumerate(self.parents):
            children.setdefault(parent, []).append(node)
        return children

    @cached_property
    def depths(self) -> torch.Tensor:
        """[N] long: 1 for the root's children, 2 for theirs, ..."""
        depths: list[int] = []
        for parent in self.parents:
            depths.append(1 if parent == ROOT else depths[parent] + 1)
        return torch.tensor(depths, dtype=torch.long)

    @cached_property
    def is_chain(self) -> bool:
        """True when every node's parent is the node before it (nothing
        drafted included): no mask needed, the chain rule decides."""
        return all(parent == node - 1 for node, parent in enumerate(self.parents))

    @cached_property
    def depth(self) -> int:
        """The longest root-to-node path (0 when nothing is drafted)."""
        return int(self.depths.max()) if self.size else 0

    def path_to(self, node: int) -> list[int]:
        """The nodes from the root's child down to `node`."""
        path = []
        while node != ROOT:
            path.append(node)
            node = self.parents[node]
        return path[::-1]

    def ancestor_mask(self) -> torch.Tensor:
        """[N, N] bool: entry (i, j) is True when node j is node i or one of its ancestors.

        >>> DraftTree(torch.tensor([5, 6, 7]), (-1, -1, 0), None).ancestor_mask().int().tolist()
        [[1, 0, 0], [0, 1, 0], [1, 0, 1]]
        """
        mask = torch.eye(self.size, dtype=torch.bool)
        for node, parent in enumerate(self.parents):
            if parent != ROOT:
                mask[node] |= mask[parent]  # breadth-first: the parent's row is complete already
        return mask


def tree_attention(cached: int, tree: DraftTree) -> tuple[torch.Tensor, torch.Tensor]:
    """The attention mask and positions for the target's pass over [root, node 0, ..., node N-1].

    `cached` tokens of text are in the target's cache already; the root is the first new token.
    Returns `attend` [N + 1, cached + N + 1] bool (True: may attend) and `positions` [N + 1] long.

    >>> attend, positions = tree_attention(2, DraftTree(torch.tensor([5, 6, 7]), (-1, -1, 0), None))
    >>> attend.int().tolist(), positions.tolist()
    ([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 0, 0], [1, 1, 1, 0, 1, 0], [1, 1, 1, 1, 0, 1]], [2, 3, 3, 4])
    """
    n = tree.size + 1
    attend = torch.zeros(n, cached + n, dtype=torch.bool)
    attend[:, : cached + 1] = True  # the text and the root
    attend[1:, cached + 1 :] = tree.ancestor_mask()  # each node: itself and its ancestors
    positions = torch.cat([torch.zeros(1, dtype=torch.long), tree.depths]) + cached
    return attend, positions


def check_token_ids(tokens: torch.Tensor, vocab_size: int, who: str = "the proposal") -> None:
    """Refuse a drafted id outside [0, vocab_size) in one line: -1 would wrap to the last id and could be emitted.

    >>> check_token_ids(torch.tensor([0, 3]), 4)
    >>> check_token_ids(torch.tensor([2, -1]), 4, "my-drafter")
    Traceback (most recent call last):
    ...
    specdec.errors.SpecdecError: my-drafter drafted token id -1, outside the target's vocabulary [0, 4): a drafter
    proposes ids the target's logits cover
    """
    if tokens.numel() and not bool(((tokens >= 0) & (tokens < vocab_size)).all()):
        bad = int(tokens[(tokens < 0) | (tokens >= vocab_size)][0])
        raise SpecdecError(
            f"{who} drafted token id {bad}, outside the target's vocabulary [0, {vocab_size}): a drafter proposes "
            "ids the target's logits cover"
        )


def chain_parents(length: int) -> tuple[int, ...]:
    """The parents of a chain of `length` nodes: each node's parent is the node before it.

    >>> chain_parents(3)
    (-1, 0, 1)
    """
    return tuple(range(-1, length - 1))


def pass_attention(
    cached: int, parents: tuple[int, ...], extra: ExtraRows | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The mask and positions of a verification pass over [root, N nodes with these `parents`, the E `extra` rows].

    The nodes see the text, the root and their ancestors (`tree_attention`); the extra rows see the text
    and what their own `attend` says; no node sees an extra row, so the target's p after every node is
    what it would be without them. Returns `attend` [1 + N + E, cached + 1 + N + E] and `positions` [1 + N + E].

    >>> # sees the root only
    >>> rows = ExtraRows(torch.tensor([9]), torch.tensor([1]), torch.tensor([[True, False, True]]))
    >>> attend, positions = pass_attention(2, (-1,), rows)
    >>> attend.int().tolist(), positions.tolist()
    ([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 0, 1]], [2, 3, 3])
    """
    attend, positions = tree_attention(
        cached, DraftTree(torch.empty(len(parents), dtype=torch.long), tuple(parents), None)
    )
    if extra is None or not extra.size:
        return attend, positions
    n, e = len(parents) + 1, extra.size
    if tuple(extra.attend.shape) != (e, n + e) or tuple(extra.offsets.shape) != (e,):
        raise ValueError(
            f"extra rows need attend of shape [{e}, {n + e}] (root, {n - 1} nodes, {e} rows) and {e} offsets, "
            f"got {tuple(extra.attend.shape)} and {tuple(extra.offsets.shape)}"
        )
    full = torch.zeros(n + e, cached + n + e, dtype=torch.bool)
    full[:n, : cached + n] = attend  # the proposal: as before, blind to the extra rows
    full[n:, :cached] = True  # the extra rows: the text ...
    full[n:, cached:] = extra.attend.cpu()  # ... and what they ask for
    return full, torch.cat([positions, cached + extra.offsets.cpu().long()])
