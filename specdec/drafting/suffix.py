"""Suffix decoding: draft what followed the text's end every other time it was seen (Oliaro et al. 2024).

Notation: p is the target; a round proposes a tree of fixed candidates (point masses).

A suffix tree over the prompt, this run's output and earlier outputs answers "where did the last few
tokens occur before, and what came next?" (`specdec.drafting.suffix_tree`). Prompt lookup asks the same
question of the prompt and takes the most recent answer; SuffixDecoding counts every answer and proposes
a tree of the likeliest ones, as REST (He et al. 2024) retrieves continuations from a datastore:

    1. match: every suffix of the text (up to the tree's depth) that occurred before and was followed by
       something, in two trees: this text's (the prompt and the output so far) and the session's (the
       earlier outputs, and a corpus of your own if you give one)
    2. speculate, for each match of length m: the likeliest continuations, best first, each token's
       chance its parent's times its share of what followed (shares below `min_chance` are never
       proposed), at most `budget` tokens and at most `spec_factor * m` deep: a longer match is surer,
       so it drafts further
    3. keep the speculation whose expected accepted tokens (the sum of its chances) is largest

Why it is exact: the candidates come from text already fixed before the round, so each is a point mass,
checked by the tree rule (`specdec.engine.tree_verification`) or, with `tree=False`, a chain of them.

Outputs join the session's tree when the next text starts, so a drafter used for several generations
learns from its own outputs: the agentic workloads of the paper (a loop that rewrites similar text) are
where this shines. `corpus` adds token sequences you choose (documents the answers will quote).

    drafter = SuffixDrafter()                                  # keep it across generations: it remembers
    speculative_generate(target, drafter, input_ids, temperature=0)
    SuffixDrafter(corpus=[tokenizer(text).input_ids for text in documents])

Not handled: forgetting (the session's tree only grows; SuffixDecoding evicts old requests).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from specdec.engine.contract import Capabilities, DraftRequest, Generation, Verified
from specdec.drafting.suffix_tree import Speculation, SuffixTree
from specdec.errors import SpecdecError
from specdec.engine.trees import DraftTree


class SuffixDrafter:
    """Drafts the likeliest continuations of the text's end from suffix trees (see the module docstring).

    >>> drafter = SuffixDrafter(budget=4)
    >>> drafter.begin_text([5, 6, 7, 8, 5, 6])                 # "5 6" was followed by "7 8" before
    >>> drafter.draft(DraftRequest(torch.tensor([5, 6, 7, 8, 5, 6]), 8, None, None)).tokens.tolist()
    [7, 8]
    """

    def __init__(self, budget: int = 8, max_depth: int = 24, spec_factor: float = 1.0, min_chance: float = 0.1,
                 tree: bool = True, corpus: Iterable[Sequence[int]] = ()) -> None:
        if budget < 1 or spec_factor <= 0 or not 0 <= min_chance <= 1:
            raise SpecdecError(f"suffix decoding needs budget >= 1, spec_factor > 0 and min_chance in [0, 1], got {budget}, "
                               f"{spec_factor} and {min_chance}")
        self.budget, self.spec_factor, self.min_chance, self.tree = budget, spec_factor, min_chance, tree
        self.name, self.passes = "suffix", 0
        shape = f"suffix tree (up to {budget} nodes)" if tree else "suffix chain"
        self.capabilities = Capabilities(sizes_rounds=True, full_attention=tree, drafts=shape, model_free=True)
        self.session = SuffixTree(max_depth)              # earlier outputs and the corpus
        for document in corpus:
            self.session.add([int(token) for token in document])
        self.text = SuffixTree(max_depth)                 # this text: the prompt and the output so far
        self._active = self.text.start()
        self._read = 0                                    # tokens of the text read into `self.text`
        self._output: list[int] = []

    def begin(self, generation: Generation) -> None:
        self.begin_text(generation.prompt.tolist())

    def begin_text(self, prompt: Sequence[int]) -> None:
        """A new text: the last one's output joins the session's tree, and this one's starts with `prompt`."""
        if self._output:
            self.session.add(self._output)
        self.text = SuffixTree(self.session.max_depth)
        self._active = self.text.extend(self.text.start(), prompt)
        self._read, self._output = len(prompt), []

    def draft(self, request: DraftRequest) -> DraftTree:
        context = request.sequence[-(self.text.max_depth - 1):].tolist()
        best = Speculation((), (), ())
        for index in (self.text, self.session):
            for length, node in index.matches(context):
                depth = min(request.limit, max(1, int(self.spec_factor * length)), index.max_depth - length)
                speculation = index.continuations(node, depth, self.budget if self.tree else depth, self.min_chance)
                if not self.tree:
                    speculation = _best_path(speculation)
                if speculation.score > best.score:
                    best = speculation
        return DraftTree(torch.tensor(best.tokens, dtype=torch.long), best.parents, None)

    def observe(self, verified: Verified) -> None:
        new = verified.text[self._read:].tolist()       # the tokens this pass added to the text
        self._active = self.text.extend(self._active, new)
        self._read += len(new)
        self._output += new


def _best_path(speculation: Speculation) -> Speculation:
    """The chain down the speculation's likeliest first token, then each node's likeliest child (a chain of point masses)."""
    tokens, chances, node = [], [], -1
    while True:
        children = [i for i, parent in enumerate(speculation.parents) if parent == node]
        if not children:
            break
        node = max(children, key=lambda i: speculation.chances[i])
        tokens.append(speculation.tokens[node])
        chances.append(speculation.chances[node])
    return Speculation(tuple(tokens), tuple(range(-1, len(tokens) - 1)), tuple(chances))
