"""llama.cpp built for this CPU (`specdec runtime build`, `specdec.runtime.llama_cpp.native`): opt-in, proved, then
used.

What runs everywhere: the build refuses in one line (exit 2) where a tool is missing; a library is used only where a
build recorded it for this very CPU, and a variable sends one process back to the wheel; a library that fails the
exactness self-test is never recorded. The build itself (the pinned sdist fetched, a few minutes of compiling) runs
with `SPECDEC_NATIVE_BUILD=1 python -m pytest tests/test_llama_cpp_native.py`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specdec.cli import main
from specdec.errors import SpecdecError
from specdec.runtime.llama_cpp import huge_pages, native
from specdec.runtime.llama_cpp.library import library_path, wheel_library
from specdec.runtime.llama_cpp.self_test import Verdict, prove_library

try:
    wheel_library()
except SpecdecError as error:  # pragma: no cover - depends on the environment
    pytest.skip(f"the llama.cpp runtime is not installed here: {error}", allow_module_level=True)


@pytest.fixture()
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path))
    monkeypatch.delenv(native.ENVIRONMENT, raising=False)
    return tmp_path


def record(library: Path, flags: list[str]) -> None:
    native.folder().mkdir(parents=True, exist_ok=True)
    (native.folder() / native.RECORD).write_text(
        json.dumps({"library": str(library), "flags": flags, "verdict": "passed"})
    )


def test_a_build_is_used_only_on_the_cpu_it_was_recorded_for(store, monkeypatch):
    library = store / "libllama.so"
    library.write_bytes(b"\x7fELF")
    assert library_path() == wheel_library()  # nothing built: the wheel
    record(library, native.build_flags())
    assert library_path() == library
    monkeypatch.setenv(native.ENVIRONMENT, "wheel")
    assert library_path() == wheel_library()  # one process back on the wheel
    monkeypatch.delenv(native.ENVIRONMENT)
    record(library, native.build_flags() + ["a_flag_this_cpu_lacks"])  # built elsewhere: not used here
    assert library_path() == wheel_library()
    record(library, native.build_flags())
    library.unlink()
    assert library_path() == wheel_library()  # gone: not used


def test_status_names_the_library_and_how_to_build_llama_completion_on_the_same_kernels(store, capsys, monkeypatch):
    monkeypatch.setattr(huge_pages, "thp_setting", lambda: "")  # a kernel without huge pages: no line about them
    assert main(["runtime", "status"]) == 0
    assert "(the wheel)" in capsys.readouterr().out  # nothing built: no commands
    library = store / "libllama.so"
    library.write_bytes(b"\x7fELF")
    record(library, native.build_flags())
    (native.folder() / "source" / native.SOURCE).mkdir(parents=True)
    assert main(["runtime", "status"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "built for this CPU" in out[0] and len(out) == 4, out
    configure, compile_ = out[2].split(), out[3].split()
    assert configure[:3] == ["cmake", "-S", str(native.folder() / "source" / native.SOURCE)]
    assert {"-DLLAMA_BUILD_TOOLS=ON", "-DBUILD_SHARED_LIBS=OFF", *native.cpu_options(native.cpu_flags())} <= set(
        configure
    )
    assert "-DLLAMA_BUILD_TOOLS=OFF" not in configure and compile_[-2:] == ["--target", "llama-completion"]


def test_building_without_a_compiler_is_one_line(store, monkeypatch, capsys):
    monkeypatch.setattr(native.shutil, "which", lambda tool: None if tool == "c++" else "/usr/bin/" + tool)
    assert main(["runtime", "build"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs c++" in err[0] and "Traceback" not in err[0], err
    assert not (native.folder() / native.RECORD).exists()


def test_a_library_that_fails_the_self_test_is_never_recorded(store, monkeypatch):
    library = store / "libllama.so"
    library.write_bytes(b"\x7fELF")
    monkeypatch.setattr(native.shutil, "which", lambda tool: "/usr/bin/" + tool)
    monkeypatch.setattr(native, "_source", lambda home, say: home)
    monkeypatch.setattr(native, "_compile", lambda *args: library)
    seen = {}

    def verdict(*args, **kwargs):
        seen["library"] = os.environ.get(native.ENVIRONMENT)
        return Verdict(False, "llama.cpp failed this machine's exactness test: a pass of 6 tokens differs")

    monkeypatch.setattr("specdec.runtime.llama_cpp.self_test.check_machine", verdict)
    with pytest.raises(SpecdecError, match="the library built here failed: .* the wheel's build stays in use"):
        native.build(lambda message: None, prove_library)
    assert seen["library"] == str(library)  # the self-test ran with the new library
    assert not (native.folder() / native.RECORD).exists() and library_path() == wheel_library()
    monkeypatch.setattr("specdec.runtime.llama_cpp.self_test.check_machine", lambda *a, **k: Verdict(True, "passed"))
    # the control: a pass is recorded
    assert native.build(lambda message: None, prove_library) == library and library_path() == library


@pytest.mark.skipif(
    os.environ.get("SPECDEC_NATIVE_BUILD") != "1", reason="opt-in: SPECDEC_NATIVE_BUILD=1 builds llama.cpp"
)
def test_the_build_compiles_passes_the_self_test_and_runs(store, capsys):  # pragma: no cover - opt-in
    assert main(["runtime", "build"]) == 0
    assert library_path() == native.recorded_library() != wheel_library()


def test_status_says_when_the_wheel_leaves_this_cpus_instruction_sets_unused(store, monkeypatch, capsys):
    """An AVX-512 CPU on the wheel hears of `specdec runtime build`
    in one line; an AVX2 one, or one with a build, does not."""
    monkeypatch.setattr(native, "cpu_flags", lambda: {"avx", "avx2", "fma", "f16c", "avx512f", "avx512_bf16"})
    assert main(["runtime", "status"]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("This CPU has")]
    assert line.startswith("This CPU has avx512f, avx512_bf16;") and "specdec runtime build" in line, line
    monkeypatch.setattr(native, "cpu_flags", lambda: {"avx", "avx2", "fma", "f16c"})
    assert main(["runtime", "status"]) == 0
    assert "runtime build" not in capsys.readouterr().out
    monkeypatch.setattr(native, "cpu_flags", lambda: {"avx", "avx2", "fma", "f16c", "avx512f"})
    library = store / "libllama.so"
    library.write_bytes(b"\x7fELF")
    record(library, native.build_flags())
    assert main(["runtime", "status"]) == 0
    assert "runtime build" not in capsys.readouterr().out


def test_status_says_whether_loads_ask_for_huge_pages(store, capsys, monkeypatch):
    monkeypatch.setattr(huge_pages, "thp_setting", lambda: "madvise")
    monkeypatch.delenv("SPECDEC_HUGE_PAGES", raising=False)
    assert main(["runtime", "status"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("huge pages for the weights: off; SPECDEC_HUGE_PAGES=1")
    monkeypatch.setenv("SPECDEC_HUGE_PAGES", "1")
    assert main(["runtime", "status"]) == 0
    assert "asked for (SPECDEC_HUGE_PAGES=1)" in capsys.readouterr().out.splitlines()[-1]
