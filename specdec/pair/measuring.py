"""A loaded pair's costs on this machine: c and v(k), measured once and kept, and the speedup curve they allow.

Notation: c = a draft step's seconds over a target step's; v(k) = a target pass over k + 1 tokens over one step;
alpha the chance a tested draft is kept.

    costs = machine_costs(pair)                  # measured at load (llama.cpp), else timed now (a few seconds) and kept
    curve = costs_curve(pair, alpha=0.9)         # v(gamma) and the speedup a draft agreeing 90% of the time would give

What is kept, and under what: `specdec.runtime.costs.measured_costs` (the store's costs file), keyed by each model as
its runtime names it (file, size, time, threads), the precision and the CPU (`cost_key`). The plan is not changed by a
timing made here: the planner reads the costs measured at load. How long a pair's last load took is kept too
(`keep_load_time`), per plan (`load_key`), for a page to say before the next first click.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from specdec.engine.costs import CostProfile
from specdec.engine.results import GenerationResult
from specdec.planner.drafting import ASSUMED_ALPHA
from specdec.planner.models import ModelPlan
from specdec.reference.explainer import VerificationCurve, verification_curve
from specdec.registry import DRAFT_MODEL, TARGET, Resources
from specdec.runtime.costs import draft_costs, forget_costs, measured_costs

if TYPE_CHECKING:
    from specdec.pair.resources import LoadedPair


def cost_key(resources: Resources, runtime: str) -> dict[str, object]:
    """What measured costs are kept under: each model as its runtime
    names it (a file, its size, time and threads), the CPU."""
    from specdec.store.machine import cpu_facts

    draft = resources.get(DRAFT_MODEL)
    return {
        "target": resources[TARGET].identity,
        "draft": None if draft is None else draft.identity,
        "runtime": runtime,
        "cpu": cpu_facts()["cpu"],
    }


def machine_costs(pair: LoadedPair) -> CostProfile:
    """c and v(k) of this pair on this machine: those measured at load, else timed now (a few seconds) and kept in the
    store under the models, their precision and the CPU (`measured_costs`)."""
    if pair.costs is not None:
        return pair.costs
    key = cost_key(pair.resources, pair.target.traits.runtime) | {"precision": pair.precisions}
    return measured_costs(pair.target, pair.draft, key)


def costs_curve(pair: LoadedPair, alpha: float = ASSUMED_ALPHA, max_gamma: int = 16) -> VerificationCurve:
    """This machine's measured v(gamma) for the pair, and the speedup it allows (`machine_costs`, `verification_curve`):
    the default policy's alpha unless another is given."""
    costs = draft_costs(machine_costs(pair), pair.target.verify_slope())
    return verification_curve(costs.verify, costs.c, alpha, max_gamma, costs.catch_up)


DISAGREE_BY = 0.2  # a run whose passes took this much more or less than the kept costs predict re-times them


def disagreement(costs: CostProfile, result: GenerationResult) -> float | None:
    """The seconds a run's target passes after the prompt took over what `costs` predict for them (a pass over k drafted
    tokens: a step times v(k)); None where it made no such pass.

    >>> from types import SimpleNamespace as Timed
    >>> costs = CostProfile(0.1, 0.05, {2: 0.2})                                     # v(2) = 2
    >>> # the prompt pass, then 2 drafted
    >>> rounds = [Timed(drafted=(), verify_s=0.5), Timed(drafted=(7, 8), verify_s=0.3)]
    >>> round(disagreement(costs, Timed(rounds=rounds)), 2)
    1.5
    """
    predicted = observed = 0.0
    for round_ in result.rounds[1:]:  # the first round's pass is the prompt's
        predicted += costs.target_step_s * costs.v(len(round_.drafted))
        observed += round_.verify_s
    return observed / predicted if predicted > 0 else None


def draft_disagreement(costs: CostProfile, result: GenerationResult) -> float | None:
    """The seconds a run's draft passes took over what `costs` predict for them, for a run that drafted chains with
    the pair's own draft model (the c it priced its rounds with is the kept one); None otherwise. The first drafting
    round is left out: the draft reads the prompt in it.

    A draft step a drafted token, and the catch-up after a round that kept every drafted token (or drafted none): the
    draft has not read that round's last token, so its next first pass reads two. That pass was timed with the costs
    (`CostProfile.draft_pair_s`); where it was not, it is priced at two steps, what it cost on a CPU (the first click's
    run on 2 AVX-512 cores: 16 such passes of 110, 29.9 ms against 14.3 for one token).

    >>> from types import SimpleNamespace as Timed
    >>> costs = CostProfile(0.1, 0.05, {2: 0.2})                                       # a draft step of 50 ms
    >>> cut = Timed(drafted=(7, 8), accepted=1, draft_s=0.12, tree=None)                # 2 steps in 120 ms
    >>> kept_all = Timed(drafted=(7, 8), accepted=2, draft_s=0.12, tree=None)
    >>> round(draft_disagreement(costs, Timed(rounds=[Timed(), cut, cut], draft_cost_ratio=0.5)), 2)
    1.2
    >>> round(draft_disagreement(costs, Timed(rounds=[Timed(), kept_all, cut], draft_cost_ratio=0.5)), 2)  # 3 steps
    0.8
    """
    if costs.draft_step_s <= 0 or getattr(result, "draft_cost_ratio", None) != costs.c:
        return None
    catch_up = costs.catch_up * costs.target_step_s if costs.draft_pair_s else costs.draft_step_s  # seconds
    predicted = observed = 0.0
    for before, round_ in zip(result.rounds[1:], result.rounds[2:]):
        if round_.drafted and round_.tree is None:
            predicted += costs.draft_step_s * len(round_.drafted) + catch_up * (before.accepted == len(before.drafted))
            observed += round_.draft_s
    return observed / predicted if predicted else None


def recheck_costs(pair: LoadedPair, result: GenerationResult) -> None:
    """Where the run's own target or draft passes disagree with the pair's kept costs by more than `DISAGREE_BY` (the
    machine got busier or quieter, or the kept timing was off), forget them: the next load times them again;
    `pair.costs_off` says which passes were off, and by how much."""
    if pair.costs is None or pair.cost_key is None:
        return
    ratios = {"target": disagreement(pair.costs, result), "draft": draft_disagreement(pair.costs, result)}
    off = {
        passes: ratio
        for passes, ratio in ratios.items()
        if ratio is not None and not 1 / (1 + DISAGREE_BY) <= ratio <= 1 + DISAGREE_BY
    }
    if off:
        forget_costs(pair.cost_key)
        pair.costs_off = off


LOAD_TIMES = "load-times.json"  # in the store: how long the last load of each pair, as planned, took on this machine


def load_key(pair: str, models: Sequence[ModelPlan | None]) -> str:
    """What a load time is kept under: the pair and how each model was planned to run (a GGUF file mapped into llama.cpp
    loads in seconds, the same file converted for torch in a minute or more).

    >>> load_key("d->t", [None, None])
    'd->t'
    """
    return " | ".join([pair, *(f"{planned.role} {planned.describe()}" for planned in models if planned is not None)])


def keep_load_time(pair: str, seconds: dict[str, float]) -> None:
    """Keep how long loading `pair` (a `load_key`) took, stage by
    stage, so a page can say it before the next first click."""

    from specdec.store import cache_dir, update_json

    timed = {"seconds": round(sum(seconds.values()), 1), "stages": {name: round(s, 1) for name, s in seconds.items()}}
    update_json(cache_dir() / LOAD_TIMES, lambda kept: kept.__setitem__(pair, timed))  # two pages' loads at once


def last_load_time(pair: str) -> float | None:
    """Seconds the last load of `pair` (a `load_key`) took on this machine (`keep_load_time`), None where it was never
    loaded here.

    >>> last_load_time("no-draft->no-target") is None
    True
    """
    import json

    from specdec.store import cache_dir

    try:
        return float(json.loads((cache_dir() / LOAD_TIMES).read_text())[pair]["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
