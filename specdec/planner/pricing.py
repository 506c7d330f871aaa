"""Pricing rounds for the default drafting policy (`specdec.planner.drafting`): the costs c and v(k), a chain's
predicted speedup, and where trees pay.

Notation: c is a draft step's cost over a target step, v(k) the cost of a verification pass over k drafted
tokens in target steps (measured, or the line 1 + beta k with beta guessed by the target's runtime), gamma the
tokens drafted per round, alpha the chance a tested draft is kept.

Where trees pay: a tree level costs one draft pass for all its nodes, and each node costs s more in the
target's pass, so a tree pays where a draft step is dear and a verified node cheap: c >= TREE_FROM_C and
s <= TREE_UP_TO_SLOPE. Sliding-window models always draft chains (a tree needs every cached position), one
text at a time.
"""

from __future__ import annotations

from specdec.engine.contract import DraftCosts, DraftNetwork
from specdec.engine.model import Model
from specdec.reference.theory import walltime_speedup
from specdec.runtime.costs import weight_cost_ratio

TREE_FROM_C = 0.25  # the default drafts a tree when a draft step costs at least this share of a target step ...
TREE_UP_TO_SLOPE = 0.1  # ... and one more token in a verification pass at most this share (v(k) = 1 + beta k)


def best_chain(costs: DraftCosts, alpha: float, max_gamma: int = 16) -> tuple[int, float]:
    """(gamma, predicted speedup over the target alone) of the best chain with these costs when each draft is accepted
    with chance `alpha` (Leviathan et al.'s formula with the measured v(gamma), and the draft's catch-up where timed).

    >>> best_chain(DraftCosts(0.4, 0.5, (1.0, 1.72, 1.95, 2.73, 3.82)), 0.9, max_gamma=4)
    (2, 0.985)
    """
    speedups = {
        gamma: round(walltime_speedup(alpha, gamma, costs.c, costs.v(gamma), costs.catch_up), 3)
        for gamma in range(1, max_gamma + 1)
    }
    best = max(speedups, key=lambda gamma: speedups[gamma])
    return best, speedups[best]


def trees_pay(target: Model, draft: Model, costs: DraftCosts | None = None) -> bool:
    """Whether the default drafts a tree for this pair: c >= TREE_FROM_C, beta <= TREE_UP_TO_SLOPE (beta from v(4) where
    v was measured), no sliding window."""
    costs = costs or estimated_costs(target, draft)
    slope = (costs.v(4) - 1.0) / 4 if costs.verify else costs.verify_slope
    dear = costs.c >= TREE_FROM_C and slope <= TREE_UP_TO_SLOPE
    return dear and not target.traits.sliding_window and not draft.traits.sliding_window


def estimated_costs(target: Model, draft: DraftNetwork | None) -> DraftCosts:
    """c from the weight bytes a draft step reads over a target step's, beta as the target's runtime guesses it."""
    return DraftCosts(weight_cost_ratio(target, draft), target.verify_slope())
