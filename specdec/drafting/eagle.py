"""Drafting with an EAGLE-3 head: a dynamic token tree grown from the target's own hidden states.

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

A round (`draft`): one head pass over the entries that arrived since the last round (one per kept row,
so 1 + the accepted tokens), then the tree of `specdec.drafting.tree_drafter` grows level by level,
EAGLE-2's dynamic tree (Li et al. 2024): a node where the head is confident gets children, one where
it hesitates gets siblings, priced by the same cost model as a draft model's tree. A node y drafted
from entry e becomes the entry (y, g_e), the head's own hidden state in place of the target's, at the
next position, attending to the text entries and its ancestors only.

After the verdict (`observe`) every tree entry is dropped, the accepted ones too: the target has now
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

from dataclasses import dataclass, field, replace

import torch

from specdec.drafting.eagle_head import EagleHead
from specdec.drafting.tree_drafter import TreeDrafter, TreeSettings, TreeText, level_layout
from specdec.engine.contract import Capabilities, Generation, Verified
from specdec.engine.stop_rule import ConfidenceStop
from specdec.engine.trees import ROOT
from specdec.errors import SpecdecError


@dataclass
class HeadCache:
    """One text's entries in the head: keys and values [P, kv_heads, dim], and the g of the last text entry.

    The first `text` entries are the text's (built from the target's features); after them, the entries
    of the tree being grown, in the order they were read. `pending` holds the rows the target kept since
    the last round: their tokens [m] and their three hidden states [m, H] each.
    """

    head: EagleHead
    keys: torch.Tensor | None = None
    values: torch.Tensor | None = None
    root_g: torch.Tensor | None = None                     # [H]: g of the last text entry (the first level's parent)
    node_g: dict[int, torch.Tensor] = field(default_factory=dict)   # tree node -> its entry's g [H]
    pending_tokens: list[torch.Tensor] = field(default_factory=list)
    pending_features: list[tuple[torch.Tensor, ...]] = field(default_factory=list)
    passes: int = 0

    @property
    def length(self) -> int:
        return 0 if self.keys is None else int(self.keys.shape[0])

    def feed(self, ids: torch.Tensor, hidden: torch.Tensor, positions: torch.Tensor, attend: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One head pass over new entries (ids [n], hidden [n, H]); returns their logits over the target's vocabulary [n, V] and g [n, H]."""
        past = None if self.keys is None else (self.keys, self.values)
        device = self.head.device
        draft_logits, g, k, v = self.head.step(ids.to(device), hidden, positions.to(device), past, attend.to(device))
        self.keys = k if self.keys is None else torch.cat([self.keys, k])
        self.values = v if self.values is None else torch.cat([self.values, v])
        self.passes += 1
        return self.head.target_logits(draft_logits.float()), g

    def keep(self, count: int) -> None:
        """Keep the first `count` entries (the text's), drop the rest."""
        if self.keys is not None:
            self.keys, self.values = self.keys[:count], self.values[:count]


class EagleDrafter(TreeDrafter):
    """An EAGLE-3 head drafting a dynamic tree of at most `budget` nodes, `depth` levels and `width` nodes per level."""

    capabilities = Capabilities(sizes_rounds=True, full_attention=True, drafts="EAGLE-3 head, tree (budget 16)")

    def __init__(self, head: EagleHead, name: str | None = None, budget: int = TreeSettings.budget, depth: int = 8, width: int = 3,
                 c: float | None = None, verify_slope: float | None = None) -> None:
        if not isinstance(head, EagleHead):
            raise SpecdecError(f"EagleDrafter takes an EagleHead (specdec.load_head(DIR) or specdec.train_head(...)), got {type(head).__name__}")
        if not head.config.layers:
            raise SpecdecError("this head does not say which target layers it reads (a published checkpoint): bind it first, "
                               "head.bind(target), or load it with specdec.load_head(DIR, target)")
        super().__init__(head, name or f"EAGLE-3 head ({head.config.target or 'trained'})", budget, depth, width, c, verify_slope)
        self.head = head
        self.capabilities = replace(EagleDrafter.capabilities, hidden_layers=head.config.layers,
                                    drafts=f"EAGLE-3 head, tree (budget {budget})")

    @property
    def embedding_rows(self) -> int:
        return self.head.config.vocab_size

    # --- the drafter contract (specdec.engine.contract) --------------------------------------------

    def begin(self, generation: Generation) -> None:
        self.head.bind(generation.target)                          # one clear line for a head trained for another target
        super().begin(generation)                                  # (and one for a head on another device than the target)

    def start(self) -> TreeText:
        c = 0.05 if self.c is None else self.c
        rule = ConfidenceStop(c=c, verify_slope=0.05 if self.verify_slope is None else self.verify_slope, max_gamma=self.depth)
        return TreeText(HeadCache(self.head), rule)

    def observe(self, verified: dict[int, Verified]) -> None:
        for row, seen in verified.items():
            state = self.texts.get(row)
            if seen.finished or state is None:
                self.texts.pop(row, None)
                continue
            if seen.hidden is None:
                raise SpecdecError("the loop gave the EAGLE head no hidden states: it declares them in Capabilities.hidden_layers")
            cache: HeadCache = state.cached
            cache.keep(state.text)                                 # every tree entry goes, the accepted ones too
            self.calibrate(state, seen.tested)
            kept = seen.kept_rows()
            cache.pending_tokens.append(seen.text[-len(kept):])   # each kept row with the token that followed it
            cache.pending_features.append(tuple(layer[kept] for layer in seen.hidden))

    # --- the head's passes (the tree itself grows as TreeDrafter's) ---------------------------------

    @torch.inference_mode()
    def _read_text(self, state: TreeText, sequence: torch.Tensor) -> torch.Tensor:
        """One head pass over the entries the target's last passes gave (causal): q's logits after the root, [1, V]."""
        cache: HeadCache = state.cached
        if not cache.pending_tokens:
            raise SpecdecError("the EAGLE head has no features for this text: the target's pass did not reach observe")
        ids = torch.cat(cache.pending_tokens)                                          # [m]
        features = tuple(torch.cat(layer) for layer in zip(*cache.pending_features))   # 3 x [m, H]
        cache.pending_tokens, cache.pending_features = [], []
        start, m = cache.length, ids.numel()
        attend = torch.ones(m, start + m, dtype=torch.bool)
        attend[:, start:] = torch.ones(m, m, dtype=torch.bool).tril()
        logits, g = cache.feed(ids, self.head.fuse(features), torch.arange(start, start + m), attend)
        cache.root_g, cache.node_g = g[-1], {}
        return logits[-1:]

    @torch.inference_mode()
    def _read_level(self, state: TreeText, new: list[int], tokens: list[int], parents: list[int]) -> torch.Tensor:
        """One head pass over the nodes `new`: each is (its token, its parent entry's g), sees the text entries and its ancestors."""
        cache: HeadCache = state.cached
        attend, positions = level_layout(state, new, parents)
        hidden = torch.stack([cache.root_g if parents[node] == ROOT else cache.node_g[parents[node]] for node in new])   # [n, H]
        logits, g = cache.feed(torch.tensor([tokens[node] for node in new]), hidden, positions, attend)   # [n, V], [n, H]
        cache.node_g |= {node: g[i] for i, node in enumerate(new)}
        state.read += new
        return logits

