"""Growing a token tree each round: how many children each node gets, and when another level pays.

Notation: q is the draft's distribution, p the target's, c the cost of a draft pass over a target
step, v(n) the cost of the target's verification pass over n nodes (measured, or 1 + s n). Each round
the drafter grows a tree (`specdec.engine.trees`) from the root, the last token of the text, level by
level, with the arithmetic of the chain's stop rule (`specdec.engine.stop_rule`) extended to trees:

    a(x)     the calibrated chance a node drafted with confidence q(x) is accepted (ConfidenceStop)
    R(n)     = a(x_1) a(x_2) ... a(n)    the chance the target walks from the root down to node n
    E        = 1 + sum of R(n)           expected tokens the round emits (the accepted path + one)
    T        = L c + v(N)                the round's cost in target steps: L draft passes, N nodes

    1. one draft pass gives q at every frontier node (at the first level: the root, read together
       with the text the draft has not seen yet)
    2. every frontier node f offers "slots" for children, the j-th worth R(f) a(j-th largest q_f);
       slots are taken best first, at most `width` per level and `budget` in all, while a slot
       adds more expected tokens per unit of cost than the round has so far (R * T > E * (v(N+1) - v(N))): where
       the draft is sure the tree stays a chain, where it hesitates it branches (EAGLE-2's idea,
       Li et al. 2024, with a cost model instead of a fixed size)
    3. each chosen node draws its children: greedy, its most likely tokens; sampling, draws from q
       without replacement (what the acceptance rule needs, `specdec.engine.tree_verification`)
    4. another level is read (one draft pass over the new nodes, each attending to the text and its
       ancestors through a tree mask) while its predicted gain, sum of R(n) a(n) over the new nodes
       (easy stretches stay easy), beats its cost: gain * T > E * (c + v(N + n) - v(N)), and `depth` allows

With width 1 this is exactly the chain's stop rule. The calibration learns from every tested node
of every round (confidence -> accepted or not). How many children a node gets is decided from what
the draft knew before drawing them (never from the children themselves) and from past rounds: that
keeps the sampled output exactly p.

The passes themselves are a reader's (`specdec.drafting.tree_reader`): a draft model's (`ModelReader`,
made for you when `TreeDrafter` is given a model), or a trained head's (`specdec.heads`). After the
target's verdict (`observe`) the drafter calibrates on every node the rule tested and the reader keeps
the text and the accepted nodes it has read, dropping every other branch; the rest of the path and the
target's next token are read in the next round's first pass.

    drafter = TreeDrafter(draft_model)         # c and s estimated from the weights, like the chain's rule
    speculative_generate(target, drafter, input_ids, temperature=0)
    TreeDrafter.reading(reader, budget=16)     # the same policy over another reader

Several texts each grow their own tree, with a calibration (`TreeText`) and a cache of their own, one
after the other: their draft passes are not shared (by default a batch drafts chains, which are).
Not handled: a draft with another tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from specdec.drafting.tree_children import draw_children, frontier_distributions, q_table
from specdec.drafting.tree_reader import ModelReader, TreeReader
from specdec.engine.contract import Capabilities, DraftRequest, Generation, Verified
from specdec.engine.sampling import SamplingConfig
from specdec.engine.stop_rule import ConfidenceStop
from specdec.engine.trees import ROOT, DraftTree
from specdec.errors import SpecdecError


@dataclass(frozen=True)
class TreeSettings:
    """The size limits of a drafted tree: at most `budget` nodes, `depth` levels and `width` nodes per level.

    >>> TreeSettings(budget=8).describe()
    'tree (budget 8)'
    """

    budget: int = 16
    depth: int = 12
    width: int = 3

    def __post_init__(self) -> None:
        if self.budget < 1 or self.depth < 1 or self.width < 1:
            raise SpecdecError(
                f"a tree needs budget, depth and width of at least 1, got {self.budget}, {self.depth} and {self.width}"
            )

    def describe(self) -> str:
        return f"tree (budget {self.budget})"


@dataclass
class TreeText:
    """What the tree drafter keeps for one text: its calibration, and the confidences of the last tree's nodes."""

    rule: ConfidenceStop  # the calibration a(confidence), learned on this text
    confidences: list[float] = field(default_factory=list)  # q(token) of each node of the last tree


class TreeDrafter:
    """A tree of at most `budget` nodes, `depth` levels and `width` nodes per level, grown each round over a reader.

    `model` is a draft model (a transformers model, or one on another runtime), read by a `ModelReader`;
    `TreeDrafter.reading(reader, ...)` grows the same trees over any reader (a trained head's).
    `c` and `verify_slope` (s) price a draft pass and a verified node in target steps; None takes the
    ones `speculative_generate`'s policy estimated from the weights, as for the chain's stop rule. The first
    level always gets one node, so `TreeDrafter(model, budget=1)` is the chain with gamma 1.
    `TreeDrafter.from_settings(model, TreeSettings(...))` takes the limits as one frozen value.
    """

    default_budget = TreeSettings.budget

    @staticmethod
    def declared(options: TreeSettings, reader: TreeReader | None = None, kind: str = "tree") -> Capabilities:
        """What a tree drafter declares (its instances and the registry's checks read this one place): it sizes its own
        rounds and needs full-attention caches; what the target must give its reader (hidden layers, internals) is the
        reader's (a draft model reads none)."""
        return Capabilities(
            sizes_rounds=True,
            full_attention=True,
            hidden_layers=() if reader is None else reader.hidden_layers,
            internals=reader is not None and reader.internals,
            drafts=f"{kind} (budget {options.budget})",
        )

    def __init__(
        self,
        model: object,
        name: str | None = None,
        budget: int = default_budget,
        depth: int = 12,
        width: int = 3,
        c: float | None = None,
        verify_slope: float | None = None,
        reader: TreeReader | None = None,
        kind: str = "tree",
    ) -> None:
        self.settings = TreeSettings(budget, depth, width)
        if (c is not None and c < 0) or (verify_slope is not None and verify_slope < 0):
            raise SpecdecError(f"the costs c and verify_slope must be >= 0, got {c} and {verify_slope}")
        self.reader = reader if reader is not None else ModelReader(model, name)
        self.draft_model = self.reader.draft_model
        self.name = name or self.reader.name
        self.capabilities = self.declared(self.settings, self.reader, kind)
        self.budget, self.depth, self.width = budget, depth, width
        self.c, self.verify_slope = c, verify_slope
        self.vocab_size = 0  # the target's, told by `begin`
        self.texts: dict[int, TreeText] = {}

    @classmethod
    def from_settings(cls, model: object, settings: TreeSettings, name: str | None = None) -> TreeDrafter:
        return cls(model, name, settings.budget, settings.depth, settings.width)

    @classmethod
    def reading(
        cls, reader: TreeReader, name: str | None = None, settings: TreeSettings = TreeSettings(), kind: str = "tree"
    ) -> TreeDrafter:
        """The tree policy over `reader` (a trained head's, say),
        with `settings`' limits; `kind` names it in reports."""
        return cls(None, name, settings.budget, settings.depth, settings.width, reader=reader, kind=kind)

    # --- the drafter contract (specdec.engine.contract) --------------------------------------------

    def begin(self, generation: Generation) -> None:
        self.reader.begin(generation)
        c = generation.costs.c if self.c is None else self.c
        s = generation.costs.verify_slope if self.verify_slope is None else self.verify_slope
        self.vocab_size = generation.vocab_size
        self.texts = {
            row: TreeText(ConfidenceStop(c=c, verify_slope=s, max_gamma=self.depth, verify=generation.costs.verify))
            for row in generation.prompts
        }

    def draft(self, requests: dict[int, DraftRequest]) -> dict[int, DraftTree]:
        return {
            row: self.grow(row, request.sequence, request.limit, request.sampling, request.generator)
            for row, request in requests.items()
        }

    def observe(self, verified: dict[int, Verified]) -> None:
        for row, seen in verified.items():
            if seen.finished:
                self.texts.pop(row, None)
                self.reader.forget(row)
                continue
            if seen.proposal.size:
                self.calibrate(self.texts[row], seen.tested)
            self.reader.observe(row, seen)

    # --- growing the tree --------------------------------------------------------------------------

    @torch.inference_mode()
    def grow(
        self,
        row: int,
        sequence: torch.Tensor,
        max_depth: int,
        sampling: SamplingConfig,
        generator: torch.Generator | None,
    ) -> DraftTree:
        """Grow a tree after `sequence` [n] (the whole accepted text), at most `max_depth` levels deep."""
        state = self.texts[row]
        state.confidences = []
        depth = min(self.depth, max_depth)
        if depth <= 0:
            return DraftTree.empty()
        logits = self.reader.read_text(row, sequence)  # [1, V]: q after the root
        rule = state.rule
        c = rule.c

        tokens: list[int] = []
        parents: list[int] = []
        reach: list[float] = []  # per node: R(n), the chance the target walks down to it
        q_rows: dict[int, torch.Tensor] = {}
        frontier, frontier_reach = [ROOT], [1.0]
        passes = 1
        for level in range(depth):
            q = frontier_distributions(logits, sampling)  # [F, V]
            if not sampling.greedy:
                q_rows |= {node: q[i] for i, node in enumerate(frontier)}
            nodes = len(tokens)
            cost, expected, room = passes * c + rule.v(nodes), 1.0 + sum(reach), self.budget - nodes  # T and E so far
            counts = self._children_counts(
                rule, q, frontier_reach, expected=expected, cost=cost, nodes=nodes, room=room, first_level=level == 0
            )
            new = []
            for i, count in enumerate(counts):
                for token in draw_children(q[i], count, sampling, generator):
                    confidence = float(q[i, token])
                    new.append(len(tokens))
                    tokens.append(token)
                    parents.append(frontier[i])
                    state.confidences.append(confidence)
                    reach.append(frontier_reach[i] * rule.acceptance(confidence))
            if not new or level + 1 == depth or len(tokens) == self.budget:
                break
            best = sorted(new, key=lambda node: -reach[node])[: self.width]
            gain = sum(reach[node] * rule.acceptance(state.confidences[node]) for node in best)
            n = len(tokens)
            if gain * (passes * c + rule.v(n)) <= (1.0 + sum(reach)) * (c + rule.v(n + len(best)) - rule.v(n)):
                break  # another level would lower the rate
            logits = self.reader.read_level(row, new, tokens, parents)  # [len(new), V]
            passes += 1
            frontier, frontier_reach = new, [reach[node] for node in new]
        table = None if sampling.greedy else q_table(q_rows, len(tokens), self.vocab_size, sequence.device)
        return DraftTree(sequence.new_tensor(tokens, dtype=torch.long), tuple(parents), table)

    def calibrate(self, state: TreeText, tested: tuple[bool | None, ...]) -> None:
        """Teach the calibration a(confidence) every node the rule
        tested (True accepted, False rejected, None untested)."""
        state.rule.observe(
            [(state.confidences[node], bool(outcome)) for node, outcome in enumerate(tested) if outcome is not None]
        )

    def _children_counts(
        self,
        rule: ConfidenceStop,
        q: torch.Tensor,
        frontier_reach: list[float],
        expected: float,
        cost: float,
        nodes: int,
        room: int,
        first_level: bool,
    ) -> list[int]:
        """How many children each frontier node gets: the best slots
        while each beats the round's rate (module docstring)."""
        width = min(self.width, room, q.shape[-1])
        top = q.topk(width, dim=-1).values.tolist()  # [F, width], rows decreasing
        slots = sorted(
            (
                (reach * rule.acceptance(value), f)
                for f, (reach, row) in enumerate(zip(frontier_reach, top))
                for value in row
                if value > 0
            ),
            reverse=True,
        )[:width]
        counts = [0] * len(frontier_reach)
        for rank, (value, f) in enumerate(slots):
            extra = rule.v(nodes + 1) - rule.v(nodes)  # what one more verified node costs
            if not (first_level and rank == 0) and value * cost <= expected * extra:
                break
            counts[f] += 1  # only the count matters: `draw_children` picks (or draws) them
            expected, cost, nodes = expected + value, cost + extra, nodes + 1
        return counts
