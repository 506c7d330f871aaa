"""benchmarks/llama_cpp.py: which llama.cpp build runs, and the no-AMX build where the native one dies of SIGILL.

No llama.cpp is built here: the tools are shell scripts that behave like the real ones (one dies of an
illegal instruction, as ggml's AMX kernels do on some machines; one prints llama-completion's perf lines).
"""

import argparse
import importlib.util
import os
import stat
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "llama_cpp_bench", Path(__file__).resolve().parents[1] / "benchmarks" / "llama_cpp.py"
)
# dataclasses look it up there
bench = sys.modules.setdefault("llama_cpp_bench", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(bench)

COMPLETION = """#!/bin/sh
echo 'def f(): pass'
echo 'prompt eval time =      10.00 ms /     3 tokens' >&2
echo '       eval time =     100.00 ms /     4 runs' >&2
"""
DIES = "#!/bin/sh\nkill -ILL $$\n"


def _tools(folder: Path, script: str) -> Path:
    (folder / "bin").mkdir(parents=True)
    for tool in bench.BUILD_TARGETS:
        path = folder / "bin" / tool
        path.write_text(script)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return folder


def _args(tmp_path: Path, build: str = "auto") -> argparse.Namespace:
    args = bench.parse_args(["--build-dir", str(tmp_path / "build"), "--build", build, "--llama-tools", "completion"])
    args.target_gguf = args.draft_gguf = tmp_path / "model-q4_k_m.gguf"
    return args


def _warm_with_llama(args, prompt: Path):
    ran = []

    def warm(variant):
        ran.append(bench.build_dir_of(args, args.llama_build).name)
        bench.run_llama(variant.tool, args, prompt, "", [1, 2, 3], 4)

    return ran, warm


def test_a_native_build_that_dies_of_sigill_gives_way_to_the_no_amx_build_and_says_so(tmp_path, monkeypatch, capsys):
    _tools(tmp_path / "build", DIES)
    _tools(tmp_path / "build-no-amx", COMPLETION)
    args, prompt = _args(tmp_path), tmp_path / "prompt.txt"
    prompt.write_text("x\n")
    monkeypatch.setattr(bench, "build", lambda *a, **k: pytest.fail("the no-AMX tools are there: nothing to build"))
    ran, warm = _warm_with_llama(args, prompt)
    bench.warm_up(bench.llama_variants(args), args, warm)
    assert ran == ["build", "build-no-amx"] and args.llama_build == "no-amx"
    assert "died of an illegal instruction (signal 4)" in capsys.readouterr().err
    # the timed runs use the no-AMX tools
    measured = bench.run_llama("llama-completion", args, prompt, "", [1, 2, 3], 4)
    assert (measured.new_tokens, measured.tokens_per_s) == (5, 40.0)


def test_the_no_amx_build_is_built_when_missing_with_amx_off_and_this_cpus_extensions(tmp_path, monkeypatch):
    _tools(tmp_path / "build", DIES)
    args, prompt = _args(tmp_path), tmp_path / "prompt.txt"
    prompt.write_text("x\n")
    built = []

    def fake_build(llama_dir, build_dir, index_url, jobs, kind):
        built.append((build_dir.name, kind, bench.cmake_options(kind, {"avx", "avx2", "fma", "f16c"})))
        _tools(build_dir, COMPLETION)

    monkeypatch.setattr(bench, "build", fake_build)
    _, warm = _warm_with_llama(args, prompt)
    bench.warm_up(bench.llama_variants(args), args, warm)
    ((folder, kind, options),) = built
    assert (folder, kind) == ("build-no-amx", "no-amx")
    assert {
        "-DGGML_NATIVE=OFF",
        "-DGGML_AVX2=ON",
        "-DGGML_AVX512=OFF",
        "-DGGML_AMX_TILE=OFF",
        "-DGGML_AMX_INT8=OFF",
        "-DGGML_AMX_BF16=OFF",
    } <= set(options) and "-DGGML_NATIVE=ON" not in options


def test_a_build_asked_for_by_name_is_not_replaced(tmp_path):
    _tools(tmp_path / "build", DIES)
    args, prompt = _args(tmp_path, build="native"), tmp_path / "prompt.txt"
    prompt.write_text("x\n")
    _, warm = _warm_with_llama(args, prompt)
    with pytest.raises(bench.BenchmarkError, match="illegal instruction .*try --build no-amx"):
        bench.warm_up(bench.llama_variants(args), args, warm)


def test_any_other_failure_is_reported_as_it_was(tmp_path):
    _tools(tmp_path / "build", "#!/bin/sh\necho 'error: no model' >&2\nexit 1\n")
    args, prompt = _args(tmp_path), tmp_path / "prompt.txt"
    prompt.write_text("x\n")
    args.llama_build = "native"
    with pytest.raises(bench.BenchmarkError, match=r"failed \(exit 1\)") as caught:
        bench.run_llama("llama-completion", args, prompt, "", [1, 2, 3], 4)
    assert not isinstance(caught.value, bench.IllegalInstruction) and "error: no model" in str(caught.value)
    assert os.access(bench.tool_path(args.build_dir, "llama-completion"), os.X_OK)


def test_llama_completion_is_charged_its_sampling_and_printing_as_our_clock_is():
    """eval time is the time inside llama_decode; total time also holds sampling and printing (5 ms here), which our
    side's clock holds too: shared evenly among the 5 new tokens, 4 of them after the prompt pass."""
    stderr = (
        "prompt eval time =      10.00 ms /     3 tokens\n"
        "       eval time =     100.00 ms /     4 runs\n"
        "      total time =     115.00 ms /     7 tokens\n"
    )
    measured = bench.parse_completion("text\n\n", stderr, [1, 2, 3])
    assert measured.seconds == pytest.approx(0.104) and measured.tokens_per_s == pytest.approx(4 / 0.104)
    assert measured.total_seconds == pytest.approx(0.115) and measured.new_tokens == 5
    # without the line (older builds print none), the passes alone, as before
    older = bench.parse_completion("text\n\n", stderr.rsplit("      total", 1)[0], [1, 2, 3])
    assert (older.seconds, older.total_seconds) == (pytest.approx(0.1), pytest.approx(0.11))


def test_a_prompt_run_several_times_counts_with_its_median():
    def row(engine, variant, speed, repeat):
        return {"engine": engine, "variant": variant, "category": "code", "prompt_id": "code-1",
                "tokens_per_s": str(speed), "repeat": str(repeat)}  # fmt: skip

    rows = [row("llama.cpp", "plain Q4_K_M", speed, r) for r, speed in enumerate((40.0, 10.0, 30.0))]
    rows += [row("specdec", "auto", speed, r) for r, speed in enumerate((33.0, 36.0, 1.0))]
    table = bench.summary_table(rows, "tokens_per_s").splitlines()
    assert table[2] == "| llama.cpp plain Q4_K_M | 30.0 | 30.0 | 1.00 | 1.00 |"
    assert table[3] == "| specdec auto | 33.0 | 33.0 | 1.10 | 1.10 |"
    assert bench.repeats_said(rows) == " (each prompt's median over its 3 runs)" and bench.repeats_said(rows[:1]) == ""
    with pytest.raises(SystemExit, match="--repeats takes a count of at least 1, got 0"):
        bench.main(["--repeats", "0"])
