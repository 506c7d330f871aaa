"""The machine proves llama.cpp exact before specdec uses it: a tiny quantized model, in a subprocess, bit for bit.

The settings of `specdec.runtime.llama_cpp.settings` were found on one CPU with one build. Another CPU
(other SIMD paths, another thread count) could pick another kernel for some pass size, so before the
runtime is trusted, this machine runs the checks itself, once:

1. a subprocess (`python -m specdec.runtime.llama_cpp.self_test`) writes a tiny Q4_K/Q6_K model
   (`tiny_model.py`: the kernels of the zoo's Q4_K_M files) and loads it with the settings and thread count
   the runtime will use; a crash there (an illegal instruction, an abort inside llama.cpp) costs the
   subprocess, not the caller;
2. `self_test` compares, bit for bit, with one-token steps of the same text: the rows of 2-, 6- and 17-token
   passes; the next row after a rollback; the rows of a token tree in one pass, and the steps after keeping a
   path the tree does not start with; and a 6-token pass after 300 tokens of text (past 256 cells, where
   llama.cpp's attention takes another path for one-token passes with several threads);
3. the verdict (usable or not, why in one line) is kept in a JSON file in specdec's cache, keyed by what
   could change it: the CPU's model and flags, the library's SHA-256 and version, the settings and threads.

The negative control is part of the design, not an afterthought: with llama.cpp's own defaults
(`settings.LLAMA_DEFAULTS`) the same self-test fails on the same tiny file (tests/test_llama_cpp_runtime.py).
On the tiny model, measured here: repacked weights break passes of 4+ tokens, flash attention off 6+, a ubatch
of 512 8+, a float16 V cache the 6-token pass after 300 tokens with 2 threads.

    >>> first_difference(torch.zeros(2, 3), torch.zeros(2, 3), "a pass of 2 tokens") is None
    True
    >>> first_difference(torch.tensor([[0.0, 1.0]]), torch.tensor([[0.0, 1.5]]), "a pass of 1 token")
    'a pass of 1 token gives token 0 other logits than one-token steps (up to 0.5)'

    ok, why = check_runtime()           # (True, "...") or (False, "why, in one line")
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from specdec.errors import SpecdecError, first_line
from specdec.runtime.llama_cpp.settings import EXACT, LLAMA_DEFAULTS, Settings
from specdec.store import cache_dir, update_json
from specdec.store.machine import cpu_facts

SELF_TEST_TIMEOUT_S = 300
LONG_TEXT = 300  # tokens before the long-text pass: past 256 cells, attention's n_kv pads to 512
PROMPT = 10  # the prompt pass before every checked pass (on the fastest kernels: settings.py)


@dataclass(frozen=True)
class Verdict:
    """Whether the llama.cpp runtime may run here, and why (one line)."""

    usable: bool
    why: str


def first_difference(together: torch.Tensor, alone: torch.Tensor, what: str) -> str | None:
    """None when the rows of a pass equal one-token steps' rows bit for bit, else which row differs and by how much."""
    for i, (a, b) in enumerate(zip(together, alone)):
        if not torch.equal(a, b):
            return f"{what} gives token {i} other logits than one-token steps (up to {float((a - b).abs().max()):.2g})"
    return None


def steps(model, ids: torch.Tensor, prompt: int = PROMPT) -> torch.Tensor:
    """The logits of `ids` after a prompt pass over the first `prompt` tokens, then one token a pass, [n - prompt + 1,
    V] (the prompt pass's last row first): plain decoding, the reference every other pass must equal."""
    rows = model.rows([0])
    first = rows.feed([ids[:prompt]])[0][0]
    return torch.cat([first] + [rows.feed([ids[i : i + 1]])[0][0] for i in range(prompt, len(ids))])


def self_test(model) -> str | None:
    """None when `model`'s passes keep specdec's promise on this machine, else the first broken one (one line)."""
    text = torch.randint(0, model.vocab_size - 2, (LONG_TEXT + 6,), generator=torch.Generator().manual_seed(0))
    reference = steps(model, text[:32])  # [23, V]: rows of tokens 9..31
    for k in (2, 6, 17):
        rows = model.rows([0])
        prompt, _ = rows.feed([text[:PROMPT]])
        together, _ = rows.feed([text[PROMPT : PROMPT + k]], last=k)
        reason = first_difference(prompt[0], reference[:1], "a second 10-token prompt pass") or first_difference(
            together[0], reference[1 : 1 + k], f"a pass of {k} tokens"
        )
        if reason:
            return reason
    rows.rollback(0, 12)  # after the 17-token pass
    reason = first_difference(rows.feed([text[12:13]])[0][0], reference[3:4], "the step after a rollback")
    if reason:
        return reason
    reason = _tree(model, text, reference)
    if reason:
        return reason
    rows = model.rows([0])
    rows.feed([text[:LONG_TEXT]])
    alone = torch.cat([rows.feed([text[i : i + 1]])[0][0] for i in range(LONG_TEXT, LONG_TEXT + 6)])
    rows.rollback(0, LONG_TEXT)
    return first_difference(
        rows.feed([text[LONG_TEXT : LONG_TEXT + 6]], last=6)[0][0], alone, f"a 6-token pass after {LONG_TEXT} tokens"
    )


def same_rows_on_fewer_threads(model, fewer) -> str | None:
    """None when one-token steps past `LONG_TEXT` tokens give the same bits on `model`'s threads and on `fewer`'s (a
    governed model moves between the two: `specdec.runtime.llama_cpp.threads`), else where they part."""
    text = torch.randint(0, model.vocab_size - 2, (LONG_TEXT + 6,), generator=torch.Generator().manual_seed(1))
    rows = [loaded.rows([0]) for loaded in (model, fewer)]
    for cache in rows:
        cache.feed([text[:LONG_TEXT]])
    steps_of = [
        torch.cat([cache.feed([text[i : i + 1]])[0][0] for i in range(LONG_TEXT, LONG_TEXT + 6)]) for cache in rows
    ]
    return first_difference(steps_of[0], steps_of[1], f"{fewer.threads} thread(s) instead of {model.threads}")


def _tree(model, text: torch.Tensor, reference: torch.Tensor) -> str | None:
    """A 6-node tree after a 10-token text: its nodes' rows, then
    the steps after keeping the path of its second branch."""
    other = torch.tensor([int(text[20]), int(text[21]), int(text[22])])  # a second branch: other tokens
    tokens = torch.cat([text[10:13], other])  # nodes 0-1-2 and 3-4-5
    parents = [-1, 0, 1, -1, 3, 4]
    seen = torch.eye(6, dtype=torch.bool)
    for node, parent in enumerate(parents):
        if parent >= 0:
            seen[node] |= seen[parent]
    attend = torch.cat([torch.ones(6, 10, dtype=torch.bool), seen], dim=1)  # [6 nodes, 10 cached + 6]
    depth = seen.sum(dim=1) - 1  # offsets: 0, 1, 2, 0, 1, 2
    branch = torch.cat([text[:10], other, text[13:16]])  # the second branch, then 3 more
    branch_reference = steps(model, branch)
    rows = model.rows([0])
    rows.feed([text[:10]])
    tree, _ = rows.feed([tokens], last=6, attend=[attend], offsets=[depth])
    reason = first_difference(tree[0, :3], reference[1:4], "a token tree's first branch") or first_difference(
        tree[0, 3:], branch_reference[1:4], "a token tree's second branch"
    )
    if reason:
        return reason
    rows.keep(0, list(range(10)) + [13, 14, 15])
    after = torch.cat([rows.feed([branch[i : i + 1]])[0][0] for i in range(13, 16)])
    return first_difference(after, branch_reference[4:7], "the steps after keeping a tree's second branch")


def probe(threads: int, settings: Settings) -> Verdict:
    """In this process: write the tiny model, load it, run `self_test`. Run it in a subprocess (`check_runtime`)."""
    from specdec.runtime.llama_cpp.model import load_gguf
    from specdec.runtime.llama_cpp.tiny_model import write_tiny_quantized_gguf

    with tempfile.TemporaryDirectory() as folder:
        try:
            model = load_gguf(
                write_tiny_quantized_gguf(Path(folder) / "tiny.gguf"), threads=threads, context=1024, settings=settings
            )
        except SpecdecError as error:
            return Verdict(False, first_line(error))
        reason = self_test(model)
        if reason is None and threads > 1:  # a governed model also runs on one thread fewer: the same bits there
            fewer = load_gguf(model.path, threads=threads - 1, context=1024, settings=settings)
            reason = same_rows_on_fewer_threads(model, fewer)
            fewer.close()
        model.close()
    if reason:
        return Verdict(False, f"llama.cpp failed this machine's exactness test: {reason}")
    return Verdict(
        True,
        f"llama.cpp passed this machine's exactness test ({threads} thread{'s' if threads > 1 else ''}: "
        "passes, a tree and rollbacks bit-equal to one-token steps)",
    )


def library_digest(path: Path, kept: dict) -> str:
    """The library's SHA-256, read again only when its size or modification time changed (`kept`: the last stamp)."""
    stat = path.stat()
    stamp = [str(path), stat.st_size, stat.st_mtime_ns]
    if kept.get("stamp") == stamp:
        return kept["sha256"]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    kept.update(stamp=stamp, sha256=digest)
    return digest


def verdict_path() -> Path:
    return cache_dir() / "llama_cpp" / "self-test.json"


def check_machine(threads: int | None = None, settings: Settings = EXACT, path: Path | None = None) -> Verdict:
    """This machine's verdict for the runtime: the kept one when
    nothing that could change it changed, else a new test."""
    from specdec.runtime.llama_cpp.library import installed_version, library_path
    from specdec.runtime.llama_cpp.model import default_threads

    try:
        library = library_path()
    except SpecdecError as error:
        return Verdict(False, first_line(error))
    threads = default_threads() if threads is None else threads
    path = verdict_path() if path is None else path
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        kept = {}
    kept.setdefault("library", {})
    key = {
        **cpu_facts(),
        "library_sha256": library_digest(library, kept["library"]),
        "xllamacpp": installed_version(),
        "settings": settings.key(),
        "threads": threads,
    }
    name = json.dumps(key, sort_keys=True)
    if name in kept.get("verdicts", {}):
        return Verdict(**kept["verdicts"][name])
    verdict = _run_subprocess(threads, settings)

    def keep(store: dict) -> None:  # under a lock: a verdict another process kept meanwhile stays
        store.setdefault("verdicts", {})[name] = asdict(verdict)
        store["library"] = kept["library"]

    update_json(path, keep)
    return verdict


def _run_subprocess(threads: int, settings: Settings) -> Verdict:
    command = [
        sys.executable,
        "-m",
        "specdec.runtime.llama_cpp.self_test",
        "--threads",
        str(threads),
        "--settings",
        json.dumps(settings.key()),
    ]
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=SELF_TEST_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Verdict(False, f"this machine's llama.cpp exactness test took over {SELF_TEST_TIMEOUT_S} s")
    lines = [line for line in completed.stdout.splitlines() if line.startswith("{")]
    if completed.returncode in (-4, 132):
        return Verdict(False, "llama.cpp died of SIGILL here: its build needs instructions this CPU lacks (AVX2)")
    if completed.returncode != 0 or not lines:
        tail = (completed.stderr.strip().splitlines() or [f"exit {completed.returncode}"])[-1]
        return Verdict(False, f"this machine's llama.cpp exactness test failed: {tail}")
    return Verdict(**json.loads(lines[-1]))


def check_runtime(threads: int | None = None, settings: Settings = EXACT) -> tuple[bool, str]:
    """(usable, why): whether the llama.cpp runtime may run here
    with `threads`, and why not in one line (torch then)."""
    verdict = check_machine(threads, settings)
    return verdict.usable, verdict.why


def prove_library(library: Path) -> str:
    """The self-test's verdict for a library built here (`native.build`), run in a subprocess with it; one
    `SpecdecError` line when it fails."""
    from specdec.runtime.llama_cpp.native import ENVIRONMENT

    before = os.environ.get(ENVIRONMENT)
    os.environ[ENVIRONMENT] = str(library)
    try:
        verdict = check_machine()
    finally:
        if before is None:
            os.environ.pop(ENVIRONMENT)
        else:
            os.environ[ENVIRONMENT] = before
    if not verdict.usable:
        raise SpecdecError(f"the library built here failed: {verdict.why}; the wheel's build stays in use")
    return verdict.why


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="run llama.cpp's exactness self-test in this process, print the verdict"
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--settings", default=json.dumps(EXACT.key()), help="a Settings as JSON (default: the exact ones)"
    )
    parser.add_argument("--defaults", action="store_true", help="llama.cpp's own defaults (the negative control)")
    args = parser.parse_args(argv)
    settings = LLAMA_DEFAULTS if args.defaults else replace(EXACT, **json.loads(args.settings))
    print(json.dumps(asdict(probe(args.threads, settings))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
