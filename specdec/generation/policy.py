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
from specdec.drafting.no_draft import NoDraft
from specdec.drafting.prompt_lookup import PromptLookupDrafter
from specdec.drafting.tree_drafter import TreeDrafter
from specdec.engine.contract import Capabilities, DraftCosts, Drafter, check_drafter
from specdec.runtime.costs import weight_cost_ratio
from specdec.engine.inputs import check_counts
from specdec.engine.model import Model
from specdec.engine.schedule import AdaptiveGamma, FixedGamma, GammaSchedule
from specdec.engine.stop_rule import ConfidenceStop
from specdec.errors import SpecdecError
from specdec.reference.theory import walltime_speedup
from specdec.runtime import as_model

TREE_FROM_C = 0.25            # the default drafts a tree when a draft step costs at least this share of a target step ...
TREE_UP_TO_SLOPE = 0.1        # ... and one more token in a verification pass at most this share (v(k) = 1 + s k)
ASSUMED_ALPHA = 0.9           # with measured costs: a draft model is kept only if agreeing this often would beat the target alone
LOOKUP_PRIOR_ALPHA = 0.75     # prompt lookup's acceptance before a run has tested any: it tries, and learns (AdaptiveGamma)
LOOKUP_MATCH = 3              # the default's lookups: only where the text's last 3 tokens came before (shorter matches guess worse)


@dataclass(frozen=True)
class DraftingPlan:
    """What one generation drafts with: decided once, before the first pass."""

    drafter: Drafter
    schedule: GammaSchedule | None        # None: the drafter sizes its own rounds
    costs: DraftCosts
    by_default: bool = False              # True: the policy chose the drafter (a draft model with gamma left out)
    why: str = ""                         # the policy's reason, when it chose something other than the draft it was given

    @property
    def description(self) -> str:
        """How the rounds are drafted, in words, the one wording every report uses: 'chain, stop rule', 'chain, gamma 4',
        'tree (budget 16), the default here' (the policy's own choice says so, with its reason when it has one)."""
        words = self.drafter.capabilities.drafts if self.schedule is None else self.schedule.describe()
        if self.why:
            return f"{words}: {self.why}"
        return f"{words}, the default here" if self.by_default else words

    def schedules(self, rows: int) -> list[GammaSchedule | None]:
        """One schedule per text: the plan's own for one text, a fresh copy of it for each text of a batch."""
        if rows == 1 or self.schedule is None:
            return [self.schedule] * rows
        return [copy.deepcopy(self.schedule) for _ in range(rows)]


def plan_drafting(target: Model, drafter: Drafter, gamma: int | GammaSchedule | None = None, rows: int = 1,
                  by_default: bool = False, costs: DraftCosts | None = None, why: str = "") -> DraftingPlan:
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
    costs, capabilities = costs or _costs(target, drafter.draft_model), drafter.capabilities
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
    return DraftingPlan(drafter, schedule_for(gamma, drafter, costs), costs, by_default, why)


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
                         name: str | None = None, costs: DraftCosts | None = None) -> DraftingPlan:
    """The plan for a draft model sharing the target's tokenizer: with gamma left out, the policy's choice; with a gamma, a
    chain of that gamma. The policy's choice, with `costs` measured on this machine (`specdec.runtime.costs`): where even a
    draft that agrees `ASSUMED_ALPHA` of the time is predicted slower than the target alone, drafting that costs nothing
    (prompt lookup, plain steps where it does not pay either, `plain_or_lookup`); else a `TreeDrafter` where trees pay and
    there is one text, else a `ModelDrafter` under the stop rule. Without measured costs, c from the weights and s guessed."""
    costs = costs or _costs(target, draft)
    if gamma is None and costs.verify:
        chain = best_chain(costs, ASSUMED_ALPHA)
        if chain[1] < 1.0:
            why = (f"the default here, instead of {name or draft.name}, which even agreeing {ASSUMED_ALPHA:.0%} of the time is "
                   f"predicted at {chain[1]:.2f}x the target alone (c = {costs.c:.2f}, v({chain[0]}) = {costs.v(chain[0]):.2f}, "
                   "measured here)")
            return plain_or_lookup(target, costs, rows, why)
    if gamma is None and rows == 1 and trees_pay(target, draft, costs):
        return plan_drafting(target, TreeDrafter(draft, name), None, rows, by_default=True, costs=costs)
    return plan_drafting(target, ModelDrafter(draft, name), gamma, rows, by_default=gamma is None, costs=costs)


def best_chain(costs: DraftCosts, alpha: float, max_gamma: int = 16) -> tuple[int, float]:
    """(gamma, predicted speedup over the target alone) of the best chain with these costs when each draft is accepted with
    chance `alpha` (Leviathan et al.'s formula with the measured v(gamma)).

    >>> best_chain(DraftCosts(0.4, 0.5, (1.0, 1.72, 1.95, 2.73, 3.82)), 0.9, max_gamma=4)
    (2, 0.985)
    """
    speedups = {gamma: round(walltime_speedup(alpha, gamma, costs.c, costs.v(gamma)), 3) for gamma in range(1, max_gamma + 1)}
    best = max(speedups, key=speedups.get)
    return best, speedups[best]


def plain_or_lookup(target: Model, costs: DraftCosts, rows: int, why: str) -> DraftingPlan:
    """Drafting that costs nothing where it can pay: prompt lookup under a gamma that is 0 (a plain step) wherever no gamma is
    predicted to beat the target alone; plain decoding where even a free draft that is always right could not (v(k) > k + 1)."""
    free = DraftCosts(0.0, costs.verify_slope, costs.verify)
    if best_chain(free, 0.999)[1] <= 1.0:
        return plan_drafting(target, NoDraft(), None, rows, by_default=True, costs=costs,
                             why=why.replace("the default here", "plain decoding, the default here", 1))
    schedule = AdaptiveGamma(free, max_gamma=16, prior_alpha=LOOKUP_PRIOR_ALPHA, plain=True)
    return plan_drafting(target, PromptLookupDrafter(max_ngram=LOOKUP_MATCH, min_ngram=LOOKUP_MATCH), schedule, rows, by_default=True,
                         costs=free,
                         why=why.replace("the default here", "prompt lookup, the default here", 1))


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


def trees_pay(target: Model, draft: Model, costs: DraftCosts | None = None) -> bool:
    """Whether the default drafts a tree for this pair: c >= TREE_FROM_C, s <= TREE_UP_TO_SLOPE (s from v(4) where v was
    measured), no sliding window."""
    costs = costs or _costs(target, draft)
    slope = (costs.v(4) - 1.0) / 4 if costs.verify else costs.verify_slope
    dear = costs.c >= TREE_FROM_C and slope <= TREE_UP_TO_SLOPE
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
        if costs.verify:                                  # measured costs: the gamma they predict best, plain steps included
            return AdaptiveGamma(costs, max_gamma=16, prior_alpha=LOOKUP_PRIOR_ALPHA, plain=True)
        return FixedGamma(ConfidenceStop.fallback_gamma)
    return ConfidenceStop(c=costs.c, verify_slope=costs.verify_slope, verify=costs.verify)
