"""`specdec bench`: run (or reload) a benchmark on our engine, vLLM or a vLLM server; print its tables, write the CSV
and charts.

Each `--pairs` value is a run spec (`_bench_specs`), loaded and planned as `specdec run` loads and plans it; the
default's plan is printed for each pair before anything runs.
"""

from __future__ import annotations

import argparse

from specdec.cli.progress import LoadSteps as _LoadSteps
from specdec.cli.progress import say as _progress
from specdec.errors import SpecdecError


def bench(args: argparse.Namespace) -> int:
    """`specdec bench`: run (or reload) a benchmark, print its tables, write the CSV and the figure."""
    from specdec.bench.charts import summary_figure, write_figure
    from specdec.bench.tables import best_gammas, by_category, by_concurrency, overview, save_csv, to_markdown

    if args.figure and not args.figure.endswith((".html", ".png")):
        raise SpecdecError(f"--figure must end in .html or .png, got {args.figure}")
    frame = _bench_frame(args)
    if args.out and not args.from_csv:
        save_csv(frame, args.out)
        _progress(f"wrote {len(frame)} rows to {args.out}")
    if _shown_batches(args, frame):
        return 0
    levels = by_concurrency(frame)
    tables = [
        ("medians over all prompts", overview(frame)),
        ("per concurrency level", levels)
        if len(levels)
        else ("median speedup per prompt category", by_category(frame)),
    ]
    for title, table in tables:
        print(f"{title}:")
        print(to_markdown(table) if args.markdown else table.to_string(index=False, float_format="%.2f"))
        print()
    best = best_gammas(frame)
    if len(best):  # only when fixed gammas ran (the default runs the stop rule alone)
        print("best fixed gamma per pair:")
        print(best.to_string(index=False, float_format="%.2f"))
    from specdec.bench.spec_bench import SETTING, families_figure, families_table

    families = families_table(frame)
    if len(families) > 1:  # several families ran: the Spec-Bench view
        print(f"\nevery family, Spec-Bench style (speedup per category; spec_bench_*: {SETTING}):")
        print(to_markdown(families) if args.markdown else families.to_string(index=False, float_format="%.2f"))
    if args.figure:
        write_figure(summary_figure(frame), args.figure)
        _progress(f"wrote the charts to {args.figure}")
        if len(families) > 1:
            stem, dot, extension = args.figure.rpartition(".")
            write_figure(families_figure(frame), f"{stem}-families.{extension}")
            _progress(f"wrote the families' charts to {stem}-families.{extension}")
    return 0


def _bench_frame(args: argparse.Namespace):
    """The benchmark's rows: reloaded from --from-csv, or measured on a vLLM server, vLLM, batches or our engine."""
    if args.from_csv:
        import pandas as pd

        from specdec.bench.tables import load_csv

        return pd.concat([load_csv(path) for path in args.from_csv], ignore_index=True)
    if args.server:
        return _bench_server(args)
    if args.engine == "vllm":
        return _bench_vllm(args)
    if args.batch_sizes:
        return _bench_batches(args)
    return _bench_specdec(args)


def _shown_batches(args: argparse.Namespace, frame) -> bool:
    """Print the per-batch-size table (and write its chart) when the frame holds batch rows; whether it did."""
    from specdec.bench.batches import batch_table
    from specdec.bench.charts import write_figure
    from specdec.bench.tables import to_markdown

    batches = batch_table(frame)
    if not len(batches):
        return False
    print(
        "per batch size (tok_s: all rows' new tokens / wall time; gain: over plain decoding of the same batch; "
        "scaling: over "
        "the smallest batch; pass_over_plain: a target pass's seconds over plain decoding's at that batch size):"
    )
    print(to_markdown(batches) if args.markdown else batches.to_string(index=False, float_format="%.2f"))
    if args.figure:
        from specdec.bench.load_charts import batch_figure

        write_figure(batch_figure(frame), args.figure)
        _progress(f"wrote the charts to {args.figure}")
    return True


def _bench_specdec(args: argparse.Namespace):
    """Our engine: load each pair here, run the suite, keep the rows measured so far if interrupted."""
    from specdec.bench.harness import BenchSettings, rows_to_frame, run_benchmark
    from specdec.bench.tables import save_csv
    from specdec.engine.inputs import Decoding
    from specdec.pair import loading

    settings = BenchSettings.chosen(
        args.methods,
        args.gammas or (),
        categories=args.categories,
        prompts_per_category=args.prompts_per_category,
        temperatures=args.temperatures,
        decoding=Decoding(max_new_tokens=args.max_new_tokens, temperature=args.temperatures[0], seed=args.seed),
        repeats=args.repeats,
        warmup_runs=args.warmup,
        draft_vocab_limit=args.draft_vocab_limit,
        max_adaptive_gamma=args.max_adaptive_gamma,
    )
    specs = _bench_specs(args)
    pairs = [loading.load_spec(spec, progress=_progress, steps=_LoadSteps()) for spec in specs]
    for pair, spec in zip(pairs, specs):
        # the default's plan, as `specdec run` prints it for the same spec
        _progress(f"Plan: {pair.plan(spec).header()}")
    rows: list[dict] = []
    try:
        return run_benchmark(pairs, settings, progress=_counted_progress, on_row=rows.append)
    except BaseException:  # an interrupted or failed run keeps what it measured
        if args.out and rows:
            save_csv(rows_to_frame(rows), args.out)
            _progress(f"stopped early: wrote the {len(rows)} rows measured so far to {args.out}")
        raise


def _bench_batches(args: argparse.Namespace):
    """Batches on our engine: the same prompts at each batch size, plain and speculative (`specdec.bench.batches`)."""
    from specdec.bench.batches import batch_benchmark, check_batch_sizes
    from specdec.engine.inputs import Decoding
    from specdec.pair import loading

    sizes = check_batch_sizes(args.batch_sizes)
    if len(args.temperatures) > 1 or len(args.pairs) > 1:
        raise SpecdecError(
            "--batch-sizes runs one pair at one temperature: pass one --pairs value and one --temperatures value"
        )
    pair = loading.load_spec(_bench_specs(args)[0], progress=_progress, steps=_LoadSteps())
    decoding = Decoding(max_new_tokens=args.max_new_tokens, temperature=args.temperatures[0], seed=args.seed)
    return batch_benchmark(pair, sizes, decoding, progress=_counted_progress, gammas=args.gammas or ("stop",))


def _bench_specs(args: argparse.Namespace) -> list:
    """One run spec per `--pairs` value, with the models as the
    benchmark's options choose them (checked before any load)."""
    from specdec.run_spec import ModelChoices, RunSpec
    from specdec.zoo.catalog import split_pair_name

    models = ModelChoices(
        args.device,
        args.dtype,
        args.quantization,
        args.draft_quantization,
        args.runtime,
        draft_runtime=args.draft_runtime,
    )
    return [RunSpec(target, draft, models).check() for draft, target in map(split_pair_name, args.pairs)]


def _bench_vllm(args: argparse.Namespace):
    """vLLM's offline LLM in its own environment (`specdec.bench.vllm.offline`)."""
    from specdec.bench.vllm.offline import VllmSettings, run_vllm_benchmark
    from specdec.bench.vllm.worker_process import find_vllm_python

    gammas = args.gammas or (5,)
    if any(not isinstance(gamma, int) for gamma in gammas):
        raise SpecdecError(
            f"vLLM drafts a fixed number of tokens per round: pass whole gammas (--gammas 5), got {list(gammas)}"
        )
    if len(args.temperatures) > 1:
        raise SpecdecError("--engine vllm runs one temperature per benchmark: pass one --temperatures value")
    settings = VllmSettings(
        gammas=tuple(gammas),
        categories=args.categories,
        prompts_per_category=args.prompts_per_category,
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperatures[0],
        seed=args.seed,
        warmup=args.warmup,
    )
    from specdec.zoo.catalog import split_pair_name

    for name in args.pairs:  # a malformed pair fails before vLLM is looked for
        split_pair_name(name)
    python = find_vllm_python(args.vllm_python)
    _progress(f"vLLM runs as a separate process with {python} (it pins other library versions than specdec)")
    return run_vllm_benchmark(args.pairs, settings, python, progress=_counted_progress)


def _bench_server(args: argparse.Namespace):
    """A running vLLM server (and its baseline) at each concurrency level (`specdec.bench.vllm.server`)."""
    import pandas as pd

    from specdec.bench.vllm.rows import with_vllm_speedups
    from specdec.bench.vllm.server import ServerRun, server_benchmark

    if len(args.temperatures) > 1:
        raise SpecdecError("--server runs one temperature per benchmark: pass one --temperatures value")
    run = ServerRun(
        url=args.server,
        baseline_url=args.baseline_server,
        model=args.server_model,
        concurrency=args.concurrency,
        categories=args.categories,
        prompts_per_category=args.prompts_per_category or 1,
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperatures[0],
        seed=args.seed,
    )
    return with_vllm_speedups(pd.DataFrame(server_benchmark(run, progress=_counted_progress)))


def _counted_progress(done: int, total: int, message: str) -> None:
    """A benchmark's progress on stderr: '[3/12] message', silent at the end."""
    if done < total:
        _progress(f"[{done + 1}/{total}] {message}")
