"""The dashboard's two pages that run models, headless under AppTest: the Playground and Compare.

The environment (tiny models, empty cache) is `app_testing.dashboard_environment`.
"""

from __future__ import annotations

import re

import io
import threading

from app_testing import (
    button,
    dashboard_environment,  # noqa: F401  (an autouse fixture: tiny models, empty cache, fixture guide)
    figure_titled,
    finish_jobs,
    no_errors,
    open_app,
    run_playground,
    sidebar_widget,
    token_html,
    values,
)
from dashboard_fixtures import TINY_LOOKUP_PAIR, TINY_PAIR
from streamlit.testing.v1 import AppTest

from specdec.pair.running import generate as real_generate

# --- the Playground ---------------------------------------------------------------------------


def test_playground_colours_every_token_and_reports_the_metrics():
    app = open_app(
        "pages/views/playground.py",
        pair=TINY_PAIR,
        stop_rule="False",
        gamma="3",
        temperature="1.0",
        max_new_tokens="24",
        seed="1",
    )
    assert app.checkbox[0].value is True  # tiny-target is an instruct model: the chat template is on
    run_playground(app)
    no_errors(app)
    html = token_html(app)
    kinds = [part.split('"')[0] for part in html.split('data-kind="')[1:]]
    assert len(kinds) - kinds.count("rejected") == 24  # every new token, coloured
    assert {"target", "accepted", "rejected", "resampled"} <= set(kinds)  # 24 tokens of a noisy draft show them all
    assert kinds.count("rejected") == kinds.count("resampled")
    assert "text-decoration:line-through" in html and "p/q = " in html and "u = 0." in html
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["α: accepted / tested"].endswith("%") and float(metrics["Tokens per target pass"]) > 1
    assert metrics["Wall-clock speedup"].endswith("×")
    assert figure_titled(app, "where the speculative run's time went").data[0].name.startswith("draft")
    rounds = app.dataframe[0].value
    assert rounds["tokens out"].sum() == 24 and rounds["round"].tolist() == list(range(len(rounds)))
    assert [html for html in app.html if 'class="specdec-plain"' in html.proto.body]


def test_the_playground_draws_each_rounds_time_and_acceptance_by_position_and_offers_the_trace():
    import json

    app = open_app(
        "pages/views/playground.py",
        pair=TINY_PAIR,
        stop_rule="False",
        gamma="3",
        temperature="1.0",
        max_new_tokens="24",
        seed="1",
    )
    run_playground(app)
    no_errors(app)
    rounds = app.dataframe[0].value
    times = figure_titled(app, "Where each round's time went")
    assert [trace.name for trace in times.data] == ["draft steps", "target pass"] and len(times.data[0].x) == len(
        rounds
    )
    assert times.data[0].y[0] == 0 and all(ms > 0 for ms in times.data[1].y)  # round 0, the prompt pass: no draft
    positions = figure_titled(app, "Acceptance by position")
    assert list(positions.data[0].x) == [1, 2, 3]  # gamma 3
    assert positions.data[1].name.startswith("theory: one alpha for all")
    labels = [button.label for button in app.get("download_button")]
    assert labels == ["Download rounds (CSV)", "Download trace (JSON)"]
    downloaded = app.session_state["playground_run"].trace_json
    trace = json.loads(downloaded)
    assert trace["target"] and trace["stats"]["new_tokens"] == 24 and len(trace["rounds"]) == len(rounds)
    assert sum(len(r["emitted"]) for r in trace["rounds"]) == 24
    tested = [d for r in trace["rounds"] for d in r["drafted"] if d["accepted"] is not None]
    assert tested and all(0 <= d["u"] < 1 and d["q"] > 0 for d in tested)  # sampled: every test has its u
    first_tested = sum(1 for r in trace["rounds"] if r["drafted"] and r["drafted"][0]["accepted"] is not None)
    assert positions.data[0].text[0].endswith(f"/{first_tested}")  # the chart counts what the trace holds


def test_quantized_weights_from_the_sidebar_are_loaded_and_stay_exact():
    app = open_app(
        "pages/views/playground.py",
        pair=TINY_PAIR,
        stop_rule="False",
        gamma="3",
        temperature="0",
        max_new_tokens="16",
        quantization="int8",
        draft_quantization="int4",
    )
    assert sidebar_widget(app, "selectbox", "target weights").value == "int8"
    assert sidebar_widget(app, "selectbox", "draft weights").value == "int4"
    run_playground(app)
    no_errors(app)
    # the run says how each model ran
    assert any("target float32 int8, draft bfloat16 int4" in element.value for element in app.caption)
    # against the int8 target as loaded: greedy still exact
    assert any("identical" in element.value for element in app.success)
    # and a link keeps them
    assert app.query_params["quantization"] == "int8" and app.query_params["draft_quantization"] == "int4"
    assert any("compares with the target as loaded (float32 int8)" in element.value for element in app.caption)
    finish_jobs(app.button(key="playground_float32_check").click().run())  # the one-click exactness check
    no_errors(app)
    assert [
        sidebar_widget(app, "selectbox", label).value for label in ("dtype", "target weights", "draft weights")
    ] == ["float32", "none", "none"]
    # it ran again, in float32
    assert any("on cpu (target float32, draft float32)" in element.value for element in app.caption)
    assert any("identical" in element.value for element in app.success)
    assert not any("compares with the target as loaded" in element.value for element in app.caption)


def test_streaming_shows_the_same_run_as_a_finished_one():
    html = {}
    for stream in (True, False):
        app = open_app(
            "pages/views/playground.py",
            pair=TINY_PAIR,
            stop_rule="False",
            gamma="2",
            temperature="1.0",
            max_new_tokens="30",
            seed="4",
        )
        app.checkbox(key="widget:stream").set_value(stream)
        html[stream] = token_html(run_playground(app))
    assert html[True] == html[False]


def held_after(count: int, real, gate: threading.Event, seen: list):
    """`real` (a generate function taking on_round) with its run held after round `count` until `gate` opens."""

    def generate(*args, on_round=None, **kwargs):
        def round_and_maybe_wait(*round_args):
            seen.append(round_args)
            on_round(*round_args)
            if len(seen) == count:
                gate.wait(60)

        return real(*args, on_round=round_and_maybe_wait, **kwargs)

    return generate


def wait_for(condition, timeout: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_only_the_runs_own_stop_ends_it_and_the_text_so_far_stays(monkeypatch):
    """A click elsewhere (a sidebar setting) reruns the page and the run goes on; its Stop ends it at the next round."""
    import pages.common.playground as playground

    monkeypatch.setattr(playground, "UPDATES_PER_SECOND", 1e9)  # report after every round
    for click_stop in (False, True):
        gate, seen = threading.Event(), []
        monkeypatch.setattr(playground.running, "generate", held_after(3, real_generate, gate, seen))
        app = open_app("pages/views/playground.py", pair=TINY_PAIR, temperature="1.0", max_new_tokens="64")
        button(app, "Generate").click().run()
        # the run is held after its third round
        wait_for(lambda: len(seen) == 3)  # noqa: B023  (called here, in this iteration)
        sidebar_widget(app, "number_input", "seed").set_value(99).run()  # a click elsewhere: the page reruns ...
        assert app.session_state["job:playground"].done.is_set() is False  # ... and the run goes on
        if click_stop:
            app.button(key="job:playground:stop").click().run()  # the run's own Stop: its handler sets the flag
        gate.set()
        finish_jobs(app)
        no_errors(app)
        run = app.session_state["playground_run"]
        if not click_stop:
            assert run.phase == "done" and run.speculative.stats.new_tokens == 64
            continue
        assert any("Stopped during speculative decoding" in warning.value for warning in app.warning)
        assert run.speculative is None and 0 < sum(span.in_output for span in run.spans) < 64
        # ended at the next round; the text shown
        assert len(seen) == 4 and token_html(app).count('data-kind="') == len(run.spans)


def test_stop_during_a_load_says_so_once_and_the_next_generate_loads(monkeypatch):
    """A Stop while the pair loads ends the load at its next step: the page says so, once, and Generate loads again."""
    import pages.common.models as models
    from specdec.store import Progress

    real_load, gate, started = models.loading.load_spec, threading.Event(), threading.Event()

    def load_held_after_its_first_step(spec, progress=None, steps=None):
        steps(Progress("tiny-target", "dequantizing GGUF tensors", 1, 10, 0.1))
        started.set()
        gate.wait(60)
        steps(Progress("tiny-target", "dequantizing GGUF tensors", 2, 10, 0.2))  # where the Stop lands
        return real_load(spec, progress, steps)

    monkeypatch.setattr(models.loading, "load_spec", load_held_after_its_first_step)
    models._forget_loaded_pair()
    app = open_app("pages/views/playground.py", pair=TINY_PAIR, temperature="1.0", max_new_tokens="16")
    button(app, "Generate").click().run()
    started.wait(60)
    app.run()
    # its bar
    assert [bar.proto.text for bar in app.get("progress")][0].startswith("tiny-target: dequantizing GGUF tensors 1/10")
    app.button(key="job:playground:stop").click().run()
    gate.set()
    finish_jobs(app)
    no_errors(app)
    assert [warning.value for warning in app.warning] == [
        "Stopped loading tiny-draft → tiny-target before it finished; nothing half-made was kept. Press Generate to "
        "load it again."
    ]
    assert "playground_run" not in app.session_state and not models._loaded_pairs()  # nothing ran, nothing kept
    app.run()
    assert not app.warning  # said once
    monkeypatch.setattr(models.loading, "load_spec", real_load)
    run_playground(app)
    no_errors(app)
    assert not app.warning and app.session_state["playground_run"].phase == "done"  # the next Generate loads and runs


def test_greedy_playground_run_checks_speculative_text_equals_plain_text():
    app = run_playground(
        open_app("pages/views/playground.py", pair=TINY_PAIR, temperature="0", max_new_tokens="20", dtype="float32")
    )
    no_errors(app)
    assert any("identical" in success.value for success in app.success)


def test_prompt_lookup_pair_runs_in_the_playground():
    app = run_playground(
        open_app("pages/views/playground.py", pair=TINY_LOOKUP_PAIR, temperature="0", max_new_tokens="20")
    )
    no_errors(app)
    assert token_html(app).count('data-kind="') >= 20


# --- the Compare page -------------------------------------------------------------------------


def run_compare(pairs: list[str], gammas=(1, 3), categories=("code", "qa")) -> AppTest:
    app = open_app("pages/views/compare.py", pair=TINY_PAIR, temperature="1.0", max_new_tokens="12")
    app.sidebar.multiselect[0].set_value(pairs)
    app.slider[0].set_value(gammas)
    app.multiselect[0].set_value(list(categories))
    app.run()
    return finish_jobs(button(app, "Run benchmark").click().run())


def test_compare_draws_the_charts_and_offers_the_csv():
    from specdec.bench import tables

    app = run_compare([TINY_PAIR, TINY_LOOKUP_PAIR])
    no_errors(app)
    acceptance = figure_titled(app, "Acceptance vs gamma")
    measured = [trace for trace in acceptance.data if trace.name.endswith("accepted / drafted")]
    assert sorted(trace.name for trace in measured) == [
        f"{TINY_LOOKUP_PAIR}: accepted / drafted",
        f"{TINY_PAIR}: accepted / drafted",
    ]
    assert len({trace.line.color for trace in measured}) == 2  # one colour per pair
    assert all(
        values(trace.x) == [1, 2, 3] and 0 <= min(values(trace.y)) <= max(values(trace.y)) <= 1 for trace in measured
    )
    tokens = figure_titled(app, "Tokens per target pass")
    theory = [trace for trace in tokens.data if "theory" in trace.name]
    assert len(theory) == 2 and all(trace.line.dash == "dash" and values(trace.y)[0] >= 1 for trace in theory)
    speedup = figure_titled(app, "Wall-clock speedup")
    assert sum("predicted" in trace.name for trace in speedup.data) == 2
    bars = figure_titled(app, "Speedup by prompt category")
    assert len(bars.data) == 4 and all(
        trace.type == "bar" and sorted(values(trace.x)) == ["code", "qa"] for trace in bars.data
    )
    assert sum(trace.name.endswith(": default") for trace in bars.data) == 2  # the planner's choice ran too

    frame = app.session_state["compare_frame"]
    csv = frame.to_csv(index=False)  # what the Download CSV button serves
    assert [button.label for button in app.get("download_button")] == ["Download CSV"]
    reread = tables.load_csv(io.StringIO(csv))
    assert list(reread.columns) == tables.COLUMNS
    # 2 pairs x 2 categories x 1 prompt x 1 repeat x (baseline + gammas 1, 2, 3 + the planner's choice)
    assert len(reread) == 20 and reread["method"].value_counts().to_dict() == {"speculative": 16, "generate": 4}
    # sampled: from each run's own trace
    assert reread.loc[reread["method"] == "speculative", "oracle_speedup"].notna().all()
    assert (
        set(reread["max_new_tokens"]) == {12} and reread["timestamp"].notna().all() and reread["device"].eq("cpu").all()
    )
    assert set(reread.loc[reread["pair"] == TINY_PAIR, "quantization"]) == {"int8"}  # the sidebar's auto, on a CPU
    assert any(f"{TINY_PAIR}: target float32 int8, draft bfloat16 int4" in caption.value for caption in app.caption)


def test_compare_times_the_pair_here_and_draws_v_and_the_speedup_it_allows(tmp_path):
    """The costs section times the sidebar's pair (kept in the store) and draws v(gamma) between its bounds, and the
    ceiling (gamma + 1) / v(gamma) beside the pair's draft at alpha: the same numbers as `verification_curve` on the
    kept costs."""
    from specdec.reference.explainer import verification_curve
    from specdec.runtime.costs import COSTS_FILE
    from specdec.store import cache_dir

    app = open_app("pages/views/compare.py", pair=TINY_PAIR, temperature="0", max_new_tokens="8", quantization="none")
    app = finish_jobs(button(app, f"Time {TINY_PAIR.replace('->', ' → ')} here").click().run())
    no_errors(app)
    assert (cache_dir() / COSTS_FILE).exists()  # kept: the next timing reads it
    cost = figure_titled(app, "What verifying costs on")
    measured = next(trace for trace in cost.data if trace.name == "v(gamma) measured here")
    v = values(measured.y)
    assert values(measured.x) == list(range(1, 17)) and all(b >= a for a, b in zip(v, v[1:])) and v[0] >= 1.0
    speedup = figure_titled(app, "The speedup it allows")
    ceiling = next(trace for trace in speedup.data if trace.name.startswith("a free draft"))
    curve, _ = app.session_state["compare_costs_curve"]
    assert values(ceiling.y) == curve.ceiling == [(g + 1) / cost for g, cost in zip(curve.gammas, v)]
    again = verification_curve((1.0, *v), curve.c, curve.alpha, catch_up=curve.catch_up)
    assert again.at_alpha == curve.at_alpha and again.best_gamma == curve.best_gamma


def test_compare_overlays_an_uploaded_csv_and_refuses_a_bad_one():
    app = run_compare([TINY_PAIR], gammas=(1, 2), categories=("code",))
    csv = app.session_state["compare_frame"].to_csv(index=False).encode()
    app.file_uploader[0].upload("earlier.csv", csv, "text/csv").run()
    no_errors(app)
    names = {
        trace.name for trace in figure_titled(app, "Tokens per target pass").data if trace.name.endswith("measured")
    }
    assert names == {f"{TINY_PAIR}: measured", f"{TINY_PAIR} [earlier.csv]: measured"}

    app.file_uploader[0].upload("notes.csv", b"name,value\nx,1\n", "text/csv").run()
    assert any("not a specdec benchmark" in error.value for error in app.error)
    assert not app.exception
    assert figure_titled(app, "Acceptance vs gamma")  # this run's charts are still there


def test_the_playground_drafts_what_the_planner_chose():
    app = open_app("pages/views/playground.py", pair=TINY_PAIR, temperature="0", max_new_tokens="16")
    run_playground(app)
    no_errors(app)
    # an int8 target and an int4 draft on a CPU: a draft step is dear and a verified node cheap, so the planner grows a
    # tree
    assert any("drafting: tree (budget 16), the default here" in markdown.value for markdown in app.markdown)
    assert not any("stop rule" in caption.value for caption in app.caption)  # no page speaks of what the run did not do
    assert any("identical" in success.value for success in app.success)  # greedy: the target's own tokens


def test_a_tree_run_draws_its_tree_and_stays_exact():
    app = open_app(
        "pages/views/playground.py", pair=TINY_PAIR, tree="True", tree_budget="8", temperature="0", max_new_tokens="20"
    )
    assert sidebar_widget(app, "selectbox", "Drafting method").value == "tree"  # an older link's tree=True
    run_playground(app)
    no_errors(app)
    assert any("drafting: tree (budget 8)" in markdown.value for markdown in app.markdown)
    assert any("identical" in success.value for success in app.success)  # greedy, float32: the target's own tokens
    tree = next(element for element in app.get("plotly_chart") if "drafted nodes" in element.proto.spec)
    assert "accepted" in tree.proto.spec and "root" in tree.proto.spec
    assert app.dataframe[0].value["tokens out"].sum() == 20
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Acceptance rate: accepted / drafted"].endswith("%")  # beside α, not in a tooltip
    drafted = next(caption.value for caption in app.caption if caption.value.startswith("Drafted "))
    counts = [int(number) for number in re.findall(r"(\d+) (?:tokens|accepted|rejected|drafted but unused)", drafted)]
    assert counts[0] == counts[1] + counts[2] + counts[3] and "a tree's other branches" in drafted, drafted


# --- batches ----------------------------------------------------------------------------------


def test_the_playground_runs_a_batch_and_shows_each_rows_rounds():
    app = open_app("pages/views/playground.py", pair=TINY_PAIR, temperature="0", max_new_tokens="12")
    app.text_area[1].set_value("w2 w3 w4\nw5\nw6 w7").run()
    finish_jobs(button(app, "Run the batch").click().run())
    no_errors(app)
    run = app.session_state["playground_batch"]
    assert len(run.speculative) == 3 and all(same for same in run.same_tokens)  # greedy: every row its own plain text
    assert all(result.stats.new_tokens == 12 for result in run.speculative)
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Gain over plain decoding of the same batch"].endswith("×")
    assert float(metrics["Speculative throughput"].split()[0]) > 0
    assert sum("identical to the target alone's" in success.value for success in app.success) == 3
    # the runs' own words
    assert "Drafted: chain, stop rule, the default here" in [caption.value for caption in app.caption]
    rounds = [frame.value for frame in app.dataframe][-3:]  # one round table per row
    assert [table["tokens out"].sum() for table in rounds] == [12, 12, 12]


def test_a_bad_batch_is_one_error_and_the_page_stays():
    app = open_app("pages/views/playground.py", pair=TINY_PAIR, temperature="0", max_new_tokens="8")
    app.text_area[1].set_value("\n\n").run()
    button(app, "Run the batch").click().run()
    assert any("Write from 1 to 8 prompts" in error.value for error in app.error) and not app.exception


def test_w8a8_where_it_cannot_run_is_one_error_and_the_page_stays(monkeypatch):
    import specdec.kernels.w8a8_gate as gate
    from specdec.kernels import w8a8

    monkeypatch.setattr(gate, "cpu_facts", lambda: {"cpu": "a test CPU", "flags": ["avx2"]})
    monkeypatch.setattr(w8a8, "_active", None)
    app = open_app(
        "pages/views/playground.py", pair=TINY_PAIR, temperature="0", max_new_tokens="8", quantization="w8a8"
    )
    run_playground(app)
    errors = [error.value for error in app.error]
    assert (
        errors
        == [
            "w8a8 weights cannot run here: this CPU lacks avx512f, avx512_vnni, for which vLLM's CPU kernel is "
            "built: use int8 weights (--quantization int8)"
        ]
        and not app.exception
    )
    sidebar_widget(app, "selectbox", "target weights").set_value("int8").run()
    run_playground(app)
    no_errors(app)  # the page works on with another kind


def test_compare_measures_batches_and_draws_the_gain_against_batch_size():
    app = open_app("pages/views/compare.py", pair=TINY_PAIR, temperature="0", max_new_tokens="8")
    app.sidebar.multiselect[0].set_value([TINY_PAIR])
    app.radio[0].set_value("batches").run()
    app.multiselect[0].set_value([1, 2]).run()
    finish_jobs(button(app, "Run benchmark").click().run())
    no_errors(app)
    frame = app.session_state["compare_frame"]
    assert set(frame["batch_size"]) == {1, 2} and frame[frame["method"] == "speculative"]["exact"].all()
    figure = figure_titled(app, "Batches")
    assert any("gain vs batch size" in trace.name for trace in figure.data)
    assert [button.label for button in app.get("download_button")] == ["Download CSV"]
    server = io.BytesIO()
    import pandas as pd

    pd.read_csv("benchmarks/vllm-server.csv").to_csv(server, index=False)
    app.file_uploader[0].upload("vllm-server.csv", server.getvalue(), "text/csv").run()
    no_errors(app)
    assert any("vLLM server, requests in flight" in trace.name for trace in figure_titled(app, "Batches").data)


def test_the_fastest_plan_is_one_click_away_where_the_header_names_it(monkeypatch):
    """Where the default drafts with the draft model though another plan is faster here (the header names `--method
    auto`), a button runs that plan: the method picker moves to it and the same prompt runs again. The tiny pair's torch
    runtime has no measured costs, so the flag the page looks for is set to a word every header holds."""
    import specdec.planner.drafting

    monkeypatch.setattr(specdec.planner.drafting, "FASTEST_PLAN_FLAG", "drafting:")
    app = open_app("pages/views/playground.py", pair=TINY_PAIR, temperature="0", max_new_tokens="8")
    run_playground(app)
    no_errors(app)
    assert sidebar_widget(app, "selectbox", "Drafting method").value == "auto"  # the default: the draft at work
    finish_jobs(app.button(key="playground_fastest").click().run())
    no_errors(app)
    assert sidebar_widget(app, "selectbox", "Drafting method").value == "fastest"  # as `specdec run --method auto`
    # and the run it made is that plan's
    assert app.session_state["playground_run"].settings.spec.drafting.method == "auto"
