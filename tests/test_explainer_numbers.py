"""specdec.reference.explainer: the numbers the Explainer page draws, held against specdec.reference.theory and the NumPy reference."""

from __future__ import annotations

import numpy as np
import pytest

from specdec.reference.explainer import accept_reject_picture, normalise, speedup_curve
from specdec.reference.rule import sample_one_position
from specdec.reference.theory import residual_distribution, walltime_speedup


def test_picture_agrees_with_theory_and_the_reference_rule():
    p, q = [0.3, 0.4, 0.3], [0.6, 0.2, 0.2]
    picture = accept_reject_picture([3, 4, 3], [6, 2, 2])                  # weights, normalised
    assert picture.p.tolist() == pytest.approx(p) and picture.alpha == pytest.approx(0.7)
    assert picture.overlap.sum() == pytest.approx(picture.alpha)
    assert picture.accept_probability * picture.q == pytest.approx(picture.overlap)   # q(x) min(1, p/q) = min(p, q)
    assert picture.residual == pytest.approx(residual_distribution(p, q))
    tokens, accepted = sample_one_position(picture.p, picture.q, 200_000, np.random.default_rng(0))
    assert accepted.mean() == pytest.approx(picture.alpha, abs=0.005)
    assert np.bincount(tokens, minlength=3) / 200_000 == pytest.approx(picture.p, abs=0.005)


def test_a_token_the_draft_never_proposes_is_fine():
    picture = accept_reject_picture([1, 1], [1, 0])
    assert picture.accept_probability.tolist() == [0.5, 1.0] and picture.residual.tolist() == [0.0, 1.0]


def test_weights_must_be_usable():
    with pytest.raises(ValueError, match="at least one above zero"):
        normalise([0, 0])
    with pytest.raises(ValueError, match="non-negative"):
        normalise([1, -1])


def test_speedup_curve_marks_the_best_gamma():
    curve = speedup_curve(0.8, 0.2, max_gamma=12)
    assert curve.speedups == pytest.approx([walltime_speedup(0.8, gamma, 0.2) for gamma in range(1, 13)])
    assert curve.best_speedup == max(curve.speedups) and curve.at(curve.best_gamma)[1] == curve.best_speedup
    assert curve.at(1) == pytest.approx((1.8, 1.8 / 1.2))
    assert not speedup_curve(0.3, 0.4).pays_off and max(speedup_curve(0.3, 0.4).speedups) < 1


def test_the_chain_round_writes_p_and_its_mean_length_is_the_formula():
    """The Explainer's round: its first token follows p exactly, and tokens per round average the alpha^k sum."""
    from collections import Counter

    from specdec.reference import chain_round as rounds
    from specdec.reference.stats import chi_square_test
    from specdec.reference.theory import acceptance_rate, expected_tokens_per_pass

    p, q, gamma = [0.3, 0.4, 0.3], [0.6, 0.2, 0.2], 3
    played = [rounds.nth_round(p, q, gamma, 0, index) for index in range(6_000)]
    firsts = Counter(one.emitted[0] for one in played)
    assert chi_square_test(firsts, {0: 0.3, 1: 0.4, 2: 0.3}).p_value > 1e-3
    count, mean, expected = rounds.rounds_summary(played, p, q)
    assert count == 6_000 and expected == pytest.approx(expected_tokens_per_pass(acceptance_rate(p, q), gamma))
    assert mean == pytest.approx(expected, abs=0.05)
    assert all(one.last_kind == rounds.BONUS for one in played if one.kept == gamma)
    # negative control: drawing the round's last token from p instead of the residual breaks the law of the first token
    broken = []
    rng = np.random.default_rng(1)
    for _ in range(6_000):
        x = rng.choice(3, p=q)
        broken.append(x if rng.random() * q[x] < p[x] else rng.choice(3, p=p))
    assert chi_square_test(Counter(broken), {0: 0.3, 1: 0.4, 2: 0.3}).p_value < 1e-6
