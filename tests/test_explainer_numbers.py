"""The Explainer's numbers, held against specdec.reference.theory and the NumPy reference.

Two Explainers draw them: the dashboard page (through `specdec.reference.explainer` and `chain_round`) and
`guide/explainer.html`, whose script carries its own copy of the formulas. The second half of this file runs that
script's math section in node (`apt-get install -y nodejs`; a missing node FAILS the test and says so) and compares
it with `specdec.reference.theory` on a grid, with negative controls that break the script on purpose.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from specdec.reference import chain_round as rounds
from specdec.reference.chain_round import expected_tokens_terms
from specdec.reference.explainer import accept_reject_picture, alpha_where_speedup_falls_below, normalise, speedup_curve
from specdec.reference.rule import sample_one_position
from specdec.reference.stats import chi_square_test
from specdec.reference.theory import (
    acceptance_rate,
    best_gamma,
    expected_tokens_per_pass,
    residual_distribution,
    walltime_speedup,
)


def test_picture_agrees_with_theory_and_the_reference_rule():
    p, q = [0.3, 0.4, 0.3], [0.6, 0.2, 0.2]
    picture = accept_reject_picture([3, 4, 3], [6, 2, 2])  # weights, normalised
    assert picture.p.tolist() == pytest.approx(p) and picture.alpha == pytest.approx(0.7)
    assert picture.overlap.sum() == pytest.approx(picture.alpha)
    assert picture.accept_probability * picture.q == pytest.approx(picture.overlap)  # q(x) min(1, p/q) = min(p, q)
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


# --- guide/explainer.html's own math, run in node and held to specdec.reference --------------------------------

EXPLAINER = Path(__file__).resolve().parents[1] / "guide" / "explainer.html"
MATH_START, MATH_END = "// The math:", "// State and presets."


def explainer_math(html: str | None = None) -> str:
    """The pure part of the explainer's script: the functions between its 'The math' and 'State and presets' headers."""
    html = EXPLAINER.read_text() if html is None else html
    start, end = html.find(MATH_START), html.find(MATH_END)
    assert 0 < start < end, f"explainer.html no longer has its '{MATH_START}' ... '{MATH_END}' section"
    return html[start:end].rsplit("\n", 2)[0]  # drop the rule line above the next header


def run_javascript(math: str, program: str) -> object:
    """Run `program` after the explainer's math in node; it prints one JSON value, returned here."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.fail(
            "node is not installed: `apt-get install -y nodejs` (it runs the explainer's script outside a browser)"
        )
    done = subprocess.run(
        [node, "-e", f'"use strict";\n{math}\n{program}'], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


GRID = [
    (alpha, gamma, c)
    for alpha in (0.0, 0.05, 0.3, 0.6, 0.7, 0.8, 0.95, 0.99, 1.0)
    for gamma in (1, 2, 4, 8, 16)
    for c in (0.0, 0.1, 0.5, 1.0)
]


def test_the_html_computes_expected_tokens_and_speedup_as_theory_does():
    """E[tokens], its alpha^k terms, the speedup, the best gamma
    and the guided-question search, on a grid, against theory."""
    shown = run_javascript(
        explainer_math(),
        f"""
        const grid = {json.dumps(GRID)};
        console.log(JSON.stringify(grid.map(([alpha, gamma, c]) => [expectedTokensPerPass(alpha, gamma),
          expectedTokensTerms(alpha, gamma), walltimeSpeedup(alpha, gamma, c, 1), bestGamma(alpha, c, 1),
          alphaWhereSpeedupFallsBelow(1.1, c, gamma)])));""",
    )
    for (alpha, gamma, c), (tokens, terms, speedup, (best, best_speedup), falls) in zip(GRID, shown, strict=True):
        where = f"alpha {alpha}, gamma {gamma}, c {c}"
        assert tokens == pytest.approx(expected_tokens_per_pass(alpha, gamma), rel=1e-12), where
        assert terms == pytest.approx(expected_tokens_terms(alpha, gamma), rel=1e-12) and sum(terms) == pytest.approx(
            tokens
        ), where
        assert speedup == pytest.approx(walltime_speedup(alpha, gamma, c), rel=1e-12), where
        python_best, python_best_speedup = best_gamma(alpha, c)
        assert (best, best_speedup) == (python_best, pytest.approx(python_best_speedup, rel=1e-12)), where
        assert falls == alpha_where_speedup_falls_below(1.1, c, gamma), where


def test_the_html_grid_check_catches_a_wrong_exponent():
    """Negative control: alpha^gamma where alpha^(gamma+1) belongs gives other numbers, and the comparison sees it."""
    math = explainer_math()
    broken = math.replace("Math.pow(alpha, gamma + 1)", "Math.pow(alpha, gamma)")
    assert broken != math, "the explainer's expected-tokens formula is no longer written as Math.pow(alpha, gamma + 1)"
    shown = run_javascript(broken, "console.log(JSON.stringify(expectedTokensPerPass(0.8, 4)));")
    assert shown != pytest.approx(expected_tokens_per_pass(0.8, 4), rel=1e-6)


CHAIN_PROGRAM = """
    const random = makeRandom(3), p = [0.3, 0.4, 0.3], q = [0.6, 0.2, 0.2], firsts = [0, 0, 0], written = [];
    const kinds = { bonus: 0, residual: 0 };
    for (let k = 0; k < 40000; k++) {
      const round = chainRound(p, q, 3, random);
      const emitted = round.steps.filter(s => s.accepted).map(s => s.x).concat([round.last]);
      firsts[emitted[0]] += 1;
      written.push(tokensWritten(round, round.steps.length + 1));
      kinds[round.kind] += 1;
    }
    console.log(JSON.stringify({ firsts, written, kinds }));"""


def test_the_html_chain_round_writes_p_and_averages_the_formula():
    """The HTML's round, 40,000 times: its first token follows p,
    and its length averages sum(alpha^k) within 5 standard errors."""
    shown = run_javascript(explainer_math(), CHAIN_PROGRAM)
    assert chi_square_test(shown["firsts"], [0.3, 0.4, 0.3]).p_value > 1e-4
    written = np.asarray(shown["written"])
    assert set(written.tolist()) == {1, 2, 3, 4} and shown["kinds"]["bonus"] == int(np.sum(written == 4))
    expected = expected_tokens_per_pass(0.7, 3)
    assert abs(written.mean() - expected) <= 5 * written.std() / np.sqrt(written.size), (written.mean(), expected)


def test_the_html_chain_round_check_catches_a_bonus_drawn_from_q_and_a_rejection_from_q():
    """Negative controls: resampling from q instead of the residual breaks the first token's law; the check sees it."""
    math = explainer_math()
    broken = math.replace(
        'last: sampleFrom(residualDistribution(p, q), random), kind: "residual"',
        'last: sampleFrom(q, random), kind: "residual"',
    )
    assert broken != math, (
        "the explainer's chain round no longer draws a rejected position from residualDistribution(p, q)"
    )
    assert chi_square_test(run_javascript(broken, CHAIN_PROGRAM)["firsts"], [0.3, 0.4, 0.3]).p_value < 1e-6
