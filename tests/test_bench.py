"""The benchmark harness's bookkeeping on tiny models: rows, columns, interleaving, predictions, CSV.

Nothing here times anything against a threshold: speed is measured by `specdec bench`, not asserted.
"""

import pandas as pd
import pytest
import torch
from tiny_models import tiny_pair, tiny_tokenizer

from specdec import Decoding, SpecdecError, speculative_generate
from specdec.bench.harness import BenchSettings, applicable, plan_runs, rows_to_frame, run_benchmark
from specdec.bench.tables import COLUMNS, best_gammas, load_csv, overview, save_csv
from specdec.pair.resources import LoadedPair
from specdec.reference.theory import walltime_speedup


@pytest.fixture(scope="module")
def tiny_loaded_pair():
    target, draft = tiny_pair("gpt2")
    return LoadedPair.from_models("tiny-target", "tiny-draft", target, draft, tiny_tokenizer(24))


@pytest.fixture(scope="module")
def lookup_pair(tiny_loaded_pair):
    p = tiny_loaded_pair
    return LoadedPair.from_models("tiny-target", "prompt-lookup", p.target, None, p.tokenizer)


SETTINGS = BenchSettings(
    methods=("speculative", "plain", "assisted"),
    gammas=(2, 4, "adaptive"),
    categories=("code", "chat"),
    prompts_per_category=1,
    repeats=2,
    decoding=Decoding(max_new_tokens=12, temperature=0.0, seed=0),
)


@pytest.fixture(scope="module")
def frame(tiny_loaded_pair, lookup_pair):
    return run_benchmark([tiny_loaded_pair, lookup_pair], SETTINGS)


def test_one_row_per_run_with_every_column(frame):
    # model pair: generate + plain + speculative x (2, 4, adaptive) + assisted x (2, 4) = 7 runs per prompt and repeat
    # prompt lookup: generate + plain + speculative x 3 (assisted needs a draft model) = 5
    assert len(frame) == (7 + 5) * 2 * 2
    assert list(frame.columns) == COLUMNS
    assert set(frame["method"]) == {"generate", "plain", "speculative", "assisted"}
    assert frame["device"].eq("cpu").all() and frame["torch_version"].eq(torch.__version__).all()


def test_speedup_is_relative_to_generate_on_the_same_prompt_and_repeat(frame):
    key = ["pair", "prompt_id", "temperature", "repeat"]
    baseline = frame[frame["method"] == "generate"].set_index(key)["tokens_per_second"]
    for _, row in frame.iterrows():
        expected = row["tokens_per_second"] / baseline[tuple(row[key])]
        assert row["speedup"] == pytest.approx(expected)
    assert frame.loc[frame["method"] == "generate", "speedup"].eq(1.0).all()


def test_predictions_use_the_measured_alpha_c_and_v(frame):
    rows = frame[(frame["method"] == "speculative") & (frame["schedule"] == "fixed")]
    assert len(rows) and rows["predicted_speedup"].notna().all()
    for _, row in rows.iterrows():
        predicted = walltime_speedup(
            row["alpha_estimate"], int(row["gamma"]), row["draft_cost_ratio"], row["verify_cost"]
        )
        assert row["predicted_speedup"] == pytest.approx(predicted)
        assert row["efficiency"] == pytest.approx(row["speedup"] / predicted)
    lookup = rows[rows["draft"] == "prompt-lookup"]
    assert lookup["draft_cost_ratio"].eq(0).all()  # a model-free draft costs nothing


def test_methods_are_interleaved_per_prompt_and_repeat(tiny_loaded_pair):
    runs = plan_runs(tiny_loaded_pair, SETTINGS)
    first, second = runs[:7], runs[7:14]
    assert {r.repeat for r in first} == {0} and {r.repeat for r in second} == {1}
    assert [(r.method, r.gamma) for r in second] == [(r.method, r.gamma) for r in first][::-1]  # A B C, then C B A
    assert first[0].method == "generate"
    assert len({r.prompt.id for r in first}) == 1


def test_overview_and_best_gamma(frame):
    table = overview(frame)
    assert table["runs"].sum() == len(frame)
    assert set(table["method"]) == set(frame["method"])
    best = best_gammas(frame)
    assert set(best["pair"]) == set(frame["pair"]) and best["gamma"].isin([2, 4]).all()


def test_csv_round_trip(frame, tmp_path):
    path = save_csv(frame, tmp_path / "out" / "results.csv")
    again = load_csv(path)
    assert list(again.columns) == COLUMNS and len(again) == len(frame)
    pd.testing.assert_series_equal(again["speedup"], frame["speedup"], check_dtype=False)
    assert not list((tmp_path / "out").glob(".results.csv.*"))  # no temporary left behind


def test_a_csv_that_is_not_a_benchmark_is_refused(tmp_path):
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    with pytest.raises(SpecdecError, match="not a specdec benchmark"):
        load_csv(tmp_path / "other.csv")


def test_stopping_early_keeps_the_rows_so_far(tiny_loaded_pair):
    calls = []
    frame = run_benchmark(
        [tiny_loaded_pair],
        SETTINGS,
        progress=lambda done, total, message: calls.append(done),
        should_stop=lambda: len(calls) >= 3,
    )
    assert len(frame) == 2  # the stop asked at the third progress report: the third run never starts


def test_an_interrupted_benchmark_has_handed_over_its_rows(tiny_loaded_pair):
    """The Compare page's Stop: an exception from the progress callback (Streamlit's stop or rerun request)."""

    class Interrupted(BaseException):
        pass

    def progress(done, total, message):
        if done == 3:
            raise Interrupted

    rows = []
    with pytest.raises(Interrupted):
        run_benchmark([tiny_loaded_pair], SETTINGS, progress=progress, on_row=rows.append)
    frame = rows_to_frame(rows)
    assert len(frame) == 3 and list(frame.columns) == COLUMNS
    # the baseline ran first, speedups are there
    assert frame.loc[frame["method"] == "generate", "speedup"].eq(1.0).all()


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(methods=("warp",)),
        dict(gammas=(0,)),
        dict(gammas=("sometimes",)),
        dict(repeats=0),
        dict(temperatures=(-1.0,)),
        dict(temperatures=()),
    ],
)
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(SpecdecError):
        BenchSettings(**kwargs)


def test_charts_have_one_colour_per_pair_and_theory_curves(frame):
    from specdec.bench.charts import benchmark_figures, summary_figure

    figures = benchmark_figures(frame)
    names = [trace.name for trace in figures["tokens_per_pass"].data]
    assert any("theory" in name for name in names) and any("measured" in name for name in names)
    colours = {trace.name.split(":")[0]: trace.line.color for trace in figures["speedup"].data if trace.name}
    assert len(set(colours.values())) == len(colours) == 2  # two pairs, two colours
    assert any("assisted" in trace.name for trace in figures["speedup"].data)
    assert len(figures["categories"].data) >= 2
    assert len(summary_figure(frame).data) == sum(len(f.data) for f in figures.values())


@pytest.fixture
def tiny_catalogue(tmp_path, monkeypatch):
    """tiny-d and tiny-t (a gpt2 pair) in the zoo's catalogue, for `specdec bench --pairs tiny-d->tiny-t`."""
    import json

    from tiny_models import save_tiny_model

    from specdec.zoo import catalog

    target, draft = tiny_pair("gpt2")
    extra = {
        "models": [
            {"name": "tiny-t", "path": str(save_tiny_model(tmp_path / "t", target)), "family": "tiny"},
            {"name": "tiny-d", "path": str(save_tiny_model(tmp_path / "d", draft)), "family": "tiny"},
        ]
    }
    (tmp_path / "extra.json").write_text(json.dumps(extra))
    monkeypatch.setenv("SPECDEC_EXTRA_MODELS", str(tmp_path / "extra.json"))
    for name in ("tiny-t", "tiny-d"):
        monkeypatch.setitem(catalog.MODELS, name, None)
    catalog._load_extra_models()


def test_bench_command_writes_csv_and_figure(tmp_path, tiny_catalogue, capsys):
    from specdec.cli import main

    code = main(
        [
            "bench",
            "--pairs",
            "tiny-d->tiny-t",
            "--methods",
            "speculative,plain",
            "--gammas",
            "2,adaptive",
            "--categories",
            "math",
            "--prompts-per-category",
            "2",
            "--max-new-tokens",
            "8",
            "--device",
            "cpu",
            "--out",
            str(tmp_path / "r.csv"),
            "--figure",
            str(tmp_path / "f.html"),
            "--markdown",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert len(load_csv(tmp_path / "r.csv")) == 2 * 4  # 2 prompts x (generate, plain, speculative gamma 2, adaptive)
    assert (tmp_path / "f.html").stat().st_size > 10_000 and "| pair | method |" in out and "best fixed gamma" in out
    for argv in (
        ["bench", "--gammas", "2,often"],
        ["bench", "--figure", "x.pdf", "--pairs", "tiny-d->tiny-t"],
        ["bench", "--pairs", "just-one-model"],
    ):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code
        assert code == 2, argv


def test_a_bench_that_fails_midway_keeps_the_rows_it_measured(tmp_path, tiny_catalogue, monkeypatch, capsys):
    """A run that raises (a library bug, Ctrl-C) must not cost the rows before it: they are written to --out."""
    import specdec.bench.harness as harness
    from specdec.cli import main

    execute, calls = harness._execute, []

    def failing_third_run(*args, **kwargs):
        if not kwargs.get("warmup"):
            calls.append(1)
            if len(calls) == 3:
                raise RuntimeError("a library bug")
        return execute(*args, **kwargs)

    monkeypatch.setattr(harness, "_execute", failing_third_run)
    with pytest.raises(RuntimeError, match="a library bug"):
        main(
            [
                "bench",
                "--pairs",
                "tiny-d->tiny-t",
                "--gammas",
                "2",
                "--categories",
                "math",
                "--prompts-per-category",
                "2",
                "--max-new-tokens",
                "8",
                "--device",
                "cpu",
                "--out",
                str(tmp_path / "r.csv"),
            ]
        )
    assert len(load_csv(tmp_path / "r.csv")) == 2
    assert "wrote the 2 rows measured so far" in capsys.readouterr().err


def test_speedup_per_category_table(frame):
    from specdec.bench.tables import by_category

    table = by_category(frame)
    assert set(table.columns) == {"variant", "code", "chat"}
    assert "speculative gamma=2" in set(table["variant"]) and "speculative adaptive" in set(table["variant"])
    assert table.set_index("variant").loc["generate", "code"] == 1.0


def test_the_stop_rule_runs_and_every_row_has_its_oracle_bound(tiny_loaded_pair):
    settings = BenchSettings(
        methods=("speculative", "assisted"),
        gammas=("stop", 2, "adaptive"),
        categories=("code", "qa"),
        prompts_per_category=1,
        decoding=Decoding(max_new_tokens=16, temperature=0.0, seed=0),
    )
    frame = run_benchmark([tiny_loaded_pair], settings)
    stop = frame[frame["schedule"] == "stop"]
    assert len(stop) == 2 and stop["method"].eq("speculative").all() and stop["gamma"].isna().all()
    assert frame["oracle_speedup"].notna().all()  # greedy with a draft model: every method gets the bound
    assert (frame["oracle_efficiency"] - frame["speedup"] / frame["oracle_speedup"]).abs().max() < 1e-12
    assert "stop" in set(overview(frame)["gamma"])


def test_the_greedy_oracle_is_a_ceiling_for_the_rounds_any_schedule_drafts(tiny_loaded_pair):
    """In model time, no schedule's rounds beat the oracle's on the same output."""
    from specdec.bench.comparison import draft_agreement, greedy_oracle_speedup
    from specdec.engine.costs import CostProfile
    from specdec.engine.stop_rule import ConfidenceStop

    pair = tiny_loaded_pair
    costs = CostProfile(1.0, 0.2, {1: 1.05, 2: 1.1, 4: 1.2, 8: 1.4, 16: 1.8, 32: 2.6})
    prompt = torch.tensor([[2, 3, 5]])
    for gamma in (1, 2, 4, 8, ConfidenceStop(c=0.2)):
        length = {"schedule": gamma} if isinstance(gamma, ConfidenceStop) else {"gamma": gamma}
        result = speculative_generate(pair.target, pair.draft, prompt, **length, max_new_tokens=30, temperature=0)
        steps = 1.0 + sum(len(r.drafted) * costs.c + costs.v(len(r.drafted)) for r in result.rounds[1:])
        oracle = greedy_oracle_speedup(draft_agreement(pair.draft, prompt, result.tokens), costs)
        assert oracle >= len(result.tokens) / steps - 1e-9, gamma


def test_trees_run_next_to_the_chain_and_skip_pairs_without_a_draft_model(tiny_loaded_pair):
    from specdec.bench.tables import by_category

    settings = BenchSettings(
        methods=("speculative",),
        gammas=(2, "tree", "tree-4"),
        categories=("code",),
        prompts_per_category=1,
        decoding=Decoding(max_new_tokens=16, temperature=0.0, seed=0),
    )
    frame = run_benchmark([tiny_loaded_pair], settings)
    trees = frame[frame["schedule"].isin(["tree", "tree-4"])]
    assert len(trees) == 2 and trees["gamma"].isna().all() and (trees["tokens_per_target_pass"] > 1).all()
    assert {"speculative tree", "speculative tree-4", "speculative gamma=2"} <= set(by_category(frame)["variant"])
    lookup = LoadedPair.from_models(
        "tiny-target", "prompt-lookup", tiny_loaded_pair.target, None, tiny_loaded_pair.tokenizer
    )
    assert {run.gamma for run in plan_runs(lookup, settings)} == {None, 2}
    with pytest.raises(SpecdecError, match="tree-N"):
        BenchSettings(gammas=("tree-0",))
    with pytest.raises(SpecdecError, match="vocabulary limit"):
        BenchSettings(gammas=("tree",), draft_vocab_limit=16)


def test_a_draft_with_another_tokenizer_is_benchmarked_against_transformers_universal_assisted_generation():
    """Greedy: ours and transformers' assisted generation with `assistant_tokenizer=` (both the target's own tokens);
    sampled: transformers' path for other tokenizers fails in 5.24, so only ours runs. Trees are skipped."""
    from tiny_models import (
        NEAR_MERGES,
        NEAR_PIECES,
        TARGET_MERGES,
        TARGET_PIECES,
        borrowed_draft,
        tiny_bpe_tokenizer,
        tiny_model,
    )

    from specdec.drafting.cross_tokenizer import whole_character_tokens

    target_tokenizer, draft_tokenizer = (
        tiny_bpe_tokenizer(TARGET_PIECES, TARGET_MERGES),
        tiny_bpe_tokenizer(NEAR_PIECES, NEAR_MERGES),
    )
    target = tiny_model("llama", len(TARGET_PIECES), seed=1)
    draft = borrowed_draft(target, TARGET_PIECES, NEAR_PIECES, noise=0.3)
    pair = LoadedPair.from_models(
        "tiny-target",
        "tiny-near",
        target,
        draft,
        target_tokenizer,
        draft_tokenizer=draft_tokenizer,
        whole=whole_character_tokens(draft_tokenizer, len(NEAR_PIECES)),
    )
    settings = BenchSettings(
        methods=("speculative", "assisted-dynamic"),
        gammas=("stop", "tree", "adaptive"),
        categories=("code",),
        prompts_per_category=1,
        temperatures=(0.0, 0.7),
        decoding=Decoding(max_new_tokens=16, seed=0),
    )
    frame = run_benchmark([pair], settings)
    greedy, sampled = frame[frame["temperature"] == 0], frame[frame["temperature"] == 0.7]
    assert set(greedy["method"]) == {"generate", "speculative", "assisted-dynamic"}
    assert set(sampled["method"]) == {"generate", "speculative"}
    assert set(frame["schedule"]) <= {"none", "stop", "adaptive"}  # no tree for this pair
    speculative = frame[frame["method"] == "speculative"]
    assert (speculative["drafted"] > 0).all() and (speculative["acceptance_rate"] > 0).any()
    assert speculative["oracle_speedup"].notna().all()  # from the rounds
    from specdec.bench.charts import benchmark_figures

    for name in ("acceptance", "tokens_per_pass", "speedup"):  # no fixed gamma ran: the stop rule is drawn as a level
        assert any("stop rule" in trace.name for trace in benchmark_figures(frame)[name].data), name
    sliding = LoadedPair.from_models(
        "tiny-target",
        "tiny-near",
        pair.target,
        tiny_model("gemma3", len(NEAR_PIECES), seed=2),
        # transformers 5.24 fails past its window
        target_tokenizer,
        draft_tokenizer=draft_tokenizer,
    )
    assert applicable("assisted-dynamic", pair) and not applicable("assisted-dynamic", sliding)


def test_transformers_assisted_generation_as_it_ships_gives_the_targets_greedy_tokens_and_leaves_the_draft_as_it_was(
    tiny_loaded_pair,
):
    """ "assisted-default" sets nothing on the draft's generation
    config (transformers re-fits its threshold in a copy)."""
    from specdec.bench.hf_baselines import hf_generate

    pair = tiny_loaded_pair
    before = pair.draft.module.generation_config.to_dict()
    kwargs = dict(gamma=None, max_new_tokens=24, temperature=0.0, top_k=0, top_p=1.0, seed=0, eos_token_id=[])
    plain, _ = hf_generate("generate", pair.target.module, None, torch.tensor([[2, 3, 5]]), **kwargs)
    shipped, _ = hf_generate(
        "assisted-default", pair.target.module, pair.draft.module, torch.tensor([[2, 3, 5]]), **kwargs
    )
    assert shipped == plain and len(plain) == 24
    assert pair.draft.module.generation_config.to_dict() == before
    settings = BenchSettings(
        methods=("speculative", "assisted-default"),
        gammas=("stop",),
        categories=("code",),
        prompts_per_category=1,
        decoding=Decoding(max_new_tokens=16, temperature=0.0, seed=0),
    )
    frame = run_benchmark([pair], settings)
    assert set(frame["method"]) == {"generate", "speculative", "assisted-default"}
    assert frame.loc[frame["method"] == "assisted-default", "schedule"].eq("none").all()
