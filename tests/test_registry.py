"""One registry of methods: a method registered here, in a test file, is found everywhere a method is chosen.

Two methods are written below in a few lines each and registered at run time, with no other file touched:
`RepeatLast`, which needs only the target (it guesses the text's last token again), and `FirstGuess`,
which needs a draft model (its greedy choice, fed the whole text afresh each round: no cache). Both must
then appear in the command line's choices and help, the dashboard's pickers (the catalogue's pairs and the
draft-model methods the sidebar offers), the benchmark's `--methods all` (and run there), and `specdec
models list`; and both must give the target's own greedy output. A second test holds the pair, the planner
`generation/policy.py` and `pages/` to choosing by kind nowhere: no `isinstance` on a drafter or a model,
checked by reading their source (with a made-up violation proving the check can fail).
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
import torch
from test_greedy import reference_greedy
from tiny_models import save_tiny_model, tiny_pair, tiny_tokenizer

from specdec import registry
from specdec.bench.harness import BenchSettings, run_benchmark
from specdec.bench.methods import families
from specdec.cli import main
from specdec.cli.parser import build_parser
from specdec.engine.contract import Capabilities, DraftRequest, Generation, Verified
from specdec.engine.inputs import Decoding
from specdec.engine.trees import DraftTree
from specdec.pair.resources import LoadedPair
from specdec.pair.running import generate_speculative
from specdec.run_spec import Drafting

ROOT = Path(__file__).resolve().parents[1]


class RepeatLast:
    """Guesses that the text's last token comes again, `times`
    times: fixed candidates, needing nothing but the target."""

    name, draft_model = "repeat-last", None
    capabilities = Capabilities(sizes_rounds=True, drafts="the last token again")

    def __init__(self, times: int = 2) -> None:
        self.times = times

    def begin(self, generation: Generation) -> None:
        pass

    def draft(self, requests: dict[int, DraftRequest]) -> dict[int, DraftTree]:
        return {
            row: DraftTree.chain(request.sequence[-1:].repeat(min(self.times, request.limit)))
            for row, request in requests.items()
        }

    def observe(self, verified: dict[int, Verified]) -> None:
        pass


class FirstGuess:
    """The draft model's greedy next token, the whole text read afresh each round (no cache): needs a draft model."""

    name = "first-guess"
    capabilities = Capabilities(sizes_rounds=True, drafts="the draft's first guess")

    def __init__(self, model) -> None:
        self.draft_model = model

    def begin(self, generation: Generation) -> None:
        pass

    def draft(self, requests: dict[int, DraftRequest]) -> dict[int, DraftTree]:
        guesses = {}
        for row, request in requests.items():
            logits, _ = self.draft_model.rows([row]).feed([request.sequence], last=1)  # [1, 1, V]
            guesses[row] = DraftTree.chain(logits[0, -1].argmax().reshape(1))
        return guesses

    def observe(self, verified: dict[int, Verified]) -> None:
        pass


@dataclasses.dataclass(frozen=True)
class RepeatOptions:
    times: int = dataclasses.field(default=2, metadata={"help": "how many times the last token is guessed again"})


@pytest.fixture
def registered():
    """The two methods, registered for one test and taken out after it."""
    repeat = registry.register(
        registry.Method(
            "repeat-last",
            "the last token guessed again (a test's method)",
            RepeatLast,
            lambda resources, options: RepeatLast(options.times),
            options=RepeatOptions,
            targets=("qwen2.5-coder-1.5b",),
        )
    )
    guess = registry.register(
        registry.Method(
            "first-guess",
            "the draft's first guess, no cache (a test's method)",
            FirstGuess,
            lambda resources, options: FirstGuess(resources[registry.DRAFT_MODEL]),
            needs=(registry.DRAFT_MODEL,),
        )
    )
    yield repeat, guess
    registry.unregister("repeat-last")
    registry.unregister("first-guess")


def test_a_registered_method_is_in_every_list_and_runs_exactly(registered, capsys, tmp_path):
    # the command line: the method's choices and help, for `run` and `bench`
    parser = build_parser()
    run = parser._subparsers._group_actions[0].choices["run"]
    method_choices = next(action.choices for action in run._actions if action.dest == "method")
    assert {"repeat-last", "first-guess"} <= set(method_choices)
    assert "repeat-last" in run.format_help() and "times" in run.format_help()  # --draft's and --option's help
    bench = parser._subparsers._group_actions[0].choices["bench"]
    assert "repeat-last" in bench.format_help() and "first-guess" in bench.format_help()
    # the dashboard's pickers read these: the catalogue's pairs, and the methods a pair with a draft model offers
    assert "repeat-last->qwen2.5-coder-1.5b" in registry.pairs()
    assert "first-guess" in registry.draft_methods()
    # the benchmark: `--methods all` runs both, beside the pair's draft
    assert {"repeat-last", "first-guess"} <= set(families()) <= set(BenchSettings(methods=("all",)).methods)
    target, draft = tiny_pair("llama")
    pair = LoadedPair.from_models("tiny-target", "tiny-draft", target, draft, tiny_tokenizer(24))
    frame = run_benchmark(
        [pair],
        BenchSettings(
            methods=("repeat-last", "first-guess"),
            gammas=("stop",),
            categories=("code",),
            prompts_per_category=1,
            decoding=Decoding(max_new_tokens=12, temperature=0.0, seed=0),
        ),
    )
    # as many as generate
    assert {"repeat-last", "first-guess"} <= set(frame["method"]) and frame["new_tokens"].nunique() == 1
    # the catalogue: `specdec models list`
    assert main(["models", "list"]) == 0
    listed = capsys.readouterr().out
    assert "repeat-last->qwen2.5-coder-1.5b" in listed and "first-guess" in listed
    # and each is exact: the target's own greedy tokens, through the pair as the CLI and the dashboard run it
    prompt = [2, 3, 4, 5]
    expected = reference_greedy(target, prompt, max_new_tokens=20)
    for method in ("repeat-last", "first-guess"):
        result = generate_speculative(
            pair, torch.tensor([prompt]), Decoding(max_new_tokens=20, temperature=0), Drafting(method)
        )
        assert result.tokens == expected and result.stats.drafted > 0, method
    # the command line runs them too, options included
    folder = str(save_tiny_model(tmp_path / "target", target))
    assert (
        main(
            [
                "run",
                "--target",
                folder,
                "--draft",
                "repeat-last",
                "--option",
                "times=3",
                "--prompt",
                "w2 w3",
                "--max-new-tokens",
                "4",
                "--temperature",
                "0",
            ]
        )
        == 0
    )
    assert "drafting: the last token again" in capsys.readouterr().out


def test_a_registered_method_must_say_what_it_needs_and_have_an_options_dataclass():
    from specdec.errors import SpecdecError

    with pytest.raises(SpecdecError, match="cannot load"):
        registry.register(
            registry.Method("needs-a-unicorn", "", RepeatLast, lambda r, o: RepeatLast(), needs=("unicorn",))
        )
    with pytest.raises(SpecdecError, match="dataclass"):
        registry.register(registry.Method("no-options", "", RepeatLast, lambda r, o: RepeatLast(), options=dict))
    assert "needs-a-unicorn" not in registry.METHODS and "no-options" not in registry.METHODS


# --- no choice by kind outside the registry ---------------------------------------------------------------------------

PLAIN_TYPES = {
    "int",
    "float",
    "str",
    "bool",
    "bytes",
    "list",
    "tuple",
    "dict",
    "set",
    "frozenset",
    "Path",
    "Exception",
    "OSError",
    "BaseException",
    "ValueError",
    "SpecdecError",
}


def kind_tests(source: str) -> list[str]:
    """The `isinstance`/`issubclass` calls of a module that ask
    anything but a plain value's type (a drafter's, a model's)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "issubclass")
        ):
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            names = {ast.unparse(kind).split(".")[-1] for kind in kinds}
            if not names <= PLAIN_TYPES:
                found.append(f"{node.lineno}: {node.func.id}(..., {', '.join(sorted(names))})")
    return found


def test_the_pair_the_policy_and_the_pages_choose_nothing_by_kind():
    paths = [
        *sorted((ROOT / "specdec/pair").glob("*.py")),
        *sorted((ROOT / "specdec/planner").glob("*.py")),
        *sorted((ROOT / "pages").rglob("*.py")),
    ]
    for path in paths:
        assert kind_tests(path.read_text()) == [], path
    # it can fail
    assert kind_tests("if isinstance(draft, PreTrainedModel):\n    pass\n") == ["1: isinstance(..., PreTrainedModel)"]
    assert kind_tests("ok = isinstance(gamma, int)\n") == []
