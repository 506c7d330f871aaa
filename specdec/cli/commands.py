"""What `specdec toy`, `specdec models` and `specdec runtime` do once their arguments are parsed, and what every command shares: progress on
stderr, a plain table.

Every command takes the parsed `argparse.Namespace` and returns the exit code; a `SpecdecError` raised in one becomes one line
on stderr and exit code 2 (`specdec.cli.main`). Reports go to stdout, progress to stderr, so `specdec run --json > out.json`
stays clean. Heavy imports (torch, transformers, pandas) happen inside the commands that need them: `run.py` (one prompt
through a pair), `bench.py` (the benchmark).
"""

from __future__ import annotations

import argparse
import sys
import time

from specdec.errors import SpecdecError


def toy(args: argparse.Namespace) -> int:
    """`specdec toy`: the accept/reject rule at one position, N times; exit 1 when the output is not p."""
    from specdec.reference.toy import DEFAULT_DRAFT, DEFAULT_TARGET, format_check, run_losslessness_check

    target, draft = args.target or DEFAULT_TARGET, args.draft or DEFAULT_DRAFT
    if len(target) != len(draft):
        raise SpecdecError(f"--target has {len(target)} probabilities but --draft has {len(draft)}: give both the same length")
    check = run_losslessness_check(target, draft, args.trials, args.seed)
    print(format_check(check, show_theory=args.theory))
    return 0 if check.passed else 1


def models(args: argparse.Namespace) -> int:
    """`specdec models list / fetch / path / remove`."""
    from specdec.zoo import catalog, fetch, status

    if args.action == "list":
        rows = [("model", "params", "download", "sources", "cached", "license")]
        for entry in catalog.MODELS.values():
            found = status.model_status(entry)
            on_disk = f"yes ({found.bytes_on_disk / 1e9:.2f} GB)" if found.bytes_on_disk else ("yes (hub cache)" if found.cached else "no")
            rows.append((entry.name, entry.parameters, f"{entry.download_bytes / 1e6:,.0f} MB", found.sources, on_disk, entry.license))
        print(_table(rows))
        print()
        from specdec import registry

        rows = [("pair (draft->target)", "state", "about")]
        rows += [(pair.name + (" (default)" if pair.name == catalog.DEFAULT_PAIR else ""), status.pair_availability(pair),
                  pair.description) for pair in registry.pairs().values()]
        print(_table(rows))
        print()
        rows = [("drafting method", "needs besides the target", "about")]
        rows += [(name, ", ".join(method.needs) or "nothing", method.summary) for name, method in registry.METHODS.items()]
        print(_table(rows))
        return 0
    if args.action == "fetch":
        entries = [catalog.require_model(name) for name in args.names]   # refuse typos before downloading anything
        for entry in entries:
            path = status.fetch(entry.name, progress=_fetch_progress)
            print(f"{entry.name}: {path}")
        return 0
    if args.action == "path":
        entry = catalog.require_model(args.name)
        location = status.model_status(entry).location
        if location is None:
            raise SpecdecError(f"{entry.name} is not downloaded yet: run `specdec models fetch {entry.name}`")
        print(location)
        return 0
    for name in args.names:  # remove
        entry = catalog.require_model(name)
        freed = fetch.remove_model(entry)
        print(f"{entry.name}: freed {freed / 1e6:,.0f} MB" if freed else f"{entry.name}: nothing cached")
    return 0


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows)


def _fetch_progress(update) -> None:
    """A bar on stderr, redrawn in place on a terminal; in a log one line per part and stage, each with the time left."""
    if not sys.stderr.isatty() and update.stage == "assemble":
        return  # keep logs short: only stage changes when not on a terminal
    bar = "#" * round(update.fraction * 30)
    end = "\n" if update.stage in ("done", "cached") or not sys.stderr.isatty() else ""
    left = "" if update.seconds_left is None else f"~{update.seconds_left:.0f} s left"
    print(f"\r{update.what:<22} [{bar:<30}] {update.fraction:4.0%}  {update.done / 1e6:7,.0f}/"
          f"{update.total / 1e6:,.0f} MB  {left:<12}  {update.message[:60]:<60}", end=end, file=sys.stderr, flush=True)


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class _LoadSteps:
    """A line on stderr for a long loading stage every few seconds and when it ends (GGUF tensors have transformers' bar);
    a stage over in under `every_s` (reading the tokenizers of converted copies) prints nothing."""

    every_s = 5.0

    def __init__(self) -> None:
        self.last: dict[str, float] = {}

    def __call__(self, step) -> None:
        if step.stage == "dequantizing GGUF tensors" or not step.total:
            return
        now = time.monotonic()
        due = now - self.last.setdefault(step.stage, now) >= self.every_s
        if due or (step.done == step.total and step.elapsed_s >= self.every_s):
            self.last[step.stage] = now
            _progress(step.describe())


def runtime(args: argparse.Namespace) -> int:
    """`specdec runtime build / status / remove`: llama.cpp built for this CPU (`specdec.runtime.llama_cpp.native`)."""
    from specdec.runtime.llama_cpp import native
    from specdec.runtime.llama_cpp.library import library_path
    from specdec.runtime.llama_cpp.self_test import prove_library

    if args.action == "build":
        start = time.monotonic()
        library = native.build(_progress, prove_library, args.jobs)
        print(f"Built and proved in {time.monotonic() - start:.0f} s: {library}; specdec's llama.cpp runtime uses it from now on "
              "(SPECDEC_LLAMA_LIBRARY=wheel for the wheel's)")
    elif args.action == "status":
        built = native.recorded_library()
        print(f"llama.cpp library: {library_path()} ({'built for this CPU' if built == library_path() else 'the wheel' if built is None else 'asked for'})")
        if built is not None and (commands := native.tool_commands(native.folder() / "tools")):
            print("llama.cpp's own llama-completion on the same kernels (to compare plain greedy output, docs/hardware.md):")
            print("\n".join(f"  {command}" for command in commands))
    else:
        print("Removed the build: the wheel's library runs again." if native.remove() else "No build to remove.")
    return 0
