"""Fixed candidates (point masses) at one position, exactly: the rule the model-free drafters rely on, and its bugs.

Notation: p is the target's distribution at the position, x_1, x_2, ... the fixed candidates proposed for it
in order (Token Recycling's table, suffix decoding's counts, lookahead's pool), q a distribution a buggy
rule is told the candidates came from.

The rule (`specdec.engine.tree_verification`, `q=None`): with r = p, for each candidate in order keep it with
probability r(x), else take x out of r and renormalize; if none is kept, emit a sample of r. Every function
returns the exact output distribution, computed by walking the rule's branches (no sampling):

    >>> p = [0.3, 0.4, 0.3]
    >>> candidates_output(p, [0, 1]).round(6).tolist()                  # two fixed guesses, A then B: exactly p
    [0.3, 0.4, 0.3]
    >>> kept_in_residual(p, [0]).round(6).tolist()                      # a rejected A stays in the draw
    [0.51, 0.28, 0.21]
    >>> told_it_was_drawn(p, [0.6, 0.2, 0.2], 0).round(6).tolist()      # A always proposed, the rule told q
    [0.5, 0.333333, 0.166667]
    >>> q_is_p(p, [0.6, 0.2, 0.2]).round(6).tolist()                   # drawn from q, the rule told "q = p"
    [0.6, 0.2, 0.2]

Nothing here runs a model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specdec.bugs.rules import one_hot, output_distribution

Distribution = Sequence[float] | np.ndarray


def _array(values: Distribution) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    return values / values.sum()


def _point_mass_walk(p: Distribution, candidates: Sequence[int], remove_rejected: bool) -> np.ndarray:
    """The rule over fixed candidates; `remove_rejected=False` is the bug that leaves a rejected candidate in r."""
    r, out, reach = _array(p), np.zeros(len(p)), 1.0  # reach: the chance the walk gets to this candidate
    for x in candidates:
        out[x] += reach * r[x]  # kept with probability r(x)
        reach *= 1.0 - r[x]
        if reach <= 0:
            return out
        if remove_rejected:
            r = r.copy()
            r[x] = 0.0
            r = r / r.sum()
    return out + reach * r  # none kept: a sample of what is left


def candidates_output(p: Distribution, candidates: Sequence[int]) -> np.ndarray:
    """The rule as `specdec` runs it: the output is p, whatever the candidates."""
    return _point_mass_walk(p, candidates, remove_rejected=True)


def kept_in_residual(p: Distribution, candidates: Sequence[int]) -> np.ndarray:
    """BUG: a rejected candidate is not taken out of r, so it can still come out of the final draw."""
    return _point_mass_walk(p, candidates, remove_rejected=False)


def told_it_was_drawn(p: Distribution, q: Distribution, candidate: int) -> np.ndarray:
    """BUG: a fixed candidate tested with min(1, p / q) as if drawn from q (a lookup's counts, the table's scores):
    chapter 2's bug 1 ("drafting by argmax while sampling") in another guise."""
    return output_distribution(p, q, one_hot(candidate, len(p)))


def q_is_p(p: Distribution, q: Distribution) -> np.ndarray:
    """BUG: a layer-skipping draft drawn from its own q, the rule
    told q = p ("it is the same model"): every draft is kept."""
    return output_distribution(p, p, q)
