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

Each text's output joins the session's tree when the text is done, so a drafter used for several
generations (or for the texts of a batch, which share the session's tree) learns from its own outputs: the agentic
workloads of the paper (a loop that rewrites similar text) are where this shines. `corpus` adds token sequences you
choose (documents the answers will quote).

    drafter = SuffixDrafter()                                  # keep it across generations: it remembers
    speculative_generate(target, drafter, input_ids, temperature=0)
    SuffixDrafter(corpus=[tokenizer(text).input_ids for text in documents])

Not handled: forgetting (the session's tree only grows; SuffixDecoding evicts old requests).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch

from specdec.drafting.suffix_tree import Node, Speculation, SuffixTree
from specdec.engine.contract import Capabilities, DraftRequest, Generation, Verified
from specdec.engine.trees import DraftTree
from specdec.errors import SpecdecError


@dataclass
class SuffixText:
    """One text's suffix tree (its prompt and output so far) and where its end sits in it."""

    tree: SuffixTree
    active: list[Node]  # where the text's end sits in the tree (`SuffixTree.extend`)
    read: int  # tokens of the text read into `tree`
    output: list[int] = field(default_factory=list)


class SuffixDrafter:
    """Drafts the likeliest continuations of the text's end from suffix trees (see the module docstring).

    >>> drafter = SuffixDrafter(budget=4)
    >>> state = drafter.start([5, 6, 7, 8, 5, 6])                # "5 6" was followed by "7 8" before
    >>> drafter.speculate(state, DraftRequest(torch.tensor([5, 6, 7, 8, 5, 6]), 8, None, None)).tokens.tolist()
    [7, 8]
    """

    name, draft_model = "suffix", None

    @staticmethod
    def declared(options: SuffixOptions) -> Capabilities:
        """What a suffix drafter with these options declares (its
        instances and the registry's checks read this one place)."""
        shape = f"suffix tree (up to {options.budget} nodes)" if options.tree else "suffix chain"
        return Capabilities(sizes_rounds=True, full_attention=options.tree, drafts=shape)

    def __init__(
        self,
        budget: int = 8,
        max_depth: int = 24,
        spec_factor: float = 1.0,
        min_chance: float = 0.1,
        tree: bool = True,
        corpus: Iterable[Sequence[int]] = (),
    ) -> None:
        if budget < 1 or spec_factor <= 0 or not 0 <= min_chance <= 1:
            raise SpecdecError(
                f"suffix decoding needs budget >= 1, spec_factor > 0 and min_chance in [0, 1], got {budget}, "
                f"{spec_factor} and {min_chance}"
            )
        self.budget, self.spec_factor, self.min_chance, self.tree = budget, spec_factor, min_chance, tree
        self.capabilities = self.declared(SuffixOptions(budget, max_depth, tree))
        self.session = SuffixTree(max_depth)  # earlier outputs and the corpus
        for document in corpus:
            self.session.add([int(token) for token in document])
        self.texts: dict[int, SuffixText] = {}

    def begin(self, generation: Generation) -> None:
        for state in self.texts.values():  # texts left unfinished (a run stopped early) still teach
            self._learn(state)
        self.texts = {row: self.start(prompt.tolist()) for row, prompt in generation.prompts.items()}

    def start(self, prompt: Sequence[int]) -> SuffixText:
        """A new text: its own tree starts with `prompt`."""
        tree = SuffixTree(self.session.max_depth)
        return SuffixText(tree, tree.extend(tree.start(), prompt), len(prompt))

    def draft(self, requests: dict[int, DraftRequest]) -> dict[int, DraftTree]:
        return {row: self.speculate(self.texts[row], request) for row, request in requests.items()}

    def speculate(self, state: SuffixText, request: DraftRequest) -> DraftTree:
        """Steps 1-3 for one text: the best speculation over its own tree and the session's."""
        context = request.sequence[-(state.tree.max_depth - 1) :].tolist()
        best = Speculation((), (), ())
        for index in (state.tree, self.session):
            for length, node in index.matches(context):
                depth = min(request.limit, max(1, int(self.spec_factor * length)), index.max_depth - length)
                speculation = index.continuations(node, depth, self.budget if self.tree else depth, self.min_chance)
                if not self.tree:
                    speculation = _best_path(speculation)
                if speculation.score > best.score:
                    best = speculation
        return DraftTree(torch.tensor(best.tokens, dtype=torch.long), best.parents, None)

    def observe(self, verified: dict[int, Verified]) -> None:
        for row, seen in verified.items():
            state = self.texts[row]
            new = seen.text[state.read :].tolist()  # the tokens this pass added to the text
            state.active = state.tree.extend(state.active, new)
            state.read += len(new)
            state.output += new
            if seen.finished:  # its output joins the session's tree
                self._learn(self.texts.pop(row))

    def _learn(self, state: SuffixText) -> None:
        if state.output:
            self.session.add(state.output)


def _best_path(speculation: Speculation) -> Speculation:
    """The chain down the speculation's likeliest first token,
    then each node's likeliest child (a chain of point masses)."""
    tokens, chances, node = [], [], -1
    while True:
        children = [i for i, parent in enumerate(speculation.parents) if parent == node]
        if not children:
            break
        node = max(children, key=lambda i: speculation.chances[i])
        tokens.append(speculation.tokens[node])
        chances.append(speculation.chances[node])
    return Speculation(tuple(tokens), tuple(range(-1, len(tokens) - 1)), tuple(chances))


@dataclass(frozen=True)
class SuffixOptions:
    """Suffix decoding's trees."""

    budget: int = field(default=8, metadata={"help": "at most this many nodes per drafted tree"})
    max_depth: int = field(default=24, metadata={"help": "the deepest path it drafts"})
    tree: bool = field(default=True, metadata={"help": "draft a tree (else a chain)"})
