"""What the speedup formula needs: the cost ratio c and the verification cost v(gamma), as measured.

Notation: c = one draft step / one target step; v(gamma) = one target pass over gamma + 1 tokens /
one target step. With them, the expected speedup of a round is

    E[tokens per round] / (gamma * c + v(gamma))     (see specdec.reference.theory.walltime_speedup)

`specdec.runtime.costs.measure_costs` measures both the way the engine really runs the models (through
a runtime's own cache, with a prompt already cached, device synchronised, medians) and returns a
`CostProfile`; nothing here runs a model.

    profile = measure_costs(target, draft, input_ids, gammas=[2, 4, 8])     # specdec.runtime.costs
    profile.c, profile.v(4)
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CostProfile:
    """Median seconds of the passes a round is made of."""

    target_step_s: float  # target, one new token
    draft_step_s: float  # draft, one new token (0 for a model-free drafter)
    verify_s: dict[int, float] = field(default_factory=dict)  # gamma -> target pass over gamma + 1 tokens
    measured_under: str = ""  # when and how it was timed, in words ("" where not said): what a report prints
    # draft, a pass over two tokens: its first after a round that kept every draft (0: not timed)
    draft_pair_s: float = 0.0

    @property
    def c(self) -> float:
        """The cost ratio: one draft step / one target step."""
        return self.draft_step_s / self.target_step_s

    @property
    def catch_up(self) -> float:
        """What the draft's two-token pass costs over its step, in target steps (0 where not timed).

        >>> round(CostProfile(0.1, 0.02, {}, draft_pair_s=0.04).catch_up, 6)     # a second token costs another step
        0.2
        """
        return max(0.0, self.draft_pair_s - self.draft_step_s) / self.target_step_s if self.draft_pair_s else 0.0

    def v(self, gamma: int) -> float:
        """The verification cost: a pass over gamma + 1 tokens / one target step.

        Between measured gammas it is interpolated linearly, beyond them held at the nearest one;
        v(0) is a plain one-token step, 1.

        >>> round(CostProfile(0.1, 0.02, {1: 0.11, 5: 0.15}).v(3), 6)
        1.3
        """
        if gamma == 0:
            return 1.0
        if gamma in self.verify_s:
            return self.verify_s[gamma] / self.target_step_s
        measured = sorted(self.verify_s)
        lower = max((g for g in measured if g < gamma), default=measured[0])
        upper = min((g for g in measured if g > gamma), default=measured[-1])
        if lower == upper:
            return self.verify_s[lower] / self.target_step_s
        weight = (gamma - lower) / (upper - lower)
        return ((1 - weight) * self.verify_s[lower] + weight * self.verify_s[upper]) / self.target_step_s
