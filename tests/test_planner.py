"""One plan behind every door: for the same run spec, `specdec run`, the Playground and `specdec bench` get the same
plan from the planner and print the same header line.

The doors are driven as a person drives them, with the tiny models of the dashboard's catalogue (no download): the
command line in this process (`specdec.cli.main`), the Playground headless (AppTest), the benchmark's command line and
the CSV it writes. A negative control proves the comparison can fail: the planner asked for another spec (a fixed gamma)
gives another header.
"""

from __future__ import annotations

import pandas as pd

from app_testing import dashboard_environment, open_app, run_playground  # noqa: F401  (autouse: tiny models, empty cache)
from dashboard_fixtures import TINY_LOOKUP_PAIR, TINY_PAIR

import pytest

from specdec.cli import main
from specdec.engine.contract import DraftCosts
from specdec.errors import SpecdecError
from specdec.pair.loading import load_spec
from specdec.run_spec import Drafting, RunSpec
from specdec.zoo.catalog import split_pair_name

PLAN = "Plan: "


def cli_header(capsys, *argv: str) -> str:
    """The header `specdec run` prints first in its report (and on stderr before it generates)."""
    assert main(["run", *argv]) == 0
    captured = capsys.readouterr()
    first = captured.out.splitlines()[0]
    assert first.startswith(PLAN) and first in captured.err.splitlines()  # the same line before and after the run
    return first.removeprefix(PLAN)


def playground_header(pair: str) -> str:
    """The header the Playground shows for a run of `pair` with the sidebar's defaults."""
    app = run_playground(open_app("pages/views/playground.py", pair=pair, max_new_tokens="8"))
    assert not app.error, [error.value for error in app.error]
    lines = [markdown.value for markdown in app.markdown if markdown.value.startswith("**Plan:** ")]
    assert len(lines) == 1, lines
    return lines[0].removeprefix("**Plan:** ")


def bench_header(capsys, tmp_path, pair: str) -> tuple[str, set[str]]:
    """The header `specdec bench` prints for a pair, and the plan column of its CSV for the default's rows."""
    out = tmp_path / "bench.csv"
    assert (
        main(
            [
                "bench",
                "--pairs",
                pair,
                "--methods",
                "speculative",
                "--gammas",
                "default",
                "--categories",
                "code",
                "--prompts-per-category",
                "1",
                "--max-new-tokens",
                "8",
                "--warmup",
                "0",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = [line.removeprefix(PLAN) for line in capsys.readouterr().err.splitlines() if line.startswith(PLAN)]
    assert len(printed) == 1, printed
    frame = pd.read_csv(out)
    return printed[0], set(frame.loc[frame["method"] == "speculative", "plan"])


def test_the_three_doors_print_the_same_plan(capsys, tmp_path):
    for pair in (TINY_PAIR, TINY_LOOKUP_PAIR):
        draft, target = split_pair_name(pair)
        cli = cli_header(capsys, "--target", target, "--draft", draft, "--max-new-tokens", "8")
        page = playground_header(pair)
        printed, in_csv = bench_header(capsys, tmp_path, pair)
        planned = load_spec(RunSpec(target, draft)).plan(RunSpec(target, draft)).header()  # the planner, asked directly
        assert cli == page == printed == planned, (cli, page, printed, planned)
        assert in_csv == {planned}
    assert "drafting: tree (budget 16), the default here" in cli_header(
        capsys, "--target", "tiny-target", "--draft", "tiny-draft"
    )


def test_another_spec_gets_another_plan(capsys):
    """The negative control: the comparison above can fail, since a spec that drafts otherwise is planned otherwise."""
    default = cli_header(capsys, "--target", "tiny-target", "--draft", "tiny-draft", "--max-new-tokens", "4")
    fixed = cli_header(
        capsys, "--target", "tiny-target", "--draft", "tiny-draft", "--max-new-tokens", "4", "--gamma", "3"
    )
    spec = RunSpec("tiny-target", "tiny-draft", drafting=Drafting(gamma=3))
    assert default != fixed == load_spec(spec).plan(spec).header()
    assert fixed.endswith("drafting: chain, gamma 3")


# ---------------------------------------------------------------- a draft model that cannot pay here (issue 57)


def _tiny_model():
    from transformers import LlamaConfig, LlamaForCausalLM

    from specdec.runtime import as_model

    return as_model(
        LlamaForCausalLM(
            LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=1, num_attention_heads=1, vocab_size=4)
        )
    )


STEEP = DraftCosts(0.61, 1.0, (1.0, 1.5, 3.25, 4.42, 5.82))  # measured on 2 AVX2 cores: no chain pays
CHEAP = DraftCosts(0.2, 0.05, (1.0, 1.05, 1.1, 1.15, 1.2))  # a pass over k tokens about one step: chains pay


def test_the_default_shows_the_draft_at_work_where_it_cannot_pay_and_names_the_fastest_plan():
    from specdec.planner.drafting import plan_for_draft_model

    target = draft = _tiny_model()
    shown = plan_for_draft_model(target, draft, name="the-draft", costs=STEEP)
    assert shown.drafter.draft_model is draft and shown.schedule.describe() == "chain, stop rule"
    assert shown.schedule.verify_slope == 0.0 and shown.costs == STEEP  # priced as on a GPU, reported as measured
    assert (
        "to show the draft at work" in shown.description and "predicted at 0.90x the target alone" in shown.description
    )
    assert shown.description.endswith(
        "the fastest exact plan here is prompt-lookup (--method auto), at most 1.33x where all its drafts are right"
    ), shown.description
    fastest = plan_for_draft_model(target, draft, name="the-draft", costs=STEEP, fastest=True)
    assert fastest.drafter.draft_model is None and fastest.description.startswith("chain"), fastest.description
    assert "prompt-lookup, the fastest exact plan here, instead of the-draft" in fastest.description
    # negative control: where chains pay, neither says so, and both draft with the draft model alike
    for paying in (
        plan_for_draft_model(target, draft, costs=CHEAP),
        plan_for_draft_model(target, draft, costs=CHEAP, fastest=True),
    ):
        assert paying.drafter.draft_model is draft and "predicted" not in paying.description


def test_the_prediction_prices_the_drafts_catch_up_where_it_was_timed():
    from dataclasses import replace

    from specdec.planner.drafting import plan_for_draft_model

    target = draft = _tiny_model()
    # on a CPU the draft's two-token pass after a round that kept every draft costs another draft step
    caught_up = plan_for_draft_model(target, draft, name="the-draft", costs=replace(STEEP, catch_up=STEEP.c))
    assert "predicted at 0.71x the target alone" in caught_up.description, caught_up.description
    # control: not timed (0), the prediction is Leviathan et al.'s with the measured v, as above
    assert "predicted at 0.90x" in plan_for_draft_model(target, draft, name="the-draft", costs=STEEP).description


def test_method_auto_is_the_fastest_plan_and_leaves_the_rounds_to_the_planner():
    spec = RunSpec(drafting=Drafting(method="auto"))
    assert spec.check() is spec
    with pytest.raises(SpecdecError, match=r"^--method auto leaves the rounds to the planner: drop --gamma$"):
        RunSpec(drafting=Drafting(method="auto", gamma=3)).check()
    with pytest.raises(SpecdecError, match=r"choose from .*, or auto$"):
        RunSpec(drafting=Drafting(method="no-such")).check()


def test_the_sidebar_offers_the_fastest_plan_as_the_command_line_names_it():
    from dataclasses import replace

    from pages.common.settings import AUTO, FASTEST, Settings, method_choices

    settings = Settings()
    assert method_choices(settings.draft)[:2] == (AUTO, FASTEST)
    # the planner sizes rounds
    assert replace(settings, method=FASTEST, gamma=5).spec.drafting == Drafting(method="auto")
    assert replace(settings, method=AUTO).spec.drafting.method is None  # the default: the draft at work
