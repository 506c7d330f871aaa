"""The default drafting policy: which drafter, which gamma schedule, priced with which costs c and v(k).

Notation: c is a draft step's cost over a target step, v(k) the cost of a verification pass over k drafted
tokens in target steps (measured, or the line 1 + beta k with beta guessed by the target's runtime), gamma the
tokens drafted per round, alpha the chance a tested draft is kept.

The planner (`specdec.planner.plan`) asks this module once per generation; every report reads the plan's
description, carried onto the result:

    1. the drafter: the one the run spec names; for a draft model left to the policy, the registry's TREE
       method where trees pay (`trees_pay`), gamma is left out and there is one text, else its CHAIN; where
       even a draft agreeing `ASSUMED_ALPHA` of the time is predicted slower than the target alone (measured
       costs only), the registry's FREE_DRAFT under a gamma that may be 0 (a plain step), or plain decoding
       where even a free draft that is always right could not pay (`plain_or_free`)
    2. the costs: measured on this machine (`specdec.runtime.costs`), else c from the weight bytes of the
       model a draft step runs and beta as the target's runtime guesses it (`Model.verify_slope`)
    3. the schedule of a chain drafter: the gamma asked for, an adaptive gamma asked for, else the stop rule
       (`ConfidenceStop`) for a drafter that reports its confidence, else an adaptive gamma on measured costs,
       else a fixed `ConfidenceStop.fallback_gamma`; a drafter that sizes its own rounds gets none, and a gamma
       for it is an error
    4. a drafter that needs what the target's runtime does not give (hidden states, layers) is refused in one
       line naming the runtime that serves it

The prices (c and v(k) estimated, a chain's predicted speedup, where trees pay) are `specdec.planner.pricing`'s. The
methods are the registry's (`specdec.registry`): this module names none.
"""

from __future__ import annotations

from dataclasses import replace

from specdec.drafting.no_draft import PLAIN
from specdec.engine.contract import Capabilities, DraftCosts, Drafter, check_drafter
from specdec.engine.drafting_plan import DraftingPlan
from specdec.engine.inputs import check_round_length
from specdec.engine.model import Model
from specdec.engine.schedule import AdaptiveGamma, FixedGamma, GammaSchedule
from specdec.engine.stop_rule import ConfidenceStop
from specdec.errors import SpecdecError
from specdec.planner.pricing import best_chain, estimated_costs, trees_pay
from specdec.registry import CHAIN, DRAFT_MODEL, FREE_DRAFT, FREE_DRAFT_OPTIONS, METHODS, TARGET, TREE, Resources

# with measured costs: a draft model is kept only if agreeing this often would beat the target alone
ASSUMED_ALPHA = 0.9
FREE_PRIOR_ALPHA = 0.75  # free drafting's acceptance before a run has tested any: it tries, and learns (AdaptiveGamma)
FASTEST_PLAN_FLAG = "--method auto"  # how a person asks for the fastest exact plan (`specdec.run_spec.FASTEST_PLAN`)
MAX_ADAPTIVE_GAMMA = 16  # the longest round an adaptive gamma picks when the run spec does not say


def plan_drafting(
    target: Model,
    drafter: Drafter,
    gamma: int | None = None,
    rows: int = 1,
    by_default: bool = False,
    costs: DraftCosts | None = None,
    why: str = "",
    adaptive: int | None = None,
    schedule: GammaSchedule | None = None,
) -> DraftingPlan:
    """The plan for generating `rows` texts with `target` (a model behind `specdec.engine.model`) drafted by `drafter`:
    `gamma` tokens a round, or an adaptive gamma of at most `adaptive`, or a `schedule` of your own (a `GammaSchedule`),
    or (all None) the schedule the policy picks.

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> from specdec.runtime import as_model
    >>> tiny = as_model(LlamaForCausalLM(LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=1,
    ...                                              num_attention_heads=1, vocab_size=4)))
    >>> # c = 1, float32 CPU
    >>> plan = plan_drafting(tiny, METHODS[CHAIN].make({DRAFT_MODEL: tiny}, METHODS[CHAIN].options()))
    >>> plan.description, plan.costs
    ('chain, stop rule', DraftCosts(c=1.0, verify_slope=0.5, verify=(), catch_up=0.0))
    """
    if gamma is not None and not isinstance(gamma, int):
        raise SpecdecError(
            f"gamma is a whole number of drafted tokens a round, got a {type(gamma).__name__}: give a schedule "
            "object (AdaptiveGamma, ConfidenceStop) as schedule="
        )
    check_drafter(drafter)
    costs, capabilities = costs or estimated_costs(target, drafter.draft_model), drafter.capabilities
    if sum(choice is not None for choice in (gamma, adaptive, schedule)) > 1:
        raise SpecdecError("give one of gamma, adaptive and schedule: each says how long a round is")
    check_round_length(drafter.name, capabilities.sizes_rounds, gamma, adaptive, schedule)
    check_serves(target, drafter)  # what the drafter's own draft model can do, the drafter checks (`begin`)
    if rows > 1 and not target.traits.batches:
        raise SpecdecError(
            "the target has sliding-window layers, which batches do not handle: give one prompt at a time"
        )
    chosen = None if capabilities.sizes_rounds else schedule or schedule_for(gamma, adaptive, drafter, costs)
    return DraftingPlan(drafter, chosen, costs, by_default, why)


def check_serves(target: Model, drafter: Drafter) -> None:
    """Refuse, in one line naming the runtime that serves it, a
    drafter that needs what the target's runtime does not give."""
    refusal = refused(target, drafter.capabilities, drafter.name)
    if refusal is not None:
        raise SpecdecError(refusal)


def refused(target: Model, capabilities: Capabilities, name: str) -> str | None:
    """Why a drafter declaring `capabilities` cannot run on `target`
    (its runtime, its sliding windows), or None when it can."""
    traits = target.traits
    if (capabilities.hidden_states or capabilities.hidden_layers) and not traits.hidden_states:
        return (
            f"{name} reads the target's hidden states, which the {traits.runtime} runtime does not give: "
            "run it on the torch runtime (--runtime torch)"
        )
    if capabilities.internals and not traits.internals:
        return (
            f"{name} reaches into the target's layers, which the {traits.runtime} runtime does not expose: "
            "run it on the torch runtime (--runtime torch)"
        )
    if capabilities.full_attention and traits.sliding_window:
        return (
            f"{name} needs full-attention caches ({capabilities.drafts}) and this target has sliding-window layers: "
            "draft a chain with a draft model instead"
        )
    return None


def plan_for_draft_model(
    target: Model,
    draft: Model,
    gamma: int | None = None,
    rows: int = 1,
    name: str | None = None,
    costs: DraftCosts | None = None,
    adaptive: int | None = None,
    schedule: GammaSchedule | None = None,
    fastest: bool = False,
) -> DraftingPlan:
    """The plan for a draft model sharing the target's tokenizer: with gamma left out, the policy's choice (module
    docstring); with a gamma, a chain of that gamma. Without measured `costs`, c from the weights and beta guessed.

    Where the measured costs say no round with the draft model can beat the target alone, the plan still drafts with it
    (the draft at work, the verdict and the fastest exact plan in its description: `shown_anyway`), unless `fastest`
    asks for the fastest exact plan (`--method auto`): then a free draft or plain decoding (`plain_or_free`)."""
    costs = costs or estimated_costs(target, draft)
    resources: Resources = {TARGET: target, DRAFT_MODEL: draft}
    named = name or draft.name
    named_length = (gamma, adaptive, schedule) != (None, None, None)
    if not named_length and costs.verify:
        chain = best_chain(costs, ASSUMED_ALPHA)
        if chain[1] < 1.0:
            predicted = (
                f"predicted at {chain[1]:.2f}x the target alone (c = {costs.c:.2f}, v({chain[0]}) = "
                f"{costs.v(chain[0]):.2f}, measured here)"
            )
            faster = plain_or_free(
                target,
                costs,
                rows,
                f"instead of {named}, which even agreeing {ASSUMED_ALPHA:.0%} of the time is {predicted}",
            )
            if fastest:
                return faster
            fastest_here = (
                f"plain decoding ({FASTEST_PLAN_FLAG})"
                if faster.drafter.name == PLAIN.drafter.name
                else f"{faster.drafter.name} ({FASTEST_PLAN_FLAG}), at most {free_ceiling(costs):.2f}x where all its "
                "drafts are right"
            )
            return shown_anyway(
                target,
                draft,
                costs,
                rows,
                f"its best chain, even agreeing {ASSUMED_ALPHA:.0%} of the time, is "
                f"{predicted}, and these rounds are longer; the fastest exact plan here is {fastest_here}",
            )
    tree = not named_length and rows == 1 and trees_pay(target, draft, costs)
    method = METHODS[TREE if tree else CHAIN]
    drafter = method.make(resources, method.options())
    return plan_drafting(
        target, drafter, gamma, rows, by_default=not named_length, costs=costs, adaptive=adaptive, schedule=schedule
    )


def shown_anyway(target: Model, draft: Model, costs: DraftCosts, rows: int, verdict: str) -> DraftingPlan:
    """The default where a draft model cannot pay here (a CPU with few cores, where a pass over k tokens costs nearly k
    steps): it drafts all the same, so that a run shows the draft at work, with the verdict in its description. Its
    chain's rounds are priced by the stop rule as where a pass over k tokens costs one step (a GPU, a target bound by
    reading its weights), with the draft's measured c; the measured costs stay the plan's, for every report.

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> from specdec.runtime import as_model
    >>> tiny = as_model(LlamaForCausalLM(LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=1,
    ...                                              num_attention_heads=1, vocab_size=4)))
    >>> shown = shown_anyway(tiny, tiny, DraftCosts(0.6, 1.0, (1.0, 2.0, 3.0)), 1, "it is predicted at 0.50x")
    >>> shown.description, shown.schedule.verify_slope, shown.costs.verify
    ('chain, stop rule: the default, to show the draft at work; it is predicted at 0.50x', 0.0, (1.0, 2.0, 3.0))
    """
    method = METHODS[CHAIN]
    drafter = method.make({TARGET: target, DRAFT_MODEL: draft}, method.options())
    schedule = ConfidenceStop(c=costs.c, verify_slope=0.0)
    return plan_drafting(
        target,
        drafter,
        rows=rows,
        by_default=True,
        costs=costs,
        schedule=schedule,
        why=f"the default, to show the draft at work; {verdict}",
    )


def free_ceiling(costs: DraftCosts) -> float:
    """The most a free draft (c = 0) that is always right could make of these verification costs: the best chain's
    predicted speedup at alpha 0.999.

    >>> free_ceiling(DraftCosts(0.6, 1.0, (1.0, 1.9, 2.59, 3.66)))                  # 3 tokens for 2.59 steps
    1.157
    """
    return best_chain(DraftCosts(0.0, costs.verify_slope, costs.verify), 0.999)[1]


def plain_or_free(target: Model, costs: DraftCosts, rows: int, why: str) -> DraftingPlan:
    """Drafting that costs nothing where it can pay: the registry's FREE_DRAFT under a gamma that is 0 (a plain step)
    wherever no gamma is predicted to beat the target alone; plain decoding where even a free draft that is always right
    could not (v(k) > k + 1)."""
    free = DraftCosts(0.0, costs.verify_slope, costs.verify)
    if free_ceiling(costs) <= 1.0:
        return replace(PLAIN, costs=costs, by_default=True, why=f"plain decoding, the fastest exact plan here, {why}")
    method = METHODS[FREE_DRAFT]
    drafter = method.make({TARGET: target}, method.parse_options(dict(FREE_DRAFT_OPTIONS)))
    return plan_drafting(
        target,
        drafter,
        None,
        rows,
        by_default=True,
        costs=free,
        why=f"{method.name}, the fastest exact plan here, {why}",
    )


def plan_for(
    target: Model,
    draft: Drafter | object,
    gamma: int | None = None,
    rows: int = 1,
    name: str | None = None,
    costs: DraftCosts | None = None,
    adaptive: int | None = None,
    schedule: GammaSchedule | None = None,
    fastest: bool = False,
) -> DraftingPlan:
    """The one way into the drafting policy, for every door: a draft model gets the policy's choice for it
    (`plan_for_draft_model`: a chain under the stop rule, or a tree where trees pay), any other drafter runs as it is
    (`plan_drafting`, one line for what it cannot take). `plan` (a run spec's door), `speculative_generate` (models you
    loaded) and `default_drafter` all ask here.
    """
    from specdec.runtime import as_model, is_model

    if is_model(draft):
        return plan_for_draft_model(target, as_model(draft), gamma, rows, name, costs, adaptive, schedule, fastest)
    return plan_drafting(target, draft, gamma, rows, costs=costs, adaptive=adaptive, schedule=schedule)  # type: ignore[arg-type]
    # (anything else is taken as a drafter: `plan_drafting` checks it against the contract and says what is missing)


def default_drafter(target: object, draft: object, name: str | None = None) -> Drafter:
    """What a draft model drafts by default: a token tree where trees pay, else a chain with the stop rule.

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> import torch
    >>> tiny = LlamaForCausalLM(LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=1,
    ...     num_attention_heads=1, vocab_size=4))
    >>> default_drafter(tiny, tiny).capabilities.drafts                 # c = 1, but float32 on a CPU: beta = 0.5
    'chain'
    >>> default_drafter(tiny.to(torch.bfloat16), tiny.to(torch.bfloat16)).capabilities.drafts
    'tree (budget 16)'
    """
    from specdec.runtime import as_model

    return plan_for(as_model(target), draft, None, 1, name).drafter


def schedule_for(gamma: int | None, adaptive: int | None, drafter: Drafter, costs: DraftCosts) -> GammaSchedule | None:
    """The gamma schedule of a chain drafter (None for one that sizes its own rounds); see the module docstring.

    >>> from specdec.registry import FREE_DRAFT
    >>> lookup, costs = METHODS[FREE_DRAFT].make({}, METHODS[FREE_DRAFT].options()), DraftCosts(0.0, 0.05)
    >>> schedule_for(4, None, lookup, costs).describe(), schedule_for(None, None, lookup, costs).describe()
    ('chain, gamma 4', 'chain, gamma 4')
    """
    if drafter.capabilities.sizes_rounds:
        return None
    if gamma is not None:
        return FixedGamma(gamma)
    if adaptive is not None:
        return AdaptiveGamma(costs, max_gamma=adaptive)
    if not drafter.capabilities.reports_confidence:
        if costs.verify:  # measured costs: the gamma they predict best, plain steps included
            return AdaptiveGamma(costs, max_gamma=MAX_ADAPTIVE_GAMMA, prior_alpha=FREE_PRIOR_ALPHA, plain=True)
        return FixedGamma(ConfidenceStop.fallback_gamma)
    return ConfidenceStop(c=costs.c, verify_slope=costs.verify_slope, verify=costs.verify)
