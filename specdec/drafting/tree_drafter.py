"""A draft model that grows a token tree each round, one batched draft pass per level.

Notation: q is the draft's distribution, p the target's, c the cost of a draft pass over a target
step, s the cost of one more token in the target's verification pass (v(n) = 1 + s n). Each round
the drafter grows a tree (`specdec.engine.trees`) from the root, the last token of the text, level by
level, with the arithmetic of the chain's stop rule (`specdec.engine.stop_rule`) extended to trees:

    a(x)     the calibrated chance a node drafted with confidence q(x) is accepted (ConfidenceStop)
    R(n)     = a(x_1) a(x_2) ... a(n)    the chance the target walks from the root down to node n
    E        = 1 + sum of R(n)           expected tokens the round emits (the accepted path + one)
    T        = L c + 1 + s N             the round's cost in target steps: L draft passes, N nodes

    1. one draft pass gives q at every frontier node (at the first level: the root, read together
       with the text the draft has not seen yet)
    2. every frontier node f offers "slots" for children, the j-th worth R(f) a(j-th largest q_f);
       slots are taken best first, at most `width` per level and `budget` in all, while a slot
       adds more expected tokens per unit of cost than the round has so far (R * T > E * s): where
       the draft is sure the tree stays a chain, where it hesitates it branches (EAGLE-2's idea,
       Li et al. 2024, with a cost model instead of a fixed size)
    3. each chosen node draws its children: greedy, its most likely tokens; sampling, draws from q
       without replacement (what the acceptance rule needs, `specdec.engine.tree_verification`)
    4. another level is read (one draft pass over the new nodes, each attending to the text and its
       ancestors through a tree mask) while its predicted gain, sum of R(n) a(n) over the new nodes
       (easy stretches stay easy), beats its cost: gain * T > E * (c + s * nodes), and `depth` allows

With width 1 this is exactly the chain's stop rule. The calibration learns from every tested node
of every round (confidence -> accepted or not). How many children a node gets is decided from what
the draft knew before drawing them (never from the children themselves) and from past rounds: that
keeps the sampled output exactly p.

After the target's verdict (`observe`) the draft's cache keeps the text and the accepted nodes it has
read, and drops every other branch (`keep_path`); the rest of the path and the target's next token are
read in the next round's first pass.

    drafter = TreeDrafter(draft_model)         # c and s estimated from the weights, like the chain's rule
    speculative_generate(target, drafter, input_ids, temperature=0)

Several texts each grow their own tree, with a cache and a calibration of their own (`TreeText`), one
after the other: their draft passes are not shared (by default a batch drafts chains, which are).
Not handled: a draft with another tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch
from transformers import PreTrainedModel

from specdec.drafting.draft_model import check_draft_model, model_name
from specdec.engine.contract import Capabilities, DraftRequest, Generation, Verified
from specdec.engine.kv_cache import CachedModel
from specdec.engine.sampling import SamplingConfig, fit_vocabulary, probabilities, sample
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
            raise SpecdecError(f"a tree needs budget, depth and width of at least 1, got {self.budget}, {self.depth} and {self.width}")

    def describe(self) -> str:
        return f"tree (budget {self.budget})"


@dataclass
class TreeText:
    """What the tree drafter keeps for one text: its draft cache, its calibration, and the last tree's bookkeeping."""

    cached: CachedModel
    rule: ConfidenceStop                               # the calibration a(confidence), learned on this text
    text: int = 0                                      # cached tokens of text when the last tree was grown
    read: list[int] = field(default_factory=list)     # nodes of the last tree the draft has read, in cache order
    confidences: list[float] = field(default_factory=list)   # q(token) of each node of the last tree


class TreeDrafter:
    """A small causal LM drafting a tree of at most `budget` nodes, `depth` levels and `width` nodes per level.

    `c` and `verify_slope` (s) price a draft pass and a verified node in target steps; None takes the
    ones `speculative_generate`'s policy estimated from the weights, as for the chain's stop rule. The first
    level always gets one node, so `TreeDrafter(model, budget=1)` is the chain with gamma 1.
    `TreeDrafter.from_settings(model, TreeSettings(...))` takes the limits as one frozen value.
    """

    capabilities = Capabilities(sizes_rounds=True, full_attention=True, drafts=TreeSettings().describe())
    default_budget = TreeSettings.budget

    def __init__(self, model: PreTrainedModel, name: str | None = None, budget: int = default_budget, depth: int = 12, width: int = 3,
                 c: float | None = None, verify_slope: float | None = None) -> None:
        self.settings = TreeSettings(budget, depth, width)
        if (c is not None and c < 0) or (verify_slope is not None and verify_slope < 0):
            raise SpecdecError(f"the costs c and verify_slope must be >= 0, got {c} and {verify_slope}")
        self.model = self.draft_model = model
        self.name = name or model_name(model)
        self.capabilities = replace(TreeDrafter.capabilities, drafts=self.settings.describe())
        self.budget, self.depth, self.width = budget, depth, width
        self.c, self.verify_slope = c, verify_slope
        self.vocab_size = 0                              # the target's, told by `begin`
        self.texts: dict[int, TreeText] = {}
        self.steps: dict[int, int] = {}                  # draft passes per row

    @classmethod
    def from_settings(cls, model: PreTrainedModel, settings: TreeSettings, name: str | None = None) -> TreeDrafter:
        return cls(model, name, settings.budget, settings.depth, settings.width)

    @property
    def embedding_rows(self) -> int:
        return self.model.get_input_embeddings().num_embeddings

    # --- the drafter contract (specdec.engine.contract) --------------------------------------------

    def begin(self, generation: Generation) -> None:
        check_draft_model(self.model, generation)
        self.price(generation.costs.c, generation.costs.verify_slope)
        self.vocab_size = generation.vocab_size
        self.texts = {row: self.start() for row in generation.prompts}
        self.steps = dict.fromkeys(generation.prompts, 0)

    def passes(self, row: int) -> int:
        return self.steps.get(row, 0)

    def draft(self, requests: dict[int, DraftRequest]) -> dict[int, DraftTree]:
        trees = {}
        for row, request in requests.items():
            state = self.texts[row]
            trees[row] = self.grow(state, request.sequence, request.limit, request.sampling, request.generator)
            self.steps[row] = state.cached.passes
        return trees

    def observe(self, verified: dict[int, Verified]) -> None:
        for row, seen in verified.items():
            if seen.finished:
                self.texts.pop(row, None)
            elif seen.proposal is not None and seen.proposal.size:       # (an empty round left the cache as it was)
                self.keep_path(self.texts[row], seen.path, seen.tested)

    # --- growing the tree --------------------------------------------------------------------------

    def price(self, c: float, verify_slope: float) -> None:
        """Set the costs the caller did not give (`speculative_generate` does, from the weights)."""
        self.c = c if self.c is None else self.c
        self.verify_slope = verify_slope if self.verify_slope is None else self.verify_slope

    def start(self) -> TreeText:
        """A new text's state: an empty cache, the calibration's prior."""
        c = 0.3 if self.c is None else self.c
        return TreeText(CachedModel(self.model), ConfidenceStop(c=c, verify_slope=0.05 if self.verify_slope is None else self.verify_slope,
                                                                max_gamma=self.depth))

    @torch.inference_mode()
    def grow(self, state: TreeText, sequence: torch.Tensor, max_depth: int, sampling: SamplingConfig,
             generator: torch.Generator | None) -> DraftTree:
        """Grow a tree after `sequence` [n] (the whole accepted text), at most `max_depth` levels deep."""
        state.read, state.confidences = [], []
        state.text = state.cached.length
        depth = min(self.depth, max_depth)
        if depth <= 0:
            return DraftTree.empty()
        logits = self._read_text(state, sequence)                             # [1, V]: q after the root
        state.text = state.cached.length
        rule = state.rule
        c, s = rule.c, rule.verify_slope

        tokens: list[int] = []
        parents: list[int] = []
        reach: list[float] = []             # per node: R(n), the chance the target walks down to it
        q_rows: dict[int, torch.Tensor] = {}
        frontier, frontier_reach = [ROOT], [1.0]
        passes = 1
        for level in range(depth):
            q = self._distributions(logits, sampling)                          # [F, V]
            if not sampling.greedy:
                q_rows |= {node: q[i] for i, node in enumerate(frontier)}
            cost = passes * c + 1.0 + s * len(tokens)                          # T so far
            counts = self._children_counts(rule, q, frontier_reach, expected=1.0 + sum(reach), cost=cost,
                                           room=self.budget - len(tokens), first_level=level == 0)
            new = []
            for i, count in enumerate(counts):
                for token in self._draw(q[i], count, sampling, generator):
                    confidence = float(q[i, token])
                    new.append(len(tokens))
                    tokens.append(token)
                    parents.append(frontier[i])
                    state.confidences.append(confidence)
                    reach.append(frontier_reach[i] * rule.acceptance(confidence))
            if not new or level + 1 == depth or len(tokens) == self.budget:
                break
            best = sorted(new, key=lambda node: -reach[node])[:self.width]
            gain = sum(reach[node] * rule.acceptance(state.confidences[node]) for node in best)
            if gain * (passes * c + 1.0 + s * len(tokens)) <= (1.0 + sum(reach)) * (c + s * len(best)):
                break                                                          # another level would lower the rate
            logits = self._read_level(state, new, tokens, parents)             # [len(new), V]
            passes += 1
            frontier, frontier_reach = new, [reach[node] for node in new]
        q_table = None
        if not sampling.greedy:
            q_table = torch.zeros(len(tokens) + 1, self.vocab_size, device=sequence.device)  # [N + 1, V]
            for node, row in q_rows.items():
                q_table[node + 1] = row
        return DraftTree(sequence.new_tensor(tokens, dtype=torch.long), tuple(parents), q_table)

    def keep_path(self, state: TreeText, path: tuple[int, ...], tested: tuple[bool | None, ...]) -> None:
        """The target accepted `path`: keep the text and the accepted nodes the draft has read, drop the
        rest; calibrate on every node the rule `tested` (True accepted, False rejected, None untested)."""
        read = [node for node in path if node in state.read]                  # a prefix of the path
        columns = list(range(state.text)) + [state.text + state.read.index(node) for node in read]
        state.cached.keep(columns)
        self.calibrate(state, tested)

    def calibrate(self, state: TreeText, tested: tuple[bool | None, ...]) -> None:
        """Teach the calibration a(confidence) every node the rule tested (True accepted, False rejected, None untested)."""
        if tested:
            state.rule.observe([(state.confidences[node], bool(outcome)) for node, outcome in enumerate(tested) if outcome is not None])
        state.read = []

    def _read_text(self, state: TreeText, sequence: torch.Tensor) -> torch.Tensor:
        """One draft pass over the text the draft has not read yet (the root last): q's logits after the root, [1, V]."""
        pending = sequence[state.cached.length:]                               # [m >= 1] unseen text, the root last
        pending = pending.masked_fill(pending >= self.embedding_rows, 0)      # (as ModelDrafter: only q can suffer)
        return fit_vocabulary(state.cached.feed(pending, keep=1), self.vocab_size)

    def _distributions(self, logits: torch.Tensor, sampling: SamplingConfig) -> torch.Tensor:
        """q at each frontier node, [F, V]: warped like p when sampling; greedy, the plain softmax (for confidences)."""
        if sampling.greedy:
            return torch.softmax(logits.float(), dim=-1)
        return probabilities(logits, sampling)

    def _children_counts(self, rule: ConfidenceStop, q: torch.Tensor, frontier_reach: list[float], expected: float, cost: float,
                         room: int, first_level: bool) -> list[int]:
        """How many children each frontier node gets: the best slots while each beats the round's rate (module docstring)."""
        width = min(self.width, room, q.shape[-1])
        top = q.topk(width, dim=-1).values.tolist()                            # [F, width], rows decreasing
        slots = sorted(((reach * rule.acceptance(value), f) for f, (reach, row) in enumerate(zip(frontier_reach, top))
                        for value in row if value > 0), reverse=True)[:width]
        counts = [0] * len(frontier_reach)
        for rank, (value, f) in enumerate(slots):
            if not (first_level and rank == 0) and value * cost <= expected * rule.verify_slope:
                break
            counts[f] += 1                    # only the count matters: `_draw` picks (or draws) the children
            expected, cost = expected + value, cost + rule.verify_slope
        return counts

    def _draw(self, q: torch.Tensor, count: int, sampling: SamplingConfig, generator: torch.Generator | None) -> list[int]:
        """`count` distinct children from q [V]: the most likely when greedy, else draws without replacement."""
        if count == 0:
            return []
        if sampling.greedy:
            return q.topk(count).indices.tolist()
        drawn, remaining = [], q.clone()
        for _ in range(count):
            token = int(sample(remaining[None], generator))
            drawn.append(token)
            remaining[token] = 0.0
        return drawn

    def _read_level(self, state: TreeText, new: list[int], tokens: list[int], parents: list[int]) -> torch.Tensor:
        """One draft pass over the nodes `new`, each attending to the text and its ancestors; their logits [n, V]."""
        attend, positions = level_layout(state, new, parents)
        ids = torch.tensor([tokens[node] for node in new])
        ids = ids.masked_fill(ids >= self.embedding_rows, 0)
        logits = state.cached.feed(ids, keep=len(new), attend=attend, positions=positions)   # [n, V_draft]
        state.read += new
        return fit_vocabulary(logits, self.vocab_size)


def level_layout(state: TreeText, new: list[int], parents: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """What a level's nodes `new` see in the draft's cache, [n, cached + n] (the text, their ancestors, themselves), and their positions [n]."""
    cached = state.cached.length
    attend = torch.zeros(len(new), cached + len(new), dtype=torch.bool)
    attend[:, :state.text] = True
    for i, node in enumerate(new):
        attend[i, cached + i] = True
        ancestor = parents[node]
        while ancestor != ROOT:
            attend[i, state.text + state.read.index(ancestor)] = True
            ancestor = parents[ancestor]
    return attend, torch.tensor([state.text - 1 + _depth(node, parents) for node in new])


def _depth(node: int, parents: list[int]) -> int:
    """1 for the root's children, 2 for theirs, ..."""
    depth = 0
    while node != ROOT:
        node, depth = parents[node], depth + 1
    return depth
