"""Small statistics for checking that sampled output has the distribution it should.

Two tools, both used by the tests, the toy demo and the dashboard:

- `binomial_standard_error`: how far a measured frequency may honestly wander from its true
  probability after n trials (the toy demo passes when every token is within 5 standard errors).
- `chi_square_test`: Pearson's goodness-of-fit test of observed counts against exact expected
  probabilities, with cells of small expected count pooled so the chi-square approximation holds.
  Its p-value comes from `chi_square_survival`, the regularised upper incomplete gamma function,
  written out here so the package needs no SciPy.

Not handled: exact multinomial tests for tiny samples, multiple-testing corrections.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


def binomial_standard_error(probability: float, trials: int) -> float:
    """sqrt(p (1 - p) / n): the standard deviation of a measured frequency.

    >>> round(binomial_standard_error(0.3, 200_000), 6)
    0.001025
    """
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    return math.sqrt(probability * (1.0 - probability) / trials)


def chi_square_survival(statistic: float, degrees_of_freedom: int) -> float:
    """P(X >= statistic) for X ~ chi-square(degrees_of_freedom): the test's p-value.

    Equal to Q(k/2, x/2), the regularised upper incomplete gamma function, computed by its power
    series below a + 1 and by its continued fraction above (Numerical Recipes, section 6.2).

    >>> round(chi_square_survival(3.841459, 1), 4), round(chi_square_survival(18.307038, 10), 4)
    (0.05, 0.05)
    """
    if degrees_of_freedom < 1:
        raise ValueError(f"degrees_of_freedom must be >= 1, got {degrees_of_freedom}")
    if statistic <= 0:
        return 1.0
    if math.isinf(statistic):
        return 0.0
    a, x = degrees_of_freedom / 2.0, statistic / 2.0
    log_prefactor = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1.0:  # series for the lower function P(a, x); Q = 1 - P
        term = total = 1.0 / a
        for n in range(1, 10_000):
            term *= x / (a + n)
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_prefactor))
    tiny = 1e-300  # continued fraction for Q(a, x), modified Lentz's method
    b = x + 1.0 - a
    c, d = 1.0 / tiny, 1.0 / b
    fraction = d
    for n in range(1, 10_000):
        an = -n * (n - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        fraction *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return min(1.0, math.exp(log_prefactor) * fraction)


@dataclass(frozen=True)
class GoodnessOfFit:
    """The result of `chi_square_test`."""

    statistic: float
    degrees_of_freedom: int
    p_value: float
    bins: int  # cells after pooling the rare ones


def chi_square_test(
    observed: Mapping[object, int] | Sequence[int],
    expected_probabilities: Mapping[object, float] | Sequence[float],
    min_expected: float = 5.0,
) -> GoodnessOfFit:
    """Pearson's chi-square test of observed counts against exact probabilities.

    Cells whose expected count is below `min_expected` are pooled into one bin (and that bin
    into the next-smallest cell if it is still too small). An observation in a cell of
    probability zero is impossible under the hypothesis, so the p-value is 0.

    Mappings are matched by key (an outcome missing from `observed` counts 0); sequences by
    position.

    >>> fit = chi_square_test([480, 520], [0.5, 0.5])
    >>> round(fit.statistic, 3), fit.degrees_of_freedom, round(fit.p_value, 3)
    (1.6, 1, 0.206)
    """
    if isinstance(expected_probabilities, Mapping):
        keys = list(expected_probabilities)
        extra = set(observed) - set(keys) if isinstance(observed, Mapping) else set()
        if extra:
            return GoodnessOfFit(math.inf, 1, 0.0, len(keys))
        probabilities = np.array([expected_probabilities[key] for key in keys], dtype=np.float64)
        counts = np.array(
            [observed.get(key, 0) if isinstance(observed, Mapping) else 0 for key in keys], dtype=np.float64
        )
    else:
        probabilities = np.asarray(expected_probabilities, dtype=np.float64)
        counts = np.asarray(observed, dtype=np.float64)
    if probabilities.shape != counts.shape:
        raise ValueError(f"observed has {counts.size} cells but expected has {probabilities.size}")
    if not np.isclose(probabilities.sum(), 1.0, atol=1e-6):
        raise ValueError(f"expected probabilities must sum to 1, got {probabilities.sum():.6f}")
    trials = counts.sum()
    impossible = probabilities <= 0
    if np.any(counts[impossible] > 0):
        return GoodnessOfFit(math.inf, 1, 0.0, int((~impossible).sum()))
    counts, expected = counts[~impossible], probabilities[~impossible] * trials
    order = np.argsort(expected)  # pool the rarest cells first
    counts, expected = counts[order], expected[order]
    rare = expected < min_expected
    pooled_counts = list(counts[~rare])
    pooled_expected = list(expected[~rare])
    if rare.any():
        rare_count, rare_expected = counts[rare].sum(), expected[rare].sum()
        if rare_expected < min_expected and pooled_expected:  # still too small: merge into the smallest cell
            pooled_counts[0] += rare_count
            pooled_expected[0] += rare_expected
        else:
            pooled_counts.append(rare_count)
            pooled_expected.append(rare_expected)
    pooled_counts_array, pooled_expected_array = np.array(pooled_counts), np.array(pooled_expected)
    bins = len(pooled_counts_array)
    if bins < 2:
        return GoodnessOfFit(0.0, 1, 1.0, bins)
    statistic = float(((pooled_counts_array - pooled_expected_array) ** 2 / pooled_expected_array).sum())
    return GoodnessOfFit(statistic, bins - 1, chi_square_survival(statistic, bins - 1), bins)
