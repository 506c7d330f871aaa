"""The default policy, in one place: which drafter, which gamma schedule, and the costs c and s.

Notation: c is a draft step's cost over a target step, s the cost of one more token in a verification
pass (v(k) = 1 + s k), gamma the tokens drafted per round.

`speculative_generate` asks this module once per generation (`plan_drafting`, or `plan_for_draft_model`
for a plain draft model), and everything that reports what a run drafted (the CLI, the dashboard, the
benchmark) reads the plan's description, carried onto the result, instead of deciding again:

    1. the drafter: the one given; for a plain draft model, a `TreeDrafter` where trees pay (`trees_pay`),
       gamma is left out and there is one text, else a `ModelDrafter` (a chain; several texts draft in
       one draft pass per step); a drafter that needs what the target's runtime does not give (hidden
       states, layers) is refused in one line naming the runtime that serves it
    2. the costs, computed once: c from the weight bytes of the model a draft step runs
       (`drafter.draft_model`; 0 for a model-free drafter), s as the target's runtime guesses it
       (`Model.verify_slope`); drafters that price their rounds get both in `Generation.costs`
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

from specdec.drafting.draft_model import ModelDrafter
from specdec.drafting.tree_drafter import TreeDrafter
from specdec.engine.contract import Capabilities, DraftCosts, Drafter, check_drafter
from specdec.runtime.costs import weight_cost_ratio
from specdec.engine.inputs import check_counts
from specdec.engine.model import Model
from specdec.engine.schedule import FixedGamma, GammaSchedule
from specdec.engine.stop_rule import ConfidenceStop
from specdec.errors import SpecdecError
from specdec.runtime import as_model

TREE_FROM_C = 0.25            # the default drafts a tree when a draft step costs at least this share of a target step ...
TREE_UP_TO_SLOPE = 0.1        # ... and one more token in a verification pass at most this share (v(k) = 1 + s k)


@dataclass(frozen=True)
class DraftingPlan:
    """What one generation drafts with: decided once, before the first pass."""

    drafter: Drafter
    schedule: GammaSchedule | None        # None: the drafter sizes its own rounds
    costs: DraftCosts
    by_default: bool = False              # True: the policy chose the drafter (a draft model with gamma left out)

    @property
    def description(self) -> str:
        """How the rounds are drafted, in words, the one wording every report uses: 'chain, stop rule', 'chain, gamma 4',
        'tree (budget 16), the default here' (the policy's own choice says so)."""
        words = self.drafter.capabilities.drafts if self.schedule is None else self.schedule.describe()
        return f"{words}, the default here" if self.by_default else words

    def schedules(self, rows: int) -> list[GammaSchedule | None]:
        """One schedule per text: the plan's own for one text, a fresh copy of it for each text of a batch."""
        if rows == 1 or self.schedule is None:
            return [self.schedule] * rows
        return [copy.deepcopy(self.schedule) for _ in range(rows)]


def plan_drafting(target: Model, drafter: Drafter, gamma: int | GammaSchedule | None = None, rows: int = 1,
                  by_default: bool = False) -> DraftingPlan:
    """The plan for generating `rows` texts with `target` (a model behind `specdec.engine.model`) drafted by `drafter`.

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> tiny = as_model(LlamaForCausalLM(LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=1, num_attention_heads=1,
    ...                                              vocab_size=4)))
    >>> plan = plan_drafting(tiny, ModelDrafter(tiny))           # c = 1 (the draft is the target's size), float32 on a CPU
    >>> plan.description, plan.costs
    ('chain, stop rule', DraftCosts(c=1.0, verify_slope=0.5, verify=()))
    """
    if gamma is not None and not hasattr(gamma, "next_gamma"):
        check_counts(1, gamma)                                          # a number: 1..64
    check_drafter(drafter)
    costs, capabilities = _costs(target, drafter.draft_model), drafter.capabilities
    if capabilities.sizes_rounds and gamma is not None:
        raise SpecdecError(f"{drafter.name} sizes its own rounds (a tree's budget, a lookup's match): leave gamma out")
    check_serves(target, drafter)
    models = [target] + ([drafter.draft_model] if drafter.draft_model is not None else [])
    if capabilities.full_attention and any(model.traits.sliding_window for model in models[1:]):
        raise SpecdecError(f"{drafter.name} needs full-attention caches ({capabilities.drafts}) and this pair has sliding-window "
                           "layers: draft a chain with a draft model instead")
    if rows > 1:
        for model, role in zip(models, ("target", "draft")):
            if not model.traits.batches:
                raise SpecdecError(f"the {role} has sliding-window layers, which batches do not handle: give one prompt at a time")
    return DraftingPlan(drafter, schedule_for(gamma, drafter, costs), costs, by_default)


def check_serves(target: Model, drafter: Drafter) -> None:
    """Refuse, in one line naming the runtime that serves it, a drafter that needs what the target's runtime does not give."""
    refusal = refused(target, drafter.capabilities, drafter.name)
    if refusal is not None:
        raise SpecdecError(refusal)


def refused(target: Model, capabilities: Capabilities, name: str) -> str | None:
    """Why a drafter declaring `capabilities` cannot run on `target` (its runtime, its sliding windows), or None when it can."""
    traits = target.traits
    if (capabilities.hidden_states or capabilities.hidden_layers) and not traits.hidden_states:
        return (f"{name} reads the target's hidden states, which the {traits.runtime} runtime does not give: "
                "run it on the torch runtime (--runtime torch)")
    if capabilities.internals and not traits.internals:
        return (f"{name} reaches into the target's layers, which the {traits.runtime} runtime does not expose: "
                "run it on the torch runtime (--runtime torch)")
    if capabilities.full_attention and traits.sliding_window:
        return (f"{name} needs full-attention caches ({capabilities.drafts}) and this target has sliding-window layers: "
                "draft a chain with a draft model instead")
    return None


def plan_for_draft_model(target: Model, draft: Model, gamma: int | GammaSchedule | None = None, rows: int = 1,
                         name: str | None = None) -> DraftingPlan:
    """The plan for a draft model sharing the target's tokenizer: with gamma left out, the policy's choice (a `TreeDrafter`
    where trees pay and there is one text, else a `ModelDrafter` under the stop rule); with a gamma, a chain of that gamma."""
    if gamma is None and rows == 1 and trees_pay(target, draft):
        return plan_drafting(target, TreeDrafter(draft, name), None, rows, by_default=True)
    return plan_drafting(target, ModelDrafter(draft, name), gamma, rows, by_default=gamma is None)


def default_drafter(target: object, draft: object, name: str | None = None) -> ModelDrafter | TreeDrafter:
    """What a draft model drafts by default: a `TreeDrafter` where trees pay, else a chain with the stop rule.

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> import torch
    >>> tiny = LlamaForCausalLM(LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=1, num_attention_heads=1, vocab_size=4))
    >>> type(default_drafter(tiny, tiny)).__name__                  # c = 1, but float32 on a CPU: s = 0.5
    'ModelDrafter'
    >>> type(default_drafter(tiny.to(torch.bfloat16), tiny.to(torch.bfloat16))).__name__
    'TreeDrafter'
    """
    return plan_for_draft_model(as_model(target), as_model(draft), None, 1, name).drafter


def trees_pay(target: Model, draft: Model) -> bool:
    """Whether the default drafts a tree for this pair: c >= TREE_FROM_C, s <= TREE_UP_TO_SLOPE, no sliding window."""
    costs = _costs(target, draft)
    dear = costs.c >= TREE_FROM_C and costs.verify_slope <= TREE_UP_TO_SLOPE
    return dear and not target.traits.sliding_window and not draft.traits.sliding_window


def _costs(target: Model, draft: Model | None) -> DraftCosts:
    return DraftCosts(weight_cost_ratio(target, draft), target.verify_slope())


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
    return ConfidenceStop(c=costs.c, verify_slope=costs.verify_slope, verify=costs.verify)
