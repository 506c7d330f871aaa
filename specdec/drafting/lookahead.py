"""Lookahead decoding: Jacobi iterations ride along in the verification pass and fill an n-gram pool (Fu et al. 2024).

Notation: p is the target; W the window, N the n-gram size, G the candidates verified per round.

Jacobi decoding guesses a block of future tokens, lets the target predict every position of the block in
one pass, replaces each guess with the prediction, and repeats: a fixed-point iteration whose trajectories
hold many correct n-grams even while the block as a whole is still wrong. Lookahead decoding keeps the
last N - 1 levels of such a window (W columns, one position each) and, in the same pass that verifies
this round's candidates, asks the target for the next level:

    root at position t; level j, column i holds a guess for position t + i + j:

      level 0:   root  L0[1]  L0[2]  L0[3]  L0[4]          (the oldest guesses; L0[0] is the root itself)
      level 1:   L1[0] L1[1]  L1[2]  L1[3]  L1[4]
      level 2:   L2[0] L2[1]  L2[2]  L2[3]  L2[4]   ──► the target's argmax after each: level 3, the newest

    L_j[i] sees the text, the root, level 0 up to column i, and column i of levels 1..j: the trajectory
    that ends at it (llama.cpp's `lookahead` example draws the mask). Column i of levels 0..N-2 plus the
    new prediction is an n-gram of N consecutive positions: it goes into the pool under its first token.

The pool starts with the prompt's own n-grams (`pool_from_prompt`, as the authors' implementation does by
default: LADE's POOL_FROM_PROMPT). Each round the pool's n-grams that start with the root (at most G, the
newest first) are the candidates:
a tree of fixed tokens, merged where they share a prefix. The window's rows are `ExtraRows` of the
proposal: they see what they need and nothing sees them, so the target's p after each candidate is
unchanged, and their keys and values are dropped after the pass. Then the levels move down one per
emitted token (level j takes level j + 1's tokens, which sit one position further on), the newest level
coming from the pass's predictions and, after the first emitted token, from the level below it.

Why it is exact: the candidates come from earlier passes, so each is a point mass, checked by the tree
rule (`specdec.engine.tree_verification`); the window's rows change no p.

What it costs: the pass reads W - 1 + W (N - 2) window rows on top of the candidates. On a GPU those
are nearly free; on this project's CPU a pass grows with its rows (an int8 1.5B: a pass over 9 rows
costs 1.6 steps), so the defaults are small (W 3, N 3, G 3: 5 window rows and at most 6 candidate nodes;
W 5, N 4, G 5 ran at 0.47x of the target alone against W 3's 0.74x on 4 prompts). The paper's own: W 15, N 5, G 15.

    speculative_generate(target, LookaheadDrafter(), input_ids, temperature=0)

Not handled: the pool is per text (the paper's; suffix decoding keeps text across requests); each text of a batch
has a window and a pool of its own (`Window`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from specdec.engine.contract import Capabilities, DraftRequest, Generation, Verified
from specdec.engine.trees import DraftTree, ExtraRows
from specdec.errors import SpecdecError


@dataclass
class Window:
    """One text's lookahead state: its Jacobi window and its n-gram pool."""

    levels: list[list[int]]  # [N - 1][W]: the Jacobi window, oldest level first
    # first token -> (N - 1)-token continuations, newest last
    pool: dict[int, list[tuple[int, ...]]] = field(default_factory=dict)
    used: bool = False  # this round's pass carries the window's rows


class LookaheadDrafter:
    """Lookahead decoding with a window of `window` columns, `ngram`-grams, and at most `candidates` n-grams a round.

    >>> drafter = LookaheadDrafter(window=3, ngram=3, candidates=2)
    >>> # level 0 (column 0: the root's place), level 1
    >>> rows = drafter.window_rows(Window([[0, 5, 6], [7, 8, 9]]), proposed=0)
    >>> rows.tokens.tolist(), rows.offsets.tolist()               # level 0's columns 1..2, then level 1
    ([5, 6, 7, 8, 9], [1, 2, 1, 2, 3])
    >>> rows.attend.int()[4].tolist()                              # L1[2] sees the root, L0[1], L0[2] and itself
    [1, 1, 1, 0, 0, 1]
    """

    name, draft_model = "lookahead", None

    @staticmethod
    def declared(options: LookaheadOptions) -> Capabilities:
        """What a lookahead drafter with these options declares (its
        instances and the registry's checks read this one place)."""
        return Capabilities(
            sizes_rounds=True,
            full_attention=True,
            drafts=f"lookahead (window {options.window}, {options.ngram}-grams, {options.candidates} candidates)",
        )

    def __init__(self, window: int = 3, ngram: int = 3, candidates: int = 3, pool_from_prompt: bool = True) -> None:
        if window < 2 or ngram < 3 or candidates < 1:
            raise SpecdecError(
                f"lookahead needs a window of at least 2, n-grams of at least 3 and at least 1 candidate, "
                f"got {window}, {ngram} and {candidates}"
            )
        self.window, self.ngram, self.max_candidates = window, ngram, candidates
        self.pool_from_prompt = pool_from_prompt
        self.capabilities = self.declared(LookaheadOptions(window, ngram, candidates))
        self.texts: dict[int, Window] = {}
        self.context: int | None = None  # the target's longest position, when its config says

    def begin(self, generation: Generation) -> None:
        self.context = generation.target.context_length
        self.texts = {row: self.start(prompt.tolist()) for row, prompt in generation.prompts.items()}

    def start(self, prompt: list[int]) -> Window:
        """A text's window and pool: the first guesses are the prompt's
        own tokens (any guess will do: the target replaces them)."""
        state = Window([[prompt[(i + j) % len(prompt)] for i in range(self.window)] for j in range(self.ngram - 1)])
        if self.pool_from_prompt:  # the prompt's own n-grams (LADE's POOL_FROM_PROMPT)
            for start in range(len(prompt) - self.ngram + 1):
                self._remember(state, prompt[start : start + self.ngram])
        return state

    def draft(self, requests: dict[int, DraftRequest]) -> dict[int, DraftTree]:
        return {row: self.candidates(self.texts[row], request) for row, request in requests.items()}

    def candidates(self, state: Window, request: DraftRequest) -> DraftTree:
        """The pool's n-grams after the root (the newest first)
        as a tree, with the window riding along as extra rows."""
        root = int(request.sequence[-1])
        grams = list(reversed(state.pool.get(root, [])))[: self.max_candidates]  # the newest first
        tree = DraftTree.from_paths([gram[: request.limit] for gram in grams])
        # The window's rows reach W + N - 3 positions past the root: leave them out where the model has no such
        # positions.
        reach = request.sequence.numel() - 1 + self.window + self.ngram - 3
        state.used = self.context is None or reach < self.context
        if not state.used:
            return tree
        return DraftTree(tree.tokens, tree.parents, None, self.window_rows(state, tree.size))

    def window_rows(self, state: Window, proposed: int) -> ExtraRows:
        """The Jacobi window as extra rows after `proposed` candidate
        nodes: level 0's columns 1..W-1, then levels 1..N-2."""
        w, levels = self.window, len(state.levels)
        index: dict[tuple[int, int], int] = {}  # (level, column) -> row among the extra rows
        tokens, offsets = [], []
        for j in range(levels):
            for i in range(1 if j == 0 else 0, w):
                index[(j, i)] = len(tokens)
                tokens.append(state.levels[j][i])
                offsets.append(i + j)
        extra = len(tokens)
        attend = torch.zeros(extra, 1 + proposed + extra, dtype=torch.bool)  # over (root, candidates, window rows)
        attend[:, 0] = True  # everyone sees the root
        for (j, i), row in index.items():
            for column in range(1, i + 1):  # level 0 up to column i
                attend[row, 1 + proposed + index[(0, column)]] = True
            for level in range(1, j + 1):  # column i of levels 1..j
                attend[row, 1 + proposed + index[(level, i)]] = True
        return ExtraRows(torch.tensor(tokens, dtype=torch.long), torch.tensor(offsets, dtype=torch.long), attend)

    def observe(self, verified: dict[int, Verified]) -> None:
        for row, seen in verified.items():
            if seen.finished:
                self.texts.pop(row, None)
            else:
                self.advance(self.texts[row], seen)

    def advance(self, state: Window, verified: Verified) -> None:
        """The pass's predictions after the window's newest level:
        new n-grams for the pool, and the window one level on."""
        if not state.used or verified.extra_logits is None:
            return  # the first pass, or a round without the window
        w, top = self.window, len(state.levels) - 1
        last_level = verified.extra_logits[-w:].argmax(dim=-1).tolist()  # [W]: predictions after level N-2's columns
        root = int(verified.rows[0])
        for column in range(w):  # each column's trajectory is an n-gram of consecutive positions
            gram = [root if column == 0 else state.levels[0][column]] + [
                state.levels[j][column] for j in range(1, top + 1)
            ]
            self._remember(state, gram + [last_level[column]])
        emitted = len(verified.path) + 1
        state.levels = state.levels[1:] + [last_level]  # one position on: level j + 1 becomes level j
        for _ in range(emitted - 1):  # every further emitted token: again, the newest from the level below
            state.levels = state.levels[1:] + [list(state.levels[0])]

    def _remember(self, state: Window, gram: list[int]) -> None:
        """Add an n-gram to the pool under its first token, unless
        it is there already; at most `candidates` per token."""
        first, rest = gram[0], tuple(gram[1:])
        grams = state.pool.setdefault(first, [])
        if rest in grams:
            return
        grams.append(rest)
        if len(grams) > self.max_candidates:
            del grams[0]  # the oldest goes


@dataclass(frozen=True)
class LookaheadOptions:
    """Lookahead decoding's Jacobi window."""

    window: int = field(default=3, metadata={"help": "columns of the Jacobi window"})
    ngram: int = field(default=3, metadata={"help": "length of the n-grams it collects"})
    candidates: int = field(default=3, metadata={"help": "n-grams verified per round"})
