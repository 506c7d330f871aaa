"""The Compare page's vLLM engines under AppTest: a fake vLLM
server (`fake_vllm.FakeServer`), and vLLM missing or down."""

from __future__ import annotations

import pytest
from app_testing import (
    button,
    dashboard_environment,  # noqa: F401  (an autouse fixture: tiny models, empty cache, fixture guide)
    figure_titled,
    finish_jobs,
    no_errors,
    open_app,
)
from dashboard_fixtures import TINY_PAIR
from fake_vllm import FakeServer
from test_serving import free_port


def _compare_with_engine(engine: str):
    app = open_app("pages/views/compare.py", pair=TINY_PAIR, temperature="0", max_new_tokens="6")
    app.radio(key="widget:compare_engine").set_value(engine).run()
    app.multiselect(key="widget:compare_categories").set_value(["code"]).run()
    return app


def test_compare_runs_a_vllm_server_at_each_concurrency():
    with FakeServer(gamma=4, accept=3) as spec, FakeServer(mode="plain") as plain:
        app = _compare_with_engine("server")
        app.text_input(key="widget:compare_server").set_value(spec.url)
        app.text_input(key="widget:compare_baseline").set_value(plain.url)
        app.multiselect(key="widget:compare_concurrency").set_value([1, 4]).run()
        finish_jobs(button(app, "Run benchmark").click().run())
    no_errors(app)
    frame = app.session_state["compare_frame"]
    assert set(frame["engine"]) == {"vllm-server"} and sorted(frame["concurrency"]) == [1, 1, 4, 4]
    figure = figure_titled(app, "A serving engine: the gain vs concurrency")
    assert {trace.name for trace in figure.data} == {
        "fake-model [vLLM server]: speedup",
        "fake-model [vLLM server]: acceptance rate",
    }


@pytest.mark.parametrize(
    "engine, fragment", [("vllm", "vLLM is not installed"), ("server", "could not reach a vLLM server")]
)
def test_compare_says_in_one_line_when_vllm_is_missing_or_down(monkeypatch, tmp_path, engine, fragment):
    monkeypatch.setenv("SPECDEC_VLLM_PYTHON", str(tmp_path / "no-such-python"))
    app = _compare_with_engine(engine)
    if engine == "server":
        app.text_input(key="widget:compare_server").set_value(f"http://127.0.0.1:{free_port()}").run()
    finish_jobs(button(app, "Run benchmark").click().run())
    assert not app.exception
    assert [error.value for error in app.error if fragment in error.value], [error.value for error in app.error]
    # the page still works
    assert app.radio(key="widget:compare_engine").value == engine and button(app, "Run benchmark")
