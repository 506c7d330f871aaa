"""guide/explainer.html in a real browser, with every network request blocked.

The page must work offline by double-click, so it is loaded from a file:// URL and any request
to anything else fails the test. Dragging a bar must move alpha to exactly what
`specdec.reference.theory.acceptance_rate` computes for the p and q the page now shows; the residual,
the speedup calculator and the simulation are held to `specdec` the same way.

Needs Debian's chromium (`apt-get install -y chromium`) and `pip install playwright==1.65.2`
(`playwright install` cannot download a browser here). When either is missing the tests FAIL
and say how to install it: a skipped browser test would hide a broken page.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from specdec.reference.stats import binomial_standard_error
from specdec.reference.theory import (
    acceptance_rate,
    best_gamma,
    expected_tokens_per_pass,
    multi_candidate_acceptance,
    residual_distribution,
    walltime_speedup,
)

pytestmark = pytest.mark.browser

EXPLAINER = Path(__file__).resolve().parents[1] / "guide" / "explainer.html"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
INSTALL = "install them with `apt-get install -y chromium` and `pip install playwright==1.65.2`"


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(f"Playwright for Python is not installed: {INSTALL}")
    executable = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    if executable is None:
        pytest.fail(f"chromium is not installed (looked for {CHROMIUM} and `chromium` on PATH): {INSTALL}")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    """A fresh page on the explainer, offline: any request that is not the file itself is aborted and recorded."""
    context = browser.new_context(viewport={"width": 1200, "height": 1400})
    outside, errors = [], []

    def route(request_route):
        url = request_route.request.url
        if url.startswith("file://"):
            request_route.continue_()
        else:
            outside.append(url)
            request_route.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto(EXPLAINER.as_uri())
    page.wait_for_selector("#alpha[data-value]:not([data-value=''])")
    yield page
    context.close()
    assert outside == [], f"the explainer tried to reach the network: {outside}"
    assert errors == [], f"the explainer raised errors: {errors}"


def shown(page, selector: str) -> list[float]:
    """The full-precision values the page stores on the elements matching `selector`, in token order."""
    return [float(value) for value in page.eval_on_selector_all(selector, "nodes => nodes.map(n => n.dataset.value)")]


def distributions(page) -> tuple[list[float], list[float]]:
    return shown(page, '.bar[data-dist="p"]'), shown(page, '.bar[data-dist="q"]')


def assert_alpha_matches(page, p, q) -> float:
    alpha = acceptance_rate(p, q)
    assert float(page.get_attribute("#alpha", "data-value")) == pytest.approx(alpha, abs=1e-12)
    text = page.inner_text("#alpha")
    assert text == f"{alpha:.3f}" or abs(float(text) - alpha) <= 0.0005 + 1e-12, (text, alpha)
    return alpha


def test_loads_offline_with_the_course_example(page):
    p, q = distributions(page)
    assert p == pytest.approx([0.3, 0.4, 0.3]) and q == pytest.approx([0.6, 0.2, 0.2])
    assert page.inner_text("#alpha") == f"{acceptance_rate(p, q):.3f}" == "0.700"
    assert shown(page, ".residual-bar") == pytest.approx(residual_distribution(p, q).tolist(), abs=1e-12)
    assert page.title().startswith("Speculative decoding")


def test_dragging_a_bar_changes_alpha_to_what_specdec_computes(page):
    p_before, q_before = distributions(page)
    alpha_before = assert_alpha_matches(page, p_before, q_before)

    bar = page.locator('.bar[data-dist="p"][data-token="0"]').bounding_box()  # drag p(A) from 0.3 up
    x, y = bar["x"] + bar["width"] / 2, bar["y"] + 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x, y - 60, steps=6)
    page.mouse.up()

    p, q = distributions(page)
    assert p[0] > p_before[0] + 0.1, f"the drag did not raise p(A): {p_before} -> {p}"
    assert sum(p) == pytest.approx(1.0) and q == pytest.approx(q_before)
    alpha = assert_alpha_matches(page, p, q)
    assert abs(alpha - alpha_before) > 0.05
    assert shown(page, ".residual-bar") == pytest.approx(residual_distribution(p, q).tolist(), abs=1e-12)
    assert shown(page, ".overlap-bar") == pytest.approx([min(a, b) for a, b in zip(p, q)], abs=1e-12)

    q_bar = page.locator('.bar[data-dist="q"][data-token="2"]')  # and a keyboard nudge on q(C)
    q_bar.focus()
    for _ in range(5):
        page.keyboard.press("ArrowUp")
    p, q = distributions(page)
    assert q[2] == pytest.approx(q_before[2] + 0.05, abs=1e-9)
    assert_alpha_matches(page, p, q)


def test_speedup_calculator_matches_specdec_theory(page):
    for alpha, gamma, c in [(0.8, 4, 0.1), (0.7, 4, 0.4), (0.3, 3, 0.4)]:
        page.fill("#alpha-input", str(alpha))
        page.fill("#gamma-input", str(gamma))
        page.fill("#c-input", str(c))
        assert page.inner_text("#expected-tokens") == f"{expected_tokens_per_pass(alpha, gamma):.3f}"
        assert float(page.get_attribute("#speedup", "data-value")) == pytest.approx(
            walltime_speedup(alpha, gamma, c), rel=1e-12
        )
        best, best_speedup = best_gamma(alpha, c)
        assert page.inner_text("#best-gamma") == str(best)
        assert page.inner_text("#best-speedup") == f"{best_speedup:.3f}"
        assert ("Does not pay off" in page.inner_text("#pays-off")) == (alpha <= c)


def test_simulation_histogram_converges_to_p(page):
    for _ in range(3):
        page.click("#burst")
    p, q = distributions(page)
    trials = int(page.inner_text("#trials").replace(",", ""))
    assert trials == 30_000
    frequencies = shown(page, ".frequency-bar")
    for frequency, target in zip(frequencies, p):
        assert abs(frequency - target) <= 5 * binomial_standard_error(target, trials), (frequencies, p)
    measured_alpha = float(page.inner_text("#alpha-measured"))
    assert abs(measured_alpha - acceptance_rate(p, q)) <= 5 * binomial_standard_error(acceptance_rate(p, q), trials)
    assert not math.isinf(float(page.inner_text("#max-se")))


def test_tree_of_two_guesses_keeps_p_and_keeps_a_guess_more_often(page):
    """Section 5: the theory shown is specdec's; the rounds it runs emit p and keep a guess as often as theory says."""
    p, q = distributions(page)
    assert float(page.get_attribute("#tree-alpha1", "data-value")) == pytest.approx(acceptance_rate(p, q), abs=1e-12)
    two = multi_candidate_acceptance(p, q, 2)
    assert float(page.get_attribute("#tree-alpha2", "data-value")) == pytest.approx(two, abs=1e-12)
    assert two > acceptance_rate(p, q) + 0.2  # the course example: 0.70 -> 0.95

    page.click("#tree-step")  # one round: two guesses drawn, at least one tested
    outcomes = page.eval_on_selector_all(".tree-guess", "nodes => nodes.map(n => n.dataset.outcome)")
    assert len(outcomes) == 2 and outcomes[0] in ("kept", "rejected")
    assert outcomes.count("kept") <= 1 and (outcomes[0] == "kept") == (outcomes[1] == "untested")
    assert "guesses drawn from q without replacement" in page.inner_text("#tree-trial")

    for _ in range(3):
        page.click("#tree-burst")
    rounds = int(page.inner_text("#tree-rounds").replace(",", ""))
    assert rounds == 30_001
    kept = float(page.get_attribute("#tree-kept-measured", "data-value"))
    assert abs(kept - two) <= 5 * binomial_standard_error(two, rounds)
    second = float(page.get_attribute("#tree-second-measured", "data-value"))
    assert abs(second - (two - acceptance_rate(p, q))) <= 5 * binomial_standard_error(
        two - acceptance_rate(p, q), rounds
    )
    assert float(page.inner_text("#tree-max-se")) <= 5


def test_tree_section_follows_the_bars(page):
    """Change q with the keyboard: the tree's theory moves to
    specdec's value for the new p and q, and its counts restart."""
    page.click("#tree-burst")
    page.focus('.bar[data-dist="q"][data-token="1"]')
    for _ in range(10):
        page.keyboard.press("ArrowUp")
    p, q = distributions(page)
    assert float(page.get_attribute("#tree-alpha2", "data-value")) == pytest.approx(
        multi_candidate_acceptance(p, q, 2), abs=1e-9
    )
    assert page.inner_text("#tree-rounds") == "0"


def test_a_chain_round_steps_to_its_first_rejection_or_its_bonus_token(page):
    """Every round: tests shown one per click, kept ones before the first rejection, then the residual or the bonus."""
    p, q = distributions(page)
    alpha = acceptance_rate(p, q)
    page.fill("#round-gamma", "3")
    page.dispatch_event("#round-gamma", "change")
    kinds = set()
    for _ in range(12):
        for _ in range(5):  # at most gamma tests, then the last token
            page.click("#round-next")
        accepted = page.eval_on_selector_all(
            "#round-steps li", "items => items.map(i => i.dataset.accepted === 'true')"
        )
        kind = page.get_attribute("#round-last", "data-kind")
        written = int(page.get_attribute("#round-last", "data-written"))
        kinds.add(kind)
        assert 1 <= len(accepted) <= 3 and all(accepted[:-1])  # kept drafts, up to the first rejection
        assert kind == ("bonus" if accepted == [True] * 3 else "residual")
        assert written == sum(accepted) + 1
        lit = page.eval_on_selector_all("#round-terms span", "spans => spans.filter(s => s.className === 'lit').length")
        assert lit == written  # one term lit per token written
        page.click("#round-new")
    assert kinds == {"bonus", "residual"}  # alpha 0.7, gamma 3: both happen in 12 rounds
    assert float(page.get_attribute("#round-terms", "data-value")) == pytest.approx(
        expected_tokens_per_pass(alpha, 3), rel=1e-12
    )
    assert page.inner_text("#round-count") == "12"


def test_guided_questions_set_the_calculator_and_answer_as_specdec_does(page):
    from specdec.reference.explainer import GUIDED_PRESETS

    options = page.eval_on_selector_all("#question option", "options => options.map(o => o.textContent)")
    assert options == [preset.question for preset in GUIDED_PRESETS]
    for index, preset in enumerate(GUIDED_PRESETS):
        page.select_option("#question", str(index))
        assert page.is_hidden("#question-reply")
        page.click("#question-apply")
        assert (
            float(page.input_value("#alpha-input")) == preset.alpha and float(page.input_value("#c-input")) == preset.c
        )
        assert float(page.get_attribute("#speedup", "data-value")) == pytest.approx(
            walltime_speedup(preset.alpha, preset.gamma, preset.c)
        )
        page.click("#question-answer")
        assert page.inner_text("#question-reply") == preset.answer()


def round_steps(page) -> list[dict]:
    """The tests the round shows so far: token, p(x), q(x), u and the verdict, at full precision."""
    return page.eval_on_selector_all(
        "#round-steps li",
        """items => items.map(i => ({token: Number(i.dataset.token),
        p: Number(i.dataset.p), q: Number(i.dataset.q), u: Number(i.dataset.u),
        accepted: i.dataset.accepted === 'true'}))""",
    )


def test_each_step_of_a_round_is_the_rule_on_the_bars(page):
    """Step by step: every test is u < p(x)/q(x) on the bars' p and q, a residual token is one where p > q, and the
    running average over many rounds, and each alpha^k term's share, come out as the formula says."""
    p, q = distributions(page)
    alpha, residual = acceptance_rate(p, q), residual_distribution(p, q)
    assert shown(page, ".round-p") == pytest.approx(p) and shown(page, ".round-residual") == pytest.approx(
        residual.tolist()
    )
    for _ in range(20):
        steps = []
        for _ in range(6):  # gamma = 4 tests at most, the last token, one spare click
            tests_over = len(steps) == 4 or (steps and not steps[-1]["accepted"])
            page.click("#round-next")
            before, steps = len(steps), round_steps(page)
            # one more test per click, none after the round ends
            assert len(steps) == (before if tests_over else before + 1)
            for step in steps:
                assert step["p"] == pytest.approx(p[step["token"]], abs=1e-12) and step["q"] == pytest.approx(
                    q[step["token"]], abs=1e-12
                )
                assert step["accepted"] == (step["u"] < step["p"] / step["q"]), step
            assert all(step["accepted"] for step in steps[:-1])  # nothing is tested after a rejection
        kind, token = (
            page.get_attribute("#round-last", "data-kind"),
            int(page.get_attribute("#round-last", "data-token")),
        )
        if kind == "residual":
            assert not steps[-1]["accepted"] and residual[token] > 0  # the residual only has mass where p > q
        else:
            assert kind == "bonus" and len(steps) == 4 and all(step["accepted"] for step in steps)
        page.click("#round-new")
    for _ in range(3):
        page.click("#round-burst")
    rounds = int(page.inner_text("#round-count"))
    assert rounds == 3_020
    mean, expected = float(page.get_attribute("#round-mean", "data-value")), expected_tokens_per_pass(alpha, 4)
    assert page.inner_text("#round-expected") == f"{expected:.3f}"
    shares = shown(page, ".round-share")
    assert shares[0] == 1.0 and sum(shares) == pytest.approx(mean)  # the shares add up to the average
    for k, share in enumerate(shares[1:], start=1):
        assert abs(share - alpha**k) <= 5 * binomial_standard_error(alpha**k, rounds), (k, share, alpha**k)
    variance_bound = 5 * expected - expected**2  # tokens per round lie in 1..5, so E[T^2] <= 5 E[T]
    assert abs(mean - expected) <= 5 * math.sqrt(variance_bound / rounds), (mean, expected)


def test_dragging_alpha_answers_the_first_guided_question(page):
    """The 'falls' question: the alpha its answer names is the last one still at 1.1x, one notch below is under 1.1x."""
    from specdec.reference.explainer import GUIDED_PRESETS, alpha_where_speedup_falls_below

    preset = GUIDED_PRESETS[0]
    page.select_option("#question", "0")
    page.click("#question-apply")
    threshold = alpha_where_speedup_falls_below(1.1, preset.c, preset.gamma)
    for alpha, above in [(threshold, True), (round(threshold - 0.01, 2), False)]:
        page.eval_on_selector(
            "#alpha-range",
            "(node, value) => { node.value = value; node.dispatchEvent(new Event('input')); }",
            str(alpha),
        )
        assert float(page.input_value("#alpha-input")) == alpha
        speedup = float(page.get_attribute("#speedup", "data-value"))
        assert speedup == pytest.approx(walltime_speedup(alpha, preset.gamma, preset.c), rel=1e-12)
        assert (speedup >= 1.1) == above, (alpha, speedup)
