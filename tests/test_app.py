"""The dashboard, headless: every page under Streamlit's AppTest, with tiny local models (nothing is downloaded).

Home, the sidebar and its links, bad input, the Explainer and the Lessons; the Playground and
Compare runs are in test_app_runs.py. The environment is `app_testing.dashboard_environment`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from app_testing import (
    PAGES,
    _clear_streamlit_caches,
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

# --- every page -------------------------------------------------------------------------------


@pytest.mark.parametrize("page", [None, *PAGES])
def test_every_page_runs_without_errors(page):
    app = open_app(page)
    no_errors(app)
    assert len(app.sidebar.selectbox) >= 3  # pair, device, dtype: the shared sidebar is there


def test_home_lists_models_and_pairs_with_their_state():
    app = open_app()
    models, pairs = (frame.value for frame in app.dataframe[:2])
    states = dict(zip(models["model"], models["state"]))
    assert states["tiny-target"] == "cached"
    assert states["qwen2.5-coder-1.5b"] == "needs download (1,117 MB)"  # the cache is empty here
    assert "tiny-draft → tiny-target" in set(pairs["pair (draft → target)"])
    assert "speculative decoding" in app.title[0].value.lower()
    first = [caption.value for caption in app.caption if caption.value.startswith("A first click")]
    assert first == [
        "A first click downloads qwen2.5-coder-0.5b (491 MB), qwen2.5-coder-1.5b (1,117 MB), then loads the pair "
        "as the planner says."
    ], first


def test_home_says_what_a_first_click_loads_and_how_long_it_took_last_time(monkeypatch):
    from specdec.pair.measuring import keep_load_time
    from specdec.zoo import catalog

    monkeypatch.setattr(catalog, "DEFAULT_PAIR", TINY_PAIR)

    def said(app):
        return [caption.value for caption in app.caption if caption.value.startswith("A first click")]

    assert said(open_app()) == [
        "A first click loads tiny-target on torch (int8) and loads tiny-draft on torch (int4). "
        "Not loaded on this machine yet."
    ]
    from specdec.pair.measuring import load_key
    from specdec.planner import choose_models
    from specdec.run_spec import RunSpec

    draft, target = TINY_PAIR.split("->")
    planned = choose_models(RunSpec(target, draft))
    keep_load_time(load_key(TINY_PAIR, [planned[0], None]), {"target": 2.5})  # another plan: the target alone
    assert said(open_app())[0].endswith("Not loaded on this machine yet.")
    keep_load_time(load_key(TINY_PAIR, planned), {"target": 2.5, "draft": 1.0})
    assert said(open_app())[0].endswith("The last load here took 4 s.")


def test_one_click_start_runs_the_default_pair_in_the_playground(monkeypatch):
    from specdec.zoo import catalog

    monkeypatch.setattr(catalog, "DEFAULT_PAIR", TINY_PAIR)
    app = open_app(max_new_tokens="16")
    finish_jobs(button(app, "Run the default pair on an example prompt").click().run())
    no_errors(app)
    assert app.title[0].value == "Playground"
    assert token_html(app).count('data-kind="') >= 16
    assert sidebar_widget(app, "selectbox", "Draft → target").value == TINY_PAIR


# --- the sidebar ------------------------------------------------------------------------------


def test_sidebar_settings_survive_page_switches_and_live_in_the_url():
    app = open_app()
    sidebar_widget(app, "selectbox", "Draft → target").set_value(TINY_LOOKUP_PAIR).run()
    assert sidebar_widget(app, "slider", "gamma").disabled  # the stop rule is on: gamma is not used
    sidebar_widget(app, "toggle", "Round length").set_value(False).run()
    sidebar_widget(app, "slider", "gamma").set_value(7).run()
    sidebar_widget(app, "slider", "temperature").set_value(0.7).run()
    sidebar_widget(app, "number_input", "seed").set_value(123).run()
    for page in PAGES + ["pages/views/home.py"]:
        app.switch_page(page).run()
        no_errors(app)
        assert sidebar_widget(app, "selectbox", "Draft → target").value == TINY_LOOKUP_PAIR, page
        assert sidebar_widget(app, "toggle", "Round length").value is False, page
        assert sidebar_widget(app, "slider", "gamma").value == 7, page
        assert sidebar_widget(app, "slider", "temperature").value == 0.7, page
        assert sidebar_widget(app, "number_input", "seed").value == 123, page
        assert (app.query_params["pair"], app.query_params["gamma"], app.query_params["seed"]) == (
            TINY_LOOKUP_PAIR,
            "7",
            "123",
        )
        assert app.query_params["stop_rule"] == "False"


def test_a_link_reproduces_the_configuration():
    app = open_app(
        "pages/views/playground.py",
        pair=TINY_PAIR,
        gamma="9",
        temperature="0.5",
        top_k="20",
        top_p="0.9",
        max_new_tokens="32",
        seed="5",
        dtype="float32",
    )
    values = {
        label: sidebar_widget(app, kind, label).value
        for kind, label in [
            ("selectbox", "Draft → target"),
            ("slider", "gamma"),
            ("slider", "temperature"),
            ("number_input", "top-k"),
            ("slider", "top-p"),
            ("number_input", "max new tokens"),
            ("number_input", "seed"),
            ("selectbox", "dtype"),
        ]
    }
    assert values == {
        "Draft → target": TINY_PAIR,
        "gamma": 9,
        "temperature": 0.5,
        "top-k": 20,
        "top-p": 0.9,
        "max new tokens": 32,
        "seed": 5,
        "dtype": "float32",
    }


def test_a_link_with_values_this_machine_cannot_use_falls_back_and_says_so():
    app = open_app(gamma="999", device="cuda:7", pair="no-such->pair")
    warnings = " ".join(warning.value for warning in app.sidebar.warning)
    assert "gamma=999" in warnings and "device=cuda:7" in warnings and "pair=no-such->pair" in warnings
    assert sidebar_widget(app, "slider", "gamma").value == 4
    assert sidebar_widget(app, "selectbox", "Device").value == "auto"


def test_settings_round_trip_through_a_query_string():
    from pages.common.settings import CUSTOM, Settings
    from specdec import Decoding
    from specdec.run_spec import Drafting

    decoding = Decoding(max_new_tokens=20, temperature=0.3, top_k=5, top_p=0.9, seed=9)
    settings = Settings(
        pair=CUSTOM,
        custom_draft="prompt-lookup",
        custom_target="./my-model",
        stop_rule=False,
        gamma=6,
        decoding=decoding,
    )
    assert Settings.from_query(settings.to_query(), ["cpu"]) == (settings, [])
    tree = Settings(method="tree", options=(("budget", "9"),))
    assert Settings.from_query(tree.to_query(), ["cpu"]) == (tree, [])
    assert tree.spec.drafting == Drafting("tree", None, (("budget", "9"),))  # a frozen config: the one run spec
    assert Settings.from_query({"tree_budget": "0"}, ["cpu"]) == (Settings(), ["tree_budget=0"])
    assert "custom_draft" not in Settings(gamma=2).to_query()
    assert Settings.from_query(
        {"top_p": "0", "seed": "x", "gamma": "99", "dtype": "int3", "stop_rule": "maybe"}, ["cpu"]
    ) == (Settings(), ["dtype=int3", "stop_rule=maybe", "gamma=99", "top_p=0", "seed=x"])


def test_the_method_its_options_and_the_runtime_round_trip_and_older_links_keep_working():
    from pages.common.settings import AUTO, Settings
    from specdec.run_spec import Drafting, ModelChoices

    tree = Settings(
        pair=TINY_PAIR,
        runtime="torch",
        method="tree",
        options=(("budget", "8"), ("width", "2")),
        stop_rule=False,
        gamma=64,
    )
    query = tree.to_query()
    assert {key: query[key] for key in ("method", "opt.budget", "opt.width", "runtime", "gamma")} == {
        "method": "tree",
        "opt.budget": "8",
        "opt.width": "2",
        "runtime": "torch",
        "gamma": "64",
    }
    assert Settings.from_query(query, ["cpu"]) == (tree, [])
    # a tree sizes its rounds: no gamma
    assert tree.spec.drafting == Drafting("tree", None, (("budget", "8"), ("width", "2")))
    assert tree.spec.models == ModelChoices(runtime="torch") and tree.spec.check()
    chain = Settings.from_query(
        {"pair": TINY_PAIR, "method": "draft-model", "stop_rule": "False", "gamma": "64"}, ["cpu"]
    )[0]
    assert chain.spec.drafting == Drafting("draft-model", 64) and chain.spec.check()  # gamma 64: the engine's range
    # auto: the policy, with a gamma
    assert Settings(pair=TINY_PAIR, stop_rule=False, gamma=5).spec.drafting == Drafting(None, 5)

    older = {"pair": TINY_PAIR, "tree": "True", "tree_budget": "9"}  # a link from before the picker
    assert Settings.from_query(older, ["cpu"]) == (
        Settings(pair=TINY_PAIR, method="tree", options=(("budget", "9"),)),
        [],
    )
    assert Settings.from_query(older | {"tree": "False"}, ["cpu"]) == (Settings(pair=TINY_PAIR), [])
    assert "tree" not in tree.to_query() and "tree_budget" not in tree.to_query()  # read, never written

    lookup, problems = Settings.from_query(
        {"pair": TINY_LOOKUP_PAIR, "method": "prompt-lookup", "opt.max_ngram": "2"}, ["cpu"]
    )
    assert problems == [] and lookup.method == AUTO  # the draft is the method
    assert lookup.spec.drafting == Drafting(None, None, (("max_ngram", "2"),)) and lookup.spec.check()

    unfit, problems = Settings.from_query(
        {"pair": TINY_LOOKUP_PAIR, "method": "tree", "opt.budget": "8", "runtime": "onnx"}, ["cpu"]
    )
    assert unfit == Settings(pair=TINY_LOOKUP_PAIR) and problems == ["runtime=onnx", "method=tree", "opt.budget=8"]
    bad, problems = Settings.from_query(
        {"pair": TINY_PAIR, "method": "tree", "opt.budget": "0", "opt.colour": "red", "opt.width": "2"}, ["cpu"]
    )
    assert bad == Settings(pair=TINY_PAIR, method="tree", options=(("width", "2"),)) and problems == [
        "opt.budget=0",
        "opt.colour=red",
    ]
    assert Settings.from_query({"method": "telepathy"}, ["cpu"]) == (Settings(), ["method=telepathy"])
    assert Settings.from_query({"pair": TINY_LOOKUP_PAIR, "tree": "True"}, ["cpu"]) == (
        Settings(pair=TINY_LOOKUP_PAIR),
        ["tree=True"],
    )


def test_a_link_with_a_method_and_gamma_64_reproduces_the_sidebar_and_the_run_drafts_so():
    app = open_app(
        "pages/views/playground.py",
        pair=TINY_PAIR,
        method="draft-model",
        stop_rule="False",
        gamma="64",
        temperature="0",
        max_new_tokens="12",
        dtype="float32",
    )
    no_errors(app)
    gamma = sidebar_widget(app, "slider", "gamma")
    assert (gamma.value, gamma.disabled, gamma.max) == (64, False, 64)
    assert sidebar_widget(app, "selectbox", "Drafting method").value == "draft-model"
    run_playground(app)
    no_errors(app)
    assert app.session_state["playground_run"].speculative.drafting == "chain, gamma 64"  # the run's own words
    assert any(
        markdown.value.startswith("**Plan:**") and "drafting: chain, gamma 64" in markdown.value
        for markdown in app.markdown
    )
    assert any("identical" in success.value for success in app.success)

    app = open_app("pages/views/playground.py", pair=TINY_PAIR, tree="True", tree_budget="5")  # an older link's tree
    assert sidebar_widget(app, "selectbox", "Drafting method").value == "tree"
    assert sidebar_widget(app, "number_input", "budget").value == 5
    assert sidebar_widget(app, "slider", "gamma").disabled and sidebar_widget(app, "toggle", "Round length").disabled
    assert (app.query_params["method"], app.query_params["opt.budget"]) == ("tree", "5")
    assert "tree" not in app.query_params and "tree_budget" not in app.query_params  # the link is written anew


def test_the_method_picker_offers_a_newly_registered_method_and_draws_its_options():
    from dataclasses import dataclass, field

    from specdec.drafting.draft_model import ModelDrafter
    from specdec.registry import DRAFT_MODEL, Method, register, unregister

    @dataclass(frozen=True)
    class CarefulOptions:
        """A test method's options: one of each kind the sidebar draws."""

        vocab_rows: int = field(default=0, metadata={"help": "rows of the output layer (0: all)"})
        shy: bool = field(default=False, metadata={"help": "a flag that changes nothing"})
        boldness: float = field(default=0.5, metadata={"help": "a number that changes nothing"})

    register(
        Method(
            "careful-chain",
            "a test's chain, drafted by the pair's draft model",
            ModelDrafter,
            lambda resources, options: ModelDrafter(resources[DRAFT_MODEL], "careful", options.vocab_rows or None),
            needs=(DRAFT_MODEL,),
            options=CarefulOptions,
            family=False,
        )
    )
    try:
        app = open_app(
            "pages/views/playground.py", pair=TINY_PAIR, temperature="0", max_new_tokens="12", dtype="float32"
        )
        picker = sidebar_widget(app, "selectbox", "Drafting method")
        assert "careful-chain" in picker.options and "tree" in picker.options
        picker.set_value("careful-chain").run()
        assert any(
            caption.value == "a test's chain, drafted by the pair's draft model" for caption in app.sidebar.caption
        )
        rows = sidebar_widget(app, "number_input", "vocab rows")
        assert (rows.value, rows.help) == (0, "rows of the output layer (0: all)")
        assert sidebar_widget(app, "checkbox", "shy").value is False
        assert sidebar_widget(app, "number_input", "boldness").value == 0.5
        rows.set_value(20).run()
        assert {key: app.query_params[key] for key in ("method", "opt.vocab_rows", "opt.shy", "opt.boldness")} == {
            "method": "careful-chain",
            "opt.vocab_rows": "20",
            "opt.shy": "False",
            "opt.boldness": "0.5",
        }
        assert not sidebar_widget(app, "toggle", "Round length").disabled  # a chain: the stop rule applies
        run_playground(app)
        no_errors(app)
        assert app.session_state["playground_run"].speculative.drafting == "chain, stop rule"
        assert any("identical" in success.value for success in app.success)
    finally:
        unregister("careful-chain")


def test_a_runtime_that_cannot_load_the_pair_is_one_error_and_the_page_goes_on():
    app = open_app(
        "pages/views/playground.py", pair=TINY_PAIR, runtime="llama.cpp", temperature="0", max_new_tokens="8"
    )
    assert sidebar_widget(app, "selectbox", "Runtime").value == "llama.cpp"
    run_playground(app)
    assert not app.exception
    assert [error.value for error in app.error] == [  # the planner's words, before anything loads
        "the llama.cpp runtime cannot run this pair: tiny-target is not a GGUF file: use --runtime torch"
    ]
    sidebar_widget(app, "selectbox", "Runtime").set_value("torch").run()
    run_playground(app)
    no_errors(app)  # the page works on with the other runtime
    assert app.session_state["playground_run"].phase == "done" and app.query_params["runtime"] == "torch"


def kind_tests(source: str) -> list[str]:
    """A page's choices by kind: `isinstance` on anything but an error class, and imports of drafters, readers or
    predicates of kind (`is_head`, `is_target_only`), as 'line: what'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "type"):
            classes = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
            if not classes.endswith("Error"):
                found.append(f"{node.lineno}: {node.func.id}({classes})")
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and (
                node.module.startswith(("specdec.drafting", "specdec.heads.reader", "specdec.generation.policy"))
                or any(alias.name in ("is_head", "is_target_only") for alias in node.names)
            )
        ):
            found.append(f"{node.lineno}: from {node.module} import {', '.join(alias.name for alias in node.names)}")
    return found


def test_no_page_chooses_by_kind():
    """What a draft name stands for and what a method needs are the registry's (`needs_of`, `METHODS`): no page asks a
    drafter's or a model's type, or imports a drafter to ask."""
    pages = Path(__file__).resolve().parents[1] / "pages"
    found = {str(path.relative_to(pages)): kind_tests(path.read_text()) for path in sorted(pages.rglob("*.py"))}
    assert {path: calls for path, calls in found.items() if calls} == {}
    assert kind_tests("from specdec.heads.files import is_head\nif isinstance(drafter, TreeDrafter):\n    pass\n") == [
        "1: from specdec.heads.files import is_head",
        "2: isinstance(TreeDrafter)",
    ]  # the check can fail
    assert kind_tests("if isinstance(job.error, SpecdecError):\n    pass\n") == []  # an error's kind is not a method's


# --- bad input --------------------------------------------------------------------------------


def choose_custom_pair(app: AppTest, draft: str, target: str) -> AppTest:
    sidebar_widget(app, "selectbox", "Draft → target").set_value("custom").run()
    sidebar_widget(app, "text_input", "Draft model").input(draft)
    sidebar_widget(app, "text_input", "Target model").input(target)
    return app.run()


def test_a_draft_with_another_tokenizer_runs_and_says_so():
    app = run_playground(
        choose_custom_pair(
            open_app("pages/views/playground.py", pair=TINY_PAIR, max_new_tokens="10", temperature="0.0"),
            "tiny-other",
            "tiny-target",
        )
    )
    no_errors(app)
    assert any("draft tokenizer: its own, text re-encoded" in caption.value for caption in app.caption), [
        caption.value for caption in app.caption
    ]
    assert any("identical" in success.value for success in app.success)  # greedy: the target's own tokens


@pytest.mark.parametrize(
    "draft, target, message",
    [
        ("tiny-draft", "no-such-model", "cannot load 'no-such-model'"),
        ("tiny-draft", "", "give both a draft and a target"),
    ],
)
def test_bad_pair_shows_an_error_and_keeps_the_last_result(draft, target, message):
    app = run_playground(open_app("pages/views/playground.py", pair=TINY_PAIR, max_new_tokens="10"))
    before = token_html(app)
    run_playground(choose_custom_pair(app, draft, target))
    assert not app.exception
    assert [error.value for error in app.error if message in error.value], [error.value for error in app.error]
    assert token_html(app) == before  # the previous result is still on the page
    sidebar_widget(app, "selectbox", "Draft → target").set_value(TINY_PAIR).run()
    run_playground(app)  # and the previous pair still works
    no_errors(app)


def test_running_out_of_memory_is_an_error_not_a_crash(monkeypatch):
    from specdec.pair import loading

    def too_big(*args, **kwargs):
        raise MemoryError

    _clear_streamlit_caches()
    monkeypatch.setattr(loading, "load_spec", too_big)
    app = run_playground(open_app("pages/views/playground.py", pair=TINY_PAIR))
    assert not app.exception
    assert any("Not enough memory" in error.value for error in app.error)


def test_a_fetch_without_network_shows_an_error_and_the_page_stays(dashboard_environment, monkeypatch):
    empty = dashboard_environment / "no-index"
    empty.mkdir(exist_ok=True)
    monkeypatch.setenv("SPECDEC_PIP_ARGS", f"--no-index --find-links {empty}")
    app = open_app("pages/views/playground.py", pair="prompt-lookup->smollm2-135m")
    assert button(app, "Generate").disabled
    button(app, "Download smollm2-135m").click().run()
    assert not app.exception
    assert any("could not download smollm2-135m" in error.value for error in app.error)
    assert button(app, "Generate").disabled and app.title[0].value == "Playground"


# --- Explainer and Lessons --------------------------------------------------------------------


def test_explainer_shows_alpha_residual_monte_carlo_and_best_gamma():
    app = open_app("pages/views/explainer.py")
    no_errors(app)
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["α = Σ min(p, q)"] == "0.650"  # sum(min(p, q)) of the default p and q
    assert figure_titled(app, "p, q and min(p, q)").data[0].name == "p (target)"
    assert values(figure_titled(app, "after a rejection").data[0].y)[0] > 0.6  # the residual sits on "Paris"
    assert any("matches p" in success.value for success in app.success)
    assert metrics["best γ"] == "2"  # alpha 0.65, c 0.30
    app.slider(key="widget:explainer_c").set_value(0.9).run()
    assert any("no γ beats the target alone" in warning.value for warning in app.warning)
    assert "explainer fixture" in app.get("iframe")[0].proto.srcdoc


def test_lessons_render_chapters_with_math_navigation_and_pdf():
    app = open_app("pages/views/lessons.py")
    no_errors(app)
    assert app.title[0].value == "Lessons"  # above the chapter picker
    text = "\n".join(markdown.value for markdown in app.markdown)
    assert "# Welcome to the guide" in text and "$$\\frac{1 - \\alpha^{\\gamma + 1}}{1 - \\alpha}$$" in text
    assert "<details><summary>Solution</summary>" in text
    assert '<img src="data:image/svg+xml;base64,' in text and "<figcaption" in text and "One round, drawn" in text
    assert [button.label for button in app.get("download_button")] == ["Download “Welcome to the guide” as PDF"]
    button(app, "Rounds →").click().run()
    assert "A round drafts gamma tokens." in "\n".join(markdown.value for markdown in app.markdown)
    assert app.query_params["chapter"] == "01-rounds" and not app.get("download_button")
    # a link to a chapter
    assert open_app("pages/views/lessons.py", chapter="01-rounds").selectbox[0].value == "01-rounds"


def test_only_local_images_that_exist_are_inlined(tmp_path):
    from pages.common.lessons import inline_images

    (tmp_path / "a.svg").write_text("<svg/>")
    text = "![here](a.svg) ![gone](b.png) ![web](https://example.org/c.png)"
    inlined = inline_images(text, tmp_path)
    assert inlined.count("<figure") == 1 and 'alt="here"' in inlined
    assert inlined.endswith("![gone](b.png) ![web](https://example.org/c.png)")
