"""One chain round, step by step: what the Explainer lets you step through, and where E[tokens] comes from.

Notation: p is the target, q the draft, gamma the drafted tokens per round, alpha the chance a tested
draft is accepted.

The Explainer keeps one p and one q at every position (a stationary toy: the same next-token odds after
every prefix), so a round is easy to follow:

    for i in 1..gamma:   draw x_i ~ q and u_i ~ U[0, 1); keep x_i if u_i < p(x_i) / q(x_i)
                         else: draw the round's last token from the residual norm(max(0, p - q)), stop
    all gamma kept:      draw the bonus token from p

Token k + 1 of the round is produced only if the first k drafts were all kept, which has chance alpha^k,
so E[tokens per round] = 1 + alpha + ... + alpha^gamma = (1 - alpha^(gamma+1)) / (1 - alpha):

    >>> [round(term, 3) for term in expected_tokens_terms(0.7, 3)]
    [1.0, 0.7, 0.49, 0.343]
    >>> round(sum(expected_tokens_terms(0.7, 3)), 4)     # = expected_tokens_per_pass(0.7, 3)
    2.533

Not handled: positions with different p and q (the engine's rounds, `specdec.engine.rounds`, have them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specdec.reference.rule import sample_from
from specdec.reference.theory import acceptance_rate, residual_distribution

RESIDUAL, BONUS = "residual", "bonus"


@dataclass(frozen=True)
class DraftStep:
    """One drafted token's test: x ~ q, u ~ U[0, 1), kept when u < p(x) / q(x)."""

    token: int
    p: float  # p(x)
    q: float  # q(x)
    u: float
    accepted: bool

    @property
    def ratio(self) -> float:
        """p(x) / q(x): the chance to keep x, when below 1."""
        return self.p / self.q


@dataclass(frozen=True)
class ChainRound:
    """A whole round: the drafts tested in order (up to the first rejection), then the round's last token."""

    steps: tuple[DraftStep, ...]
    last_token: int
    last_kind: str  # RESIDUAL after a rejection, BONUS after gamma kept
    gamma: int

    @property
    def kept(self) -> int:
        return sum(step.accepted for step in self.steps)

    @property
    def emitted(self) -> tuple[int, ...]:
        """The round's tokens: the kept drafts, then the residual's token or the bonus token."""
        return tuple(step.token for step in self.steps if step.accepted) + (self.last_token,)


def chain_round(p: Sequence[float], q: Sequence[float], gamma: int, rng: np.random.Generator) -> ChainRound:
    """Run one round of the rule with the same p and q at every position.

    >>> play = chain_round([0.3, 0.4, 0.3], [0.6, 0.2, 0.2], 4, np.random.default_rng(1))
    >>> play.kept + 1 == len(play.emitted), play.last_kind in (RESIDUAL, BONUS)
    (True, True)
    """
    if gamma < 1:
        raise ValueError(f"a round drafts at least one token, got gamma = {gamma}")
    p_law, q_law = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    steps = []
    for _ in range(gamma):
        x = sample_from(q_law, rng)
        u = float(rng.random())
        accepted = bool(u * q_law[x] < p_law[x])  # u < p(x)/q(x), without dividing
        steps.append(DraftStep(x, float(p_law[x]), float(q_law[x]), u, accepted))
        if not accepted:
            return ChainRound(tuple(steps), sample_from(residual_distribution(p_law, q_law), rng), RESIDUAL, gamma)
    return ChainRound(tuple(steps), sample_from(p_law, rng), BONUS, gamma)


def expected_tokens_terms(alpha: float, gamma: int) -> list[float]:
    """The terms alpha^k, k = 0..gamma: the chance that the round produces its (k + 1)-th token."""
    return [alpha**k for k in range(gamma + 1)]


def nth_round(p: Sequence[float], q: Sequence[float], gamma: int, seed: int, index: int) -> ChainRound:
    """Round `index` of the stream `seed`: the same seed replays the same rounds, in order."""
    return chain_round(p, q, gamma, np.random.default_rng([seed, index]))


def tokens_written(played: ChainRound, steps_shown: int) -> int:
    """Tokens the round has written once `steps_shown` of its steps are shown (the drafts' tests, then the last token).

    A kept draft is written when its test is shown; a rejected one writes nothing until the last step draws
    its replacement.

    >>> played = ChainRound((DraftStep(0, 0.3, 0.6, 0.1, True), DraftStep(0, 0.3, 0.6, 0.9, False)), 1, RESIDUAL, 4)
    >>> [tokens_written(played, shown) for shown in range(4)]
    [0, 1, 1, 2]
    """
    if steps_shown > len(played.steps):
        return len(played.emitted)
    return sum(step.accepted for step in played.steps[:steps_shown])


def rounds_summary(rounds: Sequence[ChainRound], p: Sequence[float], q: Sequence[float]) -> tuple[int, float, float]:
    """(rounds played, their mean tokens per round, the formula's E for this p, q and gamma) for the running average."""
    if not rounds:
        return 0, float("nan"), float("nan")
    gamma = rounds[-1].gamma
    mean = float(np.mean([len(one.emitted) for one in rounds]))
    return len(rounds), mean, float(sum(expected_tokens_terms(acceptance_rate(p, q), gamma)))
