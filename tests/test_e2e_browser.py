"""The dashboard in a real browser: `streamlit run app.py` on a free port, driven by headless chromium.

It visits every page, generates in the Playground, runs a tiny Compare, checks that the Plotly
charts are drawn, downloads the CSV and reads it back, drives two tabs at once, stops a load part-way,
and saves a screenshot of each page to a temporary folder, or to $SPECDEC_SCREENSHOTS when it is set.
The README's screenshots are made with

    SPECDEC_SCREENSHOTS=docs/screenshots python -m pytest -m browser tests/test_e2e_browser.py

Tiny local models only (dashboard_fixtures.py).

Needs Debian's chromium and Playwright for Python (no `playwright install`):

    apt-get install -y chromium
    pip install playwright==1.65.2
    python -m pytest -m browser tests/test_e2e_browser.py
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
from dashboard_fixtures import TINY_PAIR, write_guide, write_tiny_catalogue
from tiny_gguf import write_tiny_gguf

pytestmark = pytest.mark.browser

APP_FOLDER = Path(__file__).resolve().parents[1]
SCREENSHOTS = Path(os.environ.get("SPECDEC_SCREENSHOTS") or tempfile.mkdtemp(prefix="specdec-screenshots-"))
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
INSTALL = (
    "install them with `apt-get install -y chromium` (gives /usr/bin/chromium) and "
    "`pip install playwright==1.65.2` (no `playwright install` is needed)"
)
SETTINGS = f"pair={TINY_PAIR}&stop_rule=False&gamma=3&temperature=1.0&max_new_tokens=64&seed=1"


def require_browser():
    """Playwright's entry point, or a failure that says how to install what is missing (never a silent skip)."""
    try:
        from playwright.sync_api import sync_playwright as entry
    except ImportError:
        pytest.fail(f"Playwright for Python is missing: {INSTALL}")
    if not CHROMIUM.is_file():
        pytest.fail(f"Debian's chromium is missing at {CHROMIUM}: {INSTALL}")
    return entry()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_healthy(url: str, process: subprocess.Popen, log: Path, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"streamlit exited with code {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read() == b"ok":
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"streamlit did not answer within {timeout_s} s:\n{log.read_text()[-3000:]}")


@contextmanager
def served_app(env: dict[str, str], log: Path) -> Iterator[str]:
    """`streamlit run app.py` on a free port with `env`, its output in `log`; yields the URL, stops the server after."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        # the watcher as .streamlit/config.toml says
        "--server.address",
        "127.0.0.1",
        "--browser.gatherUsageStats",
        "false",
    ]
    with open(log, "w") as output:
        process = subprocess.Popen(command, cwd=APP_FOLDER, env=env, stdout=output, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def app_environment(folder: Path, catalogue: Path) -> dict[str, str]:
    """The server's environment: the models of `catalogue` (a $SPECDEC_EXTRA_MODELS file), an empty cache, the guide."""
    guide = APP_FOLDER / "guide" if any((APP_FOLDER / "guide").glob("*.md")) else write_guide(folder / "guide")
    return os.environ | {
        "SPECDEC_EXTRA_MODELS": str(catalogue),
        "SPECDEC_CACHE": str(folder / "cache"),  # the real zoo reads "needs download" on every machine
        "SPECDEC_GUIDE_DIR": str(guide),
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "TRANSFORMERS_VERBOSITY": "error",
    }


@pytest.fixture(scope="module")
def app_env(tmp_path_factory) -> dict[str, str]:
    """The environment the app and `specdec run` share in these tests: the tiny models, an empty cache, the guide."""
    folder = tmp_path_factory.mktemp("browser")
    return app_environment(folder, write_tiny_catalogue(folder / "models")) | {"SPECDEC_TEST_FOLDER": str(folder)}


@pytest.fixture(scope="module")
def app_url(app_env):
    """The app served by `streamlit run app.py --server.headless true` with the tiny models; stopped afterwards."""
    require_browser()  # before anything starts
    env, folder = app_env, Path(app_env["SPECDEC_TEST_FOLDER"])
    log = folder / "streamlit.log"
    with served_app(env, log) as url:
        yield url
    # with the default watcher a .venv in the repository fills the log with this (.streamlit/config.toml polls instead)
    assert "Inotify queue overflowed" not in log.read_text(), "the file watcher crawled the repository's folders"


@pytest.fixture(scope="module")
def page(app_url):
    with require_browser() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1400, "height": 2000}, accept_downloads=True)
        tab = context.new_page()
        tab.set_default_timeout(60_000)
        yield tab
        browser.close()


def settle(page, selector: str) -> None:
    """Wait for `selector`, for the script to finish, and for charts and tables to paint."""
    page.wait_for_selector(selector)
    page.wait_for_selector(IDLE)
    page.wait_for_timeout(1_000)


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def go_to(page, app_url: str, label: str) -> None:
    """Follow the sidebar's link to a page, as a person would
    (opening the app with the test's settings first if needed)."""
    if not page.url.startswith(app_url):
        page.goto(f"{app_url}/?{SETTINGS}")
        settle(page, "text=Models on this machine")
    page.get_by_test_id("stSidebar").get_by_role("link", name=label, exact=True).click()


def test_home_lists_the_models(page, app_url):
    page.goto(f"{app_url}/?{SETTINGS}")
    settle(page, "text=Models on this machine")
    assert page.locator("h1").first.inner_text() == "Speculative decoding, hands on"
    assert page.get_by_text("Current choice in the sidebar: tiny-draft → tiny-target").count() == 1  # from the link
    screenshot(page, "home")


def test_playground_colours_tokens_and_keeps_the_settings(page, app_url, app_env):
    go_to(page, app_url, "Playground")
    settle(page, "text=Example prompts")
    assert "gamma=3" in page.url and "max_new_tokens=64" in page.url  # the settings came along
    page.get_by_role("button", name="Generate", exact=True).click()
    settle(page, "[data-testid='stMetric']")
    tokens = page.locator(".specdec-tokens .specdec-token")
    assert tokens.count() >= 64
    accepted = page.locator(".specdec-token.accepted").first
    assert "p/q = " in accepted.get_attribute("title") and "u = 0." in accepted.get_attribute("title")
    assert (
        page.locator(".specdec-token.rejected").first.evaluate("e => getComputedStyle(e).textDecorationLine")
        == "line-through"
    )
    assert page.get_by_text("Wall-clock speedup", exact=True).count() == 1
    # the planner's header, as the page shows it
    shown = page.locator("p:has(strong:text-is('Plan:'))").first.inner_text().strip()
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "specdec",
            "run",
            "--target",
            "tiny-target",
            "--draft",
            "tiny-draft",
            "--gamma",
            "3",
            "--max-new-tokens",
            "4",
        ],
        cwd=APP_FOLDER,
        env=app_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    # the same line `specdec run` prints
    assert shown == run.stdout.splitlines()[0], (shown, run.stdout.splitlines()[0])
    screenshot(page, "playground-tiny")  # the README's Playground is the real pair: test_real_browser.py


def test_compare_draws_charts_and_downloads_the_csv(page, app_url, tmp_path):
    from specdec.bench import tables

    go_to(page, app_url, "Compare")
    settle(page, "text=Run benchmark")
    page.get_by_role("button", name="Run benchmark", exact=True).click()
    settle(page, "text=Download CSV")
    charts = page.locator(".js-plotly-plot")
    assert charts.count() == 4
    assert page.locator(".js-plotly-plot .scatterlayer .trace").count() >= 4  # lines drawn as SVG
    assert page.locator(".js-plotly-plot .barlayer .point").count() >= 2  # and the category bars
    with page.expect_download() as download:
        page.get_by_role("button", name="Download CSV", exact=True).click()
    path = tmp_path / download.value.suggested_filename
    download.value.save_as(path)
    frame = tables.load_csv(path)
    assert list(pd.read_csv(path).columns) == tables.COLUMNS
    # 1 pair x 2 categories (code, summarization) x 1 prompt x 1 repeat x (baseline + gammas 1..4 + the planner's
    # choice)
    assert len(frame) == 12 and set(frame["pair"]) == {TINY_PAIR} and frame["timestamp"].notna().all()


@contextmanager
def saved_benchmark_on_compare(page, app_url: str, name: str) -> Iterator:
    """A new tab (a new session: no tiny run on the charts) with `benchmarks/<name>` uploaded on the Compare page."""
    tab = page.context.new_page()
    try:
        tab.goto(f"{app_url}/?{SETTINGS}")
        settle(tab, "text=Models on this machine")
        tab.get_by_test_id("stSidebar").get_by_role("link", name="Compare", exact=True).click()
        settle(tab, "text=Run benchmark")
        tab.locator("input[type=file]").set_input_files(str(APP_FOLDER / "benchmarks" / name))
        yield tab
    finally:
        tab.close()


def test_compare_draws_a_saved_benchmark_of_real_drafts(page, app_url):
    """The README's Compare screenshot: the committed benchmark of three real drafts (two with their own tokenizer)
    for Qwen2.5-Coder-1.5B, measured by `specdec bench` (command in the README), uploaded in a fresh session."""
    with saved_benchmark_on_compare(page, app_url, "cross-tokenizer.csv") as tab:
        settle(tab, ".js-plotly-plot")
        assert tab.locator(".js-plotly-plot").count() == 4
        legend = " ".join(tab.locator(".js-plotly-plot .legendtext").all_text_contents())
        for draft in ("qwen2.5-coder-0.5b", "smollm2-135m", "gemma3-270m"):
            assert f"{draft}->qwen2.5-coder-1.5b" in legend, legend
        screenshot(tab, "compare")


def test_compare_draws_every_family_spec_bench_style(page, app_url):
    """The committed families benchmark (`specdec bench --methods all`, command in the README), uploaded: the families
    table and its charts, with Spec-Bench's published numbers drawn beside ours."""
    with saved_benchmark_on_compare(page, app_url, "families-int8.csv") as tab:
        settle(tab, "text=Every family, Spec-Bench style")
        settle(tab, ".js-plotly-plot")
        legend = " ".join(tab.locator(".js-plotly-plot .legendtext").all_text_contents())
        for family in ("suffix", "recycling", "lookahead", "layer-skip", "prompt-lookup"):
            assert family in legend, legend
        assert "recycling: Spec-Bench (Recycling)" in legend, legend
        screenshot(tab, "compare-families")


def test_explainer_draws_its_charts(page, app_url):
    go_to(page, app_url, "Explainer")
    settle(page, "text=Speedup calculator")
    assert page.locator(".js-plotly-plot").count() >= 4
    assert page.get_by_text("The output matches p").count() == 1
    screenshot(page, "explainer")


def test_lessons_render_chapters_with_math_figures_and_solutions(page, app_url):
    go_to(page, app_url, "Lessons")
    settle(page, "h1")
    headings = "() => Array.from(document.querySelectorAll('h1')).map(h => h.innerText.trim()).join(' | ')"
    first = page.evaluate(headings)
    assert first.startswith("Lessons | "), first  # the page's title, then the chapter's
    assert page.locator("details summary", has_text="Solution").count() >= 1  # raw HTML blocks render
    assert page.locator('img[src^="data:image/"]').count() >= 1  # figures are inlined
    math = page.locator(".katex").count()
    screenshot(page, "lessons")
    page.locator("button", has_text="→").first.click()  # next chapter
    page.wait_for_function(f"() => ({headings})() !== {first!r}")  # the next chapter's heading
    settle(page, "h1")
    assert math + page.locator(".katex").count() >= 1  # KaTeX drew the math


def test_two_tabs_generate_at_once_and_take_turns(page, app_url):
    """Two sessions press Generate together: the second waits in
    line with its place shown, then runs; both finish, no error."""
    longer = SETTINGS.replace("max_new_tokens=64", "max_new_tokens=240")  # the tiny target holds 256 tokens
    tabs = [page.context.new_page(), page.context.new_page()]
    try:
        for tab in tabs:
            tab.set_default_timeout(120_000)
            tab.goto(f"{app_url}/?{longer}")
            settle(tab, "text=Models on this machine")
            tab.get_by_test_id("stSidebar").get_by_role("link", name="Playground", exact=True).click()
            settle(tab, "text=Example prompts")
        for tab in tabs:
            tab.get_by_role("button", name="Generate", exact=True).click()
        notes = []
        deadline = time.monotonic() + 15
        while not notes and time.monotonic() < deadline:  # whichever session reached the line second waits
            notes = [
                text for tab in tabs for text in tab.get_by_text("Waiting for a run in another tab").all_inner_texts()
            ]
            tab.wait_for_timeout(200)
        assert notes and "1 job ahead of your run" in notes[0], notes
        first_done = second_started = None  # the hand-over, as a user sees it: printed (-s), not asserted
        while (first_done is None or second_started is None) and time.monotonic() < deadline + 120:
            now = time.monotonic()
            if first_done is None and any(tab.locator("[data-testid='stMetric']").count() for tab in tabs):
                first_done = now
            if second_started is None and not any(
                tab.get_by_text("Waiting for a run in another tab").count() for tab in tabs
            ):
                second_started = now
            tabs[0].wait_for_timeout(50)
        if first_done is not None and second_started is not None:
            print(
                f"\nthe waiting tab's run started {second_started - first_done:+.2f} s after the first tab's results "
                "showed"
            )
        for tab in tabs:
            settle(tab, "[data-testid='stMetric']")
            assert tab.locator(".specdec-tokens .specdec-token:not(.rejected)").count() == 240  # nothing lost
            assert tab.get_by_text("Wall-clock speedup", exact=True).count() == 1
            assert tab.locator("[data-testid='stException'], [data-testid='stAlertContentError']").count() == 0
            assert tab.get_by_text("Waiting for a run in another tab").count() == 0  # the note is gone
    finally:
        for tab in tabs:
            tab.close()


SLOW_LAYERS = 32
SLOW_SETTINGS = "pair=prompt-lookup->slow-gguf&dtype=float32&quantization=none&temperature=1.0&max_new_tokens=32&seed=1"


def write_slow_catalogue(folder: Path) -> Path:
    """A catalogue of one tiny GGUF model that loads slowly, paired with prompt lookup (no draft model to load).

    Tiny models load in a blink, too fast to click Stop. A deep tiny GGUF does not: transformers matches
    its tensor names once per module against a table as long as the model is deep, so the load time
    grows with the square of the depth (32 layers: about 5-9 s on a busy 2-core machine, 40 layers 8-14 s),
    and the load reports every module (`specdec.zoo.gguf_files`), which is where a Stop lands.
    """
    folder.mkdir(parents=True, exist_ok=True)
    model = write_tiny_gguf(folder / "slow.gguf", layers=SLOW_LAYERS)
    catalogue = {
        "models": [{"name": "slow-gguf", "path": str(model), "family": "tiny-gguf"}],
        "pairs": [{"draft": "prompt-lookup", "target": "slow-gguf", "description": "a tiny GGUF that loads slowly"}],
    }
    path = folder / "extra-models.json"
    path.write_text(json.dumps(catalogue))
    return path


def test_stop_during_a_load_says_so_and_the_next_generate_works(page, tmp_path):
    """Stop while a pair loads: the load ends at once, one line says so (no traceback), and the next Generate loads and
    runs.

    A server of its own, so the slow model neither joins the other tests' catalogue nor evicts their loaded pair.
    """
    from playwright.sync_api import expect

    with served_app(
        app_environment(tmp_path, write_slow_catalogue(tmp_path / "models")), tmp_path / "streamlit.log"
    ) as url:
        tab = page.context.new_page()
        try:
            tab.goto(f"{url}/?{SLOW_SETTINGS}")
            settle(tab, "text=Models on this machine")
            tab.get_by_test_id("stSidebar").get_by_role("link", name="Playground", exact=True).click()
            settle(tab, "text=Example prompts")
            tab.get_by_role("button", name="Generate", exact=True).click()
            bar = tab.get_by_test_id("stProgress")
            # the load is under way
            expect(bar).to_contain_text("slow-gguf: matching GGUF tensor names", timeout=20_000)
            stop_clicked = time.monotonic()
            tab.get_by_role("button", name="Stop", exact=True).click()
            note = tab.get_by_text("Stopped loading prompt-lookup → slow-gguf before it finished")
            expect(note).to_have_count(1, timeout=20_000)
            tab.wait_for_selector(IDLE)
            stopped_after = time.monotonic() - stop_clicked
            # ended, not finished
            assert stopped_after < SLOW_LAYERS / 8, f"the load went on for {stopped_after:.1f} s after Stop"
            assert bar.count() == 0 and tab.get_by_text("Loaded prompt-lookup → slow-gguf").count() == 0
            assert tab.locator("[data-testid='stException'], [data-testid='stAlertContentError']").count() == 0
            assert tab.locator(".specdec-tokens").count() == 0  # nothing ran
            tab.get_by_role("button", name="Generate", exact=True).click()  # the app works on
            settle(tab, "[data-testid='stMetric']")
            assert tab.locator(".specdec-tokens .specdec-token:not(.rejected)").count() >= 1
            assert tab.get_by_text("Wall-clock speedup", exact=True).count() == 1 and note.count() == 0
            assert tab.locator("[data-testid='stException'], [data-testid='stAlertContentError']").count() == 0
        finally:
            tab.close()
