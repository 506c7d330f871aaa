"""The default policy, in one place: which drafter, which gamma schedule, and the costs c and s.

Notation: c is a draft step's cost over a target step, s the cost of one more token in a verification
pass (v(k) = 1 + s k), gamma the tokens drafted per round.

`speculative_generate` asks this module once per generation (`plan_drafting`), and everything that
reports what a run drafted (the CLI, the dashboard, the benchmark) reads the plan's description
instead of deciding again:

    1. the drafter: the one given; for a plain draft model, a `TreeDrafter` where trees pay (`trees_pay`),
       gamma is left out and there is one text, else a `ModelDrafter` (a chain; several texts draft in
       one draft pass per step)
    2. the costs, computed once: c from the weight bytes of the model a draft step runs
       (`drafter.draft_model`; 0 for a model-free drafter), s guessed from the target's kind
       (`specdec.engine.costs`); drafters that price their rounds get both in `Generation.costs`
    3. the schedule of a chain drafter: the gamma asked for, else the stop rule (`ConfidenceStop` with
       c and s) for a drafter that reports its confidence, else a fixed `ConfidenceStop.fallback_gamma`;
       a drafter that sizes its own rounds gets none, and a gamma for it is an error

Where trees pay: a tree level costs one draft pass for all its nodes, and each node costs s more in the
target's pass, so a tree pays where a draft step is dear and a verified node cheap: c >= TREE_FROM_C and
s <= TREE_UP_TO_SLOPE. On this project's CPU with Qwen2.5-Coder 0.5B for 1.5B in bfloat16 (c 0.32 from
the weights, 0.34 measured; s about 0.04) the tree beat the chain's stop rule, 1.51x vs 1.35x (README,
Benchmark); with the int8 draft (c 0.16 from the weights) it lost to the chain on six prompts (2.11x vs
2.32x). In float32 on a CPU (s = 0.5) the tree's own cost rule keeps it near a chain anyway.
Sliding-window models always draft chains (a tree needs every cached position), one text at a time.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from transformers import PreTrainedModel

from specdec.drafting.draft_model import ModelDrafter
from specdec.drafting.tree_drafter import TreeDrafter
from specdec.engine.batch_cache import check_batchable
from specdec.engine.contract import DraftCosts, Drafter, check_drafter
from specdec.engine.costs import verify_slope_guess, weight_cost_ratio
from specdec.engine.inputs import check_counts
from specdec.engine.kv_cache import has_sliding_window
from specdec.engine.schedule import FixedGamma, GammaSchedule
from specdec.engine.stop_rule import ConfidenceStop
from specdec.errors import SpecdecError

TREE_FROM_C = 0.25            # the default drafts a tree when a draft step costs at least this share of a target step ...
TREE_UP_TO_SLOPE = 0.1        # ... and one more token in a verification pass at most this share (v(k) = 1 + s k)


@dataclass(frozen=True)
class DraftingPlan:
    """What one generation drafts with: decided once, before the prompt pass."""

    drafter: Drafter
    schedule: GammaSchedule | None        # None: the drafter sizes its own rounds
    costs: DraftCosts
    by_default: bool = False              # True: the policy chose the drafter (a draft model with gamma left out)

    @property
    def description(self) -> str:
        """How the rounds are drafted, in words: 'chain, stop rule', 'chain, gamma 4', 'tree (budget 16)', ..."""
        return self.drafter.capabilities.drafts if self.schedule is None else self.schedule.describe()

    def schedules(self, rows: int) -> list[GammaSchedule | None]:
        """One schedule per text: the plan's own for one text, a fresh copy of it for each text of a batch."""
        if rows == 1 or self.schedule is None:
            return [self.schedule] * rows
        return [copy.deepcopy(self.schedule) for _ in range(rows)]


def plan_drafting(target: PreTrainedModel, draft: object, gamma: int | GammaSchedule | None = None, rows: int = 1,
                  name: str | None = None) -> DraftingPlan:
    """The plan for generating `rows` texts with `target` and `draft` (a causal LM or a drafter) and `gamma` (module docstring).

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> tiny = LlamaForCausalLM(LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=1, num_attention_heads=1, vocab_size=4))
    >>> plan = plan_drafting(tiny, tiny)                         # c = 1 (the draft is the target's size), float32 on a CPU
    >>> plan.description, plan.costs
    ('chain, stop rule', DraftCosts(c=1.0, verify_slope=0.5))
    """
    if gamma is not None and not hasattr(gamma, "next_gamma"):
        check_counts(1, gamma)                                          # a number: 1..64
    by_default = isinstance(draft, PreTrainedModel) and gamma is None
    if isinstance(draft, PreTrainedModel):
        trees = by_default and rows == 1 and _trees_pay(_costs(target, draft), target, draft)
        drafter = TreeDrafter(draft, name) if trees else ModelDrafter(draft, name)
    else:
        check_drafter(draft)
        drafter = draft
    costs, capabilities = _costs(target, drafter.draft_model), drafter.capabilities
    if capabilities.sizes_rounds and gamma is not None:
        raise SpecdecError(f"{drafter.name} sizes its own rounds (a tree's budget, a lookup's match): leave gamma out")
    models = [target] + ([drafter.draft_model] if drafter.draft_model is not None else [])
    if capabilities.full_attention and any(has_sliding_window(model) for model in models):
        raise SpecdecError(f"{drafter.name} needs full-attention caches ({capabilities.drafts}) and this pair has sliding-window "
                           "layers: draft a chain with a draft model instead")
    if rows > 1:
        for model, role in zip(models, ("target", "draft")):
            check_batchable(model, role)
    return DraftingPlan(drafter, schedule_for(gamma, drafter, costs), costs, by_default)


def default_drafter(target: PreTrainedModel, draft: PreTrainedModel, name: str | None = None) -> ModelDrafter | TreeDrafter:
    """What a draft model drafts by default: a `TreeDrafter` where trees pay, else a chain with the stop rule.

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> import torch
    >>> tiny = LlamaForCausalLM(LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=1, num_attention_heads=1, vocab_size=4))
    >>> type(default_drafter(tiny, tiny)).__name__                  # c = 1, but float32 on a CPU: s = 0.5
    'ModelDrafter'
    >>> type(default_drafter(tiny.to(torch.bfloat16), tiny.to(torch.bfloat16))).__name__
    'TreeDrafter'
    """
    return plan_drafting(target, draft, None, 1, name).drafter


def trees_pay(target: PreTrainedModel, draft: PreTrainedModel) -> bool:
    """Whether `default_drafter` drafts a tree for this pair: c >= TREE_FROM_C, s <= TREE_UP_TO_SLOPE, no sliding window."""
    return _trees_pay(_costs(target, draft), target, draft)


def _costs(target: PreTrainedModel, draft: PreTrainedModel | None) -> DraftCosts:
    return DraftCosts(weight_cost_ratio(target, draft), verify_slope_guess(target))


def _trees_pay(costs: DraftCosts, target: PreTrainedModel, draft: PreTrainedModel) -> bool:
    dear = costs.c >= TREE_FROM_C and costs.verify_slope <= TREE_UP_TO_SLOPE
    return dear and not has_sliding_window(target) and not has_sliding_window(draft)


def schedule_for(gamma: int | GammaSchedule | None, drafter: Drafter, costs: DraftCosts) -> GammaSchedule | None:
    """The gamma schedule of a chain drafter (None for one that sizes its own rounds); see the module docstring.

    >>> from specdec.drafting.prompt_lookup import PromptLookupDrafter
    >>> costs = DraftCosts(0.0, 0.05)
    >>> schedule_for(4, PromptLookupDrafter(), costs).describe(), schedule_for(None, PromptLookupDrafter(), costs).describe()
    ('chain, gamma 4', 'chain, gamma 4')
    """
    if drafter.capabilities.sizes_rounds:
        return None
    if gamma is not None:
        return FixedGamma(gamma) if isinstance(gamma, int) else gamma
    if not drafter.capabilities.reports_confidence:
        return FixedGamma(ConfidenceStop.fallback_gamma)
    return ConfidenceStop(c=costs.c, verify_slope=costs.verify_slope)
