"""What each `specdec` command does once its arguments are parsed: load, call the package, print.

Every function takes the parsed `argparse.Namespace` and returns the exit code; a `SpecdecError`
raised here becomes one line on stderr and exit code 2 (`specdec.cli.main`). Reports go to
stdout, progress to stderr, so `specdec run --json > out.json` stays clean. Heavy imports (torch,
transformers, pandas) happen inside the commands that need them.
"""

from __future__ import annotations

import argparse
import json
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


def bench(args: argparse.Namespace) -> int:
    """`specdec bench`: run (or reload) a benchmark, print its tables, write the CSV and the figure."""
    from specdec.bench.charts import summary_figure, write_figure
    from specdec.bench.tables import best_gammas, by_category, by_concurrency, load_csv, overview, save_csv, to_markdown

    if args.figure and not args.figure.endswith((".html", ".png")):
        raise SpecdecError(f"--figure must end in .html or .png, got {args.figure}")
    if args.from_csv:
        import pandas as pd

        frame = pd.concat([load_csv(path) for path in args.from_csv], ignore_index=True)
    elif args.server:
        frame = _bench_server(args)
    elif args.engine == "vllm":
        frame = _bench_vllm(args)
    elif args.batch_sizes:
        frame = _bench_batches(args)
    else:
        frame = _bench_specdec(args)
    if args.out and not args.from_csv:
        save_csv(frame, args.out)
        _progress(f"wrote {len(frame)} rows to {args.out}")
    from specdec.bench.batches import batch_table

    batches = batch_table(frame)
    if len(batches):
        print("per batch size (tok_s: all rows' new tokens / wall time; gain: over plain decoding of the same batch; scaling: over "
              "the smallest batch; pass_over_plain: a target pass's seconds over plain decoding's at that batch size):")
        print(to_markdown(batches) if args.markdown else batches.to_string(index=False, float_format="%.2f"))
        if args.figure:
            from specdec.bench.charts import batch_figure

            write_figure(batch_figure(frame), args.figure)
            _progress(f"wrote the charts to {args.figure}")
        return 0
    levels = by_concurrency(frame)
    tables = [("medians over all prompts", overview(frame)),
              ("per concurrency level", levels) if len(levels) else ("median speedup per prompt category", by_category(frame))]
    for title, table in tables:
        print(f"{title}:")
        print(to_markdown(table) if args.markdown else table.to_string(index=False, float_format="%.2f"))
        print()
    best = best_gammas(frame)
    if len(best):                                   # only when fixed gammas ran (the default runs the stop rule alone)
        print("best fixed gamma per pair:")
        print(best.to_string(index=False, float_format="%.2f"))
    from specdec.bench.spec_bench import SETTING, families_figure, families_table

    families = families_table(frame)
    if len(families) > 1:                           # several families ran: the Spec-Bench view
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


def _bench_specdec(args: argparse.Namespace):
    """Our engine: load each pair here, run the suite, keep the rows measured so far if interrupted."""
    from specdec.bench.harness import BenchSettings, rows_to_frame, run_benchmark
    from specdec.bench.tables import save_csv
    from specdec.engine.inputs import Decoding
    from specdec.pair import loading

    settings = BenchSettings.chosen(args.methods, args.gammas or (), categories=args.categories,
                                    prompts_per_category=args.prompts_per_category, temperatures=args.temperatures,
                                    decoding=Decoding(max_new_tokens=args.max_new_tokens, temperature=args.temperatures[0],
                                                      seed=args.seed),
                                    repeats=args.repeats, warmup_runs=args.warmup, draft_vocab_limit=args.draft_vocab_limit,
                                    max_adaptive_gamma=args.max_adaptive_gamma)
    specs = _bench_specs(args)
    pairs = [loading.load_spec(spec, progress=_progress, steps=_LoadSteps()) for spec in specs]
    for pair, spec in zip(pairs, specs):
        _progress(f"Plan: {pair.plan(spec).header()}")          # the default's plan, as `specdec run` prints it for the same spec
    rows: list[dict] = []
    try:
        return run_benchmark(pairs, settings, progress=_counted_progress, on_row=rows.append)
    except BaseException:                       # an interrupted or failed run keeps what it measured
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
        raise SpecdecError("--batch-sizes runs one pair at one temperature: pass one --pairs value and one --temperatures value")
    pair = loading.load_spec(_bench_specs(args)[0], progress=_progress, steps=_LoadSteps())
    decoding = Decoding(max_new_tokens=args.max_new_tokens, temperature=args.temperatures[0], seed=args.seed)
    return batch_benchmark(pair, sizes, decoding, progress=_counted_progress, gammas=args.gammas or ("stop",))


def _bench_specs(args: argparse.Namespace) -> list:
    """One run spec per `--pairs` value, with the models as the benchmark's options choose them (checked before any load)."""
    from specdec.run_spec import ModelChoices, RunSpec
    from specdec.zoo.catalog import split_pair_name

    models = ModelChoices(args.device, args.dtype, args.quantization, args.draft_quantization, args.runtime)
    return [RunSpec(target, draft, models).check() for draft, target in map(split_pair_name, args.pairs)]


def _bench_vllm(args: argparse.Namespace):
    """vLLM's offline LLM in its own environment (`specdec.bench.vllm.offline`)."""
    from specdec.bench.vllm.offline import VllmSettings, find_vllm_python, run_vllm_benchmark

    gammas = args.gammas or (5,)
    if any(not isinstance(gamma, int) for gamma in gammas):
        raise SpecdecError(f"vLLM drafts a fixed number of tokens per round: pass whole gammas (--gammas 5), got {list(gammas)}")
    if len(args.temperatures) > 1:
        raise SpecdecError("--engine vllm runs one temperature per benchmark: pass one --temperatures value")
    settings = VllmSettings(gammas=tuple(gammas), categories=args.categories, prompts_per_category=args.prompts_per_category,
                            max_new_tokens=args.max_new_tokens, temperature=args.temperatures[0], seed=args.seed, warmup=args.warmup)
    from specdec.zoo.catalog import split_pair_name

    for name in args.pairs:                         # a malformed pair fails before vLLM is looked for
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
    run = ServerRun(url=args.server, baseline_url=args.baseline_server, model=args.server_model, concurrency=args.concurrency,
                    categories=args.categories, prompts_per_category=args.prompts_per_category or 1,
                    max_new_tokens=args.max_new_tokens, temperature=args.temperatures[0], seed=args.seed)
    return with_vllm_speedups(pd.DataFrame(server_benchmark(run, progress=_counted_progress)))


def _counted_progress(done: int, total: int, message: str) -> None:
    """A benchmark's progress on stderr: '[3/12] message', silent at the end."""
    if done < total:
        _progress(f"[{done + 1}/{total}] {message}")


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


def run_spec(args: argparse.Namespace):
    """The `RunSpec` `specdec run`'s arguments describe (`--tree` and `--tree-budget` are the tree method and its budget),
    checked before anything loads."""
    from specdec.engine.inputs import Decoding
    from specdec.registry import TREE
    from specdec.run_spec import Drafting, ModelChoices, RunSpec

    method, options = args.method, dict(_options(args.option))
    if args.tree or args.tree_budget is not None:
        if method not in (None, TREE):
            raise SpecdecError(f"--tree drafts with the {TREE} method, --method asked for {method}: drop one")
        method = TREE
        if args.tree_budget is not None:
            options["budget"] = str(args.tree_budget)
    if method == TREE and args.gamma is not None:
        raise SpecdecError("--gamma sizes a chain draft; a tree sizes its own rounds: drop --gamma (or set --tree-budget)")
    if not args.prompt.strip():
        raise SpecdecError("the prompt is empty: pass some text with --prompt")
    models = ModelChoices(args.device, args.dtype, args.quantization, args.draft_quantization, args.runtime)
    drafting = Drafting(method, args.gamma, tuple(options.items()), tuple(args.corpus or ()))
    decoding = Decoding(args.max_new_tokens, args.temperature, args.top_k, args.top_p, args.seed)
    return RunSpec(args.target, args.draft, models, drafting, decoding).check()


def _options(texts: list[str] | None) -> list[tuple[str, str]]:
    """`--option NAME=VALUE` pairs, in order (one clear line for one without '=')."""
    pairs = []
    for text in texts or ():
        name, equals, value = text.partition("=")
        if not equals or not name.strip():
            raise SpecdecError(f"--option takes NAME=VALUE (a field of the method's options), got '{text}'")
        pairs.append((name.strip(), value.strip()))
    return pairs


def run(args: argparse.Namespace) -> int:
    """`specdec run`: one prompt through a real pair, with the target alone beside it when --compare."""
    spec = run_spec(args)                                          # refuse bad choices before loading anything

    from specdec.pair import loading, running

    pair = loading.load_spec(spec, progress=_progress, steps=_LoadSteps())
    plan = pair.plan(spec)
    _progress(f"Plan: {plan.header()}")
    input_ids = running.encode_prompt(pair.tokenizer, args.prompt, chat=args.chat)
    result = running.generate(pair, input_ids, spec, plan=plan)
    baseline = running.generate_plain(pair, input_ids, spec.decoding) if args.compare else None
    check = None
    if baseline is not None and spec.decoding.sampling.greedy:
        from specdec.bench.comparison import greedy_check_of_pair

        check = greedy_check_of_pair(pair, input_ids, result.tokens, baseline.tokens)
    text = pair.tokenizer.decode(result.tokens, skip_special_tokens=True)

    if args.json:
        print(json.dumps(_report_json(args, pair, text, result, baseline), indent=2))
    else:
        print(_report_text(pair, text, result, baseline, check, gamma=args.gamma))
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


def _report_json(args, pair, text, result, baseline) -> dict:
    from specdec.bench.comparison import RunComparison
    from specdec.kernels.devices import dtype_name

    report = {
        "target": args.target,
        "draft": args.draft,
        "device": str(pair.device),
        "dtype": dtype_name(pair.dtype),
        "precision": {"target": pair.precision, "draft": pair.draft_precision},
        "precision_details": {role: precision.to_dict() for role in ("target", "draft")
                              if (precision := pair.precision_of(role)) is not None},
        "runtime": {planned.role: planned.runtime for planned in pair.models if planned is not None},
        "plan": result.plan,
        "draft_tokenizer": pair.tokenizer_note,
        "settings": {key: getattr(args, key) for key in ("gamma", "max_new_tokens", "temperature", "top_k", "top_p", "seed", "chat",
                                                          "dtype", "quantization", "draft_quantization", "method", "runtime")}
                    | {"drafting": result.drafting, "drafted_by_default": result.by_default},
        "text": text,
        "tokens": result.tokens,
        "stats": result.stats.to_dict(),
        "costs": {"c": result.draft_cost_ratio, "measured_v": list(result.verify_costs[:17])},
    }
    if baseline is not None:
        report["compare"] = {
            "target_alone_stats": baseline.stats.to_dict(),
            "wall_clock_speedup": RunComparison(result.stats, baseline.stats, args.gamma).wall_clock_speedup,
            "identical_tokens": baseline.tokens == result.tokens,
        }
    return report


def _measured_lines(pair, result) -> list[str]:
    """What was measured on this machine at load, said of the model it was measured for: the pair's draft model's c, and the
    c the run priced its rounds with when it drafted otherwise (a model-free method: 0)."""
    if pair.costs is None:
        return []
    v = " ".join(f"{value:.2f}" for value in result.verify_costs[1:9])
    lines = [f"Measured here: a target step {pair.costs.target_step_s * 1e3:.0f} ms, v(k) for k = 1..8: {v} target steps"]
    if pair.draft is not None:
        used = "" if result.draft_cost_ratio == pair.costs.c else f"; this run drafted without it: c = {result.draft_cost_ratio:.2f}"
        lines.append(f"Measured here: the draft {pair.draft_name}'s step {pair.costs.draft_step_s * 1e3:.0f} ms, "
                     f"c = {pair.costs.c:.2f}{used}")
    return lines


def _report_text(pair, text, result, baseline, check, gamma: int | None) -> str:
    from specdec.bench.comparison import RunComparison

    stats = result.stats
    acceptance = "n/a (nothing drafted)" if stats.drafted == 0 else f"{stats.acceptance_rate:.1%}"
    tested = stats.accepted + stats.rejections
    alpha = "n/a (nothing tested)" if tested == 0 else f"{stats.alpha_estimate:.1%}"
    lines = [
        f"Plan: {result.plan}" + (f"   draft tokenizer: {pair.tokenizer_note}" if pair.cross_tokenizer else ""),
        f"Kernels: {pair.kernels}",
        *_measured_lines(pair, result),
        "--- OUTPUT ---",
        text,
        "--- STATS ---",
        f"avg tokens per target pass: {stats.tokens_per_target_pass:.2f}   (>1 means speedup)",
        f"acceptance rate (accepted/drafted): {acceptance}   ({stats.accepted} of {stats.drafted} drafted tokens accepted)",
        f"alpha (accepted/tested): {alpha}   ({stats.accepted} of {tested} tested; drafts after a rejection are never "
        "tested: this estimates the formulas' alpha)",
        *([f"tree: {stats.drafted / max(stats.target_passes - 1, 1):.1f} nodes per round on average, "
           f"{stats.accepted / max(stats.target_passes - 1, 1):.2f} accepted"] if any(r.tree for r in result.rounds) else []),
        f"new tokens: {stats.new_tokens}   target passes: {stats.target_passes}   draft passes: {stats.draft_passes}",
        f"time: {stats.wall_time_s:.2f} s   (draft {stats.draft_time_s:.2f} s, verify {stats.verify_time_s:.2f} s, "
        f"other {stats.other_time_s:.2f} s)   {stats.tokens_per_second:.1f} tokens/s",
    ]
    if baseline is not None:
        lines += [
            "--- COMPARE ---",
            f"target alone: {baseline.stats.wall_time_s:.2f} s   {baseline.stats.tokens_per_second:.1f} tokens/s",
            f"wall-clock speedup: {RunComparison(stats, baseline.stats, gamma).wall_clock_speedup:.2f}x",
        ]
        if check is not None:
            lines.append(f"identical to the target's own greedy output: {'yes' if check.identical else 'no, ' + check.message}")
    return "\n".join(lines)
