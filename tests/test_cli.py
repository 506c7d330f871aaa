"""The command line: `toy` and `run` work, and every bad input is one line on stderr with exit code 2."""

import json
import os
import subprocess
import sys

import pytest
from tiny_models import save_tiny_model, tiny_model, tiny_pair

from specdec.cli import main

CHAT_TEMPLATE = "{% for m in messages %}w5 {{ m['content'] }} w6{% endfor %}"


@pytest.fixture(scope="module")
def model_folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    target, draft = tiny_pair("gpt2")
    return {
        "target": str(save_tiny_model(root / "target", target, CHAT_TEMPLATE)),
        "draft": str(save_tiny_model(root / "draft", draft)),
        "other": str(save_tiny_model(root / "other-tokenizer", tiny_model("gpt2", vocab_size=30))),
    }


def run_cli(capsys, *argv):
    """Exit code, stdout and stderr of `specdec ARGV` run in this process."""
    try:
        code = main(list(argv))
    except SystemExit as exit_:  # argparse's own usage errors
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def error_lines(err: str) -> list[str]:
    """stderr minus loading progress: what is left must be exactly the one error line."""
    return [
        line for line in err.splitlines() if line.strip() and not line.startswith(("Loading", "Loaded", "Plan: ", "\r"))
    ]


def test_toy_passes_and_prints_the_table(capsys):
    code, out, _ = run_cli(capsys, "toy", "--trials", "50000", "--seed", "1", "--theory")
    assert code == 0
    assert "--- Losslessness check (50k trials) ---" in out
    assert "PASS: output matches target" in out
    assert "alpha = sum(min(p, q)) predicted 0.7000" in out
    rows = [line.split() for line in out.splitlines() if line.strip().startswith(("A ", "B ", "C "))]
    assert [row[1] for row in rows] == ["0.300", "0.400", "0.300"]


def test_toy_with_own_distributions(capsys):
    code, out, _ = run_cli(capsys, "toy", "--target", "0.5,0.5", "--draft", "0.9,0.1", "--trials", "20000", "--theory")
    assert code == 0 and "predicted 0.6000" in out


def test_run_prints_the_report(capsys, model_folders):
    code, out, _ = run_cli(
        capsys,
        "run",
        "--target",
        model_folders["target"],
        "--draft",
        model_folders["draft"],
        "--prompt",
        "w2 w3 w4",
        "--max-new-tokens",
        "12",
        "--temperature",
        "0",
        "--compare",
    )
    assert code == 0
    assert out.startswith("Plan: draft → target: target float32 on torch (cpu) | draft ")
    for marker in (
        "--- OUTPUT ---",
        "--- STATS ---",
        "avg tokens per target pass:",
        "(tokens decided per target pass, not a speedup: --compare times one)",
        "acceptance rate (accepted/drafted):",
        "alpha (accepted/tested):",
        "wall-clock speedup:",
        "identical to the target's own greedy output: yes",
    ):
        assert marker in out


def test_run_json_with_chat_and_prompt_lookup(capsys, model_folders):
    code, out, _ = run_cli(
        capsys,
        "run",
        "--target",
        model_folders["target"],
        "--draft",
        "prompt-lookup",
        "--chat",
        "--prompt",
        "w2 w3 w2 w3",
        "--max-new-tokens",
        "8",
        "--seed",
        "3",
        "--json",
        "--compare",
    )
    assert code == 0
    report = json.loads(out)
    assert len(report["tokens"]) == report["stats"]["new_tokens"] <= 8
    assert report["stats"]["draft_passes"] == 0
    assert set(report["compare"]) == {"target_alone_stats", "wall_clock_speedup", "identical_tokens"}
    assert report["settings"]["chat"] is True


def test_run_with_a_tree(capsys, model_folders):
    code, out, _ = run_cli(
        capsys,
        "run",
        "--target",
        model_folders["target"],
        "--draft",
        model_folders["draft"],
        "--prompt",
        "w2 w3 w4",
        "--max-new-tokens",
        "12",
        "--temperature",
        "0",
        "--tree-budget",
        "6",
        "--compare",
    )
    assert code == 0
    assert "drafting: tree (budget 6)" in out and "nodes per round on average" in out
    assert "identical to the target's own greedy output: yes" in out
    code, out, _ = run_cli(
        capsys,
        "run",
        "--target",
        model_folders["target"],
        "--draft",
        model_folders["draft"],
        "--prompt",
        "w2 w3",
        "--max-new-tokens",
        "6",
        "--tree",
        "--json",
    )
    assert code == 0 and json.loads(out)["settings"]["drafting"] == "tree (budget 16)"


def test_run_defaults_to_quantized_weights_and_says_so(capsys, tmp_path):
    target, draft = tiny_pair("llama", vocab_size=32)
    folders = [str(save_tiny_model(tmp_path / name, model)) for name, model in (("target", target), ("draft", draft))]
    code, out, _ = run_cli(
        capsys,
        "run",
        "--target",
        folders[0],
        "--draft",
        folders[1],
        "--prompt",
        "w2 w3 w4",
        "--max-new-tokens",
        "12",
        "--temperature",
        "0",
        "--compare",
    )
    assert code == 0
    assert out.startswith(
        "Plan: draft → target: target float32 int8 on torch (cpu) | draft bfloat16 int4 on torch (cpu) | drafting: "
    )
    assert (
        "Kernels: target float32 int8 on cpu (fbgemm int8 x int8, one activation scale per token): int8 weights: auto "
        "on a CPU" in out
    )
    assert (
        "draft bfloat16 int4 on cpu (aten int4pack, groups of 32, bfloat16 activations): int4 weights: auto on a CPU"
        in out
    )
    assert "identical to the target's own greedy output: yes" in out  # against the int8 target as loaded
    code, out, _ = run_cli(
        capsys,
        "run",
        "--target",
        folders[0],
        "--draft",
        folders[1],
        "--prompt",
        "w2 w3",
        "--max-new-tokens",
        "4",
        "--quantization",
        "none",
        "--draft-quantization",
        "int8",
        "--json",
    )
    report = json.loads(out)
    assert (
        report["precision"] == {"target": "float32", "draft": "float32 int8"}
        and report["settings"]["quantization"] == "none"
    )
    details = report["precision_details"]
    assert (
        details["target"]["why"] == "weights as stored, as asked; float32 activations: auto on a CPU, exact comparisons"
    )
    assert (details["draft"]["weights"], details["draft"]["kernel"]) == (
        "int8",
        "fbgemm int8 x int8, one activation scale per token",
    )


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--tree", "", "--gamma", "4"], "leave gamma out"),
        (["--tree-budget", "0"], "--tree-budget"),
        (["--tree", "", "--draft", "prompt-lookup"], "prompt-lookup drafts without a draft model, and tree needs one"),
        (["--gamma", "0"], "gamma"),
        (["--gamma", "65"], "gamma"),
        (["--gamma", "four"], "--gamma"),
        (["--max-new-tokens", "0"], "max_new_tokens"),
        (["--temperature", "-0.5"], "temperature"),
        (["--top-p", "0"], "top_p"),
        (["--top-p", "1.5"], "top_p"),
        (["--top-k", "-1"], "top_k"),
        (["--prompt", "   "], "prompt is empty"),
        (["--device", "cuda"], "not available"),
        (["--device", "tpu9"], "device"),
        (["--dtype", "float8"], "dtype"),
        (["--quantization", "int3"], "unknown quantization 'int3'"),
        (["--draft-quantization", "fp4"], "unknown quantization 'fp4'"),
        # Conv1D layers: a model int8 cannot handle
        (["--quantization", "int8"], "gpt2 model keeps most of its weights elsewhere"),
        (["--target", "no-such-org/no-such-model"], "no-such-org/no-such-model"),
        (["--target", "./missing-folder"], "no model folder"),
        (["--prompt", "w2 " * 300], "context"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, model_folders, argv, fragment):
    base = {
        "--target": model_folders["target"],
        "--draft": model_folders["draft"],
        "--prompt": "w2 w3",
        "--max-new-tokens": "4",
    }
    for flag, value in zip(argv[::2], argv[1::2]):
        base[flag] = value
    code, _, err = run_cli(capsys, "run", *[item for pair in base.items() for item in pair if item != ""])
    assert code == 2
    assert len(error_lines(err)) == 1 and fragment in error_lines(err)[0], err
    assert "Traceback" not in err


def test_a_draft_with_another_tokenizer_runs_and_keeps_the_targets_output(capsys, model_folders):
    """No more refusal: the draft proposes through the shared tokens, and greedy output is the target's own."""
    code, out, _ = run_cli(
        capsys,
        "run",
        "--target",
        model_folders["target"],
        "--draft",
        model_folders["other"],
        "--prompt",
        "w2 w3",
        "--max-new-tokens",
        "12",
        "--temperature",
        "0",
        "--compare",
        "--json",
    )
    report = json.loads(out)
    assert code == 0 and report["draft_tokenizer"] == "its own, text re-encoded"
    assert report["compare"]["identical_tokens"] and report["stats"]["drafted"] > 0


def test_chat_without_a_template_is_refused(capsys, model_folders):
    code, _, err = run_cli(
        capsys, "run", "--target", model_folders["draft"], "--draft", "prompt-lookup", "--chat", "--prompt", "w2"
    )
    assert code == 2 and "chat template" in err


def test_real_entry_points_exit_cleanly(model_folders):
    """`python -m specdec` as a user types it: exit codes and no traceback."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    toy = subprocess.run(
        [sys.executable, "-m", "specdec", "toy", "--trials", "1000"], capture_output=True, text=True, env=env
    )
    assert toy.returncode == 0 and "PASS" in toy.stdout
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "specdec",
            "run",
            "--target",
            model_folders["target"],
            "--draft",
            model_folders["draft"],
            "--gamma",
            "0",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "gamma" in bad.stderr
    broken_toy = subprocess.run(
        [sys.executable, "-m", "specdec", "toy", "--target", "0.5,0.6"], capture_output=True, text=True, env=env
    )
    assert broken_toy.returncode == 2 and len(broken_toy.stderr.strip().splitlines()) == 1
