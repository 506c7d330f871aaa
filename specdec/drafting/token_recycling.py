"""Token Recycling: draft from the target's own runner-up tokens (Luo et al. 2024, "Turning trash into treasure").

Notation: p is the target, q the draft; a round proposes a tree of fixed candidates (point masses).

Every target pass computes a distribution over the whole vocabulary at every row it reads, and decoding
keeps one token of it. The rest is not trash: the target's top-k after a token are good guesses for what
follows that token the next time it appears. Token Recycling keeps them in an adjacency table,

    table[x] = the k tokens the target ranked highest the last time it read x      [V, k], -1: never read

updated after every pass (the prompt pass's last rows, and every row of every verification pass, the
rejected branches included: those are the "trash" it recycles). A round drafts a tree by breadth-first
expansion of a fixed template from the root (the text's last token): the template's node (i_1, ..., i_d)
is the i_d-th candidate after its parent's token,

    root "the" ─┬─ table["the"][0] = "cat" ─┬─ table["cat"][0] = "sat" ── table["sat"][0] = "on"
                │                           └─ table["cat"][1] = "ran"
                └─ table["the"][1] = "dog" ──── table["dog"][0] = "sat"

and the target checks the whole tree in one pass (`specdec.engine.trees`). No model, no training, a table of
V x k 64-bit ids: 9.7 MB for Qwen2.5's 151,936 tokens and k = 8.

Why it is exact: the candidates are fixed before the pass (they depend on earlier passes only), so each is
a point mass and the tree rule (`specdec.engine.tree_verification`) keeps it with probability r(x), else takes it
out of what is left of p. Greedy output is the target's argmax at every step whatever the table says.

The template is the paper's ("2.2.2": 80 nodes, 8 candidates at the first level, 6 levels). A verification
pass over 81 tokens is nearly free on a GPU but not on this project's CPU, so `budget` keeps the template's
nodes most likely to be accepted, by a prior chance of 0.7 * 0.3^i for the i-th candidate, multiplied
along the path (a parent always scores above its children, so the kept nodes form a tree). The table
lives as long as the drafter, across texts, as in the paper; `reset()` empties it. The texts of a batch
share it (as a serving engine's requests would): every row's passes write it, every row drafts from it.

    drafter = TokenRecyclingDrafter()            # k = 8 candidates per token, the CPU-sized template
    speculative_generate(target, drafter, input_ids, temperature=0)

Not handled: a dynamic tree shape (the template is fixed; EAGLE-2 grows its tree where the draft is sure).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from collections.abc import Sequence

import torch

from specdec.engine.contract import Capabilities, DraftRequest, Generation, Verified
from specdec.engine.trees import ROOT, DraftTree
from specdec.errors import SpecdecError

# The paper's template "2.2.2" (its repository's model/recycling/tree_template_.py): each node is the path
# of candidate indices from the root, [0, 1] = "the 1st candidate after the 0th candidate after the root".
PAPER_TREE: tuple[tuple[int, ...], ...] = tuple(
    tuple(path)
    for path in (
        [0],
        [1],
        [2],
        [3],
        [4],
        [5],
        [6],
        [7],
        [0, 0],
        [0, 1],
        [0, 2],
        [0, 3],
        [0, 4],
        [0, 5],
        [0, 6],
        [0, 7],
        [1, 0],
        [1, 1],
        [1, 2],
        [1, 3],
        [2, 0],
        [2, 1],
        [2, 2],
        [3, 0],
        [3, 1],
        [4, 0],
        [5, 0],
        [6, 0],
        [7, 0],
        [0, 0, 0],
        [0, 0, 1],
        [0, 0, 2],
        [0, 0, 3],
        [0, 0, 4],
        [0, 0, 5],
        [0, 0, 6],
        [0, 0, 7],
        [0, 1, 0],
        [0, 1, 1],
        [0, 1, 2],
        [0, 2, 0],
        [0, 2, 1],
        [0, 3, 0],
        [0, 4, 0],
        [0, 5, 0],
        [0, 6, 0],
        [0, 7, 0],
        [1, 0, 0],
        [1, 0, 1],
        [1, 1, 0],
        [2, 0, 0],
        [3, 0, 0],
        [4, 0, 0],
        [5, 0, 0],
        [0, 0, 0, 0],
        [0, 0, 0, 1],
        [0, 0, 0, 2],
        [0, 0, 0, 3],
        [0, 0, 0, 4],
        [0, 0, 1, 0],
        [0, 0, 1, 1],
        [0, 0, 2, 0],
        [0, 0, 3, 0],
        [0, 0, 4, 0],
        [0, 1, 0, 0],
        [0, 2, 0, 0],
        [1, 0, 0, 0],
        [2, 0, 0, 0],
        [3, 0, 0, 0],
        [0, 0, 0, 0, 0],
        [0, 0, 0, 0, 1],
        [0, 0, 0, 0, 2],
        [0, 0, 0, 1, 0],
        [0, 0, 0, 2, 0],
        [0, 0, 1, 0, 0],
        [0, 1, 0, 0, 0],
        [1, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 1],
        [0, 0, 0, 1, 0, 0],
    )
)
DEFAULT_BUDGET = 8  # nodes of the template kept by default on a CPU (see the module docstring)
PROMPT_ROWS = 32  # the prompt pass's last rows whose top-k seed the table
PRIOR_TOP, PRIOR_DECAY = 0.7, 0.3  # the prior chance that the i-th candidate is right: PRIOR_TOP * PRIOR_DECAY ** i


def template(tree: Sequence[Sequence[int]] = PAPER_TREE, budget: int | None = None) -> tuple[tuple[int, ...], ...]:
    """The template's nodes to draft, breadth-first; with a `budget`, the `budget` nodes of highest prior chance.

    >>> template(budget=4)                                  # the top candidates' chain beats a runner-up
    ((0,), (0, 0), (0, 0, 0), (0, 0, 0, 0))
    >>> template(budget=8)          # the CPU default, breadth-first; (0, 1) and (1, 0) tie, and both fit
    ((0,), (1,), (0, 0), (0, 1), (1, 0), (0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0, 0))
    >>> template(budget=7)          # a tie is broken by the paper's listing order: (0, 1) comes first
    ((0,), (1,), (0, 0), (0, 1), (0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0, 0))
    """
    listed = [tuple(path) for path in tree]
    if any(path[:-1] and path[:-1] not in set(listed) for path in listed):
        raise SpecdecError("a recycling tree template must list every node's parent too (e.g. [0] before [0, 1])")
    kept = listed
    if budget is not None:
        if budget < 1:
            raise SpecdecError(f"the recycling tree's budget must be at least 1 node, got {budget}")
        kept = sorted(listed, key=lambda path: (-_prior(path), len(path)))[:budget]
    return tuple(sorted(kept, key=lambda path: (len(path), listed.index(path))))


def _prior(path: tuple[int, ...]) -> float:
    """The prior chance that every candidate on `path` is right: 0.7 * 0.3^i for the i-th candidate, multiplied."""
    chance = 1.0
    for index in path:
        chance *= PRIOR_TOP * PRIOR_DECAY**index
    return chance


class TokenRecyclingDrafter:
    """Drafts a tree from an adjacency table of the target's top-k candidates after each token (see the module
    docstring).

    >>> drafter = TokenRecyclingDrafter(candidates=2, tree=[[0], [1], [0, 0]])
    >>> drafter.table = torch.full((10, 2), -1); drafter.table[4] = torch.tensor([5,
    ...     6]); drafter.table[5] = torch.tensor([7, 8])
    >>> tree = drafter.draft({0: DraftRequest(torch.tensor([3, 4]), 8, None, None)})[0]
    >>> tree.tokens.tolist(), tree.parents                  # after 4: 5 or 6; after 5: 7
    ([5, 6, 7], (-1, -1, 0))
    """

    name, draft_model = "recycling", None

    @staticmethod
    def declared(options: RecyclingOptions, prompt_rows: int = PROMPT_ROWS, nodes: int | None = None) -> Capabilities:
        """What a Token Recycling drafter declares (its instances and the registry's checks read this one place): a tree
        of at most `nodes` (the template's, else the budget), the last `prompt_rows` rows of the prompt pass read."""
        return Capabilities(
            sizes_rounds=True,
            prompt_rows=max(prompt_rows, 1),
            full_attention=True,
            drafts=f"recycled tree (up to {options.budget if nodes is None else nodes} nodes)",
        )

    def __init__(
        self,
        candidates: int = 8,
        tree: Sequence[Sequence[int]] = PAPER_TREE,
        budget: int | None = DEFAULT_BUDGET,
        prompt_rows: int = PROMPT_ROWS,
    ) -> None:
        if candidates < 1:
            raise SpecdecError(f"Token Recycling keeps at least 1 candidate per token, got {candidates}")
        self.template = template(tree, budget)
        if any(index >= candidates for path in self.template for index in path):
            raise SpecdecError(
                f"the tree template asks for candidate {max(max(path) for path in self.template)} but the table "
                f"keeps {candidates} per token: raise candidates or trim the template"
            )
        self.k = candidates
        self.capabilities = self.declared(
            RecyclingOptions(candidates, budget or len(self.template)), prompt_rows, len(self.template)
        )
        self.table: torch.Tensor | None = None  # [V, k] long on the CPU, -1 where nothing is known yet

    def reset(self) -> None:
        """Forget every candidate (the table is otherwise kept across texts)."""
        self.table = None

    def begin(self, generation: Generation) -> None:
        if self.table is None or self.table.shape[0] != generation.vocab_size:
            self.table = torch.full((generation.vocab_size, self.k), -1, dtype=torch.long)

    def draft(self, requests: dict[int, DraftRequest]) -> dict[int, DraftTree]:
        return {row: self.recycle(request) for row, request in requests.items()}

    def recycle(self, request: DraftRequest) -> DraftTree:
        """Breadth-first over the template from the root: each node the table's candidate after its parent's token."""
        rows: dict[int, list[int]] = {}  # token -> its candidates, read from the table once
        placed = {(): (ROOT, int(request.sequence[-1]))}  # template path -> (node, token); the root first
        tokens: list[int] = []
        parents: list[int] = []
        for path in self.template:
            if len(path) > request.limit:
                break  # breadth-first: every later path is as deep or deeper
            parent = placed.get(path[:-1])
            if parent is None:
                continue  # its parent had no candidate
            parent_node, parent_token = parent
            if parent_token not in rows:
                rows[parent_token] = self.table[parent_token].tolist()
            candidate = rows[parent_token][path[-1]]
            if candidate < 0:
                continue  # the target never read this token: nothing to recycle
            placed[path] = (len(tokens), candidate)
            tokens.append(candidate)
            parents.append(parent_node)
        return DraftTree(torch.tensor(tokens, dtype=torch.long), tuple(parents), None)

    def observe(self, verified: dict[int, Verified]) -> None:
        for seen in verified.values():
            self.remember(seen)

    def remember(self, verified: Verified) -> None:
        """table[token of each row] = the target's top-k after it;
        rows on the accepted path are written last, so they win."""
        logits = verified.logits  # [K + N, V]: the last K text rows, then the nodes
        text = logits.shape[0] - verified.proposal.size  # K (the root the last of them)
        # the tokens they follow
        rows = verified.rows[verified.text_rows - text : verified.text_rows + verified.proposal.size].cpu()
        top = logits.topk(min(self.k, logits.shape[-1]), dim=-1).indices.cpu()  # [K + N, k]
        if top.shape[-1] < self.k:
            top = torch.nn.functional.pad(top, (0, self.k - top.shape[-1]), value=-1)
        # the text and the accepted nodes, written last
        kept = list(range(text)) + [text + node for node in verified.path]
        order = [row for row in range(rows.numel()) if row not in set(kept)] + kept
        latest: dict[int, int] = {}
        for row in order:
            latest[int(rows[row])] = row  # one write per token: the last one
        tokens = torch.tensor(list(latest), dtype=torch.long)
        self.table[tokens] = top[torch.tensor(list(latest.values()), dtype=torch.long)]


@dataclass(frozen=True)
class RecyclingOptions:
    """Token Recycling's table and tree."""

    candidates: int = field(default=8, metadata={"help": "candidates kept per token in the adjacency table"})
    budget: int = field(default=DEFAULT_BUDGET, metadata={"help": "at most this many nodes of the tree template"})
