"""specdec.bugs.trees: each exact formula for a tree node against a simulation of the procedure it describes.

Chapter 4 quotes these formulas as what each classic tree bug does to the output, so every one is
held to a direct simulation here (chi-square), written out step by step and independently of the
formula's recursion; the correct rule's formula must give p for any p, q and number of guesses,
and match `specdec.reference.theory.multi_candidate_acceptance` in how often a guess is kept.
"""

from __future__ import annotations

import numpy as np
import pytest

from specdec.bugs import trees as tree_bugs
from specdec.reference.rule import sample_from
from specdec.reference.stats import chi_square_test
from specdec.reference.theory import residual_distribution

P, Q = np.array([0.60, 0.30, 0.10]), np.array([0.10, 0.20, 0.70])  # chapter 4's table: a draft that loves C
TRIALS = 20_000


def without(distribution: np.ndarray, token: int) -> np.ndarray:
    rest = distribution.copy()
    rest[token] = 0.0
    return rest / rest.sum() if rest.sum() > 0 else rest


def one_node(
    rng, guesses: int, *, drawn_without_replacement=True, remove_from_s=True, update_r=True, fallback_from_p=False
) -> int:
    """The procedure, once: draw the guesses first (as a drafter does), then test them in turn."""
    drawn, law = [], Q.copy()
    for _ in range(guesses):  # the drafter's draws, before any test
        if law.sum() <= 0:
            break
        x = sample_from(law, rng)
        drawn.append(x)
        if drawn_without_replacement:
            law = without(law, x)
    r, s = P.copy(), Q.copy()
    for x in drawn:
        keep = rng.random() * s[x] < r[x]
        if keep:
            return x
        if update_r:
            r = residual_distribution(r, s, strict=False)
        if remove_from_s:
            s = without(s, x)
    return sample_from(P if fallback_from_p else r if update_r else residual_distribution(P, Q), rng)


def simulate(**procedure) -> np.ndarray:
    rng = np.random.default_rng(0)
    counts = np.zeros(len(P), dtype=int)
    for _ in range(TRIALS):
        counts[one_node(rng, 2, **procedure)] += 1
    return counts


@pytest.mark.parametrize(
    "formula, procedure",
    [
        (tree_bugs.same_test_for_every_guess, dict(remove_from_s=False, update_r=False)),
        (tree_bugs.forgot_without_replacement, dict(remove_from_s=False)),
        (tree_bugs.removed_after_drawing_with_replacement, dict(drawn_without_replacement=False)),
        (tree_bugs.fallback_from_target, dict(fallback_from_p=True)),
        (lambda p, q, k: tree_bugs.node_output(p, q, k), {}),
        (
            lambda p, q, k: tree_bugs.node_output(p, q, k, drawn_without_replacement=False),
            dict(drawn_without_replacement=False, remove_from_s=False),
        ),
    ],
)
def test_each_formula_is_what_its_procedure_emits(formula, procedure):
    exact = formula(P, Q, 2)
    counts = simulate(**procedure)
    fit = chi_square_test(counts.tolist(), exact.tolist())
    assert fit.p_value > 1e-4, (
        f"simulation {counts / TRIALS} disagrees with the formula {exact} (p = {fit.p_value:.2g})"
    )


def test_the_bugs_are_far_from_p_and_the_rule_is_exact():
    for bug in (
        tree_bugs.same_test_for_every_guess,
        tree_bugs.forgot_without_replacement,
        tree_bugs.removed_after_drawing_with_replacement,
        tree_bugs.fallback_from_target,
    ):
        assert np.abs(bug(P, Q, 2) - P).max() > 0.05, bug.__name__
    rng = np.random.default_rng(1)
    for _ in range(100):
        p, q = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4) * 0.5)
        for guesses in (1, 2, 3, 5):
            assert np.allclose(tree_bugs.node_output(p, q, guesses), p, atol=1e-12)
            assert np.allclose(tree_bugs.node_output(p, q, guesses, drawn_without_replacement=False), p, atol=1e-12)


def test_one_guess_is_the_chain():
    from specdec.bugs import rules as bugs

    assert np.allclose(tree_bugs.same_test_for_every_guess(P, Q, 1), bugs.correct_rule(P, Q))
    assert np.allclose(tree_bugs.fallback_from_target(P, Q, 1), bugs.resample_from_target(P, Q))
