"""Reading a tree with an EAGLE-3 head: the head's passes, under the tree policy every tree drafter shares.

Notation: p is the target, q the head's distribution (over the target's vocabulary, zero outside the
draft vocabulary), gamma the drafted tokens per round, c a draft step's cost over a target step.

What the head reads. The drafter declares the three layers its head fuses (`Capabilities.hidden_layers`),
and after every target pass the loop hands it those hidden states for the rows the pass read
(`Verified.hidden`), from the verification pass that already ran: no second target pass. The rows the
target kept (`Verified.kept_rows`: the prompt, or the root and the accepted nodes) become the head's
text entries, each paired with the token that followed it in the text (EAGLE's shift by one):

    text   x_0 x_1 ... x_{n-1}            (x_{n-1} the root: the target's last token, not read yet)
    entry  j = (x_{j+1}, f_j)  for j = 0 .. n-2,   f_j = fc(h_j^low, h_j^mid, h_j^high)
    the last entry's output predicts x_n: the tree's first level

A round: one head pass over the entries that arrived since the last round (one per kept row, so 1 +
the accepted tokens: `HeadReader.read_text`), then the tree of `specdec.drafting.tree_drafter` grows level
by level (`HeadReader.read_level`),
EAGLE-2's dynamic tree (Li et al. 2024): a node where the head is confident gets children, one where
it hesitates gets siblings, priced by the same cost model as a draft model's tree. A node y drafted
from entry e becomes the entry (y, g_e), the head's own hidden state in place of the target's, at the
next position, attending to the text entries and its ancestors only.

After the verdict (`HeadReader.observe`) every tree entry is dropped, the accepted ones too: the target has now
read those tokens, and its true hidden states replace the head's guesses (as vLLM's EAGLE proposer
does). So the head's cache only ever holds entries built from the target's features.

Exactness is the tree rule's (`specdec.engine.tree_verification`): each node's children are drawn
from q (greedy: its most likely tokens) and q is reported, over the target's vocabulary. How many
children a node gets never depends on the children themselves.

    head = specdec.load_head("heads/qwen2.5-coder-1.5b")
    speculative_generate(target, EagleDrafter(head), input_ids, temperature=0)

Not handled: several texts sharing head passes (each text grows its own tree, one after the other).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from specdec.drafting.tree_drafter import TreeDrafter, TreeSettings
from specdec.drafting.tree_reader import level_layout
from specdec.engine.contract import Capabilities, Generation, Verified
from specdec.engine.trees import ROOT
from specdec.errors import SpecdecError
from specdec.runtime import transformers_model
from specdec.heads.head import EagleHead


@dataclass(frozen=True)
class HeadTree(TreeSettings):
    """A head's tree: as a draft model's, but at most 8 levels deep (its guesses past that are rarely kept)."""

    depth: int = 8


HEAD_TREE = HeadTree()


class EagleDrafter(TreeDrafter):
    """An EAGLE-3 head drafting a dynamic tree of at most `budget` nodes, `depth` levels and `width` nodes per level:
    the tree policy every tree drafter shares (`specdec.drafting.tree_drafter`), over the head's reader (`HeadReader`),
    nothing else."""

    @staticmethod
    def declared(options: HeadTree, reader: HeadReader | None = None, kind: str = "EAGLE-3 head, tree") -> Capabilities:
        """What an EAGLE-3 drafter declares (its instances and the registry's checks read this one place): before a head
        is loaded, that it reads the target's hidden states and its embedding table; once loaded, the three layers its
        head names."""
        layers = () if reader is None else reader.hidden_layers
        return Capabilities(
            sizes_rounds=True,
            full_attention=True,
            internals=True,
            hidden_states=reader is None,
            hidden_layers=layers,
            drafts=f"{kind} (budget {options.budget})",
        )

    def __init__(
        self,
        head: EagleHead,
        name: str | None = None,
        budget: int = HEAD_TREE.budget,
        depth: int = HEAD_TREE.depth,
        width: int = HEAD_TREE.width,
    ) -> None:
        reader = HeadReader(head)
        super().__init__(None, name or reader.name, budget, depth, width, reader=reader, kind="EAGLE-3 head, tree")


@dataclass
class HeadCache:
    """One text's entries in the head: keys and values [P, kv_heads, dim], and the g of the last text entry.

    The first `text` entries are the text's (built from the target's features); after them, the entries
    of the tree being grown, in the order they were read (`read`). `pending` holds the rows the target
    kept since the last round: their tokens [m] and their three hidden states [m, H] each.
    """

    keys: torch.Tensor | None = None
    values: torch.Tensor | None = None
    text: int = 0  # entries of the text (the rest are the tree's)
    read: list[int] = field(default_factory=list)  # tree nodes read, in entry order
    root_g: torch.Tensor | None = None  # [H]: g of the last text entry (the first level's parent)
    node_g: dict[int, torch.Tensor] = field(default_factory=dict)  # tree node -> its entry's g [H]
    pending_tokens: list[torch.Tensor] = field(default_factory=list)
    pending_features: list[tuple[torch.Tensor, ...]] = field(default_factory=list)

    @property
    def length(self) -> int:
        return 0 if self.keys is None else int(self.keys.shape[0])


class HeadReader:
    """A trained EAGLE-3 head reading a tree from the target's own hidden states (module docstring)."""

    internals = True  # it reads tokens through the target's own embedding table

    def __init__(self, head: EagleHead) -> None:
        if not isinstance(head, EagleHead):
            raise SpecdecError(
                "EagleDrafter takes an EagleHead (specdec.load_head(DIR) or specdec.train_head(...)), got "
                f"{type(head).__name__}"
            )
        if not head.config.layers:
            raise SpecdecError(
                "this head does not say which target layers it reads (a published checkpoint): bind it first, "
                "head.bind(target), or load it with specdec.load_head(DIR, target)"
            )
        self.head = head
        self.name = head.name
        self.draft_model = head  # what a draft step runs: the head, which counts its own passes
        self.hidden_layers = head.config.layers
        self.texts: dict[int, HeadCache] = {}

    def begin(self, generation: Generation) -> None:
        # one line for a head trained for another target
        self.head.bind(transformers_model(generation.target, "an EAGLE head"))
        if self.head.device != generation.target.device:
            raise SpecdecError(
                f"the head is on {self.head.device} but the target on {generation.target.device}: load both on one "
                "device"
            )
        self.texts = {row: HeadCache() for row in generation.prompts}

    @torch.inference_mode()
    def read_text(self, row: int, sequence: torch.Tensor) -> torch.Tensor:
        """One head pass over the entries the target's last passes gave (causal): q's logits after the root, [1, V]."""
        cache = self.texts[row]
        if not cache.pending_tokens:
            raise SpecdecError("the EAGLE head has no features for this text: the target's pass did not reach observe")
        ids = torch.cat(cache.pending_tokens)  # [m]
        features = tuple(torch.cat(layer) for layer in zip(*cache.pending_features))  # 3 x [m, H]
        cache.pending_tokens, cache.pending_features = [], []
        start, m = cache.length, ids.numel()
        attend = torch.ones(m, start + m, dtype=torch.bool)
        attend[:, start:] = torch.ones(m, m, dtype=torch.bool).tril()
        logits, g = self._feed(cache, ids, self.head.fuse(features), torch.arange(start, start + m), attend)
        cache.text, cache.read, cache.root_g, cache.node_g = cache.length, [], g[-1], {}
        return logits[-1:]

    @torch.inference_mode()
    def read_level(self, row: int, new: list[int], tokens: list[int], parents: list[int]) -> torch.Tensor:
        """One head pass over the nodes `new`: each is (its token, its
        parent entry's g), sees the text entries and its ancestors."""
        cache = self.texts[row]
        attend, offsets = level_layout(cache.length, cache.text, cache.read, new, parents)
        # [n, H]
        hidden = torch.stack([cache.root_g if parents[node] == ROOT else cache.node_g[parents[node]] for node in new])
        # [n, V], [n, H]
        logits, g = self._feed(
            cache, torch.tensor([tokens[node] for node in new]), hidden, cache.length + offsets, attend
        )
        cache.node_g |= {node: g[i] for i, node in enumerate(new)}
        cache.read += new
        return logits

    def observe(self, row: int, verified: Verified) -> None:
        """Drop every tree entry (the accepted ones too: the target's
        true features replace them); queue the kept rows' features."""
        if verified.hidden is None:
            raise SpecdecError(
                "the loop gave the EAGLE head no hidden states: it declares them in Capabilities.hidden_layers"
            )
        cache = self.texts[row]
        if cache.keys is not None:
            cache.keys, cache.values = cache.keys[: cache.text], cache.values[: cache.text]
        kept = verified.kept_rows()
        cache.pending_tokens.append(verified.text[-len(kept) :])  # each kept row with the token that followed it
        cache.pending_features.append(tuple(layer[kept] for layer in verified.hidden))

    def forget(self, row: int) -> None:
        self.texts.pop(row, None)

    def _feed(
        self, cache: HeadCache, ids: torch.Tensor, hidden: torch.Tensor, positions: torch.Tensor, attend: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One head pass over new entries (ids [n], hidden [n, H]):
        their logits over the target's vocabulary [n, V] and g [n, H]."""
        past = None if cache.keys is None else (cache.keys, cache.values)
        device = self.head.device
        draft_logits, g, k, v = self.head.step(ids.to(device), hidden, positions.to(device), past, attend.to(device))
        cache.keys = k if cache.keys is None else torch.cat([cache.keys, k])
        cache.values = v if cache.values is None else torch.cat([cache.values, v])
        return self.head.target_logits(draft_logits.float()), g
