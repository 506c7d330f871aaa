"""The classic bugs that break speculative sampling, each with the exact output distribution it produces.

Notation: p is the target distribution, q the draft distribution, alpha = sum(min(p, q)).

The correct rule at one position (`specdec.reference.rule.speculative_rule`) drafts x ~ q, accepts it
with probability min(1, p(x)/q(x)), and after a rejection samples from norm(max(0, p - q)). Its
output is exactly p. Every function below computes, exactly and without sampling, what one
position outputs when a classic mistake is made, so a lesson can show how far from p it lands:

    >>> p, q = [0.3, 0.4, 0.3], [0.6, 0.2, 0.2]
    >>> correct_rule(p, q).round(6).tolist()
    [0.3, 0.4, 0.3]
    >>> argmax_drafting(p, q).round(6).tolist()         # drafted A every time, told the rule q
    [0.5, 0.333333, 0.166667]

The one idea behind all of them: the rule is exact only when (1) the q in the ratio p/q is the
very distribution the drafted token was sampled from, (2) the p is the distribution the user
asked for, (3) the residual is norm(max(0, p - q)), and (4) the uniform u is a fresh random
number, independent of the draft's own draw.

`output_distribution(p_rule, q_rule, q_sampled)` is the general formula; the named bugs call it
or say in their docstring why they need something else. The tests check each formula against a
simulation of the buggy procedure. Two bugs are also kept as procedures (`accept_always_rule`,
`resample_from_target_rule`): broken on purpose, they are the negative controls the statistical
tests must catch. NumPy, one position at a time, no models; only `warp` borrows the engine's torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specdec.reference.rule import sample_from
from specdec.reference.theory import residual_distribution

Distribution = Sequence[float] | np.ndarray


def _array(values: Distribution) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


def output_distribution(p_rule: Distribution, q_rule: Distribution, q_sampled: Distribution) -> np.ndarray:
    """What one position emits when the draft samples from `q_sampled` but the rule is given `p_rule`, `q_rule`.

    Token y comes out either by being drafted and accepted, q_sampled(y) * min(1, p_rule(y) / q_rule(y)),
    or through a rejection followed by a residual draw, (1 - total acceptance) * residual(p_rule, q_rule)(y).
    With q_sampled == q_rule == q and p_rule == p this is exactly p.

    >>> output_distribution([0.3, 0.4, 0.3], [0.6, 0.2, 0.2], [0.6, 0.2, 0.2]).round(6).tolist()
    [0.3, 0.4, 0.3]
    """
    p_array, q_array, sampled = _array(p_rule), _array(q_rule), _array(q_sampled)
    with np.errstate(divide="ignore", invalid="ignore"):
        # the engine tests u * q(x) < p(x): with q(x) = 0 that accepts whenever p(x) > 0
        ratio = np.where(q_array > 0, p_array / q_array, np.where(p_array > 0, np.inf, 0.0))
    accepted = sampled * np.minimum(1.0, ratio)
    rejected = max(0.0, 1.0 - accepted.sum())
    return accepted + rejected * residual_distribution(p_array, q_array, strict=False)


def correct_rule(p: Distribution, q: Distribution) -> np.ndarray:
    """The rule done right: equal to p for every q that covers p's support."""
    return output_distribution(p, q, q)


def one_hot(index: int, size: int) -> np.ndarray:
    """A point mass: the distribution of a deterministic choice.

    >>> one_hot(1, 3).tolist()
    [0.0, 1.0, 0.0]
    """
    distribution = np.zeros(size)
    distribution[index] = 1.0
    return distribution


def argmax_drafting(p: Distribution, q: Distribution) -> np.ndarray:
    """BUG: the draft proposes its argmax every time but the rule is told the token came from q.

    The drafted token was really sampled from a point mass, so the ratio p/q is wrong. Passing
    q = one_hot(argmax) instead makes the rule exact again (that is what a model-free drafter
    such as `PromptLookupDrafter` does): `output_distribution(p, point, point)` equals p.
    """
    q_array = _array(q)
    drafted_from = one_hot(int(np.argmax(q_array)), q_array.size)
    return output_distribution(p, q_array, drafted_from)


def resample_from_target(p: Distribution, q: Distribution) -> np.ndarray:
    """BUG: after a rejection, sample from p instead of the residual: min(p, q) + (1 - alpha) p.

    The procedure itself, a negative control for the statistical tests: `resample_from_target_rule`.
    """
    p_array, q_array = _array(p), _array(q)
    overlap = np.minimum(p_array, q_array)
    return overlap + (1.0 - overlap.sum()) * p_array


def retry_on_reject(p: Distribution, q: Distribution) -> np.ndarray:
    """BUG: after a rejection, emit nothing and draft again until something is accepted.

    Only the accepted part survives, renormalised: min(p, q) / alpha. The residual is precisely
    the mass this loses.
    """
    overlap = np.minimum(_array(p), _array(q))
    return overlap / overlap.sum()


def accept_always(p: Distribution, q: Distribution) -> np.ndarray:
    """BUG: no check at all. The output is the draft's q (the procedure: `accept_always_rule`)."""
    return _array(q).copy()


def stop_where_target_disagrees(p: Distribution, q: Distribution) -> np.ndarray:
    """BUG: the draft is cut short before a token the target would likely reject (p(x) < q(x)), peeking at p.

    A stop rule may use anything the draft knows; this one uses the target's opinion of the token
    being decided. Where it stops, the target emits a token of its own (a sample of p), as after a
    full accept. Tokens the draft over-proposes then come out only through p, the others every time
    they are drafted: q(x) [p(x) >= q(x)] + (sum of q over the cut tokens) p.

    >>> stop_where_target_disagrees([0.3, 0.4, 0.3], [0.6, 0.2, 0.2]).round(6).tolist()
    [0.18, 0.44, 0.38]
    """
    p_array, q_array = _array(p), _array(q)
    kept = p_array >= q_array
    return np.where(kept, q_array, 0.0) + q_array[~kept].sum() * p_array


def warp(probabilities: Distribution, temperature: float = 1.0, top_k: int = 0) -> np.ndarray:
    """Temperature then top-k on a distribution, by the engine's own warping (`specdec.engine.sampling`).

    softmax(log(probs) / T) = probs^(1/T) renormalised; top-k keeps ties with the k-th value.
    The arithmetic is the engine's float32, so the lessons warp exactly as a run does.

    >>> warp([0.6, 0.2, 0.2], temperature=0.5).round(6).tolist()
    [0.818182, 0.090909, 0.090909]
    >>> warp([0.6, 0.3, 0.1], top_k=2).round(6).tolist()
    [0.666667, 0.333333, 0.0]
    """
    import torch

    from specdec.engine.sampling import SamplingConfig
    from specdec.engine.sampling import probabilities as warped

    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 here (greedy is a point mass: use one_hot), got {temperature}")
    logits = torch.log(torch.as_tensor(_array(probabilities)))[None]  # [1, V]
    return warped(logits, SamplingConfig(temperature, top_k))[0].double().numpy()


def mismatched_warping(p: Distribution, q: Distribution, sampled_with: dict, ratio_with: dict) -> np.ndarray:
    """BUG: the draft samples from q warped one way, the rule divides by q warped another way.

    `sampled_with` and `ratio_with` are keyword arguments for `warp`, e.g. {"top_k": 2} and {}.
    p is used as given (already warped the way the user asked).
    """
    return output_distribution(p, warp(q, **ratio_with), warp(q, **sampled_with))


def reseeded_position(p: Distribution, q: Distribution) -> np.ndarray:
    """BUG: every random draw at a position uses the same uniform number v (the generator is
    reseeded with a seed that depends only on the position, in the drafter and in the verifier).

    The draft picks x by inverting q's cumulative sum at v, the rule tests v * q(x) < p(x) with
    the same v, and a rejection inverts the residual's cumulative sum at v again. The output is
    a deterministic function of one uniform v, piecewise constant between breakpoints, so its
    distribution is exact: the length of each piece goes to the token it emits.

    >>> reseeded_position([0.3, 0.4, 0.3], [0.6, 0.2, 0.2]).round(6).tolist()
    [0.5, 0.3, 0.2]
    """
    p_array, q_array = _array(p), _array(q)
    repair = residual_distribution(p_array, q_array, strict=False)
    q_edges, repair_edges = np.cumsum(q_array), np.cumsum(repair)
    with np.errstate(divide="ignore", invalid="ignore"):
        thresholds = np.where(q_array > 0, p_array / q_array, 0.0)  # accept x while v < p(x)/q(x)
    breakpoints = np.unique(np.clip(np.concatenate([[0.0, 1.0], q_edges, repair_edges, thresholds]), 0.0, 1.0))
    output = np.zeros_like(p_array)
    for left, right in zip(breakpoints[:-1], breakpoints[1:]):
        v = (left + right) / 2
        drafted = _invert(q_edges, v)
        emitted = drafted if v * q_array[drafted] < p_array[drafted] else _invert(repair_edges, v)
        output[emitted] += right - left
    return output


def _invert(cumulative: np.ndarray, v: float) -> int:
    """The token whose cumulative interval holds v, as `specdec.reference.rule.sample_from` picks it."""
    return int(min(np.searchsorted(cumulative, v * cumulative[-1], side="right"), cumulative.size - 1))


def round_to_bfloat16(values: Distribution) -> np.ndarray:
    """Round float values to the nearest bfloat16 (8 bits of mantissa), returned as float64.

    bfloat16 is the top half of a float32; rounding to nearest even on the dropped 16 bits.

    >>> round_to_bfloat16([0.3, 0.6, 1.0]).tolist()
    [0.30078125, 0.6015625, 1.0]
    """
    bits = _array(values).astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


def mixed_dtypes(p: Distribution, q: Distribution) -> np.ndarray:
    """BUG (a small one): the draft samples from q in float32, the rule sees p and q rounded to bfloat16.

    The ratio and the residual are computed from numbers that are not the ones the token was
    drawn with, so the output is p only up to rounding error.
    """
    return output_distribution(round_to_bfloat16(p), round_to_bfloat16(q), _array(q))


def largest_error(output: Distribution, p: Distribution) -> float:
    """max over tokens of |output - p|: the per-token error a frequency test would have to detect.

    >>> round(largest_error([0.5, 0.3, 0.2], [0.3, 0.4, 0.3]), 6)
    0.2
    """
    return float(np.abs(_array(output) - _array(p)).max())


def accept_always_rule(
    p: np.ndarray, q: np.ndarray, drafted: int, u: float, rng: np.random.Generator
) -> tuple[int, bool]:
    """BROKEN on purpose, as a procedure (`rule.Rule`): keep every drafted token. The output follows q, not p."""
    return drafted, True


def resample_from_target_rule(
    p: np.ndarray, q: np.ndarray, drafted: int, u: float, rng: np.random.Generator
) -> tuple[int, bool]:
    """BROKEN on purpose, as a procedure: on rejection sample from p instead of the residual (see
    `resample_from_target`)."""
    if u * q[drafted] < p[drafted]:
        return drafted, True
    return sample_from(p, rng), False
