"""Checks for lab 1: the output law of the rule, computed exactly from your functions, must be p.

For each pair (p, q) the law of the emitted token is

    out(y) = q(y) a(y) + (1 - sum_x q(x) a(x)) r(y),    a = accept_probability, r = residual

which must equal p(y) for every y: random pairs (some with zeros in q), q with zeros where p is not, p with
zeros where q is not, p == q, disjoint supports. Then `speculative_sample` itself is held to p by a chi-square
test on the hand-picked pairs (a fixed seed, so the grade is repeatable).
"""

from __future__ import annotations

import numpy as np

from specdec.reference.stats import chi_square_test

HAND_PICKED, SAMPLES = 5, 2_000          # speculative_sample is run SAMPLES times on each hand-picked pair


def pairs(rng: np.random.Generator) -> list[tuple[str, np.ndarray, np.ndarray]]:
    cases = [("the course's example", np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.2, 0.2])),
             ("q = p", np.array([0.5, 0.25, 0.25]), np.array([0.5, 0.25, 0.25])),
             ("q puts mass where p has none", np.array([0.5, 0.5, 0.0]), np.array([0.25, 0.25, 0.5])),
             ("q has zeros where p has mass", np.array([0.2, 0.3, 0.5]), np.array([0.5, 0.5, 0.0])),
             ("disjoint supports", np.array([1.0, 0.0, 0.0, 0.0]), np.array([0.0, 0.5, 0.25, 0.25]))]
    for index in range(20):
        p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5) * 0.5)
        if index % 2:                                    # half of them: the draft never proposes two tokens
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


def grade(module) -> list[str]:
    problems = []
    for name, p, q in pairs(np.random.default_rng(0)):
        out = exact_output(module, p, q)
        if not np.allclose(out, p, atol=1e-9):
            problems.append(f"{name}: p = {np.round(p, 3)}, q = {np.round(q, 3)}: your rule outputs {np.round(out, 3)}, not p")
    if problems:
        return problems[:3]
    rng = np.random.default_rng(1)
    for name, p, q in pairs(np.random.default_rng(0))[:HAND_PICKED]:
        counts = np.bincount([module.speculative_sample(p, q, rng) for _ in range(SAMPLES)], minlength=len(p))
        fit = chi_square_test(counts, p)
        if fit.p_value < 1e-4:
            problems.append(f"{name}: speculative_sample's frequencies {np.round(counts / counts.sum(), 3)} are not p = {p} "
                            f"(chi-square p-value {fit.p_value:.1e})")
    return problems
