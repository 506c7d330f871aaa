"""specdec.bugs.rules: each exact formula against a simulation of the buggy procedure it describes.

The lessons (guide/02-algorithm.md) quote these formulas as what each classic bug does to the
output distribution, so every one is held to a direct simulation here with a chi-square test,
and the correct rule's formula must give p exactly for any p and q.
"""

from __future__ import annotations

import numpy as np
import pytest

from specdec.bugs import rules as bugs
from specdec.reference.rule import sample_from, speculative_rule
from specdec.reference.stats import chi_square_test
from specdec.reference.theory import acceptance_rate, residual_distribution

P, Q = np.array([0.30, 0.40, 0.30]), np.array([0.60, 0.20, 0.20])
TRIALS = 20_000


def simulate(step, trials: int = TRIALS, seed: int = 0) -> np.ndarray:
    """Counts of the token `step(rng)` emits, over `trials` runs."""
    rng = np.random.default_rng(seed)
    counts = np.zeros(len(P), dtype=int)
    for _ in range(trials):
        counts[step(rng)] += 1
    return counts


def assert_matches(counts: np.ndarray, exact: np.ndarray) -> None:
    fit = chi_square_test(counts.tolist(), exact.tolist())
    assert fit.p_value > 1e-4, (
        f"simulation {counts / counts.sum()} disagrees with the formula {exact} (p = {fit.p_value:.2g})"
    )


def test_correct_rule_gives_p_for_any_q():
    rng = np.random.default_rng(1)
    for _ in range(200):
        p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5) * 0.5)
        assert np.allclose(bugs.correct_rule(p, q), p, atol=1e-12)
        assert bugs.output_distribution(p, q, q).sum() == pytest.approx(1.0)


def test_argmax_drafting():
    drafted = int(np.argmax(Q))
    counts = simulate(lambda rng: speculative_rule(P, Q, drafted, rng.random(), rng)[0])
    assert_matches(counts, bugs.argmax_drafting(P, Q))
    point_mass = bugs.one_hot(drafted, len(Q))  # the fix: tell the rule the truth
    assert np.allclose(bugs.output_distribution(P, point_mass, point_mass), P)


def test_resample_from_target():
    counts = simulate(lambda rng: bugs.resample_from_target_rule(P, Q, sample_from(Q, rng), rng.random(), rng)[0])
    assert_matches(counts, bugs.resample_from_target(P, Q))


def test_retry_on_reject():
    def step(rng):
        while True:
            token, accepted = speculative_rule(P, Q, sample_from(Q, rng), rng.random(), rng)
            if accepted:
                return token

    assert_matches(simulate(step), bugs.retry_on_reject(P, Q))


def test_mismatched_warping():
    sampled, ratio = bugs.warp(Q, temperature=0.5), Q
    warped_p = bugs.warp(P, temperature=0.5)
    counts = simulate(lambda rng: speculative_rule(warped_p, ratio, sample_from(sampled, rng), rng.random(), rng)[0])
    exact = bugs.mismatched_warping(warped_p, Q, sampled_with={"temperature": 0.5}, ratio_with={})
    assert_matches(counts, exact)
    assert bugs.largest_error(exact, warped_p) > 0.05


def test_reseeded_position():
    def step(rng):
        seed = int(rng.integers(2**32))  # "seed + position": one fresh seed per position, reused for every draw
        drafted = sample_from(Q, np.random.default_rng(seed))
        return speculative_rule(P, Q, drafted, np.random.default_rng(seed).random(), np.random.default_rng(seed))[0]

    assert_matches(simulate(step), bugs.reseeded_position(P, Q))
    rng = np.random.default_rng(2)
    for _ in range(10):  # the piecewise computation against a fine grid of v, for random p and q
        p, q = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
        grid = (np.arange(4_000) + 0.5) / 4_000
        repair = residual_distribution(p, q)
        emitted = []
        for v in grid:
            x = bugs._invert(np.cumsum(q), v)
            emitted.append(x if v * q[x] < p[x] else bugs._invert(np.cumsum(repair), v))
        assert np.allclose(np.bincount(emitted, minlength=4) / len(grid), bugs.reseeded_position(p, q), atol=4e-3)


def test_accept_always_gives_q():
    assert np.allclose(bugs.accept_always(P, Q), Q)


def test_warp_is_the_closed_form():
    """bugs.warp runs the engine's warping; hold it to p^(1/T) renormalised, then top-k keeping ties."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        p = rng.dirichlet(np.ones(6))
        for temperature, top_k in ((0.5, 0), (1.0, 3), (0.7, 2)):
            expected = p ** (1 / temperature)
            if top_k:
                expected = np.where(expected >= np.sort(expected)[::-1][top_k - 1], expected, 0.0)
            assert np.allclose(bugs.warp(p, temperature=temperature, top_k=top_k), expected / expected.sum(), atol=1e-6)


def test_bfloat16_rounding_matches_torch_and_the_bias_is_small_but_real():
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(4).random(1000)
    expected = torch.tensor(values, dtype=torch.float32).to(torch.bfloat16).double().numpy()
    assert np.array_equal(bugs.round_to_bfloat16(values), expected)
    error = bugs.largest_error(bugs.mixed_dtypes(P, Q), P)
    assert 1e-5 < error < 1e-3


def test_every_bug_is_caught_by_a_frequency_test_except_the_dtype_one():
    for bug in (
        bugs.argmax_drafting,
        bugs.resample_from_target,
        bugs.retry_on_reject,
        bugs.accept_always,
        bugs.reseeded_position,
    ):
        counts = np.round(bug(P, Q) * 200_000).astype(int)
        assert chi_square_test(counts.tolist(), P.tolist()).p_value < 1e-6, bug.__name__
    assert acceptance_rate(P, Q) == pytest.approx(0.7)


def test_stop_where_target_disagrees():
    def step(rng):
        drafted = sample_from(Q, rng)
        if P[drafted] < Q[drafted]:  # the peek: stop before a token the target dislikes
            return sample_from(P, rng)  # and let the target emit its own token there
        return speculative_rule(P, Q, drafted, rng.random(), rng)[0]

    assert_matches(simulate(step), bugs.stop_where_target_disagrees(P, Q))
    assert bugs.largest_error(bugs.stop_where_target_disagrees(P, Q), P) > 0.1
