"""The formulas of specdec.reference.theory against values worked out by hand."""

import math

import pytest

from specdec.reference import theory


def test_alpha_is_one_minus_total_variation():
    p, q = [0.3, 0.4, 0.3], [0.6, 0.2, 0.2]
    assert theory.acceptance_rate(p, q) == pytest.approx(0.7)
    assert theory.acceptance_rate(p, q) == pytest.approx(1 - theory.total_variation(p, q))
    assert theory.acceptance_rate(p, p) == pytest.approx(1.0)
    assert theory.acceptance_rate([1, 0], [0, 1]) == 0.0


def test_expected_tokens_per_pass_by_hand():
    # alpha = 0.5, gamma = 2: 1 + 0.5 + 0.25 = 1.75 (the geometric series written out)
    assert theory.expected_tokens_per_pass(0.5, 2) == pytest.approx(1.75)
    assert theory.expected_tokens_per_pass(0.8, 4) == pytest.approx(1 + 0.8 + 0.64 + 0.512 + 0.4096)
    assert theory.expected_tokens_per_pass(0.0, 7) == 1.0  # every draft rejected: one token per pass
    assert theory.expected_tokens_per_pass(1.0, 7) == 8.0  # every draft accepted: gamma + 1


def test_walltime_speedup_by_hand():
    # alpha 0.5, gamma 2, c 0.25: 1.75 tokens per round, round costs 2 * 0.25 + 1 = 1.5 target passes
    assert theory.walltime_speedup(0.5, 2, 0.25) == pytest.approx(1.75 / 1.5)
    assert theory.walltime_speedup(0.5, 2, 0.25, verify_cost=1.25) == pytest.approx(1.75 / 1.75)
    # Leviathan et al.'s closed form
    a, g, c = 0.7, 3, 0.2
    assert theory.walltime_speedup(a, g, c) == pytest.approx((1 - a ** (g + 1)) / ((1 - a) * (g * c + 1)))


def test_best_gamma_beats_its_neighbours():
    gamma, speedup = theory.best_gamma(0.8, 0.1)
    assert speedup == pytest.approx(theory.walltime_speedup(0.8, gamma, 0.1))
    assert speedup > theory.walltime_speedup(0.8, gamma - 1, 0.1)
    assert speedup > theory.walltime_speedup(0.8, gamma + 1, 0.1)


def test_speedup_only_when_alpha_exceeds_c():
    for alpha, c in [(0.6, 0.4), (0.3, 0.4), (0.9, 0.05), (0.1, 0.5)]:
        best = theory.best_gamma(alpha, c)[1]
        assert theory.pays_off(alpha, c) == (best > 1.0)


def test_residual_puts_mass_where_the_draft_under_proposes():
    residual = theory.residual_distribution([0.3, 0.4, 0.3], [0.6, 0.2, 0.2])
    assert residual.tolist() == pytest.approx([0.0, 2 / 3, 1 / 3])
    assert theory.residual_distribution([0.5, 0.5], [0.5, 0.5]).tolist() == [0.5, 0.5]


@pytest.mark.parametrize(
    "call",
    [
        lambda: theory.acceptance_rate([0.5, 0.6], [0.5, 0.5]),
        lambda: theory.acceptance_rate([0.5, 0.5], [1.0]),
        lambda: theory.expected_tokens_per_pass(1.5, 3),
        lambda: theory.walltime_speedup(0.5, 3, -1),
    ],
)
def test_bad_input_is_refused(call):
    with pytest.raises(ValueError):
        call()


def test_chi_square_survival_known_values():
    from specdec.reference.stats import chi_square_survival

    # critical values from any chi-square table
    assert chi_square_survival(3.841459, 1) == pytest.approx(0.05, abs=1e-6)
    assert chi_square_survival(6.634897, 1) == pytest.approx(0.01, abs=1e-6)
    assert chi_square_survival(18.307038, 10) == pytest.approx(0.05, abs=1e-6)
    assert chi_square_survival(124.342113, 100) == pytest.approx(0.05, abs=1e-6)
    assert chi_square_survival(2.0, 2) == pytest.approx(math.exp(-1.0))  # closed form for 2 degrees of freedom
