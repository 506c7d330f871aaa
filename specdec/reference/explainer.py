"""The numbers behind the interactive explainer: one position's accept/reject picture and the speedup calculator.

Notation: p is the target's next-token distribution, q the draft's, gamma the drafted tokens per
round, alpha the acceptance rate, c the draft cost / target cost.

    picture = accept_reject_picture(weights_p, weights_q)    # any non-negative weights; normalised here
    picture.overlap, picture.alpha, picture.residual, picture.accept_probability
    curve = speedup_curve(alpha=0.8, c=0.3, max_gamma=12)     # tokens per pass and speedup per gamma
    curve.best_gamma, curve.best_speedup

Everything comes from `specdec.reference.theory` (the formulas) and `specdec.reference.toy` / `specdec.reference.rule` (the
Monte-Carlo run of the rule); this module only arranges the results for display.

Not handled: more than one position (see `specdec.reference.rule.speculative_markov_generate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specdec.reference.theory import (
    acceptance_rate,
    best_gamma,
    expected_tokens_per_pass,
    pays_off,
    residual_distribution,
    walltime_speedup,
)


def normalise(weights: Sequence[float], name: str = "weights") -> np.ndarray:
    """Non-negative weights scaled to sum to 1.

    >>> normalise([1, 3]).tolist()
    [0.25, 0.75]
    """
    array = np.asarray(weights, dtype=np.float64)
    if array.ndim != 1 or np.any(array < 0) or array.sum() <= 0:
        raise ValueError(f"{name} must be non-negative with at least one above zero, got {array.tolist()}")
    return array / array.sum()


@dataclass(frozen=True)
class AcceptRejectPicture:
    """Everything about one position: p, q, where they overlap, alpha, and the residual."""

    p: np.ndarray                   # target distribution
    q: np.ndarray                   # draft distribution
    overlap: np.ndarray             # min(p, q): the probability each token is drafted AND accepted
    alpha: float                    # sum(min(p, q)): the chance a drafted token is accepted
    residual: np.ndarray            # norm(max(0, p - q)): where the target resamples after a rejection
    accept_probability: np.ndarray  # min(1, p/q): the chance each token is accepted once drafted


def accept_reject_picture(p_weights: Sequence[float], q_weights: Sequence[float]) -> AcceptRejectPicture:
    """Normalise p and q and compute the rule's pieces.

    >>> picture = accept_reject_picture([3, 4, 3], [6, 2, 2])
    >>> round(picture.alpha, 6), picture.residual.round(4).tolist(), picture.accept_probability.round(2).tolist()
    (0.7, [0.0, 0.6667, 0.3333], [0.5, 1.0, 1.0])
    """
    p, q = normalise(p_weights, "p"), normalise(q_weights, "q")
    if p.shape != q.shape:
        raise ValueError(f"p and q must cover the same tokens, got {p.size} and {q.size}")
    with np.errstate(divide="ignore", invalid="ignore"):
        accept_probability = np.where(q > 0, np.minimum(1.0, p / q), 1.0)
    return AcceptRejectPicture(p, q, np.minimum(p, q), acceptance_rate(p, q), residual_distribution(p, q), accept_probability)


@dataclass(frozen=True)
class SpeedupCurve:
    """Expected tokens per target pass and wall-clock speedup for gamma = 1..max_gamma."""

    alpha: float
    c: float
    gammas: list[int]
    tokens_per_pass: list[float]
    speedups: list[float]
    best_gamma: int
    best_speedup: float
    pays_off: bool  # alpha > c: some gamma beats the target alone

    def at(self, gamma: int) -> tuple[float, float]:
        """(tokens per pass, speedup) at `gamma`."""
        index = self.gammas.index(gamma)
        return self.tokens_per_pass[index], self.speedups[index]


def speedup_curve(alpha: float, c: float, max_gamma: int = 16) -> SpeedupCurve:
    """The calculator: theory's numbers for every gamma up to `max_gamma`, best gamma marked.

    >>> curve = speedup_curve(0.8, 0.1, max_gamma=10)
    >>> curve.best_gamma, round(curve.best_speedup, 4), curve.pays_off
    (6, 2.4696, True)
    """
    gammas = list(range(1, max_gamma + 1))
    gamma, speedup = best_gamma(alpha, c, max_gamma)
    return SpeedupCurve(alpha, c, gammas, [expected_tokens_per_pass(alpha, g) for g in gammas],
                        [walltime_speedup(alpha, g, c) for g in gammas], gamma, speedup, pays_off(alpha, c))
