"""Driving the dashboard headless for the tests: Streamlit's AppTest, tiny local models, a fixture guide.

A test module that imports `dashboard_environment` gets it as an autouse fixture: the tiny models
join the catalogue through $SPECDEC_EXTRA_MODELS (see dashboard_fixtures.py), the model cache is
an empty folder, so the real zoo models read "needs download" on any machine, and the guide is a
fixture folder ($SPECDEC_GUIDE_DIR).
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io
import pytest
from dashboard_fixtures import write_guide, write_tiny_catalogue
from streamlit.testing.v1 import AppTest

APP_FOLDER = Path(__file__).resolve().parents[1]
if str(APP_FOLDER) not in sys.path:
    sys.path.insert(0, str(APP_FOLDER))  # the page helpers (pages.common) import like under `streamlit run`
APP = str(APP_FOLDER / "app.py")
PAGES = ["pages/views/playground.py", "pages/views/compare.py", "pages/views/explainer.py", "pages/views/lessons.py"]
TIMEOUT = 120


@pytest.fixture(scope="module", autouse=True)
def dashboard_environment(tmp_path_factory):
    """Tiny models in the catalogue, an empty model cache, a fixture guide; undone after the module."""
    from specdec.zoo import catalog

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

    st.cache_resource.clear()  # the loaded pair too (pages.common.models._loaded_pairs)
    st.cache_data.clear()


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


def finish_jobs(app: AppTest, timeout: float = TIMEOUT) -> AppTest:
    """Rerun the page until no job of the dashboard runs any more (`pages.common.jobs`: work in a thread, drawn by the
    page).

    A browser's fragment redraws a few times a second; AppTest has no clock, so the test reruns the page instead,
    as the fragment would, until the job has ended and its page has kept what it made.
    """
    import time

    deadline = time.monotonic() + timeout
    while any(key.startswith("job:") for key in app.session_state.keys()):
        assert time.monotonic() < deadline, f"a job still runs after {timeout} s: {list(app.session_state.keys())}"
        time.sleep(0.05)
        app.run()
    return app


def run_playground(app: AppTest) -> AppTest:
    button(app, "Generate").click().run()
    return finish_jobs(app)
