"""The exact law of a learner's sampler, computed by driving it with a controlled random source instead of sampling it.

A grader that samples a learner's code and runs a chi-square test sees a bias of a few percent only after
hundreds of thousands of draws. A grader can do better: hand the code a random source it controls, and walk
every way the draws can fall. `exact_law(run)` calls `run(rng)` again and again with a `ControlledRandom`
that replays a script of decisions; a decision past the end of the script stops the run and becomes a branch point:

- a discrete draw (`rng.choice(n, p=w)`, `rng.choice(tokens, p=w)`, `rng.integers(low, high)`) branches into
  each outcome, weighted by its probability: exact;
- a uniform draw (`rng.random()`, `rng.uniform(low, high)`) returns u in [0, 1) as a `Uniform`: a number the code
  may scale and shift (`u * q[x]`, `low + u * (high - low)`) and compare with a number (`u < 0.4`, `u * q < p`).
  Each comparison is a branch point: true on one part of the interval u is still known to lie in, false on the
  rest, each weighted by its length. The law is then exact up to floating-point rounding (about 1e-16), and
  `EXACT_TOLERANCE`, 1e-9, is what a grader allows.

Code that does anything else with u (`float(u)`, `np.log(u)`, a cumulative sum searched with u) is driven again
with plain numbers: the law is evaluated just above 0, at the midpoints of `GRID` equal intervals of u and just
below 1 (the ends themselves have probability 0, and code may divide by zero there); where two neighbours
disagree, the interval is halved `DEPTH` times to find the point where the behaviour changes. Each such point is
then known to within 1 / (GRID * 2 ** DEPTH), about 3e-5, and `GRID_TOLERANCE` is what a grader allows.

    >>> def keep_a_fair_coin(rng):
    ...     return "heads" if rng.random() < 0.5 else "tails"
    >>> law = exact_law(keep_a_fair_coin)
    >>> round(law["heads"], 4), round(law["tails"], 4)
    (0.5, 0.5)
    >>> def draft_then_test(rng):                      # chapter 1's rule with p = (0.3, 0.4, 0.3), q = (0.6, 0.2, 0.2)
    ...     p, q = [0.3, 0.4, 0.3], [0.6, 0.2, 0.2]
    ...     x = int(rng.choice(3, p=q))
    ...     if rng.random() < min(1.0, p[x] / q[x]):
    ...         return x
    ...     return int(rng.choice(3, p=[0.0, 2 / 3, 1 / 3]))
    >>> [round(exact_law(draft_then_test)[token], 4) for token in range(3)]
    [0.3, 0.4, 0.3]
    >>> law, tolerance = driven_law(draft_then_test)         # every comparison with u was followed exactly
    >>> tolerance, max(abs(law[token] - [0.3, 0.4, 0.3][token]) for token in range(3)) < 1e-15
    (1e-09, True)
    >>> def through_a_logarithm(rng):                       # not a comparison of u: driven on the grid instead
    ...     return "heads" if np.log(rng.random()) < np.log(0.5) else "tails"
    >>> law, tolerance = driven_law(through_a_logarithm)
    >>> tolerance, round(law["heads"], 4)
    (0.002, 0.5)

Not handled (`driven_law` returns (None, None), and the grader falls back to sampling with a real
`numpy.random.Generator`, sized by `sampled_draws` to see the same bias): draws of several values at once
(`size=...`), any other method of a Generator, and code whose behaviour changes at more points than the
`budget` of runs allows. A region of u narrower than 1 / GRID inside which the code does something else than
on both its sides would be missed; no sampler a learner writes for these labs has one.

NumPy only: the labs' graders run from a fresh clone with nothing but NumPy installed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence

import numpy as np

GRID = 8  # equal intervals of u looked at first
DEPTH = 12  # halvings of an interval where the behaviour changes: 1 / (8 * 4096) = 3e-5
BUDGET = 300_000  # runs of the learner's code before exact_law gives up (returns None)
JUST_ABOVE_ZERO, JUST_BELOW_ONE = 2.0**-40, 1.0 - 2.0**-40
EXACT_TOLERANCE = 1e-9  # a law followed comparison by comparison: exact but for rounding
GRID_TOLERANCE = 0.002  # a law found on the grid: each change point within 3e-5, so the law within about 1e-4


class _Branch(BaseException):
    """A draw past the end of the script: the run stops here (a BaseException, so `except Exception` cannot eat it)."""

    def __init__(self, outcomes: list[tuple[object, float]] | None) -> None:
        super().__init__()
        self.outcomes = outcomes  # discrete: (value, probability) pairs; None: a uniform draw


class Unsupported(BaseException):
    """The learner's code asked for a draw this random source does not offer."""


class _NotAComparison(BaseException):
    """The code used a symbolic u other than by scaling, shifting and comparing it: drive it on the grid instead."""


NUMBER = (int, float, np.integer, np.floating)


def _number(value) -> float:
    """A plain number (a NumPy scalar or 0-d array too); anything else ends the symbolic run."""
    if isinstance(value, NUMBER) or (isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf"):
        return float(value)
    raise _NotAComparison


class Uniform:
    """u in [0, 1), drawn once, as the code sees it: a * u + b, compared with numbers (module docstring).

    Each comparison asks the random source for a decision, which narrows the interval [lo, hi) that u is known
    to lie in; a comparison the interval already decides asks nothing.
    """

    __array_ufunc__ = None  # numpy defers to us: q[x] * u calls u.__rmul__

    def __init__(self, source: ControlledRandom, draw: list[float], a: float = 1.0, b: float = 0.0) -> None:
        self.source, self.draw, self.a, self.b = source, draw, a, b  # draw: [lo, hi), shared by u's images

    def _affine(self, a: float, b: float) -> Uniform:
        return Uniform(self.source, self.draw, a, b)

    def __add__(self, other):
        return self._affine(self.a, self.b + _number(other))

    __radd__ = __add__

    def __sub__(self, other):
        return self._affine(self.a, self.b - _number(other))

    def __rsub__(self, other):
        return self._affine(-self.a, _number(other) - self.b)

    def __mul__(self, other):
        factor = _number(other)
        return self._affine(self.a * factor, self.b * factor)

    __rmul__ = __mul__

    def __truediv__(self, other):
        divisor = _number(other)
        if divisor == 0.0:
            raise _NotAComparison
        return self._affine(self.a / divisor, self.b / divisor)

    def __neg__(self):
        return self._affine(-self.a, -self.b)

    def _below(self, threshold) -> bool:
        """Whether a * u + b < threshold, as a decision about u."""
        threshold = _number(threshold)
        if self.a == 0.0:
            return self.b < threshold
        cut = (threshold - self.b) / self.a  # a > 0: u < cut; a < 0: u > cut
        below_cut = self.source.decide(self.draw, cut)
        return below_cut if self.a > 0 else not below_cut

    def __lt__(self, other):
        return self._below(other)

    def __le__(self, other):  # u == cut has probability 0
        return self._below(other)

    def __gt__(self, other):
        return not self._below(other)

    def __ge__(self, other):
        return not self._below(other)

    def __float__(self):
        raise _NotAComparison

    def __bool__(self):
        raise _NotAComparison

    def __index__(self):
        raise _NotAComparison

    def __array__(self, *args, **kwargs):
        raise _NotAComparison


class ControlledRandom:
    """Stands in for `numpy.random.Generator` (one value per call), answering each draw from a script."""

    def __init__(self, script: Sequence[object], symbolic: bool = False) -> None:
        self.script, self.position, self.symbolic = list(script), 0, symbolic

    def decide(self, draw: list[float], cut: float) -> bool:
        """Whether u < cut, for the u whose interval is `draw` ([lo, hi), narrowed in place by the decision)."""
        lo, hi = draw
        if cut <= lo:
            return False
        if cut >= hi:
            return True
        below = bool(self._next([(True, (cut - lo) / (hi - lo)), (False, (hi - cut) / (hi - lo))]))
        draw[:] = [lo, cut] if below else [cut, hi]
        return below

    def _uniform(self) -> object:
        return Uniform(self, [0.0, 1.0]) if self.symbolic else float(self._next(None))

    def _next(self, outcomes: list[tuple[object, float]] | None) -> object:
        if self.position < len(self.script):
            value = self.script[self.position]
            self.position += 1
            return value
        raise _Branch(outcomes)

    def random(self, size=None, dtype=np.float64, out=None) -> float:
        if size is not None or out is not None:
            raise Unsupported("rng.random(size=...)")
        return self._uniform()

    def uniform(self, low: float = 0.0, high: float = 1.0, size=None) -> float:
        if size is not None:
            raise Unsupported("rng.uniform(size=...)")
        return float(low) + self._uniform() * (float(high) - float(low))

    def integers(self, low: int, high: int | None = None, size=None, dtype=np.int64, endpoint: bool = False) -> int:
        if size is not None:
            raise Unsupported("rng.integers(size=...)")
        low, high = (0, int(low)) if high is None else (int(low), int(high))
        values = range(low, high + 1 if endpoint else high)
        if len(values) == 0:
            raise ValueError("high <= low")
        return int(self._next([(value, 1.0 / len(values)) for value in values]))

    def choice(self, a, size=None, replace: bool = True, p=None, axis: int = 0, shuffle: bool = True):
        if size is not None:
            raise Unsupported("rng.choice(size=...)")
        items = np.arange(a) if isinstance(a, (int, np.integer)) else np.asarray(a)
        if len(items) == 0:
            raise ValueError("a cannot be empty unless no samples are taken")
        if p is None:
            weights = np.full(len(items), 1.0 / len(items))
        else:
            weights = np.asarray(p, dtype=np.float64)
            if weights.shape != (len(items),):
                raise ValueError("a and p must have same size")
            if np.any(weights < 0) or np.any(np.isnan(weights)):
                raise ValueError("probabilities are not non-negative")
            if abs(weights.sum() - 1.0) > 1e-8:  # what numpy's Generator.choice refuses too
                raise ValueError("probabilities do not sum to 1")
        index = self._next([(int(i), float(w)) for i, w in enumerate(weights) if w > 0])
        return items[index]

    def __getattr__(self, name: str):
        raise Unsupported(f"rng.{name}")


def _frozen(law: dict) -> tuple:
    return tuple(sorted(law.items(), key=lambda item: repr(item[0])))


def _add(total: dict, law: dict, weight: float) -> None:
    for outcome, probability in law.items():
        total[outcome] = total.get(outcome, 0.0) + weight * probability


def driven_law(run: Callable[[ControlledRandom], Hashable]) -> tuple[dict[Hashable, float] | None, float | None]:
    """The law of `run(rng)`'s return value over every way its draws can fall, and the tolerance a grader allows it:
    followed comparison by comparison (`EXACT_TOLERANCE`), else on the grid (`GRID_TOLERANCE`), else (None, None)."""
    try:
        law = exact_law(run, symbolic=True)
    except Exception:  # the code tripped over a symbolic u (an error it would not raise with numbers)
        law = None
    if law is not None:
        return law, EXACT_TOLERANCE
    law = exact_law(run)
    return (law, GRID_TOLERANCE) if law is not None else (None, None)


def exact_law(
    run: Callable[[ControlledRandom], Hashable],
    grid: int = GRID,
    depth: int = DEPTH,
    budget: int = BUDGET,
    symbolic: bool = False,
) -> dict[Hashable, float] | None:
    """The law of `run(rng)`'s return value over every way its draws can fall (module docstring); None if it cannot be
    driven. `symbolic`: uniform draws are `Uniform`s (exact), else numbers on the grid."""
    runs = [0]

    class OutOfBudget(BaseException):
        pass

    def explore(script: list) -> dict:
        runs[0] += 1
        if runs[0] > budget:
            raise OutOfBudget
        try:
            outcome = run(ControlledRandom(script, symbolic))
        except _Branch as branch:
            if branch.outcomes is not None:
                law: dict = {}
                for value, weight in branch.outcomes:
                    _add(law, explore(script + [value]), weight)
                return law
            return uniform(script)
        return {outcome: 1.0}

    def uniform(script: list) -> dict:
        """The law over u in [0, 1), piecewise constant in u (module docstring)."""
        cache: dict[float, tuple] = {}
        laws: dict[tuple, dict] = {}

        def at(u: float) -> tuple:
            if u not in cache:
                law = explore(script + [u])
                cache[u] = key = _frozen(law)
                laws[key] = law
            return cache[u]

        weights: dict[tuple, float] = {}

        def segment(a: float, b: float, levels: int) -> None:
            fa, fb = at(a), at(b)
            if fa == fb:
                weights[fa] = weights.get(fa, 0.0) + (b - a)
            elif levels == 0:
                weights[fa] = weights.get(fa, 0.0) + (b - a) / 2
                weights[fb] = weights.get(fb, 0.0) + (b - a) / 2
            else:
                middle = (a + b) / 2
                segment(a, middle, levels - 1)
                segment(middle, b, levels - 1)

        points = [JUST_ABOVE_ZERO] + [(j + 0.5) / grid for j in range(grid)] + [JUST_BELOW_ONE]
        for a, b in zip(points, points[1:]):
            segment(a, b, depth)
        total: dict = {}
        for key, weight in weights.items():
            _add(total, laws[key], weight / (JUST_BELOW_ONE - JUST_ABOVE_ZERO))
        return total

    try:
        return explore([])
    except (Unsupported, OutOfBudget, _NotAComparison):
        return None


def marginals(law: dict[Hashable, float]) -> dict[tuple[int, Hashable], float]:
    """(position, token) -> probability, for a law over tokens (position 0) or over sequences of tokens.

    >>> marginals({(0, 1): 0.5, (1,): 0.5})
    {(0, 0): 0.5, (1, 1): 0.5, (0, 1): 0.5}
    """
    result: dict = {}
    for outcome, probability in law.items():
        for position, token in enumerate(outcome if isinstance(outcome, tuple) else (outcome,)):
            result[(position, token)] = result.get((position, token), 0.0) + probability
    return result


def law_distance(yours: dict, truth: dict) -> tuple[float, str, object]:
    """The largest difference between two laws, over every outcome and every (position, token) marginal, and where:
    (gap, "outcome", the outcome) or (gap, "marginal", (position, token)).

    >>> gap, kind, where = law_distance({(0,): 0.52, (1,): 0.48}, {(0,): 0.5, (1,): 0.5})
    >>> round(gap, 6), kind, where
    (0.02, 'outcome', (0,))
    """
    worst, kind, where = 0.0, "outcome", None
    for name, a, b in (("outcome", yours, truth), ("marginal", marginals(yours), marginals(truth))):
        for key in sorted(set(a) | set(b), key=repr):
            gap = abs(a.get(key, 0.0) - b.get(key, 0.0))
            if gap > worst + 1e-15:
                worst, kind, where = gap, name, key
    return worst, kind, where


# --- when the code cannot be driven: sampling, sized to see the same bias -----------------------------

BIAS = 0.01  # the smallest error in one token's probability a grader must see ...
POWER_Z = 2.33  # ... with probability 0.99 (one-sided normal quantile) ...
ALARM_Z = 5.5  # ... while a correct sampler fails a test with probability below 4e-8 per test


def sampled_draws(bias: float = BIAS) -> int:
    """Draws that see a shift of `bias` in any probability with probability 0.99, testing at ALARM_Z.

    A frequency's standard deviation is at most 0.5 / sqrt(n), so n = ((ALARM_Z + POWER_Z) * 0.5 / bias) ** 2.

    >>> sampled_draws()
    153273
    """
    return math.ceil(((ALARM_Z + POWER_Z) * 0.5 / bias) ** 2)


def sampled_problems(
    draw: Callable[[np.random.Generator], Hashable], truth: dict, seed: int, seconds: float, what: str
) -> list[str]:
    """Sample `draw` with a real Generator and hold every (position, token) frequency to `truth`'s marginals."""
    import time

    rng, draws = np.random.default_rng(seed), sampled_draws()
    counts: dict = {}
    started = time.perf_counter()
    for index in range(draws):
        for key, value in marginals({draw(rng): 1.0}).items():
            counts[key] = counts.get(key, 0) + value
        if index == 999 and (time.perf_counter() - started) * draws / 1000 > seconds:
            return [
                f"{what}: your code draws from rng in a way the grader cannot follow exactly (several values per call, "
                "or "
                f"another method), and sampling it {draws:,} times to see a 1% bias would take longer than the time "
                "limit: draw one value per call with rng.random(), rng.uniform(), rng.choice(n, p=...) or "
                "rng.integers()"
            ]
    expected_marginals = marginals(truth)
    for key in sorted(set(expected_marginals) | set(counts), key=repr):
        expected, frequency = expected_marginals.get(key, 0.0), counts.get(key, 0) / draws
        spread = math.sqrt(max(expected * (1 - expected), 1e-12) / draws)
        if abs(frequency - expected) > ALARM_Z * spread + 1e-12:
            position, token = key
            return [
                f"{what}: token {token} at position {position} came out with frequency {frequency:.4f} in {draws:,} "
                f"draws; its probability is {expected:.4f}"
            ]
    return []
