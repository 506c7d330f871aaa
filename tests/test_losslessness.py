"""Losslessness of the accept/reject rule, checked on the NumPy reference (no torch, no models).

Three kinds of evidence: a hand-worked case, statistical tests against exact distributions (one
position and whole blocks over a toy Markov language), and negative controls: deliberately broken
rules must fail the very same tests, which proves the tests can fail.

Runs under pytest, and also alone: `python tests/test_losslessness.py` prints a pytest-like summary.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from specdec.bugs.rules import accept_always_rule, resample_from_target_rule  # noqa: E402
from specdec.reference.rule import (  # noqa: E402
    markov_sequence_distribution,
    sample_one_position,
    speculative_markov_generate,
    speculative_rule,
)
from specdec.reference.stats import chi_square_test  # noqa: E402
from specdec.reference.theory import acceptance_rate, residual_distribution  # noqa: E402
from specdec.reference.toy import run_losslessness_check  # noqa: E402

P = np.array([0.30, 0.40, 0.30])  # target
Q = np.array([0.60, 0.20, 0.20])  # draft
SIGNIFICANCE = 1e-4  # a correct rule fails a test this rarely; the broken ones fail by miles

# A toy Markov language: row a is the next-token distribution after token a.
TARGET_TABLE = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.3, 0.3, 0.4]])
DRAFT_TABLE = np.array([[0.2, 0.2, 0.6], [0.4, 0.4, 0.2], [0.6, 0.1, 0.3]])


def test_hand_worked_case():
    """p = (0.3, 0.4, 0.3), q = (0.6, 0.2, 0.2): worked out on paper, token by token."""
    assert np.isclose(acceptance_rate(P, Q), 0.7)  # 0.3 + 0.2 + 0.2
    assert np.allclose(residual_distribution(P, Q), [0.0, 2 / 3, 1 / 3])  # max(0, p - q) = (0, 0.2, 0.1)
    accepted_part = np.minimum(P, Q)  # q(x) min(1, p/q) = (0.3, 0.2, 0.2)
    rejected_part = (1 - 0.7) * residual_distribution(P, Q)  # 0.3 * (0, 2/3, 1/3) = (0, 0.2, 0.1)
    assert np.allclose(accepted_part + rejected_part, P)


def test_rule_decisions_by_hand():
    rng = np.random.default_rng(0)
    assert speculative_rule(P, Q, 1, 0.99, rng) == (1, True)  # p(B) > q(B): always accepted
    assert speculative_rule(P, Q, 0, 0.49, rng) == (0, True)  # p/q = 0.5 for A: u < 0.5 accepts
    token, accepted = speculative_rule(P, Q, 0, 0.51, rng)  # ... u > 0.5 rejects,
    assert not accepted and token in (1, 2)  # and the residual never gives A


def test_one_position_matches_target():
    tokens, _ = sample_one_position(P, Q, 100_000, np.random.default_rng(1))
    fit = chi_square_test(np.bincount(tokens, minlength=3), P)
    assert fit.p_value > SIGNIFICANCE, fit


def test_measured_acceptance_matches_alpha():
    for p, q in [(P, Q), (np.array([0.1, 0.1, 0.8]), np.array([0.8, 0.1, 0.1])), (P, P)]:
        _, accepted = sample_one_position(p, q, 100_000, np.random.default_rng(2))
        standard_error = np.sqrt(acceptance_rate(p, q) * (1 - acceptance_rate(p, q)) / 100_000)
        assert abs(accepted.mean() - acceptance_rate(p, q)) <= 5 * standard_error + 1e-12


def _block_counts(rule, runs: int = 20_000, length: int = 3, gamma: int = 2, seed: int = 3) -> Counter:
    rng = np.random.default_rng(seed)
    return Counter(
        tuple(speculative_markov_generate(TARGET_TABLE, DRAFT_TABLE, 0, length, gamma, rng, rule)[0])
        for _ in range(runs)
    )


def test_whole_blocks_match_target_sequences():
    """Rounds of gamma = 2 drafts plus the resampled or bonus token give exactly P's sequences."""
    exact = markov_sequence_distribution(TARGET_TABLE, 0, 3)
    fit = chi_square_test(_block_counts(speculative_rule), exact)
    assert fit.p_value > SIGNIFICANCE, fit


def test_negative_control_accept_always_fails():
    exact = markov_sequence_distribution(TARGET_TABLE, 0, 3)
    fit = chi_square_test(_block_counts(accept_always_rule), exact)
    assert fit.p_value < SIGNIFICANCE, fit


def test_negative_control_skipping_the_residual_fails():
    exact = markov_sequence_distribution(TARGET_TABLE, 0, 3)
    fit = chi_square_test(_block_counts(resample_from_target_rule), exact)
    assert fit.p_value < SIGNIFICANCE, fit


def test_toy_demo_passes_for_many_drafts():
    for draft in [(0.6, 0.2, 0.2), (0.05, 0.05, 0.9), (0.3, 0.4, 0.3), (1.0, 0.0, 0.0)]:
        check = run_losslessness_check((0.3, 0.4, 0.3), draft, trials=200_000, seed=4)
        assert check.passed, check
        assert abs(check.alpha_measured - check.alpha_predicted) < 0.01


def _run_without_pytest() -> int:
    tests = [(name, obj) for name, obj in globals().items() if name.startswith("test_") and callable(obj)]
    start, failures = time.perf_counter(), 0
    for name, test in tests:
        try:
            test()
            print(f"{Path(__file__).name}::{name} PASSED")
        except Exception as error:  # report every failure, then summarise
            failures += 1
            print(f"{Path(__file__).name}::{name} FAILED: {error!r}")
    passed = len(tests) - failures
    summary = ", ".join(part for part in (f"{failures} failed" if failures else "", f"{passed} passed") if part)
    print(f"{'=' * 20} {summary} in {time.perf_counter() - start:.2f}s {'=' * 20}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(_run_without_pytest())
