"""Several guesses at one tree node: the exact output of the correct rule and of its classic bugs.

Notation: p is the target distribution at the node, q the draft's, and the node has k children
(guesses). The correct rule (`specdec.engine.tree_verification.verify_tree_sampled`, and
`specdec.reference.rule.multi_candidate_rule` in NumPy) draws the guesses from q without
replacement and tests them in turn:

    r, s = p, q
    for each guess x (drawn from s):
        keep x with probability min(1, r(x) / s(x))
        else r <- norm(max(0, r - s)); s <- norm(s without x)
    every guess failed: emit a sample of r

Its output is exactly p. Every function here computes, by enumerating the guesses and without
sampling, what the node emits when one piece of that rule is changed, so a lesson can show how far
from p each mistake lands:

    >>> p, q = [0.3, 0.4, 0.3], [0.6, 0.2, 0.2]
    >>> node_output(p, q, 2).round(6).tolist()
    [0.3, 0.4, 0.3]
    >>> same_test_for_every_guess([0.6, 0.3, 0.1], [0.1, 0.2, 0.7], 2).round(6).tolist()   # r and s never updated
    [0.3, 0.6, 0.1]

The one idea behind them all is chapter 2's: a test of a guess x is exact when (1) the s in r/s is
the law x was really drawn from, given the guesses before it, (2) the r is what is left of p after
the rejections so far, and (3) what is emitted when every guess fails is a sample of the last r.
Drawing with replacement is fine too (SpecInfer's original rule), as long as s then stays q.

NumPy, one node, no models. The tests check each formula against a simulation of the procedure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specdec.reference.theory import residual_distribution

Distribution = Sequence[float] | np.ndarray


def _array(values: Distribution) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


def _without(distribution: np.ndarray, token: int) -> np.ndarray:
    """`distribution` with `token` removed and the rest renormalised (all zeros if nothing is left)."""
    rest = distribution.copy()
    rest[token] = 0.0
    return rest / rest.sum() if rest.sum() > 0 else rest


def node_output(
    p: Distribution,
    q: Distribution,
    guesses: int,
    *,
    drawn_without_replacement: bool = True,
    remove_from_s: bool | None = None,
    update_r: bool = True,
    fallback_from_p: bool = False,
) -> np.ndarray:
    """What one node emits with `guesses` children, exactly. The defaults are the correct rule.

    - `drawn_without_replacement`: how the draft really drew the guesses (False: independently from q);
    - `remove_from_s`: whether the rule takes the tested guess out of s (default: whatever the draws did);
    - `update_r`: whether a rejection moves the target on to norm(max(0, r - s)) (False: every guess is
      tested against p, and after the last rejection the chain's residual norm(max(0, p - q)) is sampled);
    - `fallback_from_p`: when every guess failed, sample p instead of the last r.

    >>> node_output([0.3, 0.4, 0.3], [0.6, 0.2, 0.2], 2, drawn_without_replacement=False).round(6).tolist()
    [0.3, 0.4, 0.3]
    """
    p_array, q_array = _array(p), _array(q)
    remove = drawn_without_replacement if remove_from_s is None else remove_from_s

    def emitted(r: np.ndarray, drawn_from: np.ndarray, s: np.ndarray, left: int) -> np.ndarray:
        if left == 0 or drawn_from.sum() <= 0:
            if fallback_from_p:
                return p_array.copy()
            return r.copy() if update_r else residual_distribution(p_array, q_array, strict=False)
        output = np.zeros_like(p_array)
        for x in np.flatnonzero(drawn_from > 0):
            # the engine tests u * s(x) < r(x): with s(x) = 0 that keeps x whenever r(x) > 0
            keep = min(1.0, r[x] / s[x]) if s[x] > 0 else float(r[x] > 0)
            output[x] += drawn_from[x] * keep
            if keep < 1.0:
                next_r = residual_distribution(r, s, strict=False) if update_r else r
                next_drawn = _without(drawn_from, x) if drawn_without_replacement else drawn_from
                next_s = _without(s, x) if remove else s
                output += drawn_from[x] * (1.0 - keep) * emitted(next_r, next_drawn, next_s, left - 1)
        return output

    return emitted(p_array, q_array, q_array, guesses)


def same_test_for_every_guess(p: Distribution, q: Distribution, guesses: int) -> np.ndarray:
    """BUG: every guess is tested against p and q themselves, as if each were the chain's only guess.

    A rejection of x already tells something about the output: the first test has "spent" min(p, q);
    testing the next guess against p again counts that mass twice. With one guess this is the chain.
    """
    return node_output(p, q, guesses, remove_from_s=False, update_r=False)


def forgot_without_replacement(p: Distribution, q: Distribution, guesses: int) -> np.ndarray:
    """BUG: the guesses are drawn without replacement, but the
    rule divides by q, not by q without the earlier guesses."""
    return node_output(p, q, guesses, remove_from_s=False)


def removed_after_drawing_with_replacement(p: Distribution, q: Distribution, guesses: int) -> np.ndarray:
    """BUG, the mirror image: independent draws (repeats possible), but the rule removes each tested guess from s."""
    return node_output(p, q, guesses, drawn_without_replacement=False, remove_from_s=True)


def fallback_from_target(p: Distribution, q: Distribution, guesses: int) -> np.ndarray:
    """BUG: when every guess failed, sample the next token from p instead of from what is left of it."""
    return node_output(p, q, guesses, fallback_from_p=True)
