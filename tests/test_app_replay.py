"""The Playground's replay (a recorded run, round by round) and its race (both runs on one clock), headless under
AppTest.

The environment (tiny models, empty cache) is `app_testing.dashboard_environment`. The replay is held to the round
table and the coloured text it replays; the race to the two runs' own statistics.
"""

from __future__ import annotations

import json
import math

from app_testing import (
    button,
    dashboard_environment,  # noqa: F401  (an autouse fixture: tiny models, empty cache, fixture guide)
    figure_titled,
    figures,
    no_errors,
    open_app,
    run_playground,
    token_html,
    values,
)
from dashboard_fixtures import TINY_PAIR

from pages.common.replay import replay_step

SAMPLED = dict(pair=TINY_PAIR, stop_rule="False", gamma="3", temperature="1.0", max_new_tokens="24", seed="2")


def replay_html(app, part: str) -> str:
    bodies = [element.proto.body for element in app.html if f'class="specdec-replay-{part}"' in element.proto.body]
    assert len(bodies) <= 1, f"{len(bodies)} replay {part} boxes"
    return bodies[0] if bodies else ""


def kinds(html: str) -> list[str]:
    return [part.split('"')[0] for part in html.split('data-kind="')[1:]]


def summary(app) -> str:
    found = [element.proto.body for element in app.html if 'class="specdec-replay"' in element.proto.body]
    assert len(found) == 1
    return found[0]


def test_the_replay_steps_through_every_round_as_the_round_table_tells_it():
    app = run_playground(open_app("pages/views/playground.py", **SAMPLED))
    no_errors(app)
    table = app.dataframe[0].value
    slider = app.slider(key="playground_replay")
    assert (slider.min, slider.max, slider.value) == (0, len(table) - 1, 0)
    assert "the prompt pass" in summary(app) and not replay_html(app, "drafted")
    assert kinds(replay_html(app, "added")) == ["target"] and kinds(replay_html(app, "text")) == ["target"]
    out, seen = 0, set()
    for index, row in table.iterrows():
        app.slider(key="playground_replay").set_value(index).run()
        no_errors(app)
        drafted, added, text = (
            kinds(replay_html(app, "drafted")),
            kinds(replay_html(app, "added")),
            kinds(replay_html(app, "text")),
        )
        out += row["tokens out"]
        # "2/3", or "–" for the prompt pass
        accepted = 0 if row["accepted"] == "–" else int(row["accepted"].split("/")[0])
        assert drafted.count("accepted") == accepted
        assert drafted.count("rejected") == (row["how"] == "resampled")  # a refusal is shown where the target resampled
        assert added == [row["how"]]
        assert len(text) - text.count("rejected") == out  # the text after round r: every token so far
        if index > 0:
            assert f"Round {index}:" in summary(app) and f"{out} tokens out so far" in summary(app)
        seen.add(row["how"])
    assert {"resampled", "bonus"} <= seen  # 24 sampled tokens of a noisy draft: both kinds
    # the replay's own box
    run_text = token_html(app).replace('class="specdec-tokens"', 'class="specdec-replay-tokens"', 1)
    # the last round's: the run's text
    assert replay_html(app, "text") == f'<div class="specdec-replay-text">{run_text}</div>'


def test_previous_and_next_move_one_round_and_stop_at_the_ends():
    app = run_playground(open_app("pages/views/playground.py", **SAMPLED))
    last = int(app.slider(key="playground_replay").max)
    assert app.button(key="playground_replay_back").disabled  # round 0: nothing before it
    app.button(key="playground_replay_next").click().run()
    app.button(key="playground_replay_next").click().run()
    assert app.slider(key="playground_replay").value == 2 and "Round 2:" in summary(app)
    app.button(key="playground_replay_back").click().run()
    assert app.slider(key="playground_replay").value == 1
    app.slider(key="playground_replay").set_value(last).run()
    assert app.button(key="playground_replay_next").disabled
    step = replay_step(app.session_state["playground_run"].spans, app.session_state["playground_run"].rounds, last)
    assert step.tokens_out == 24 and step.summary() in summary(app).replace("&#x27;", "'")
    run = run_playground(app)  # a second run keeps the page working
    no_errors(run)
    assert run.slider(key="playground_replay").value <= run.slider(key="playground_replay").max


def test_the_race_draws_both_runs_on_one_clock_from_their_own_timings():
    app = run_playground(open_app("pages/views/playground.py", **SAMPLED))
    no_errors(app)
    run = app.session_state["playground_run"]
    speculative, plain = run.speculative.stats, run.plain.stats
    figure = figure_titled(app, "The race, on one clock")
    bars = {trace.name: trace for trace in figure.data if trace.type == "bar"}
    assert set(bars) == {"draft", "target pass", "other"}
    passes = bars["target pass"]
    lanes = [label.split("<br>")[0] for label in passes.y]
    assert (
        lanes.count("speculative") == speculative.target_passes
        and lanes.count("target alone") == plain.target_passes == 24
    )
    seconds = {
        lane: sum(x for x, name in zip(values(passes.x), lanes) if name == lane)
        for lane in ("speculative", "target alone")
    }
    # the segments are the measured passes
    assert math.isclose(seconds["speculative"], speculative.verify_time_s, rel_tol=1e-6)
    assert math.isclose(seconds["target alone"], plain.verify_time_s, rel_tol=1e-6)
    assert math.isclose(sum(values(bars["draft"].x)), speculative.draft_time_s, rel_tol=1e-6)
    assert all(label.startswith("speculative") for label in bars["draft"].y)  # the target alone drafts nothing
    finishes = {trace.y[0].split("<br>")[0]: trace.x[0] for trace in figure.data if trace.type == "scatter"}
    assert finishes == {"speculative": speculative.wall_time_s, "target alone": plain.wall_time_s}
    assert f"{plain.wall_time_s / speculative.wall_time_s:.2f}×" in figure.layout.title.text
    # the chart says what it is
    assert any(label.startswith("target alone<br>(measured: its own run") for label in passes.y)
    progress = figure_titled(app, "Tokens out over time")
    assert [values(trace.y)[-1] for trace in progress.data] == [24, 24]
    downloaded = json.loads(run.trace_json)["timeline"]  # the trace download carries the clock too
    assert [time["end_s"] for time in downloaded] == [time.end_s for time in run.speculative.timeline]
    assert len(downloaded) == speculative.target_passes and sum(time["tokens"] for time in downloaded) == 24


def test_without_the_target_alone_there_is_no_race_and_the_page_says_why():
    app = open_app("pages/views/playground.py", **SAMPLED)
    app.checkbox(key="widget:also_plain").set_value(False)
    run_playground(app)
    no_errors(app)
    assert not [figure for figure in figures(app) if figure.layout.title.text.startswith("The race")]
    assert any("No race without the target alone's own run" in info.value for info in app.info)
    assert app.slider(key="playground_replay").max > 0  # the replay needs no second run
    assert [b.label for b in app.get("download_button")] == ["Download rounds (CSV)", "Download trace (JSON)"]
    button(app, "Generate")  # and the page is ready to run again
