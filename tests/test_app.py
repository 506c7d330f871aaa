"""The dashboard, headless: every page under Streamlit's AppTest, with tiny local models (nothing is downloaded).

The tiny models join the catalogue through $SPECDEC_EXTRA_MODELS (see dashboard_fixtures.py); the
model cache is an empty folder, so the real zoo models read "needs download" on any machine; the
guide is a fixture folder ($SPECDEC_GUIDE_DIR).
"""

from __future__ import annotations

import base64
import io
import sys
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io
import pytest
from streamlit.testing.v1 import AppTest

from dashboard_fixtures import TINY_LOOKUP_PAIR, TINY_PAIR, write_guide, write_tiny_catalogue

APP_FOLDER = Path(__file__).resolve().parents[1]
if str(APP_FOLDER) not in sys.path:
    sys.path.insert(0, str(APP_FOLDER))          # the page helpers (pages.common) import like under `streamlit run`
APP = str(APP_FOLDER / "app.py")
PAGES = ["pages/1_Playground.py", "pages/2_Compare.py", "pages/3_Explainer.py", "pages/4_Lessons.py"]
TIMEOUT = 120


@pytest.fixture(scope="module", autouse=True)
def dashboard_environment(tmp_path_factory):
    """Tiny models in the catalogue, an empty model cache, a fixture guide; undone after the module."""
    from specdec import catalog

    folder = tmp_path_factory.mktemp("dashboard")
    saved_models, saved_pairs = dict(catalog.MODELS), dict(catalog.PAIRS)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SPECDEC_EXTRA_MODELS", str(write_tiny_catalogue(folder / "models")))
        patch.setenv("SPECDEC_CACHE", str(folder / "cache"))
        patch.setenv("SPECDEC_GUIDE_DIR", str(write_guide(folder / "guide")))
        patch.setenv("HF_HUB_OFFLINE", "1")
        catalog._load_extra_models()
        _clear_streamlit_caches()
        yield folder
        _clear_streamlit_caches()
    catalog.MODELS.clear(), catalog.MODELS.update(saved_models)
    catalog.PAIRS.clear(), catalog.PAIRS.update(saved_pairs)


def _clear_streamlit_caches() -> None:
    import streamlit as st

    st.cache_resource.clear()
    st.cache_data.clear()
    models = sys.modules.get("pages.common.models")
    if models is not None:
        models._loaded_key = None


def open_app(page: str | None = None, **query: str) -> AppTest:
    """The app after its first run (with `query` as the URL's query string), switched to `page` if given."""
    app = AppTest.from_file(APP, default_timeout=TIMEOUT)
    app.query_params.update(query)
    app.run()
    assert not app.exception, [error.message for error in app.exception]
    if page:
        app.switch_page(page).run()
        assert not app.exception, [error.message for error in app.exception]
    return app


def button(app: AppTest, label: str):
    matches = [widget for widget in app.button if widget.label == label]
    assert matches, f"no button {label!r}; buttons: {[widget.label for widget in app.button]}"
    return matches[0]


def sidebar_widget(app: AppTest, kind: str, label_start: str):
    widgets = [widget for widget in getattr(app.sidebar, kind) if widget.label.startswith(label_start)]
    assert widgets, f"no sidebar {kind} starting with {label_start!r}"
    return widgets[0]


def values(array) -> list:
    """A trace's x or y as a list: Plotly sends numeric arrays as base64 ("bdata") with a NumPy dtype."""
    if isinstance(array, dict) and "bdata" in array:
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=np.dtype(array["dtype"])).tolist()
    return list(array)


def figures(app: AppTest) -> list[go.Figure]:
    """Every Plotly chart on the page, rebuilt from the figure JSON the browser would draw."""
    return [plotly.io.from_json(element.proto.spec) for element in app.get("plotly_chart")]


def figure_titled(app: AppTest, start: str) -> go.Figure:
    found = [figure for figure in figures(app) if figure.layout.title.text.startswith(start)]
    assert found, f"no chart titled {start!r}: {[figure.layout.title.text for figure in figures(app)]}"
    return found[0]


def token_html(app: AppTest) -> str:
    bodies = [element.proto.body for element in app.html if 'class="specdec-tokens"' in element.proto.body]
    assert bodies, "no coloured tokens on the page"
    return bodies[0]


def no_errors(app: AppTest) -> None:
    assert not app.exception, [error.message for error in app.exception]
    assert not app.error, [error.value for error in app.error]


# --- every page -------------------------------------------------------------------------------


@pytest.mark.parametrize("page", [None, *PAGES])
def test_every_page_runs_without_errors(page):
    app = open_app(page)
    no_errors(app)
    assert len(app.sidebar.selectbox) >= 3          # pair, device, dtype: the shared sidebar is there


def test_home_lists_models_and_pairs_with_their_state():
    app = open_app()
    models, pairs = (frame.value for frame in app.dataframe[:2])
    states = dict(zip(models["model"], models["state"]))
    assert states["tiny-target"] == "cached"
    assert states["qwen2.5-coder-1.5b"] == "needs download (1,117 MB)"          # the cache is empty here
    assert "tiny-draft → tiny-target" in set(pairs["pair (draft → target)"])
    assert "speculative decoding" in app.title[0].value.lower()


def test_one_click_start_runs_the_default_pair_in_the_playground(monkeypatch):
    from specdec import catalog

    monkeypatch.setattr(catalog, "DEFAULT_PAIR", TINY_PAIR)
    app = open_app(max_new_tokens="16")
    button(app, "Run the default pair on an example prompt").click().run()
    no_errors(app)
    assert app.title[0].value == "Playground"
    assert token_html(app).count('data-kind="') >= 16
    assert sidebar_widget(app, "selectbox", "Draft → target").value == TINY_PAIR


# --- the sidebar ------------------------------------------------------------------------------


def test_sidebar_settings_survive_page_switches_and_live_in_the_url():
    app = open_app()
    sidebar_widget(app, "selectbox", "Draft → target").set_value(TINY_LOOKUP_PAIR).run()
    sidebar_widget(app, "slider", "gamma").set_value(7).run()
    sidebar_widget(app, "slider", "temperature").set_value(0.7).run()
    sidebar_widget(app, "number_input", "seed").set_value(123).run()
    for page in PAGES + ["app.py"]:
        app.switch_page(page).run()
        no_errors(app)
        assert sidebar_widget(app, "selectbox", "Draft → target").value == TINY_LOOKUP_PAIR, page
        assert sidebar_widget(app, "slider", "gamma").value == 7, page
        assert sidebar_widget(app, "slider", "temperature").value == 0.7, page
        assert sidebar_widget(app, "number_input", "seed").value == 123, page
        assert (app.query_params["pair"], app.query_params["gamma"], app.query_params["seed"]) == (TINY_LOOKUP_PAIR, "7", "123")


def test_a_link_reproduces_the_configuration():
    app = open_app("pages/1_Playground.py", pair=TINY_PAIR, gamma="9", temperature="0.5", top_k="20", top_p="0.9",
                   max_new_tokens="32", seed="5", dtype="float32")
    values = {label: sidebar_widget(app, kind, label).value for kind, label in
              [("selectbox", "Draft → target"), ("slider", "gamma"), ("slider", "temperature"), ("number_input", "top-k"),
               ("slider", "top-p"), ("number_input", "max new tokens"), ("number_input", "seed"), ("selectbox", "dtype")]}
    assert values == {"Draft → target": TINY_PAIR, "gamma": 9, "temperature": 0.5, "top-k": 20, "top-p": 0.9,
                      "max new tokens": 32, "seed": 5, "dtype": "float32"}


def test_a_link_with_values_this_machine_cannot_use_falls_back_and_says_so():
    app = open_app(gamma="999", device="cuda:7", pair="no-such->pair")
    warnings = " ".join(warning.value for warning in app.sidebar.warning)
    assert "gamma=999" in warnings and "device=cuda:7" in warnings and "pair=no-such->pair" in warnings
    assert sidebar_widget(app, "slider", "gamma").value == 4
    assert sidebar_widget(app, "selectbox", "Device").value == "auto"


def test_settings_round_trip_through_a_query_string():
    from pages.common.settings import CUSTOM, Settings

    settings = Settings(pair=CUSTOM, custom_draft="prompt-lookup", custom_target="./my-model", gamma=6, temperature=0.3, seed=9)
    assert Settings.from_query(settings.to_query(), ["cpu"]) == (settings, [])
    assert "custom_draft" not in Settings(gamma=2).to_query()
    assert Settings.from_query({"top_p": "0", "seed": "x"}, ["cpu"]) == (Settings(), ["top_p=0", "seed=x"])


# --- the Playground ---------------------------------------------------------------------------


def run_playground(app: AppTest) -> AppTest:
    button(app, "Generate").click().run()
    return app


def test_playground_colours_every_token_and_reports_the_metrics():
    app = open_app("pages/1_Playground.py", pair=TINY_PAIR, gamma="3", temperature="1.0", max_new_tokens="24", seed="1")
    assert app.checkbox[0].value is True             # tiny-target is an instruct model: the chat template is on
    run_playground(app)
    no_errors(app)
    html = token_html(app)
    kinds = [part.split('"')[0] for part in html.split('data-kind="')[1:]]
    assert len(kinds) - kinds.count("rejected") == 24                    # every new token, coloured
    assert {"target", "accepted", "rejected", "resampled"} <= set(kinds)    # 24 tokens of a noisy draft show them all
    assert kinds.count("rejected") == kinds.count("resampled")
    assert "text-decoration:line-through" in html and "p/q = " in html and "u = 0." in html
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["α: accepted / tested"].endswith("%") and float(metrics["Tokens per target pass"]) > 1
    assert metrics["Wall-clock speedup"].endswith("×")
    assert figure_titled(app, "where the speculative run's time went").data[0].name.startswith("draft")
    rounds = app.dataframe[0].value
    assert rounds["tokens out"].sum() == 24 and rounds["round"].tolist() == list(range(len(rounds)))
    assert [html for html in app.html if 'class="specdec-plain"' in html.proto.body]


def test_an_int8_draft_from_the_sidebar_is_loaded_and_stays_exact():
    app = open_app("pages/1_Playground.py", pair=TINY_PAIR, gamma="3", temperature="0", max_new_tokens="16",
                   draft_quantization="int8")
    assert sidebar_widget(app, "selectbox", "draft precision").value == "int8"
    run_playground(app)
    no_errors(app)
    assert any("int8 draft" in element.label for element in app.status)  # the loading box names the precision
    assert any("identical" in element.value for element in app.success)   # float32 target: greedy still exact
    assert app.query_params["draft_quantization"] == "int8"                  # and a link keeps it


def test_streaming_shows_the_same_run_as_a_finished_one():
    html = {}
    for stream in (True, False):
        app = open_app("pages/1_Playground.py", pair=TINY_PAIR, gamma="2", temperature="1.0", max_new_tokens="30", seed="4")
        app.checkbox(key="widget:stream").set_value(stream)
        html[stream] = token_html(run_playground(app))
    assert html[True] == html[False]


def test_stop_during_generation_keeps_the_text_so_far(monkeypatch):
    from streamlit.proto.WidgetStates_pb2 import WidgetStates
    from streamlit.runtime.scriptrunner import RerunData, RerunException, get_script_run_ctx

    import pages.common.playground as playground

    redraws = []

    def stop_at_the_third_redraw(spans):
        redraws.append(len(spans))
        if len(redraws) == 3:                     # a click on Stop, as the script sees it: rerun this page, no button pressed
            raise RerunException(RerunData(widget_states=WidgetStates(), page_script_hash=get_script_run_ctx().page_script_hash))
        return "<div></div>"

    monkeypatch.setattr(playground, "UPDATES_PER_SECOND", 1e9)               # redraw after every round
    monkeypatch.setattr(playground, "tokens_html", stop_at_the_third_redraw)
    app = run_playground(open_app("pages/1_Playground.py", pair=TINY_PAIR, temperature="1.0", max_new_tokens="64"))
    assert not app.exception
    assert any("Stopped during speculative decoding" in warning.value for warning in app.warning)
    run = app.session_state["playground_run"]
    assert run.speculative is None and 0 < sum(span.in_output for span in run.spans) < 64
    assert token_html(app).count('data-kind="') == len(run.spans) == redraws[2]   # the text up to the stop is shown


def test_greedy_playground_run_checks_speculative_text_equals_plain_text():
    app = run_playground(open_app("pages/1_Playground.py", pair=TINY_PAIR, temperature="0", max_new_tokens="20", dtype="float32"))
    no_errors(app)
    assert any("identical" in success.value for success in app.success)


def test_prompt_lookup_pair_runs_in_the_playground():
    app = run_playground(open_app("pages/1_Playground.py", pair=TINY_LOOKUP_PAIR, temperature="0", max_new_tokens="20"))
    no_errors(app)
    assert token_html(app).count('data-kind="') >= 20


# --- the Compare page -------------------------------------------------------------------------


def run_compare(pairs: list[str], gammas=(1, 3), categories=("code", "qa")) -> AppTest:
    app = open_app("pages/2_Compare.py", pair=TINY_PAIR, temperature="1.0", max_new_tokens="12")
    app.sidebar.multiselect[0].set_value(pairs)
    app.slider[0].set_value(gammas)
    app.multiselect[0].set_value(list(categories))
    app.run()
    button(app, "Run benchmark").click().run()
    return app


def test_compare_draws_the_charts_and_offers_the_csv():
    from specdec import bench

    app = run_compare([TINY_PAIR, TINY_LOOKUP_PAIR])
    no_errors(app)
    acceptance = figure_titled(app, "Acceptance vs gamma")
    measured = [trace for trace in acceptance.data if trace.name.endswith("accepted / drafted")]
    assert sorted(trace.name for trace in measured) == [f"{TINY_LOOKUP_PAIR}: accepted / drafted", f"{TINY_PAIR}: accepted / drafted"]
    assert len({trace.line.color for trace in measured}) == 2                        # one colour per pair
    assert all(values(trace.x) == [1, 2, 3] and 0 <= min(values(trace.y)) <= max(values(trace.y)) <= 1 for trace in measured)
    tokens = figure_titled(app, "Tokens per target pass")
    theory = [trace for trace in tokens.data if "theory" in trace.name]
    assert len(theory) == 2 and all(trace.line.dash == "dash" and values(trace.y)[0] >= 1 for trace in theory)
    speedup = figure_titled(app, "Wall-clock speedup")
    assert sum("predicted" in trace.name for trace in speedup.data) == 2
    bars = figure_titled(app, "Speedup by prompt category")
    assert len(bars.data) == 2 and all(trace.type == "bar" and sorted(values(trace.x)) == ["code", "qa"] for trace in bars.data)

    frame = app.session_state["compare_frame"]
    csv = frame.to_csv(index=False)                      # what the Download CSV button serves
    assert [button.label for button in app.get("download_button")] == ["Download CSV"]
    reread = bench.load_csv(io.StringIO(csv))
    assert list(reread.columns) == bench.COLUMNS
    # 2 pairs x 2 categories x 1 prompt x 1 repeat x (baseline + gammas 1, 2, 3)
    assert len(reread) == 16 and reread["method"].value_counts().to_dict() == {"speculative": 12, "generate": 4}
    assert set(reread["max_new_tokens"]) == {12} and reread["timestamp"].notna().all() and reread["device"].eq("cpu").all()


def test_compare_overlays_an_uploaded_csv_and_refuses_a_bad_one():
    app = run_compare([TINY_PAIR], gammas=(1, 2), categories=("code",))
    csv = app.session_state["compare_frame"].to_csv(index=False).encode()
    app.file_uploader[0].upload("earlier.csv", csv, "text/csv").run()
    no_errors(app)
    names = {trace.name for trace in figure_titled(app, "Tokens per target pass").data if trace.name.endswith("measured")}
    assert names == {f"{TINY_PAIR}: measured", f"{TINY_PAIR} [earlier.csv]: measured"}

    app.file_uploader[0].upload("notes.csv", b"name,value\nx,1\n", "text/csv").run()
    assert any("not a specdec benchmark" in error.value for error in app.error)
    assert not app.exception
    assert figure_titled(app, "Acceptance vs gamma")                     # this run's charts are still there


# --- bad input --------------------------------------------------------------------------------


def choose_custom_pair(app: AppTest, draft: str, target: str) -> AppTest:
    sidebar_widget(app, "selectbox", "Draft → target").set_value("custom").run()
    sidebar_widget(app, "text_input", "Draft model").input(draft)
    sidebar_widget(app, "text_input", "Target model").input(target)
    return app.run()


@pytest.mark.parametrize("draft, target, message", [
    ("tiny-other", "tiny-target", "use different tokenizers"),
    ("tiny-draft", "no-such-model", "cannot load 'no-such-model'"),
    ("tiny-draft", "", "give both a draft and a target"),
])
def test_bad_pair_shows_an_error_and_keeps_the_last_result(draft, target, message):
    app = run_playground(open_app("pages/1_Playground.py", pair=TINY_PAIR, max_new_tokens="10"))
    before = token_html(app)
    run_playground(choose_custom_pair(app, draft, target))
    assert not app.exception
    assert [error.value for error in app.error if message in error.value], [error.value for error in app.error]
    assert token_html(app) == before                                     # the previous result is still on the page
    sidebar_widget(app, "selectbox", "Draft → target").set_value(TINY_PAIR).run()
    run_playground(app)                                                  # and the previous pair still works
    no_errors(app)


def test_running_out_of_memory_is_an_error_not_a_crash(monkeypatch):
    from specdec import pairing

    def too_big(*args, **kwargs):
        raise MemoryError

    _clear_streamlit_caches()
    monkeypatch.setattr(pairing, "load_pair", too_big)
    app = run_playground(open_app("pages/1_Playground.py", pair=TINY_PAIR))
    assert not app.exception
    assert any("Not enough memory" in error.value for error in app.error)


def test_a_fetch_without_network_shows_an_error_and_the_page_stays(dashboard_environment, monkeypatch):
    empty = dashboard_environment / "no-index"
    empty.mkdir(exist_ok=True)
    monkeypatch.setenv("SPECDEC_PIP_ARGS", f"--no-index --find-links {empty}")
    app = open_app("pages/1_Playground.py", pair="prompt-lookup->smollm2-135m")
    assert button(app, "Generate").disabled
    button(app, "Download smollm2-135m").click().run()
    assert not app.exception
    assert any("could not download smollm2-135m" in error.value for error in app.error)
    assert button(app, "Generate").disabled and app.title[0].value == "Playground"


# --- Explainer and Lessons --------------------------------------------------------------------


def test_explainer_shows_alpha_residual_monte_carlo_and_best_gamma():
    app = open_app("pages/3_Explainer.py")
    no_errors(app)
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["α = Σ min(p, q)"] == "0.650"                    # sum(min(p, q)) of the default p and q
    assert figure_titled(app, "p, q and min(p, q)").data[0].name == "p (target)"
    assert values(figure_titled(app, "after a rejection").data[0].y)[0] > 0.6           # the residual sits on "Paris"
    assert any("matches p" in success.value for success in app.success)
    assert metrics["best γ"] == "2"                                         # alpha 0.65, c 0.30
    app.slider(key="widget:explainer_c").set_value(0.9).run()
    assert any("no γ beats the target alone" in warning.value for warning in app.warning)
    assert "explainer fixture" in app.get("iframe")[0].proto.srcdoc


def test_lessons_render_chapters_with_math_navigation_and_pdf():
    app = open_app("pages/4_Lessons.py")
    no_errors(app)
    text = "\n".join(markdown.value for markdown in app.markdown)
    assert "# Welcome to the guide" in text and "$$\\frac{1 - \\alpha^{\\gamma + 1}}{1 - \\alpha}$$" in text
    assert "<details><summary>Solution</summary>" in text
    assert '<img src="data:image/svg+xml;base64,' in text and "<figcaption" in text and "One round, drawn" in text
    assert [button.label for button in app.get("download_button")] == ["Download “Welcome to the guide” as PDF"]
    button(app, "Rounds →").click().run()
    assert "A round drafts gamma tokens." in "\n".join(markdown.value for markdown in app.markdown)
    assert app.query_params["chapter"] == "01-rounds" and not app.get("download_button")
    assert open_app("pages/4_Lessons.py", chapter="01-rounds").selectbox[0].value == "01-rounds"   # a link to a chapter


def test_only_local_images_that_exist_are_inlined(tmp_path):
    from pages.common.lessons import inline_images

    (tmp_path / "a.svg").write_text("<svg/>")
    text = "![here](a.svg) ![gone](b.png) ![web](https://example.org/c.png)"
    inlined = inline_images(text, tmp_path)
    assert inlined.count("<figure") == 1 and 'alt="here"' in inlined
    assert inlined.endswith("![gone](b.png) ![web](https://example.org/c.png)")


def test_stop_request_keeps_the_work_and_hands_the_request_back():
    from streamlit.runtime.scriptrunner import RerunData, RerunException

    from pages.common.stopping import StopRequest

    stop = StopRequest()
    stop.guard(lambda: None)
    assert not stop.should_stop()
    request = RerunException(RerunData())

    def interrupted():
        raise request

    stop.guard(interrupted)
    assert stop.should_stop()
    stop.guard(lambda: pytest.fail("no more updates after a stop"))
    with pytest.raises(RerunException) as raised:
        stop.resume()
    assert raised.value is request
