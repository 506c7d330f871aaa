"""Checks for lab 1: the rule's two functions hold their values, its output law is p, and the sample really drafts from
q.

1. `accept_probability(p, q, x)` equals min(1, p(x) / q(x)) for every token q can draft, and `residual(p, q)`
   equals norm(max(0, p - q)), on the hand-picked and random pairs below (an accept probability of 0 with p as
   the "residual" has the right law, so the law alone cannot catch it).
2. The law of the emitted token, computed exactly from your two functions,

       out(y) = q(y) a(y) + (1 - sum_x q(x) a(x)) r(y),    a = accept_probability, r = residual

   equals p(y) for every y: random pairs (some with zeros in q), q with zeros where p is not, p with zeros
   where q is not, p == q, disjoint supports.
3. `speculative_sample` drafts from q: with the same seed and the same p, two different q must give
   different tokens somewhere (a sample that ignores q and draws from p directly has the law p too); and it keeps
   the drafted x with the rule's probability, sum(min(p, q)): the joint law of (x, output), computed exactly as in
   4, shows a sampler whose law is p but that tests x another way (accept with p(x), else resample from p without
   x: it keeps sum(q p)) or never tests it (a draw from p shifted by x).
4. `speculative_sample` itself outputs p: its law is computed exactly by driving it with a controlled random
   source (`controlled_random.driven_law`: every way its draws can fall, not a sample), on the hand-picked pairs
   and a few random ones, and must be within 1e-9 of p for every token: a sample off by 1e-6 in one token's
   probability fails. Code that uses a uniform draw other than by scaling and comparing it is driven on a grid of
   values instead (within 0.002: a bias of 0.005 fails); code that draws in a way the controlled source cannot
   follow (several values per call) is sampled, `controlled_random.sampled_draws()` times: enough to see a 0.01
   bias with probability 0.99.

NumPy only (the grader runs from a fresh clone); fixed seeds throughout, so the grade is repeatable.
"""

from __future__ import annotations

import numpy as np

from controlled_random import driven_law, law_distance, sampled_problems

TIME_LIMIT_S = 60
HAND_PICKED, RANDOM_LAWS = 5, 3  # pairs whose output law is computed exactly: the hand-picked ones, 3 random ones
SAME_SEED = 200  # draws compared between two q's under one seed


def residual_distribution(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """norm(max(0, p - q)), what a rejection samples from (specdec.reference.theory's, in two lines).

    >>> residual_distribution(np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.2, 0.2])).round(3).tolist()
    [0.0, 0.667, 0.333]
    """
    excess = np.maximum(p - q, 0.0)
    return excess / excess.sum()


def pairs(rng: np.random.Generator) -> list[tuple[str, np.ndarray, np.ndarray]]:
    cases = [
        ("the course's example", np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.2, 0.2])),
        ("q = p", np.array([0.5, 0.25, 0.25]), np.array([0.5, 0.25, 0.25])),
        ("q puts mass where p has none", np.array([0.5, 0.5, 0.0]), np.array([0.25, 0.25, 0.5])),
        ("q has zeros where p has mass", np.array([0.2, 0.3, 0.5]), np.array([0.5, 0.5, 0.0])),
        ("disjoint supports", np.array([1.0, 0.0, 0.0, 0.0]), np.array([0.0, 0.5, 0.25, 0.25])),
    ]
    for index in range(20):
        p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5) * 0.5)
        if index % 2:  # half of them: the draft never proposes two tokens
            q[rng.choice(5, size=2, replace=False)] = 0.0
            q = q / q.sum()
        cases.append((f"random pair {index}", p, q))
    return cases


def exact_output(module, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    keep = np.array([q[x] * module.accept_probability(p, q, x) if q[x] > 0 else 0.0 for x in range(len(q))])
    rejected = 1.0 - keep.sum()
    if rejected <= 1e-12:
        return keep
    return keep + rejected * np.asarray(module.residual(p, q), dtype=np.float64)


def differing(yours: np.ndarray, want: np.ndarray) -> str:
    """The entries where `yours` is not `want`, to ten digits (rounded arrays can look the same when they differ).

    >>> differing(np.array([0.0, 0.6667, 0.3333]), np.array([0.0, 2 / 3, 1 / 3]))
    'entry 1 is 0.6667000000 where it should be 0.6666666667; entry 2 is 0.3333000000 where it should be 0.3333333333'
    """
    if yours.shape != want.shape:
        return f"yours has {yours.size} entries where it should have {want.size}"
    wrong = [i for i in range(len(want)) if not np.isclose(yours[i], want[i], atol=1e-9)]
    return "; ".join(f"entry {i} is {yours[i]:.10f} where it should be {want[i]:.10f}" for i in wrong[:3])


def value_problems(module, cases) -> list[str]:
    """accept_probability and residual against their definitions, token by token."""
    for name, p, q in cases:
        for x in np.flatnonzero(q > 0):
            want, yours = min(1.0, p[x] / q[x]), module.accept_probability(p, q, int(x))
            if not np.isclose(float(yours), want, atol=1e-9):
                return [
                    f"{name}: accept_probability(p, q, {x}) should be min(1, p(x) / q(x)) = {want:.3f}, yours is "
                    f"{float(yours):.3f} (p = {np.round(p, 3)}, q = {np.round(q, 3)})"
                ]
        if not np.allclose(p, q):
            want, yours = residual_distribution(p, q), np.asarray(module.residual(p, q), dtype=np.float64)
            if yours.shape != want.shape or not np.allclose(yours, want, atol=1e-9):
                return [f"{name}: residual(p, q) should be norm(max(0, p - q)): {differing(yours, want)}"]
    return []


def drafts_from_q(module) -> list[str]:
    """The same seed, the same p, two different q: a sample that drafts from q cannot give the same tokens."""
    p, q_a, q_b = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.2, 0.2]), np.array([0.2, 0.2, 0.6])
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    with_a = [int(module.speculative_sample(p, q_a, rng_a)) for _ in range(SAME_SEED)]
    with_b = [int(module.speculative_sample(p, q_b, rng_b)) for _ in range(SAME_SEED)]
    if with_a == with_b:
        return [
            f"speculative_sample gave the same {SAME_SEED} tokens for q = {q_a} and q = {q_b} under one seed: it never "
            "drafts from q. The rule draws x from q first, then keeps it with accept_probability"
        ]
    return []


class Drafted:
    """The random source as the learner's code sees it, passed through, remembering its first draw: the drafted x.

    x is what the first draw gives: `rng.choice(len(q), p=q)`'s value, or for a uniform u the token whose slice of
    q's cumulative sum u falls in (code that inverts q's cumulative sum by hand). A first draw from another law is
    recorded as "not from q". Comparisons with a symbolic u branch the driven law, so the law stays exact.
    """

    def __init__(self, rng, q: np.ndarray) -> None:
        self.rng, self.q, self.x = rng, q, None

    def choice(self, a, *args, **kwargs):
        value = self.rng.choice(a, *args, **kwargs)
        if self.x is None:
            weights = kwargs.get("p", args[2] if len(args) > 2 else None)
            drafts = weights is not None and np.shape(weights) == self.q.shape and np.allclose(weights, self.q)
            self.x = int(value) if drafts else "not from q"
        return value

    def random(self, *args, **kwargs):
        u = self.rng.random(*args, **kwargs)
        if self.x is None:
            self.x = self._token_at(u)
        return u

    def uniform(self, low=0.0, high=1.0, *args, **kwargs):
        value = self.rng.uniform(low, high, *args, **kwargs)
        if self.x is None:
            self.x = self._token_at((value - low) / (high - low))
        return value

    def _token_at(self, u) -> int:
        token, total = 0, 0.0
        for index in range(len(self.q) - 1):
            total += float(self.q[index])
            if not u < total:
                token = index + 1
        return token

    def __getattr__(self, name: str):
        return getattr(self.rng, name)


def keeps_what_the_rule_keeps(module, name: str, p: np.ndarray, q: np.ndarray) -> list[str]:
    """The rule keeps a drafted x with probability sum(min(p, q)) (chapter 1's alpha): a sampler whose law is p but
    which tests x another way (accept with p(x), then resample from p without x) keeps fewer, and one that never
    tests x at all (a draw from p shifted by x) keeps them by chance only. The joint law of (x, output) says which."""

    def draft_and_output(rng):
        drafted = Drafted(rng, q)
        output = int(module.speculative_sample(p, q, drafted))
        return drafted.x if drafted.x is not None else "no draw", output

    law, tolerance = driven_law(draft_and_output)
    if law is None:  # code the controlled source cannot follow: the law check above sampled it
        return []
    odd = sum(weight for (x, _), weight in law.items() if not isinstance(x, (int, np.integer)))
    if odd > tolerance:
        return [
            f"{name}: speculative_sample's first draw should be the draft, x from q (rng.choice(len(q), p=q)); "
            f"yours drew from another law first with probability {odd:.4f}"
        ]
    kept, want = sum(weight for (x, y), weight in law.items() if x == y), float(np.minimum(p, q).sum())
    if abs(kept - want) > tolerance:
        return [
            f"{name}: speculative_sample keeps the drafted token with probability {kept:.4f}, where the rule keeps it "
            f"with probability sum(min(p, q)) = {want:.4f} (p = {np.round(p, 3)}, q = {np.round(q, 3)}): its law is "
            "p, but it is not the rule. Keep x with accept_probability(p, q, x), else draw from residual(p, q)"
        ]
    return []


def grade(module) -> list[str]:
    cases = pairs(np.random.default_rng(0))
    problems = value_problems(module, cases)
    if problems:
        return problems
    for name, p, q in cases:
        out = exact_output(module, p, q)
        if not np.allclose(out, p, atol=1e-9):
            problems.append(
                f"{name}: p = {np.round(p, 3)}, q = {np.round(q, 3)}: your rule's output law is not p: "
                f"{differing(out, p)}"
            )
    if problems:
        return problems[:3]
    problems = drafts_from_q(module)
    if problems:
        return problems
    for name, p, q in cases[:HAND_PICKED] + cases[-RANDOM_LAWS:]:
        problems += sample_law_problems(module, name, p, q) or keeps_what_the_rule_keeps(module, name, p, q)
        if problems:
            return problems
    return problems


def sample_law_problems(module, name: str, p: np.ndarray, q: np.ndarray) -> list[str]:
    """speculative_sample's output law against p: computed exactly, or sampled where the code cannot be driven."""

    def draw(rng) -> int:
        return int(module.speculative_sample(p, q, rng))

    law, tolerance = driven_law(draw)
    truth = {token: float(probability) for token, probability in enumerate(p)}
    if law is None:
        return sampled_problems(draw, truth, seed=1, seconds=TIME_LIMIT_S / 3, what=f"{name}: speculative_sample")
    gap, kind, token = law_distance(law, truth)
    if gap > tolerance:
        yours = np.array([law.get(x, 0.0) for x in range(len(p))])
        token = token[1] if kind == "marginal" else token
        return [
            f"{name}: speculative_sample outputs token {token} with probability {law.get(token, 0.0):.10f}, where p "
            "gives it "
            f"{p[token]:.10f}, {gap:.1e} apart (its whole law, computed exactly: {np.round(yours, 4)}; p = "
            f"{np.round(p, 4)}, q = {np.round(q, 4)})"
        ]
    return []
