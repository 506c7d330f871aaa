"""What `specdec toy`, `specdec models` and `specdec runtime` do once their arguments are parsed, and the plain table
and download bar they print (the progress lines every loading command shares are `progress.py`'s).

Every command takes the parsed `argparse.Namespace` and returns the exit code; a `SpecdecError` raised in one becomes
one line on stderr and exit code 2 (`specdec.cli.main`). Reports go to stdout, progress to stderr, so `specdec run
--json > out.json` stays clean. Heavy imports (torch, transformers, pandas) happen inside the commands that need them:
`run.py` (one prompt through a pair), `bench.py` (the benchmark).
"""

from __future__ import annotations

import argparse
import sys
import time

from specdec.cli.progress import LoadSteps as _LoadSteps
from specdec.cli.progress import say as _progress
from specdec.errors import SpecdecError


def toy(args: argparse.Namespace) -> int:
    """`specdec toy`: the accept/reject rule at one position, N times; exit 1 when the output is not p."""
    from specdec.reference.toy import DEFAULT_DRAFT, DEFAULT_TARGET, format_check, run_losslessness_check

    target, draft = args.target or DEFAULT_TARGET, args.draft or DEFAULT_DRAFT
    if len(target) != len(draft):
        raise SpecdecError(
            f"--target has {len(target)} probabilities but --draft has {len(draft)}: give both the same length"
        )
    check = run_losslessness_check(target, draft, args.trials, args.seed)
    print(format_check(check, show_theory=args.theory))
    return 0 if check.passed else 1


def models(args: argparse.Namespace) -> int:
    """`specdec models list / fetch / path / remove`."""
    if args.action == "list":
        return _list_models()
    if args.action == "fetch":
        return _fetch_models(args.names)
    if args.action == "path":
        return _model_path(args.name)
    return _remove_models(args.names)


def _list_models() -> int:
    """`specdec models list`: the models, the pairs and the drafting methods, one table each."""
    from specdec.zoo import catalog, status

    rows = [("model", "params", "download", "sources", "cached", "license")]
    for entry in catalog.MODELS.values():
        found = status.model_status(entry)
        on_disk = (
            f"yes ({found.bytes_on_disk / 1e9:.2f} GB)"
            if found.bytes_on_disk
            else ("yes (hub cache)" if found.cached else "no")
        )
        rows.append(
            (
                entry.name,
                entry.parameters,
                f"{entry.download_bytes / 1e6:,.0f} MB",
                found.sources,
                on_disk,
                entry.license,
            )
        )
    print(_table(rows))
    print()
    from specdec import registry

    rows = [("pair (draft->target)", "state", "about")]
    rows += [
        (
            pair.name + (" (default)" if pair.name == catalog.DEFAULT_PAIR else ""),
            status.pair_availability(pair),
            pair.description,
        )
        for pair in registry.pairs().values()
    ]
    print(_table(rows))
    print()
    rows = [("drafting method", "needs besides the target", "about")]
    rows += [(name, ", ".join(method.needs) or "nothing", method.summary) for name, method in registry.METHODS.items()]
    print(_table(rows))
    return 0


def _fetch_models(names: list[str]) -> int:
    """`specdec models fetch NAME...`: each model downloaded and
    checked, then the default pair prepared if this brought it."""
    from specdec.zoo import catalog, status

    entries = [catalog.require_model(name) for name in names]  # refuse typos before downloading anything
    were_cached = {entry.name for entry in entries if status.model_status(entry).cached}
    for entry in entries:
        path = status.fetch(entry.name, progress=_fetch_progress)
        print(f"{entry.name}: {path}")
    _prepare_the_default_pair({entry.name for entry in entries} - were_cached)
    return 0


def _model_path(name: str) -> int:
    """`specdec models path NAME`: where the model lies on this machine."""
    from specdec.zoo import catalog, status

    entry = catalog.require_model(name)
    location = status.model_status(entry).location
    if location is None:
        raise SpecdecError(f"{entry.name} is not downloaded yet: run `specdec models fetch {entry.name}`")
    print(location)
    return 0


def _remove_models(names: list[str]) -> int:
    """`specdec models remove NAME...`: each model's files deleted, the bytes freed said."""
    from specdec.zoo import catalog, fetch

    for name in names:
        entry = catalog.require_model(name)
        freed = fetch.remove_model(entry)
        print(f"{entry.name}: freed {freed / 1e6:,.0f} MB" if freed else f"{entry.name}: nothing cached")
    return 0


def _prepare_the_default_pair(downloaded: set[str]) -> None:
    """After a fetch that downloaded a model of `specdec run`'s default pair and left both on disk: load the pair as
    `specdec run` would, which proves llama.cpp on this machine (its self-test) and times c and v(k), both kept. Each is
    paid once per machine either way; paid here, while the user waits for the download, the first run starts at once."""
    from specdec.cli.parser import build_parser
    from specdec.cli.run import run_spec
    from specdec.zoo import catalog, status

    spec = run_spec(build_parser().parse_args(["run"]))
    pair = (spec.target, spec.draft)
    if not downloaded & set(pair) or not all(status.model_status(catalog.require_model(name)).cached for name in pair):
        return
    from specdec.pair import loading
    from specdec.store.machine import BUSY_FROM, busy_now

    busy = busy_now(0.5)
    if busy is not None and busy >= BUSY_FROM:  # timings taken now would be the other process's, and kept
        _progress(
            f"Not timing the pair now: other processes keep {busy:.1f} cores busy. The first `specdec run` times it."
        )
        return
    _progress(
        "Preparing the default pair on this machine, once: llama.cpp's exactness self-test and the timing of c and "
        "v(k) …"
    )
    start = time.monotonic()
    loading.load_spec(spec, progress=_progress, steps=_LoadSteps())
    _progress(f"Prepared in {time.monotonic() - start:.0f} s: `specdec run` starts without them.")
    from specdec.runtime.llama_cpp import native

    if (line := native.advice(built=native.recorded_library())) is not None:
        _progress(line)


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows)


def _fetch_progress(update) -> None:
    """A bar on stderr, redrawn in place on a terminal; in a
    log one line per part and stage, each with the time left."""
    if not sys.stderr.isatty() and update.stage == "assemble":
        return  # keep logs short: only stage changes when not on a terminal
    bar = "#" * round(update.fraction * 30)
    end = "\n" if update.stage in ("done", "cached") or not sys.stderr.isatty() else ""
    left = "" if update.seconds_left is None else f"~{update.seconds_left:.0f} s left"
    print(
        f"\r{update.what:<22} [{bar:<30}] {update.fraction:4.0%}  {update.done / 1e6:7,.0f}/"
        f"{update.total / 1e6:,.0f} MB  {left:<12}  {update.message[:60]:<60}",
        end=end,
        file=sys.stderr,
        flush=True,
    )


def runtime(args: argparse.Namespace) -> int:
    """`specdec runtime build / status / remove`: llama.cpp built for this CPU (`specdec.runtime.llama_cpp.native`)."""
    from specdec.runtime.llama_cpp import huge_pages, native
    from specdec.runtime.llama_cpp.library import library_path
    from specdec.runtime.llama_cpp.self_test import prove_library

    if args.action == "build":
        start = time.monotonic()
        library = native.build(_progress, prove_library, args.jobs)
        print(
            f"Built and proved in {time.monotonic() - start:.0f} s: {library}; specdec's llama.cpp runtime uses it "
            "from now on "
            "(SPECDEC_LLAMA_LIBRARY=wheel for the wheel's)"
        )
    elif args.action == "status":
        built = native.recorded_library()
        print(
            f"llama.cpp library: {library_path()} "
            f"({'built for this CPU' if built == library_path() else 'the wheel' if built is None else 'asked for'})"
        )
        if built is not None and (commands := native.tool_commands(native.folder() / "tools")):
            print(
                "llama.cpp's own llama-completion on the same kernels (to compare plain greedy output, "
                "docs/hardware.md):"
            )
            print("\n".join(f"  {command}" for command in commands))
        if (line := native.advice(built=built)) is not None:
            print(line)
        if pages := huge_pages.status():
            print(pages)
    else:
        print("Removed the build: the wheel's library runs again." if native.remove() else "No build to remove.")
    return 0
