"""A draft model that grows a token tree each round, one batched draft pass per level.

Notation: q is the draft's distribution, p the target's. Each round the drafter grows a tree
(`specdec.trees`) from the root, the last token of the text, level by level:

    1. one draft pass gives q at every node of the frontier (at the first level: the root, fed
       together with the text the draft has not seen yet)
    2. every frontier node f offers "slots" for children: the j-th slot is worth
       score(f) * (j-th largest q_f), score(f) being the product of q along f's path (the draft's
       guess of how likely the target is to walk that far). The best `width` slots over the whole
       frontier are taken, if worth at least `min_probability`, within the node `budget`
       (EAGLE-2's idea, Li et al. 2024: expand where the draft's path probability is high, so
       confident stretches grow deep and unsure ones wide)
    3. each chosen node draws its children: greedy, its most likely tokens; sampling, draws from q
       without replacement (what the acceptance rule needs, `specdec.tree_verification`)
    4. the new nodes are the next frontier; the draft reads them all in ONE pass with a tree
       attention mask (each sees the text and its ancestors), unless the tree is finished

How many children a node gets is decided from what the draft knew before drawing them (path
scores and q), never from the children themselves: that keeps the sampled output exactly p.

After the target's verdict the engine calls `keep_path` with the accepted nodes: the draft's
cache keeps the text and the accepted nodes it has read, and drops every other branch; the rest of
the path and the target's next token are read in the next round's first pass.

    drafter = TreeDrafter(draft_model)                   # defaults tuned on the zoo's Qwen pair
    speculative_generate(target, drafter, input_ids, temperature=0)

Not handled: a draft with another tokenizer, batches.
"""

from __future__ import annotations

import torch
from transformers import PreTrainedModel

from specdec.errors import SpecdecError
from specdec.kv_cache import CachedModel
from specdec.sampling import SamplingConfig, fit_vocabulary, probabilities, sample
from specdec.trees import ROOT, DraftTree


class TreeDrafter:
    """A small causal LM drafting a tree of at most `budget` tokens and `depth` levels per round.

    `width` caps the nodes added per level (and the children of one node); a node is added only if
    its path score is at least `min_probability` (the first level always gets one node, so the
    budget-1 tree is the chain with gamma 1).
    """

    reports_confidence = False   # the tree has its own stopping rule (min_probability)

    def __init__(self, model: PreTrainedModel, name: str | None = None, budget: int = 12, depth: int = 6, width: int = 3,
                 min_probability: float = 0.05) -> None:
        if budget < 1 or depth < 1 or width < 1:
            raise SpecdecError(f"a tree needs budget, depth and width of at least 1, got {budget}, {depth} and {width}")
        if not 0.0 <= min_probability < 1.0:
            raise SpecdecError(f"min_probability must be in [0, 1), got {min_probability}")
        self.model = model
        self.name = name or getattr(model.config, "_name_or_path", "") or type(model).__name__
        self.budget, self.depth, self.width, self.min_probability = budget, depth, width, min_probability
        self.cached = CachedModel(model)
        self.vocab_size = self.cached.vocab_size
        self.embedding_rows = model.get_input_embeddings().num_embeddings
        self.passes = 0
        self._text = 0                  # cached tokens of text when the last tree was grown
        self._read: list[int] = []      # nodes of the last tree the draft has read, in cache order

    def start(self, prompt: torch.Tensor, vocab_size: int) -> None:
        self.cached = CachedModel(self.model)
        self.vocab_size = vocab_size
        self.passes = 0
        self._text, self._read = 0, []

    @torch.inference_mode()
    def propose_tree(self, sequence: torch.Tensor, max_depth: int, sampling: SamplingConfig,
                     generator: torch.Generator | None) -> DraftTree:
        """Grow a tree after `sequence` [n] (the whole accepted text), at most `max_depth` levels deep."""
        self._read = []
        self._text = self.cached.length
        depth = min(self.depth, max_depth)
        if depth <= 0:
            return DraftTree(sequence.new_empty(0), (), None)
        pending = sequence[self.cached.length:]                                # [m >= 1] unseen text, the root last
        pending = pending.masked_fill(pending >= self.embedding_rows, 0)      # (as ModelDrafter: only q can suffer)
        logits = fit_vocabulary(self.cached.feed(pending, keep=1), self.vocab_size)  # [1, V]
        self._text = self.cached.length

        tokens: list[int] = []
        parents: list[int] = []
        depths: list[int] = []
        scores: list[float] = []            # per node: the product of q along its path
        q_rows: dict[int, torch.Tensor] = {}
        frontier, frontier_scores = [ROOT], [1.0]
        for level in range(depth):
            q = self._distributions(logits, sampling)                          # [F, V]
            if not sampling.greedy:
                q_rows |= {node: q[i] for i, node in enumerate(frontier)}
            counts = self._children_counts(q, frontier_scores, first_level=level == 0, room=self.budget - len(tokens))
            new = []
            for i, count in enumerate(counts):
                for token in self._draw(q[i], count, sampling, generator):
                    new.append(len(tokens))
                    tokens.append(token)
                    parents.append(frontier[i])
                    depths.append(level + 1)
                    scores.append(frontier_scores[i] * float(q[i, token]))
            if not new or level + 1 == depth or len(tokens) == self.budget:
                break
            logits = self._read_level(new, tokens, parents, depths)            # [len(new), V]
            frontier, frontier_scores = new, [scores[node] for node in new]
        self.passes = self.cached.passes
        q_table = None
        if not sampling.greedy:
            q_table = torch.zeros(len(tokens) + 1, self.vocab_size, device=sequence.device)  # [N + 1, V]
            for node, row in q_rows.items():
                q_table[node + 1] = row
        return DraftTree(sequence.new_tensor(tokens, dtype=torch.long), tuple(parents), q_table)

    def keep_path(self, path: tuple[int, ...]) -> None:
        """The target accepted `path`: keep the text and the accepted nodes the draft has read, drop the rest."""
        read = [node for node in path if node in self._read]                  # a prefix of the path
        columns = list(range(self._text)) + [self._text + self._read.index(node) for node in read]
        self.cached.keep(columns)
        self._read = []

    def _distributions(self, logits: torch.Tensor, sampling: SamplingConfig) -> torch.Tensor:
        """q at each frontier node, [F, V]: warped like p when sampling; greedy, the plain softmax (for scores)."""
        if sampling.greedy:
            return torch.softmax(logits.float(), dim=-1)
        return probabilities(logits, sampling)

    def _children_counts(self, q: torch.Tensor, frontier_scores: list[float], first_level: bool, room: int) -> list[int]:
        """How many children each frontier node gets: the best slots by path score, see the module docstring."""
        width = min(self.width, room, q.shape[-1])
        slots = q.topk(width, dim=-1).values * q.new_tensor(frontier_scores)[:, None]   # [F, width], rows decreasing
        best = slots.flatten().topk(min(width, slots.numel()))
        counts = [0] * len(frontier_scores)
        for rank, (value, index) in enumerate(zip(best.values.tolist(), best.indices.tolist())):
            if value <= 0 or (value < self.min_probability and not (first_level and rank == 0)):
                break
            counts[index // width] += 1       # slots of one row are taken best first: counts are prefixes
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

    def _read_level(self, new: list[int], tokens: list[int], parents: list[int], depths: list[int]) -> torch.Tensor:
        """One draft pass over the nodes `new`, each attending to the text and its ancestors; their logits [n, V]."""
        cached = self.cached.length
        attend = torch.zeros(len(new), cached + len(new), dtype=torch.bool)
        attend[:, :self._text] = True
        for i, node in enumerate(new):
            attend[i, cached + i] = True
            ancestor = parents[node]
            while ancestor != ROOT:
                attend[i, self._text + self._read.index(ancestor)] = True
                ancestor = parents[ancestor]
        positions = torch.tensor([self._text - 1 + depths[node] for node in new])
        ids = torch.tensor([tokens[node] for node in new])
        ids = ids.masked_fill(ids >= self.embedding_rows, 0)
        logits = self.cached.feed(ids, keep=len(new), attend=attend, positions=positions)   # [n, V_draft]
        self._read += new
        return fit_vocabulary(logits, self.vocab_size)
