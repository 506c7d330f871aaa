"""What a token tree is read with: the reader contract, and a draft model as a reader.

Notation: q is the draft's distribution, p the target's. A tree drafter (`specdec.drafting.tree_drafter`)
decides how a tree grows: how many children each node gets, when another level pays, from a cost model
and a calibration. It does not run anything itself. A reader does, for one text at a time:

    reader.read_text(row, sequence)            one pass over the text it has not read yet, the root last:
                                               q's logits after the root, [1, V]
    reader.read_level(row, new, tokens, parents)   one pass over a level's new nodes, each seeing the text and
                                               its own ancestors: their logits, [n, V]
    reader.observe(row, verified)              after the target's verdict: keep the text and what was
                                               accepted, drop the rest of the tree

Readers here and elsewhere: a draft model (`ModelReader`, below, on any runtime behind
`specdec.engine.model`), a trained EAGLE-3 head reading the target's own hidden states
(`specdec.heads.reader.HeadReader`). Nothing pretends to be a transformers model: a reader says what it
needs (`hidden_layers`, `internals`) and the tree drafter declares it to the loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import torch

from specdec.engine.contract import DraftNetwork, Generation, Verified
from specdec.engine.model import Rows
from specdec.engine.sampling import fit_vocabulary
from specdec.engine.trees import ROOT
from specdec.errors import SpecdecError
from specdec.runtime import as_model


class TreeReader(Protocol):
    """What a tree drafter reads its guesses with (module docstring)."""

    name: str
    # what a read runs (a draft model, a head): c from its weights, its passes counted by the run
    draft_model: DraftNetwork | None
    hidden_layers: tuple[int, ...]  # the target layers it reads (a trained head: three), or none
    internals: bool  # it reaches into the target's modules (torch only)

    def begin(self, generation: Generation) -> None:
        """Texts start: forget the previous ones."""

    def read_text(self, row: int, sequence: torch.Tensor) -> torch.Tensor:
        """One pass over the text of `row` not read yet (`sequence` [n]
        is all of it, the root last): logits after the root, [1, V]."""

    def read_level(self, row: int, new: list[int], tokens: list[int], parents: list[int]) -> torch.Tensor:
        """One pass over the nodes `new` (indices into `tokens`/`parents`),
        each seeing the text and its ancestors: [len(new), V]."""

    def observe(self, row: int, verified: Verified) -> None:
        """After the target's verdict on `row`'s tree: keep what was accepted, drop every other node."""

    def forget(self, row: int) -> None:
        """`row`'s text is done."""


@dataclass
class ModelText:
    """What a model reader keeps for one text: its cache, and the tree it is reading."""

    rows: Rows
    text: int = 0  # cached tokens of text when the last tree was grown
    read: list[int] = field(default_factory=list)  # nodes of the last tree the draft has read, in cache order


class ModelReader:
    """A draft model reading a tree: its own KV cache per text, a level in one pass under a tree mask.

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> reader = ModelReader(LlamaForCausalLM(LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=1,
    ...                                                   num_attention_heads=1, vocab_size=6)))
    >>> reader.draft_model.vocab_size, reader.hidden_layers, reader.internals
    (6, (), False)
    """

    hidden_layers: tuple[int, ...] = ()
    internals = False

    def __init__(self, model: object, name: str | None = None) -> None:
        self.model = self.draft_model = as_model(model)
        self.name = name or self.model.name
        self.vocab_size = 0
        self.texts: dict[int, ModelText] = {}

    def begin(self, generation: Generation) -> None:
        from specdec.drafting.draft_model import check_draft_model

        check_draft_model(self.model, generation)
        if self.model.traits.sliding_window:
            raise SpecdecError(
                "a token tree needs every cached position: this draft has sliding-window layers, draft a chain"
            )
        self.vocab_size = generation.vocab_size
        self.texts = {row: ModelText(self.model.rows([row])) for row in generation.prompts}

    def read_text(self, row: int, sequence: torch.Tensor) -> torch.Tensor:
        state = self.texts[row]
        state.read = []
        pending = self._readable(sequence[state.rows.length(row) :])  # [m >= 1] unseen text, the root last
        logits, _ = state.rows.feed([pending], last=1)  # [1, 1, V_draft]
        state.text = state.rows.length(row)
        return fit_vocabulary(logits[0], self.vocab_size)  # [1, V]

    def read_level(self, row: int, new: list[int], tokens: list[int], parents: list[int]) -> torch.Tensor:
        state = self.texts[row]
        attend, offsets = level_layout(state.rows.length(row), state.text, state.read, new, parents)
        ids = self._readable(torch.tensor([tokens[node] for node in new]))
        logits, _ = state.rows.feed([ids], last=len(new), attend=[attend], offsets=[offsets])  # [1, n, V_draft]
        state.read += new
        return fit_vocabulary(logits[0], self.vocab_size)  # [n, V]

    def observe(self, row: int, verified: Verified) -> None:
        """Keep the text and the accepted nodes the draft has read (a
        prefix of the path); the rest of the path is read next round."""
        state = self.texts[row]
        if not verified.proposal.size:  # nothing drafted: the cache is as it was
            return
        read = [node for node in verified.path if node in state.read]
        state.rows.keep(row, list(range(state.text)) + [state.text + state.read.index(node) for node in read])
        state.read = []

    def forget(self, row: int) -> None:
        self.texts.pop(row, None)

    def _readable(self, ids: torch.Tensor) -> torch.Tensor:
        """An id the draft has no embedding row for (only when the target
        has more rows) is read as 0: worse guesses, same output."""
        return ids.masked_fill(ids >= self.model.embedding_rows, 0).to(self.model.device)


def level_layout(
    cached: int, text: int, read: list[int], new: list[int], parents: list[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """What a level's nodes `new` see in a cache of `cached` tokens ([n, cached + n]: the first `text` tokens, the nodes
    of `read` that are their ancestors, themselves), and their positions after the cache [n] (the root is the text's
    last token).

    >>> # node 2's parent is node 1, read at column 4
    >>> attend, offsets = level_layout(5, 3, [0, 1], [2], [-1, -1, 1])
    >>> # depth 2: position 4, one before the cache's end
    >>> attend.int().tolist(), offsets.tolist()
    ([[1, 1, 1, 0, 1, 1]], [-1])
    """
    attend = torch.zeros(len(new), cached + len(new), dtype=torch.bool)
    attend[:, :text] = True
    for i, node in enumerate(new):
        attend[i, cached + i] = True
        ancestor = parents[node]
        while ancestor != ROOT:
            attend[i, text + read.index(ancestor)] = True
            ancestor = parents[ancestor]
    positions = torch.tensor([text - 1 + depth_of(node, parents) for node in new])
    return attend, positions - cached


def depth_of(node: int, parents: list[int]) -> int:
    """1 for the root's children, 2 for theirs, ..."""
    depth = 0
    while node != ROOT:
        node, depth = parents[node], depth + 1
    return depth
