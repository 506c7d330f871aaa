"""Checks for lab 2: your enumeration against specdec's, then your generator's sequences against the exact law.

The sampled check runs 3,000 sequences of 4 tokens with gamma 2, so rounds 2 and 3 are tested too (a bug
in what one round hands the next never shows in round 1), and compares their counts with the enumeration
in a chi-square test (fixed seeds: the grade is repeatable); 600 more, of 2 tokens after another start token,
check that the generator starts where it is told.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from specdec.reference.rule import markov_sequence_distribution
from specdec.reference.stats import chi_square_test

P = np.array([[0.60, 0.30, 0.10], [0.20, 0.50, 0.30], [0.30, 0.10, 0.60]])   # p(next | previous)
Q = np.array([[0.10, 0.20, 0.70], [0.50, 0.20, 0.30], [0.40, 0.50, 0.10]])   # q(next | previous), far from P
START, LENGTH, GAMMA, RUNS = 0, 4, 2, 3_000
SAMPLED = ((START, LENGTH, RUNS), (2, 2, 600))                  # (start token, tokens per sequence, sequences)


def grade(module) -> list[str]:
    problems = []
    for name, table, start, length in (("P", P, START, 1), ("P", P, START, 3), ("Q", Q, 2, 2)):
        yours = module.sequence_distribution(table, start, length)
        truth = markov_sequence_distribution(table, start, length)
        call = f"sequence_distribution({name}, {start}, {length})"
        if set(yours) != set(truth):
            return [f"{call} has {len(yours)} keys; it needs all {len(truth)} sequences"]
        wrong = [key for key in truth if not np.isclose(yours[key], truth[key], atol=1e-12)]
        if wrong:
            return [f"{call}: the chance of {wrong[0]} should be {truth[wrong[0]]:.4f}, yours says {yours[wrong[0]]:.4f}"]
    rng = np.random.default_rng(7)
    for start, length, count in SAMPLED:
        runs = [tuple(module.speculative_generate(P, Q, start, length, GAMMA, rng)) for _ in range(count)]
        if any(len(run) != length for run in runs):
            return [f"speculative_generate(P, Q, {start}, {length}, ...) must return exactly {length} tokens"]
        fit = chi_square_test(Counter(runs), markov_sequence_distribution(P, start, length))
        if fit.p_value < 1e-4:
            problems.append(f"your {count} sequences of {length} tokens after token {start} do not follow P "
                            f"(chi-square p-value {fit.p_value:.1e}): check the residual, the bonus token, "
                            "and where each round starts")
    return problems
