"""The theory of speculative decoding in a handful of formulas (Leviathan et al. 2023, section 3).

Notation, used everywhere in this project:

    p      the target model's next-token distribution (the big, accurate model)
    q      the draft model's next-token distribution (the small, fast model)
    gamma  the number of tokens the draft proposes per round
    alpha  the chance that one drafted token is accepted when the rule tests it; measured as accepted / tested
           (`GenerationStats.alpha_estimate`). `acceptance_rate(p, q)` below computes it: the function is older
           than the name "acceptance rate" for accepted / drafted, which counts drafts after a rejection too
    c      the cost ratio: one draft forward pass / one target forward pass

Every number a lesson or the dashboard quotes about expected speed comes from these functions, so
the text and the code cannot disagree. Pure Python and NumPy: no torch, no I/O.

What this module does not model: alpha that varies from token to token (the formulas assume every
drafted token is accepted independently with the same alpha), and the cost of a verification pass
growing with gamma, except through the optional `verify_cost` argument.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Law = Sequence[float] | np.ndarray  # a distribution over the vocabulary: a list of floats or a NumPy array


def _as_distribution(values: Law, name: str) -> np.ndarray:
    """Return `values` as a 1-D float array after checking it is a probability distribution."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D list of probabilities, got shape {array.shape}")
    if np.any(array < 0) or not np.isclose(array.sum(), 1.0, atol=1e-6):
        raise ValueError(f"{name} must be non-negative and sum to 1, got {array.tolist()} (sum {array.sum():.6f})")
    return array


def acceptance_rate(p: Law, q: Law) -> float:
    """alpha = sum over tokens of min(p, q): the chance that a token drafted from q is accepted.

    >>> round(acceptance_rate([0.3, 0.4, 0.3], [0.6, 0.2, 0.2]), 6)
    0.7
    """
    p_array, q_array = _as_distribution(p, "p"), _as_distribution(q, "q")
    if p_array.shape != q_array.shape:
        raise ValueError(f"p and q must cover the same tokens, got {p_array.size} and {q_array.size} entries")
    return float(np.minimum(p_array, q_array).sum())


def total_variation(p: Law, q: Law) -> float:
    """TV(p, q) = sum(|p - q|) / 2. Alpha is exactly 1 - TV(p, q).

    >>> round(total_variation([0.3, 0.4, 0.3], [0.6, 0.2, 0.2]), 6)
    0.3
    """
    p_array, q_array = _as_distribution(p, "p"), _as_distribution(q, "q")
    return float(np.abs(p_array - q_array).sum() / 2)


def residual_distribution(p: Law, q: Law, strict: bool = True) -> np.ndarray:
    """norm(max(0, p - q)): where the target resamples from after rejecting a drafted token.

    It puts its mass exactly where the draft under-proposes (p > q). When p <= q everywhere there
    is nothing to correct and rejection cannot happen; we return norm(p) so the function is total
    (as `specdec.engine.verification` does). `strict=False` accepts weights that do not sum to exactly 1,
    such as the bfloat16-rounded p and q of `specdec.bugs.rules.mixed_dtypes`.

    >>> residual_distribution([0.3, 0.4, 0.3], [0.6, 0.2, 0.2]).round(6).tolist()
    [0.0, 0.666667, 0.333333]
    """
    if strict:
        p_array, q_array = _as_distribution(p, "p"), _as_distribution(q, "q")
    else:
        p_array, q_array = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    excess = np.maximum(p_array - q_array, 0.0)
    total = excess.sum()
    return np.asarray(excess / total if total > 0 else p_array / p_array.sum(), dtype=np.float64)


def multi_candidate_acceptance(p: Law, q: Law, candidates: int) -> float:
    """The chance that one of `candidates` guesses, drawn from q without replacement, is accepted at one tree node.

    The guesses are tested in turn (`specdec.reference.rule.multi_candidate_rule`): the first as in
    the chain, with chance sum(min(p, q)); after rejecting x, the next one is tested against what is
    left of p, norm(max(0, p - q)), and drawn from q without x. One candidate is alpha:

    >>> round(multi_candidate_acceptance([0.3, 0.4, 0.3], [0.6, 0.2, 0.2], 1), 4)
    0.7
    >>> round(multi_candidate_acceptance([0.3, 0.4, 0.3], [0.6, 0.2, 0.2], 2), 4)
    0.95
    """
    p_array, q_array = _as_distribution(p, "p"), _as_distribution(q, "q")
    if candidates <= 0 or q_array.sum() <= 0:
        return 0.0
    accepted = float(np.minimum(p_array, q_array).sum())
    left = residual_distribution(p_array, q_array)
    for x in np.flatnonzero(q_array > p_array):  # a rejection of x has chance q(x) - p(x)
        rest = q_array.copy()
        rest[x] = 0.0
        if rest.sum() > 0:
            accepted += float(q_array[x] - p_array[x]) * multi_candidate_acceptance(
                left, rest / rest.sum(), candidates - 1
            )
    return accepted


def expected_tokens_per_pass(alpha: float, gamma: int) -> float:
    """E[tokens per target pass] = (1 - alpha^(gamma+1)) / (1 - alpha).

    One round drafts gamma tokens and always emits at least one token (a resampled one after a
    rejection, or a bonus token after a full accept), at most gamma + 1.

    >>> round(expected_tokens_per_pass(0.8, 4), 4)
    3.3616
    >>> expected_tokens_per_pass(1.0, 4)
    5.0
    """
    _check_alpha_gamma(alpha, gamma)
    if alpha == 1.0:
        return float(gamma + 1)
    return (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)


def walltime_speedup(alpha: float, gamma: int, c: float, verify_cost: float = 1.0, catch_up: float = 0.0) -> float:
    """Expected speedup over the target alone: E[tokens per pass] / (gamma * c + verify_cost + alpha^gamma * catch_up).

    One round costs gamma draft passes (gamma * c target-pass units) plus one verification pass.
    With `verify_cost=1` (a pass over gamma + 1 tokens costs the same as a one-token step, true on
    hardware that is memory-bound) this is Leviathan et al.'s (1 - alpha^(gamma+1)) /
    ((1 - alpha)(gamma * c + 1)). Pass a measured `verify_cost` = v(gamma) where that is not true.
    `catch_up`: what a draft model pays after a round that kept all gamma drafts (chance alpha^gamma), in target
    steps: it never read the last draft, so its next first pass reads two tokens. About nothing where a pass is bound by
    reading weights; about one more draft step on a CPU with few cores.

    >>> round(walltime_speedup(0.8, 4, 0.1), 4), round(walltime_speedup(0.8, 4, 0.1, catch_up=0.1), 4)
    (2.4011, 2.3329)
    """
    if c < 0:
        raise ValueError(f"the cost ratio c must be >= 0, got {c}")
    if verify_cost <= 0 or catch_up < 0:
        raise ValueError(f"need verify_cost > 0 and catch_up >= 0, got {verify_cost} and {catch_up}")
    return expected_tokens_per_pass(alpha, gamma) / (gamma * c + verify_cost + alpha**gamma * catch_up)


def best_gamma(alpha: float, c: float, max_gamma: int = 64, verify_cost: float = 1.0) -> tuple[int, float]:
    """The gamma in 1..max_gamma with the highest expected speedup, and that speedup.

    >>> gamma, speedup = best_gamma(0.8, 0.1)
    >>> gamma, round(speedup, 4)
    (6, 2.4696)
    """
    speedups = {gamma: walltime_speedup(alpha, gamma, c, verify_cost) for gamma in range(1, max_gamma + 1)}
    gamma = max(speedups, key=lambda g: speedups[g])
    return gamma, speedups[gamma]


def pays_off(alpha: float, c: float) -> bool:
    """Whether some gamma gives a speedup above 1: exactly when alpha > c (with verify_cost = 1).

    With gamma = 1 the speedup is (1 + alpha) / (1 + c), above 1 exactly when alpha > c. And no
    larger gamma helps when alpha <= c: E[tokens] <= 1 + gamma * alpha <= 1 + gamma * c, the cost.

    >>> pays_off(0.6, 0.4), pays_off(0.3, 0.4)
    (True, False)
    """
    _check_alpha_gamma(alpha, 1)
    return alpha > c


def _check_alpha_gamma(alpha: float, gamma: int) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    if int(gamma) != gamma or gamma < 0:
        raise ValueError(f"gamma must be a whole number >= 0, got {gamma}")
