"""Choosing gamma round by round: a fixed gamma, or a cost-aware adaptive one.

Notation: alpha is the chance one drafted token is accepted, c the cost of a draft step over a
target step, v(gamma) the cost of a verification pass over gamma + 1 tokens over a target step.

The best fixed gamma depends on alpha, and alpha changes with the text: boilerplate code is easy to
guess, a new idea is not. `AdaptiveGamma` keeps a running estimate of alpha from the rounds so far
(accepted tokens over tested tokens, with recent rounds weighted more and a weak prior), and before
each round picks the gamma that maximises the expected speedup of that round,

    E[tokens](alpha, gamma) / (gamma * c + v(gamma))        (specdec.reference.theory.walltime_speedup)

with c and v(gamma) measured for the pair (`specdec.runtime.costs.measure_costs`). Choosing gamma never
touches exactness: the rule is exact for any gamma.

transformers' dynamic schedule, for comparison, adds 2 after a full accept and subtracts 1 after a
rejection, whatever the costs.

    schedule = AdaptiveGamma(costs)            # costs: a CostProfile
    speculative_generate(target, draft, ids, schedule=schedule)
"""

from __future__ import annotations

from typing import Protocol

from specdec.engine.contract import DraftCosts
from specdec.engine.costs import CostProfile
from specdec.reference.theory import walltime_speedup


class GammaSchedule(Protocol):
    """Picks the next round's gamma, may cut a round short, and learns from how the round went."""

    def next_gamma(self) -> int:
        """A new round starts: draft at most this many tokens."""

    def keep_drafting(self, confidence: float) -> bool:
        """The draft just proposed a token it was this sure of (its
        q of the token): draft another? (A fixed gamma: yes.)"""

    def update(self, drafted: int, accepted: int) -> None:
        """A round drafted `drafted` tokens and the rule accepted the first `accepted` of them."""

    def describe(self) -> str:
        """What a round drafts, in words, for reports: 'chain, gamma 4'."""


class FixedGamma:
    """The same gamma every round.

    >>> FixedGamma(4).next_gamma()
    4
    """

    def __init__(self, gamma: int) -> None:
        self.gamma = gamma

    def next_gamma(self) -> int:
        return self.gamma

    def keep_drafting(self, confidence: float) -> bool:
        return True

    def update(self, drafted: int, accepted: int) -> None:
        pass

    def describe(self) -> str:
        return f"chain, gamma {self.gamma}"


class AdaptiveGamma:
    """The gamma with the best expected speedup under the current alpha estimate; with `plain=True`, 0 (a plain step)
    where no gamma is predicted to beat the target alone (a speedup of 1), and then the estimate drifts back to its
    prior round by round, so drafting is tried again (a verification pass over a few tokens is not free on a CPU with
    few cores).

    >>> plain_here = AdaptiveGamma(CostProfile(0.1, 0.0, {1: 0.17, 2: 0.2, 3: 0.27}), max_gamma=3, plain=True,
    ...     prior_alpha=0.3)
    >>> plain_here.next_gamma()                        # alpha 0.3: even a free draft loses to one step at v(1) = 1.7
    0

    >>> costs = CostProfile(target_step_s=0.1, draft_step_s=0.02, verify_s={g: 0.1 for g in range(1, 17)})
    >>> schedule = AdaptiveGamma(costs, max_gamma=16)
    >>> for _ in range(20):
    ...     schedule.update(drafted=8, accepted=8)     # everything accepted: draft more
    >>> schedule.next_gamma()
    16
    >>> for _ in range(20):
    ...     schedule.update(drafted=8, accepted=0)     # nothing accepted: draft as little as possible
    >>> schedule.next_gamma()
    1
    """

    def __init__(
        self,
        costs: CostProfile | DraftCosts,
        max_gamma: int = 12,
        decay: float = 0.8,
        prior_alpha: float = 0.6,
        prior_weight: float = 2.0,
        plain: bool = False,
        recovery: float = 0.97,
    ) -> None:
        self.costs = costs
        self.max_gamma = max_gamma
        self.decay = decay  # weight of the past at each round: 0.8 remembers about 5 rounds
        self.prior_alpha, self.prior_weight, self.plain = prior_alpha, prior_weight, plain
        # with plain steps: the share of the estimate a plain round keeps (0.97: back in ~35 rounds)
        self.recovery = recovery
        self.accepted = prior_alpha * prior_weight
        self.tested = prior_weight
        self._verify_costs = {gamma: costs.v(gamma) for gamma in range(1, max_gamma + 1)}

    @property
    def alpha(self) -> float:
        """The running estimate: accepted tokens / tested tokens (a rejection is one tested token)."""
        return self.accepted / self.tested

    def next_gamma(self) -> int:
        alpha = min(self.alpha, 0.999)
        speedups = {
            gamma: walltime_speedup(alpha, gamma, self.costs.c, self._verify_costs[gamma], self.costs.catch_up)
            for gamma in range(1, self.max_gamma + 1)
        }
        best = max(speedups, key=lambda gamma: speedups[gamma])
        if self.plain and speedups[best] <= 1.0:  # a plain step is predicted faster: take it, and forget a little
            self.accepted = self.recovery * self.accepted + (1 - self.recovery) * self.prior_alpha * self.prior_weight
            self.tested = self.recovery * self.tested + (1 - self.recovery) * self.prior_weight
            return 0
        return best

    def keep_drafting(self, confidence: float) -> bool:
        return True  # the round's gamma is decided before it starts

    def update(self, drafted: int, accepted: int) -> None:
        tested = accepted + (1 if accepted < drafted else 0)  # tokens after the first rejection were never tested
        self.accepted = self.decay * self.accepted + accepted
        self.tested = self.decay * self.tested + tested

    def describe(self) -> str:
        return "chain, adaptive gamma" + (" (plain steps where drafting does not pay)" if self.plain else "")
