"""A runtime is one registry entry: a made-up one, registered in this test, runs `specdec run` end to end.

`specdec.runtimes` says what each runtime can run here, how it loads a model and how a plan names it; the command line's
choices, the run spec's check, the planner and loading read the entries. So a runtime nobody in the package knows about
(here: torch under another name, counting its loads) is offered by `--runtime`, planned, loaded, named in the plan's
header and run exactly, with nothing edited but this file; and one that says it cannot run a model is refused in one
line with exit code 2.
"""

from __future__ import annotations

import pytest
from tiny_models import save_tiny_model, tiny_pair

from specdec import runtimes
from specdec.cli import main
from specdec.cli.parser import build_parser
from specdec.kernels.precision import Precision
from specdec.runtime.pytorch.torch_model import TorchModel
from specdec.runtimes import LoadRequest, Runtime

NAME = "made-up"


@pytest.fixture
def made_up(monkeypatch):
    """A runtime registered for one test (and taken out after it):
    torch under another name, refusing what `refused` names."""
    loads, refused = [], set()

    def load(request: LoadRequest) -> tuple[TorchModel, Precision]:
        loads.append((request.role, request.name))
        module = request.build_module()
        return TorchModel(module, request.name), request.precision.as_loaded(module)

    entry = Runtime(
        name=NAME,
        help="torch under another name, for a test",
        load=load,
        where=lambda precision, settings: f"{NAME} ({precision.device}, a test's)",
        kind=lambda files, device: [f"{file.name} is refused" for file in files if file.name in refused],
        auto_rank=99,
    )
    monkeypatch.setitem(runtimes.RUNTIMES, NAME, entry)  # `register`, undone after the test
    return loads, refused


def test_a_registered_runtime_runs_specdec_run_end_to_end(made_up, tmp_path, capsys):
    loads, _ = made_up
    target, draft = tiny_pair("llama")
    target_folder = save_tiny_model(tmp_path / "target", target)
    draft_folder = save_tiny_model(tmp_path / "draft", draft)
    run = build_parser()._subparsers._group_actions[0].choices["run"]
    assert NAME in next(action.choices for action in run._actions if action.dest == "runtime")  # offered by --runtime
    code = main(
        [
            "run",
            "--target",
            str(target_folder),
            "--draft",
            str(draft_folder),
            "--runtime",
            NAME,
            "--draft-runtime",
            NAME,
            "--prompt",
            "w2 w3",
            "--max-new-tokens",
            "12",
            "--temperature",
            "0",
            "--gamma",
            "3",
            "--compare",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert loads == [("target", str(target_folder)), ("draft", str(draft_folder))]  # loaded by the entry
    header = next(line for line in out.splitlines() if line.startswith("Plan:"))
    assert f"on {NAME} (cpu, a test's)" in header, header  # named by the entry
    assert "identical" in out  # greedy: the target's own tokens (--compare checks them)


def test_a_runtime_that_cannot_run_a_model_is_refused_in_one_line(made_up, tmp_path, capsys):
    _, refused = made_up
    folder = save_tiny_model(tmp_path / "target", tiny_pair("llama")[0])
    refused.add(str(folder))
    capsys.readouterr()  # the save's progress
    code = main(["run", "--target", str(folder), "--draft", "prompt-lookup", "--runtime", NAME, "--prompt", "w2"])
    err = capsys.readouterr().err.strip()
    assert (
        code == 2
        and err == f"specdec: error: the {NAME} runtime cannot run this pair: {folder} is refused: use --runtime torch"
    )


def test_an_unknown_runtime_names_the_registered_ones():
    from specdec.errors import SpecdecError

    with pytest.raises(SpecdecError, match="unknown runtime 'vulkan': choose from auto, torch, llama.cpp"):
        runtimes.runtime_of("vulkan")
    with pytest.raises(SpecdecError, match="already registered"):
        runtimes.register(
            Runtime(name="torch", help="", load=lambda request: None, where=lambda precision, settings: "")
        )
