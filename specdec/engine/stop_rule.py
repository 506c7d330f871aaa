"""Drafts that know when to stop: keep drafting while one more token is worth what it costs.

Notation: p is the target, q the draft, gamma the drafted tokens of a round, alpha the chance a
drafted token is accepted, c the cost of a draft step over a target step, v(k) the cost of a
verification pass over k + 1 tokens over a target step.

A fixed gamma (or `AdaptiveGamma`, one gamma per round from a running alpha) treats every drafted
token alike. But the draft knows, token by token, how sure it is: after each draft step it has q,
and the probability of the token it chose (its *confidence*) says a lot about whether the target
will agree. `ConfidenceStop` decides after every draft step whether to draft another token:

    a_i   = the chance token i is accepted, estimated from its confidence (calibrated, see below)
    P_k   = a_1 a_2 ... a_k                 the chance the first k drafted tokens are all accepted
    E_k   = 1 + P_1 + ... + P_k             expected tokens the round emits with k drafted tokens
    T_k   = k c + v(k)                      what the round costs, in target steps

    draft token k + 1  while  P_k * a_{k+1} / (c + s)  >  E_k / T_k

The left side is what one more token adds per unit of time it costs (a_{k+1} is predicted by a_k: easy
stretches stay easy); the right side is the round's rate so far. Drafting stops as soon as another
token would lower the rate, or at `max_gamma`. This is the rule "keep drafting while the expected
gain of one more token exceeds its cost" (SpecDec++ and transformers' confidence threshold stop on
the same signal, with a fixed threshold).

The calibration is learned as the generation goes: a draft's confidence is not the chance of
acceptance, so confidences are binned, and each bin counts how many of its tokens the target
accepted, starting from a prior of sqrt(confidence) worth `prior_weight` pseudo-tokens. Only tested
tokens count: those up to the first rejection. Why the square root: a target agrees with a draft
more often than the draft's own confidence says (a draft 60% sure of its top token usually has the
same top token as the target); on three prompts with the zoo pair (code, chat, summary; int8
draft, greedy) this prior drafted longer runs on code and fewer wasted ones on chat than trusting
the confidence as it is (6.6 s vs 7.7 s and 13.0 s vs 14.8 s for 128 tokens).

The costs are ratios to one target step, fixed for the generation (so the same seed gives the same
tokens): c, and v(k), measured for the pair where it was timed (`verify`, kept per model, runtime,
CPU and threads: `specdec.runtime.costs`), else the line v(k) = 1 + beta k; one more token then costs
c + v(k + 1) - v(k). `speculative_generate` estimates c
from the models' weight bytes (`specdec.runtime.costs.weight_cost_ratio`: decoding on a CPU or a GPU is
bound by reading weights) and takes beta = 0.5 for float32 on the CPU (a 5-token pass measured at
about 3 one-token steps on this project's CPU) and 0.05 elsewhere (bfloat16: 0.84-1.19 steps);
`specdec.runtime.costs.measure_costs` gives measured ones.

Exactness: the decision depends only on the draft's own draws and on past rounds, never on the
target's p for the tokens being decided, so the accept/reject rule stays exact (Leviathan et al.'s
argument holds for any stopping time the draft alone decides).

    schedule = ConfidenceStop(c=0.2)                   # a fresh one per generation
    speculative_generate(target, draft, ids, schedule=schedule)
    speculative_generate(target, draft, ids)           # the same rule, c estimated from the weights

Not handled: drafters that cannot say how sure they are (model-free lookup). For them the default
schedule is a fixed `fallback_gamma` (4); a `ConfidenceStop` given explicitly lets them draft up to
`max_gamma`. The rule looks one token ahead only: the value of the tokens after the next is ignored.
"""

from __future__ import annotations

import numpy as np

from specdec.engine.contract import DraftCosts


class ConfidenceStop:
    """Draft while one more token raises the round's expected tokens per unit of time (see the module docstring).

    >>> rule = ConfidenceStop(c=0.2, max_gamma=8)
    >>> rule.next_gamma()
    8
    >>> rule.keep_drafting(0.99), rule.keep_drafting(0.98)     # a sure draft: go on
    (True, True)
    >>> rule.next_gamma(); rule.keep_drafting(0.05)           # an unsure one: stop after this token
    8
    False
    """

    fallback_gamma = 4  # for drafters that report no confidence

    def __init__(
        self,
        c: float = 0.3,
        verify_slope: float = 0.05,
        max_gamma: int = 16,
        bins: int = 10,
        prior_weight: float = 4.0,
        decay: float = 0.98,
        verify: tuple[float, ...] = (),
    ) -> None:
        if c < 0 or verify_slope < 0 or max_gamma < 1:
            raise ValueError(f"need c >= 0, verify_slope >= 0 and max_gamma >= 1, got {c}, {verify_slope}, {max_gamma}")
        self.c, self.verify_slope, self.max_gamma = c, verify_slope, max_gamma
        self.verify = tuple(verify)  # measured v(0), v(1), ... (`DraftCosts.verify`); () for 1 + beta k
        self.prior_weight, self.decay = prior_weight, decay
        self.hits = np.zeros(bins)  # accepted tested tokens per confidence bin (decayed counts)
        self.tests = np.zeros(bins)  # tested tokens per confidence bin
        self._round: list[float] = []  # this round's confidences, in order

    def next_gamma(self) -> int:
        """A new round starts: at most `max_gamma` tokens, `keep_drafting` decides after each."""
        self._round = []
        return self.max_gamma

    def keep_drafting(self, confidence: float) -> bool:
        """The draft just proposed a token with this confidence (its q of the token); draft another?"""
        self._round.append(float(confidence))
        return self.worth_another(self._round)

    def update(self, drafted: int, accepted: int) -> None:
        """The round drafted `drafted` tokens and the rule accepted the first `accepted`: calibrate."""
        tested = self._round[: min(drafted, accepted + 1)]  # tokens after the first rejection were never tested
        self.observe([(confidence, position < accepted) for position, confidence in enumerate(tested)])

    def observe(self, outcomes: list[tuple[float, bool]]) -> None:
        """Calibrate on one round's tested tokens: (confidence, accepted) for each (a token tree's too)."""
        self.hits *= self.decay
        self.tests *= self.decay
        for confidence, accepted in outcomes:
            bin_ = self._bin(confidence)
            self.tests[bin_] += 1
            self.hits[bin_] += accepted

    def acceptance(self, confidence: float) -> float:
        """The calibrated chance that a token drafted with this confidence is accepted.

        >>> ConfidenceStop().acceptance(0.64)                  # no evidence yet: the prior, sqrt(confidence)
        0.8
        """
        bin_ = self._bin(confidence)
        prior = confidence**0.5
        return float((self.hits[bin_] + self.prior_weight * prior) / (self.tests[bin_] + self.prior_weight))

    def worth_another(self, confidences: list[float]) -> bool:
        """Whether drafting one more token after these raises the round's expected tokens per unit of time."""
        k = len(confidences)
        if k >= self.max_gamma:
            return False
        chances = [self.acceptance(confidence) for confidence in confidences]
        all_accepted = np.cumprod(chances)  # P_1 .. P_k
        expected_tokens = 1.0 + float(all_accepted.sum())  # E_k
        round_cost = k * self.c + self.v(k)  # T_k = k c + v(k), in target steps
        gain = float(all_accepted[-1]) * chances[-1]  # P_k * a_{k+1}, a_{k+1} predicted by a_k
        return gain * round_cost > expected_tokens * (self.c + self.v(k + 1) - self.v(k))

    def v(self, k: int) -> float:
        """A verification pass over k drafted tokens, in target steps: measured where given, else 1 + beta k."""
        return DraftCosts(self.c, self.verify_slope, self.verify).v(k)

    def describe(self) -> str:
        return "chain, stop rule"

    def _bin(self, confidence: float) -> int:
        return min(int(confidence * len(self.hits)), len(self.hits) - 1)
