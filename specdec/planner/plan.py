"""The one plan: a run spec, the loaded resources and this machine's measurements in, what the run does out.

Notation: p is the target, q the draft, gamma the drafted tokens per round, c a draft step's cost over a
target step, v(k) a verification pass over k drafted tokens in target steps.

Every door asks this one function and only prints what it says: `specdec run`, the dashboard's Playground
and Compare, `specdec bench` (through `specdec.pair.resources.LoadedPair.plan`) and `speculative_generate`:

    target_plan, draft_plan = choose_models(spec)        # before loading: each model's runtime and precision
    pair = load_spec(spec)                               # loads what they say (specdec.pair.loading)
    plan = pair.plan(spec)                               # = plan(spec, pair.resources, pair.models, pair.measured, ...)
    print(plan.header())                                 # the line every door prints
    # 'qwen2.5-coder-0.5b → qwen2.5-coder-1.5b: target Q4_K_M on llama.cpp (exact settings) | draft Q4_K_M on
    #  llama.cpp (exact settings) | drafting: tree (budget 16), the default here'

A `Plan` holds each model's plan (`specdec.planner.models.ModelPlan`: runtime, precision, why) and the drafting
plan (`specdec.engine.drafting_plan.DraftingPlan`: the drafter, its schedule, the costs it was priced with, and
the reason in words). The drafter is made from the resources by the registry (`specdec.registry.Method.make`);
drafters that learn across texts are kept in `kept` (the pair's) unless a fresh one is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from specdec.engine.contract import DraftCosts, Drafter
from specdec.engine.drafting_plan import DraftingPlan
from specdec.errors import SpecdecError
from specdec.planner.drafting import plan_for, refused
from specdec.planner.models import ModelPlan
from specdec.registry import DRAFT_MODEL, METHODS, TARGET, Method, Resources, named_or_implied_method
from specdec.run_spec import FASTEST_PLAN, Drafting, RunSpec


@dataclass(frozen=True)
class Plan:
    """What a run does: how each model runs (`target`, `draft`:
    None without a draft model) and how it drafts (`drafting`)."""

    pair_name: str  # "draft->target", as the run spec names the pair
    target: ModelPlan
    draft: ModelPlan | None
    drafting: DraftingPlan

    @property
    def draft_used(self) -> bool:
        """Whether the run drafts with the loaded draft model (the planner may have chosen drafting that needs none)."""
        return self.draft is not None and self.drafting.drafter.draft_model is not None

    def header(self) -> str:
        """The one line every door prints before a run: the pair,
        each model's runtime and precision, the drafting and why."""
        draft_name, target_name = (_short(name) for name in self.pair_name.split("->", 1))
        parts = [f"target {self.target.describe()}"]
        if self.draft is not None:
            parts.append(
                f"draft {self.draft.describe()}" + ("" if self.draft_used else " (loaded to time it, not used)")
            )
        parts.append(f"drafting: {self.drafting.description}")
        return f"{draft_name} → {target_name}: " + " | ".join(parts)


def _short(name: str) -> str:
    """A model's name as a header says it: a zoo name as it is, a path by its last part.

    >>> _short("qwen2.5-coder-1.5b"), _short("/tmp/models/tiny-target")
    ('qwen2.5-coder-1.5b', 'tiny-target')
    """
    return Path(name).name if "/" in name and not name.count("/") == 1 else name


def plan(
    spec: RunSpec,
    resources: Resources,
    models: tuple[ModelPlan, ModelPlan | None],
    measured: DraftCosts | None,
    kept: dict[tuple[object, ...], Drafter] | None = None,
    rows: int = 1,
    fresh: bool = False,
) -> Plan:
    """The plan for `spec` on what was loaded (`resources` by the registry's names, the target always) with this
    machine's `measured` costs of the pair (None: not measured; the policy estimates them). `rows` texts at once; `kept`
    holds drafters that live as long as the pair (those that learn across texts), unless `fresh`."""
    drafting = spec.drafting
    target = resources[TARGET]
    method = run_method(spec, resources)
    if drafting.method in (None, FASTEST_PLAN) and not drafting.options and method.needs == (DRAFT_MODEL,):
        chosen = plan_for(
            target,
            resources[DRAFT_MODEL],
            drafting.gamma,
            rows,
            spec.draft,
            measured,
            drafting.adaptive,
            fastest=drafting.method == FASTEST_PLAN,
        )
    else:
        drafter = drafter_for(method, drafting, resources, kept, fresh)
        costs = measured
        # measured for the pair's draft, not this one's
        if costs is not None and drafter.draft_model is not resources.get(DRAFT_MODEL):
            costs = None if drafter.draft_model is not None else replace(costs, c=0.0)
        chosen = plan_for(target, drafter, drafting.gamma, rows, costs=costs, adaptive=drafting.adaptive)
    return Plan(spec.pair_name, models[0], models[1], chosen)


def run_method(spec: RunSpec, resources: Resources) -> Method:
    """The drafting method of the run: the one the spec names, else the one its draft implies
    (`specdec.registry.named_or_implied_method`); one line for a method the target's runtime cannot serve (it reads the
    target's hidden states or layers), before anything is made."""
    name = None if spec.drafting.method == FASTEST_PLAN else spec.drafting.method
    if name in METHODS:
        refusal = refused(resources[TARGET], METHODS[name].capabilities, name)
        if refusal is not None:
            raise SpecdecError(refusal)
    return named_or_implied_method(spec.draft, resources, name)


def drafter_for(
    method: Method,
    drafting: Drafting,
    resources: Resources,
    kept: dict[tuple[object, ...], Drafter] | None,
    fresh: bool = False,
) -> Drafter:
    """The drafter `drafting` asks of `method`, made from `resources` by the registry; kept in `kept` unless `fresh`."""
    options = method.parse_options(dict(drafting.options))
    refusal = refused(resources[TARGET], method.capabilities_for(options), method.name)
    if refusal is not None:  # before making it: a drafter may reach for what is not there
        raise SpecdecError(refusal)
    key = (method.name, options)
    if fresh or kept is None:
        return method.make(resources, options)
    if key not in kept:
        kept[key] = method.make(resources, options)
    return kept[key]
