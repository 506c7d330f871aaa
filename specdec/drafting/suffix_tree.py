"""A suffix trie with counts, for drafting by matching the text's end against everything seen before.

Every substring of at most `max_depth` tokens of the documents added is a node, with the number of times
it occurs. Reading a document token by token keeps the nodes of the suffixes that end at the newest
token (at most `max_depth` of them) and moves each one child further, so adding n tokens costs
n * max_depth steps (SuffixDecoding's trees are depth-limited in the same way, Oliaro et al. 2024):

    after "a b a b c" (max_depth 3):   a:2 ── b:2 ─┬─ a:1            the counts say what followed:
                                                   └─ c:1            after "a b", "a" once and "c" once
                                       b:2 ─┬─ a:1 ── b:1
                                            └─ c:1
                                       c:1

`continuations(node)` is the speculation: the most likely ways on from a matched node, each with its
chance estimated from the counts (a child's count over the counts of all the node's children), grown
best first.

    index = SuffixTree(max_depth=24)
    index.add([5, 6, 7, 5, 6])                 # a whole document
    document = index.start(); index.extend(document, [8])   # or one growing document, token by token

Nothing here knows models or the accept/reject rule (`specdec.drafting.suffix` drafts with it).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


@dataclass(eq=False)
class Node:
    """A substring: how often it occurs, and the nodes one token longer."""

    count: int = 0
    children: dict[int, Node] = field(default_factory=dict)


@dataclass(frozen=True)
class Speculation:
    """A tree of continuations: tokens with their parents (-1:
    the matched node) and each one's chance of being reached."""

    tokens: tuple[int, ...]
    parents: tuple[int, ...]
    chances: tuple[float, ...]

    @property
    def score(self) -> float:
        """The expected number of its tokens that come true: the sum of the chances."""
        return sum(self.chances)


class SuffixTree:
    """The substrings of up to `max_depth` tokens of every document added, with their counts.

    >>> index = SuffixTree(max_depth=3)
    >>> index.add([1, 2, 1, 2, 3])
    >>> node = index.find([1, 2])
    >>> node.count, sorted((token, child.count) for token, child in node.children.items())
    (2, [(1, 1), (3, 1)])
    """

    def __init__(self, max_depth: int = 24) -> None:
        if max_depth < 2:
            raise ValueError(f"a suffix tree needs a depth of at least 2 (a match and one token), got {max_depth}")
        self.max_depth = max_depth
        self.root = Node()
        self.tokens = 0  # tokens read, over all documents

    def start(self) -> list[Node]:
        """A new document: the suffixes that end at its newest token (none yet)."""
        return []

    def extend(self, active: list[Node], tokens: Iterable[int]) -> list[Node]:
        """Read `tokens` at the end of a document whose suffix nodes are `active`; returns the new ones."""
        for token in tokens:
            token = int(token)
            grown = []
            for node in [self.root] + active:  # every suffix, the empty one included, grows by this token
                child = node.children.get(token)
                if child is None:
                    child = node.children[token] = Node()
                child.count += 1
                grown.append(child)
            active = grown[: self.max_depth - 1]  # the longest suffix reaches max_depth: it grows no further
            self.tokens += 1
        return active

    def add(self, tokens: Sequence[int]) -> None:
        """Add a whole document."""
        self.extend(self.start(), tokens)

    def find(self, tokens: Sequence[int]) -> Node | None:
        """The node of `tokens`, or None when they never occurred (or are longer than `max_depth`)."""
        node = self.root
        for token in tokens:
            node = node.children.get(int(token))
            if node is None:
                return None
        return node

    def matches(self, context: Sequence[int]) -> list[tuple[int, Node]]:
        """(length, node) for each suffix of `context` that occurred and was followed by something, shortest first."""
        found = []
        for length in range(1, min(len(context), self.max_depth - 1) + 1):
            node = self.find(context[len(context) - length :])
            if node is None:
                break  # a longer suffix contains this one: it never occurred either
            if node.children:
                found.append((length, node))
        return found

    def continuations(self, node: Node, depth: int, budget: int, min_chance: float) -> Speculation:
        """The `budget` likeliest continuations of at most `depth` tokens after `node`, grown best first.

        A child's chance is its parent's times its count over the parent's children's counts; a child
        whose own share is below `min_chance` is never proposed.

        >>> index = SuffixTree(4)
        >>> index.add([1, 2, 3, 1, 2, 3, 1, 2, 4])
        >>> # "3" twice, "4" once
        >>> speculation = index.continuations(index.find([1, 2]), depth=2, budget=3, min_chance=0.2)
        >>> speculation.tokens, speculation.parents, [round(c, 2) for c in speculation.chances]
        ((3, 1, 4), (-1, 0, -1), [0.67, 0.67, 0.33])
        """
        tokens: list[int] = []
        parents: list[int] = []
        chances: list[float] = []
        heap: list[tuple[float, int, int, int, Node, int]] = []  # (-chance, order, parent, depth, node, token)
        order = 0

        def offer(parent_node: Node, parent: int, parent_chance: float, level: int) -> None:
            nonlocal order
            total = sum(child.count for child in parent_node.children.values())
            for token, child in parent_node.children.items():
                share = child.count / total
                if share >= min_chance:
                    heapq.heappush(heap, (-parent_chance * share, order, parent, level, child, token))
                    order += 1

        offer(node, -1, 1.0, 1)
        while heap and len(tokens) < budget:
            negative, _, parent, level, child, token = heapq.heappop(heap)
            tokens.append(token)
            parents.append(parent)
            chances.append(-negative)
            if level < depth:
                offer(child, len(tokens) - 1, -negative, level + 1)
        return Speculation(tuple(tokens), tuple(parents), tuple(chances))
