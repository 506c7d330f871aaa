"""Trained EAGLE-3 heads in the dashboard, headless under AppTest with the tiny target (nothing is downloaded).

- the sidebar lists a head beside the draft models when one is saved for the target in the cache, and says how to
  train one when none is;
- a Playground run with the head gives the target's own greedy text, and the head really drafted;
- training from the Playground (ShareGPT replaced by a few tiny conversations): the bar shows each step with the
  time left, Stop ends the run and keeps its checkpoint, and Train again goes on from it; 0 minutes is one st.error;
- Compare's "every family" runs the head and lays Spec-Bench's EAGLE rows beside it.

The environment (tiny models, an empty cache in $SPECDEC_CACHE) is `app_testing.dashboard_environment`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from app_testing import (
    button,
    dashboard_environment,  # noqa: F401  (an autouse fixture: tiny models, empty cache, fixture guide)
    figure_titled,
    finish_jobs,
    no_errors,
    open_app,
    run_playground,
    sidebar_widget,
    values,
)
from dashboard_fixtures import TINY_LOOKUP_PAIR, TINY_PAIR
from test_app_runs import wait_for
from test_eagle import SETTINGS, own_texts

from specdec.heads.files import heads_dir, load_head, save_head
from specdec.heads.training import train_head

HEAD_PAIR = "eagle->tiny-target"
HEAD_LABEL = "EAGLE-3 head (trained) → tiny-target · cached"
TRAINING = "job:head_training"


@pytest.fixture(autouse=True)
def no_heads():
    """Every test starts and ends with no head in the cache (the module shares one cache folder)."""
    shutil.rmtree(heads_dir(), ignore_errors=True)
    yield
    shutil.rmtree(heads_dir(), ignore_errors=True)


def tiny_target() -> torch.nn.Module:
    from transformers import AutoModelForCausalLM

    from specdec.zoo.catalog import MODELS

    return AutoModelForCausalLM.from_pretrained(MODELS["tiny-target"].local_path).float().eval()


@pytest.fixture(scope="module")
def trained_tiny_head(tmp_path_factory):
    """A head trained 60 steps on tiny-target's own greedy texts (once for the module), in a folder of its own."""
    target = tiny_target()
    head = train_head(target, own_texts(target), steps=60, settings=SETTINGS, name="tiny-target")
    return save_head(head, tmp_path_factory.mktemp("head") / "tiny-target")


@pytest.fixture
def saved_head(trained_tiny_head):
    """That head where `specdec heads train` would put it (the cache's heads/tiny-target)."""
    return Path(shutil.copytree(trained_tiny_head, heads_dir() / "tiny-target"))


def pair_picker(app):
    return sidebar_widget(app, "selectbox", "Draft → target")


def captions(app) -> str:
    return " ".join(caption.value for caption in app.sidebar.caption)


# --- the sidebar ------------------------------------------------------------------------------


def test_the_sidebar_offers_a_head_only_when_one_is_trained_and_says_how_to_train_one(trained_tiny_head):
    app = open_app(pair=TINY_PAIR)
    assert HEAD_LABEL not in pair_picker(app).options
    assert "No EAGLE-3 head is trained for tiny-target yet" in captions(app)
    assert "`specdec heads train --target tiny-target --minutes 30`" in captions(app)

    shutil.copytree(trained_tiny_head, heads_dir() / "tiny-target")
    app = open_app(pair=TINY_PAIR)
    options = pair_picker(app).options
    lookup = options.index(next(label for label in options if label.startswith("prompt-lookup → tiny-target")))
    assert options[lookup + 1] == HEAD_LABEL  # right after the target's last draft
    assert "An EAGLE-3 head is trained for tiny-target: pick “EAGLE-3 head (trained) → tiny-target” above." in captions(
        app
    )
    pair_picker(app).set_value(HEAD_PAIR).run()
    no_errors(app)
    assert app.query_params["pair"] == HEAD_PAIR
    method = sidebar_widget(app, "selectbox", "Drafting method")
    assert method.disabled and method.value == "eagle"  # the pair's draft is the method
    assert sidebar_widget(app, "slider", "gamma").disabled  # the head sizes its own rounds (its tree)
    # the registry's words
    assert "EAGLE-3 head trained on this machine" in captions(app) and "for tiny-target" in captions(app)


def test_a_link_to_a_head_that_is_not_there_falls_back_with_a_warning():
    app = open_app(pair=HEAD_PAIR)
    no_errors(app)
    assert pair_picker(app).value != HEAD_PAIR
    assert any(f"pair={HEAD_PAIR}" in warning.value for warning in app.sidebar.warning)


# --- a run with the head ----------------------------------------------------------------------


def test_a_run_with_the_head_is_the_targets_greedy_text(saved_head):
    app = run_playground(
        open_app(
            "pages/views/playground.py",
            pair=HEAD_PAIR,
            temperature="0",
            max_new_tokens="24",
            dtype="float32",
            quantization="none",
        )
    )
    no_errors(app)
    run = app.session_state["playground_run"]
    assert run.speculative.drafting.startswith("EAGLE-3 head, tree")
    assert run.speculative.tokens == run.plain.tokens and len(run.plain.tokens) == 24  # the target alone's own text
    assert any("identical" in success.value for success in app.success)
    # the head drafted, and some was kept
    assert run.speculative.stats.drafted > 0 and run.speculative.stats.accepted > 0
    assert any(caption.value.startswith("eagle → tiny-target on cpu") for caption in app.caption)


# --- training from the Playground -------------------------------------------------------------


@pytest.fixture
def tiny_sharegpt(tmp_path, monkeypatch):
    """ShareGPT replaced by 24 conversations of tiny-target's words (in the file format `read_conversations` reads)."""
    generator = torch.Generator().manual_seed(0)

    def words(count):
        return " ".join(f"w{int(i)}" for i in torch.randint(2, 22, (count,), generator=generator))

    records = [
        {"id": str(i), "conversations": [{"from": "human", "value": words(8)}, {"from": "gpt", "value": words(16)}]}
        for i in range(24)
    ]
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps(records))
    monkeypatch.setattr("specdec.zoo.sharegpt.fetch_sharegpt", lambda *args, **kwargs: path)
    return path


def open_training(minutes: float):
    app = open_app("pages/views/playground.py", pair=TINY_PAIR)
    app.number_input(key="widget:head_minutes").set_value(minutes).run()
    return app


def test_training_shows_each_step_and_stop_keeps_the_checkpoint_then_train_goes_on(tiny_sharegpt):
    app = open_training(10.0)
    button(app, "Train").click().run()
    job = app.session_state[TRAINING]
    wait_for(lambda: job.progress.get("training") is not None and job.progress["training"].numbers["step"] >= 3)
    app.run()
    bar = [element.proto for element in app.get("progress") if element.proto.text.startswith("step ")]
    assert bar and "top-1 agreement" in bar[0].text and "min left" in bar[0].text  # the training's Progress.describe()
    assert bar[0].value < 100  # 10 minutes are far from spent
    app.button(key=f"{TRAINING}:stop").click().run()
    finish_jobs(app)
    no_errors(app)

    trained = app.session_state["heads_trained"]
    folder = heads_dir() / "tiny-target"
    progress = json.loads((folder / "training" / "progress.json").read_text())
    assert trained.stopped and trained.folder == folder and trained.minutes < 1  # ended by Stop, not by the 10 min
    # the checkpoint of the last step
    assert progress["step"] == trained.step >= 3 and len(progress["history"]) == trained.step
    assert load_head(folder).config.target == "tiny-target"  # whole, and checked against its manifest
    assert any(success.value.startswith(f"Stopped at step {trained.step}: ") for success in app.success)
    assert HEAD_LABEL in pair_picker(app).options  # the sidebar offers it now

    app.number_input(key="widget:head_minutes").set_value(0.02).run()  # about a second more
    finish_jobs(button(app, "Train").click().run())
    no_errors(app)
    again = app.session_state["heads_trained"]
    assert not again.stopped and again.resumed_from == trained.step and again.step > trained.step
    assert json.loads((folder / "training" / "progress.json").read_text())["step"] == again.step
    assert any(
        success.value.startswith(f"Trained at step {again.step}, going on from step {trained.step}: ")
        for success in app.success
    )
    button(app, "Use it: EAGLE-3 head (trained) → tiny-target").click().run()
    assert pair_picker(app).value == HEAD_PAIR


def test_training_for_zero_minutes_is_one_error_and_the_page_goes_on(tiny_sharegpt):
    app = open_training(0.0)
    button(app, "Train").click().run()
    assert [error.value for error in app.error] == ["Train for more than 0 minutes (got 0)."]
    assert not app.exception and TRAINING not in app.session_state and not heads_dir().exists()
    run_playground(app)  # the page still runs
    no_errors(app)
    assert app.session_state["playground_run"].phase == "done"


# --- Compare: every family, Spec-Bench style ----------------------------------------------------


def test_compare_runs_the_head_as_a_family_beside_spec_benchs_eagle_rows(saved_head):
    import pandas as pd

    app = open_app(
        "pages/views/compare.py", pair=TINY_LOOKUP_PAIR, temperature="0", max_new_tokens="12", quantization="none"
    )
    app.sidebar.multiselect[0].set_value([TINY_LOOKUP_PAIR])
    app.slider[0].set_value((1, 1))
    app.multiselect[0].set_value(["code"])
    app.checkbox(key="widget:compare_families").set_value(True)
    app.run()
    finish_jobs(button(app, "Run benchmark").click().run())
    no_errors(app)
    frame = app.session_state["compare_frame"]
    eagle = frame[frame["method"] == "eagle"]
    assert len(eagle) == 1 and eagle["drafted"].iloc[0] > 0
    table = next(element.value for element in app.dataframe if "spec_bench_row" in element.value.columns)
    rows = table.set_index("method")
    assert rows.loc["eagle", "spec_bench_row"] == "EAGLE-3, Vicuna-13B-v1.3"
    assert (rows.loc["eagle", "spec_bench_speedup"], rows.loc["eagle", "spec_bench_tokens_per_step"]) == (3.02, 5.71)
    assert rows.loc["eagle", "spec_bench_earlier"] == "EAGLE-2 2.36x (4.34 tokens/step); EAGLE 2.10x (3.58 tokens/step)"
    assert rows.loc["recycling", "spec_bench_row"] == "Recycling" and pd.isna(
        rows.loc["recycling", "spec_bench_earlier"]
    )
    speedups = figure_titled(app, "Speedup by category, here and on Spec-Bench")
    published = {
        trace.name: dict(zip(values(trace.x), values(trace.y)))
        for trace in speedups.data
        if trace.name.startswith("eagle: ")
    }
    assert published == {
        "eagle: Spec-Bench (EAGLE-3, Vicuna-13B-v1.3)": {"all": 3.02},  # code has no Spec-Bench column
        "eagle: Spec-Bench (EAGLE-2)": {"all": 2.36},
        "eagle: Spec-Bench (EAGLE)": {"all": 2.10},
    }


def test_the_families_table_has_the_eagle_rows_per_category_and_no_earlier_column_without_them():
    import pandas as pd

    from specdec.bench.spec_bench import EARLIER, PUBLISHED, families_figures, families_table

    frame = pd.DataFrame(
        [
            {
                "method": method,
                "schedule": None,
                "category": category,
                "prompt_id": f"{category}-0",
                "speedup": speedup,
                "tokens_per_target_pass": 2.0,
                "draft_cost_ratio": 0.0,
            }
            for method, speedup in (("eagle", 1.4), ("recycling", 1.2), ("lookahead", 0.9))
            for category in ("chat", "math", "code")
        ]
    )
    table = families_table(frame).set_index("method")
    assert table.loc["eagle", "spec_bench_row"] == "EAGLE-3, Vicuna-13B-v1.3" and table.loc["eagle", "speedup"] == 1.4
    bars = families_figures(frame)["family_speedup"]
    eagle3 = next(trace for trace in bars.data if trace.name == "eagle: Spec-Bench (EAGLE-3, Vicuna-13B-v1.3)")
    # the categories it has
    assert dict(zip(values(eagle3.x), values(eagle3.y))) == {"chat": 3.48, "math": 3.42, "all": 3.02}
    assert [row.row for row in EARLIER["eagle"]] == ["EAGLE-2", "EAGLE"] and PUBLISHED["eagle"].mean_accepted == 5.71
    without = families_table(frame[frame["method"] != "eagle"])
    assert "spec_bench_earlier" not in without.columns and set(without["spec_bench_row"]) == {"Recycling", "Lookahead"}
