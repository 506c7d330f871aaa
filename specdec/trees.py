"""Token trees: several drafted continuations per round, verified by the target in ONE pass.

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
that order (`specdec.tree_verification`). A chain is the tree with parents (-1, 0, 1, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch

ROOT = -1


@dataclass(frozen=True)
class DraftTree:
    """The drafted tokens of one round, their parents, and the draft distributions they were drawn from.

    >>> tree = DraftTree(torch.tensor([5, 6, 7]), (-1, -1, 0), None)
    >>> tree.children(ROOT), tree.children(0), tree.depths.tolist(), tree.path_to(2)
    ([0, 1], [2], [1, 1, 2], [0, 2])
    """

    tokens: torch.Tensor          # [N] long, breadth-first: every parent before its children
    parents: tuple[int, ...]      # [N] the parent of each node; ROOT (-1) for the root's children
    q: torch.Tensor | None        # [N + 1, V] float32: row 0 the draft's q at the root, row i + 1 at node i
                                  # (rows of nodes without children are unused); None when greedy

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

    @property
    def is_chain(self) -> bool:
        """True when every node's parent is the node before it: a causal pass verifies it, no mask needed."""
        return all(parent == node - 1 for node, parent in enumerate(self.parents))

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
                mask[node] |= mask[parent]     # breadth-first: the parent's row is complete already
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
    attend[:, :cached + 1] = True                                         # the text and the root
    attend[1:, cached + 1:] = tree.ancestor_mask()                        # each node: itself and its ancestors
    positions = torch.cat([torch.zeros(1, dtype=torch.long), tree.depths]) + cached
    return attend, positions
