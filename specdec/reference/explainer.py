"""The numbers behind the interactive explainer: one position's accept/reject picture and the speedup calculator.

Notation: p is the target's next-token distribution, q the draft's, gamma the drafted tokens per
round, alpha the chance a tested draft is accepted, c the draft cost / target cost.

    picture = accept_reject_picture(weights_p, weights_q)    # any non-negative weights; normalised here
    picture.overlap, picture.alpha, picture.residual, picture.accept_probability
    curve = speedup_curve(alpha=0.8, c=0.3, max_gamma=12)     # tokens per pass and speedup per gamma
    curve.best_gamma, curve.best_speedup
    # a machine's measured v(gamma): what drafting can gain there
    verification_curve(verify, c, alpha)

Everything comes from `specdec.reference.theory` (the formulas) and `specdec.reference.toy` / `specdec.reference.rule`
(the Monte-Carlo run of the rule); this module only arranges the results for display.

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
    return np.asarray(array / array.sum(), dtype=np.float64)


@dataclass(frozen=True)
class AcceptRejectPicture:
    """Everything about one position: p, q, where they overlap, alpha, and the residual."""

    p: np.ndarray  # target distribution
    q: np.ndarray  # draft distribution
    overlap: np.ndarray  # min(p, q): the probability each token is drafted AND accepted
    alpha: float  # sum(min(p, q)): the chance a drafted token is accepted
    residual: np.ndarray  # norm(max(0, p - q)): where the target resamples after a rejection
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
    return AcceptRejectPicture(
        p, q, np.minimum(p, q), acceptance_rate(p, q), residual_distribution(p, q), accept_probability
    )


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
    return SpeedupCurve(
        alpha,
        c,
        gammas,
        [expected_tokens_per_pass(alpha, g) for g in gammas],
        [walltime_speedup(alpha, g, c) for g in gammas],
        gamma,
        speedup,
        pays_off(alpha, c),
    )


@dataclass(frozen=True)
class VerificationCurve:
    """What a machine's measured cost of verifying allows: v(gamma) for gamma = 1..max_gamma, and the speedup over the
    target alone of a draft that costs nothing and is always right, (gamma + 1) / v(gamma), next to that of a draft with
    the measured c accepted with chance alpha (Leviathan et al.'s formula with the measured v)."""

    alpha: float
    c: float
    gammas: list[int]
    v: list[float]  # a pass over gamma + 1 tokens, in one-token steps (1 where passes cost a step)
    ceiling: list[float]  # (gamma + 1) / v(gamma): the most any drafting can gain at this gamma
    at_alpha: list[float]  # walltime_speedup(alpha, gamma, c, v(gamma), catch_up)
    best_gamma: int  # where the ceiling is highest
    best_ceiling: float
    catch_up: float = 0.0  # the draft's catch-up priced in `at_alpha` (`walltime_speedup`)


def verification_curve(
    verify: Sequence[float], c: float, alpha: float, max_gamma: int = 16, catch_up: float = 0.0
) -> VerificationCurve:
    """The curves for a measured table `verify` = (v(0) = 1, v(1), ...), extended by its last slope past its end; the
    draft's `catch_up` (`walltime_speedup`) priced in its own curve where it was timed.

    On a GPU v(gamma) is near 1 and the ceiling grows with gamma; on a CPU with few cores a pass over k tokens costs
    nearly k steps, and the ceiling stays near 1:

    >>> curve = verification_curve((1.0, 1.69, 2.47, 3.26, 4.14), c=0.4, alpha=0.9, max_gamma=4)
    >>> [round(x, 2) for x in curve.ceiling], curve.best_gamma, [round(x, 2) for x in curve.at_alpha]
    ([1.18, 1.21, 1.23, 1.21], 3, [0.91, 0.83, 0.77, 0.71])
    """
    if len(verify) < 2 or verify[0] != 1.0:
        raise ValueError(f"verify must start (1.0, v(1), ...), got {tuple(verify)[:3]}")
    last, slope = len(verify) - 1, verify[-1] - verify[-2]
    v = [verify[g] if g <= last else verify[last] + slope * (g - last) for g in range(1, max_gamma + 1)]
    gammas = list(range(1, max_gamma + 1))
    ceiling = [(g + 1) / cost for g, cost in zip(gammas, v)]
    best = max(gammas, key=lambda g: ceiling[g - 1])
    return VerificationCurve(
        alpha,
        c,
        gammas,
        v,
        ceiling,
        [walltime_speedup(alpha, g, c, cost, catch_up) for g, cost in zip(gammas, v)],
        best,
        ceiling[best - 1],
        catch_up,
    )


@dataclass(frozen=True)
class GuidedPreset:
    """A setting of the speedup calculator with a question to answer by moving its controls."""

    key: str
    alpha: float
    c: float
    gamma: int
    question: str

    def answer(self) -> str:
        """The answer, computed from theory's formulas (the HTML explainer builds the same sentence)."""
        return ANSWERS[self.key](self)


def alpha_where_speedup_falls_below(threshold: float, c: float, gamma: int) -> float:
    """The smallest alpha on a 0.01 grid whose speedup at `gamma` is still at least `threshold` (1.0 if none is).

    >>> alpha_where_speedup_falls_below(1.1, 0.1, 4)
    0.36
    """
    for hundredths in range(0, 101):
        if walltime_speedup(hundredths / 100, gamma, c) >= threshold:
            return hundredths / 100
    return 1.0


def _falls(preset: GuidedPreset) -> str:
    alpha = alpha_where_speedup_falls_below(1.1, preset.c, preset.gamma)
    return (
        f"At c = {preset.c:.2f} and gamma = {preset.gamma}, the speedup is at least 1.1x down to alpha = {alpha:.2f} "
        f"({walltime_speedup(alpha, preset.gamma, preset.c):.3f}x) and below 1.1x under it: a draft must agree about "
        f"that often before speculation is worth its complexity."
    )


def _gammas(preset: GuidedPreset) -> str:
    one, eight = walltime_speedup(preset.alpha, 1, preset.c), walltime_speedup(preset.alpha, 8, preset.c)
    best, best_speedup = best_gamma(preset.alpha, preset.c)
    return (
        f"gamma = 1 gives {one:.3f}x and gamma = 8 gives {eight:.3f}x; the best is gamma = {best} with "
        f"{best_speedup:.3f}x. "
        f"At alpha = {preset.alpha:.2f} the 8th draft is reached with chance {preset.alpha**7:.3f} but always paid for."
    )


def _same(preset: GuidedPreset) -> str:
    tokens, speedup = expected_tokens_per_pass(1.0, preset.gamma), walltime_speedup(1.0, preset.gamma, preset.c)
    return (
        f"With q = p every draft is kept: {tokens:.3f} tokens per target pass, but the speedup is {speedup:.3f}x, "
        f"not {tokens:.0f}x, because the round also pays for {preset.gamma} draft steps at c = {preset.c:.2f}."
    )


def _costly(preset: GuidedPreset) -> str:
    best, best_speedup = best_gamma(preset.alpha, preset.c)
    verdict = "pays off" if best_speedup > 1 else "does not pay off"
    return (
        f"alpha = {preset.alpha:.2f} and c = {preset.c:.2f}: it {verdict}: the best is gamma = {best} with "
        f"{best_speedup:.3f}x. At gamma = {preset.gamma} it is "
        f"{walltime_speedup(preset.alpha, preset.gamma, preset.c):.3f}x: "
        f"a costly draft wants short rounds."
    )


ANSWERS = {"falls": _falls, "gammas": _gammas, "same": _same, "costly": _costly}
GUIDED_PRESETS = (
    GuidedPreset("falls", 0.9, 0.1, 4, "Drag alpha down from 0.9: where does the speedup fall below 1.1x?"),
    GuidedPreset("gammas", 0.6, 0.1, 1, "At alpha = 0.6, compare gamma = 1 with gamma = 8. Which is faster, and why?"),
    GuidedPreset(
        "same", 1.0, 0.1, 4, "A perfect draft, q = p: how many tokens per target pass, and why is the speedup lower?"
    ),
    GuidedPreset(
        "costly", 0.7, 0.5, 4, "A costly draft, c = 0.5: does speculation still pay off, and with which gamma?"
    ),
)
