"""`specdec bench`'s options: pairs, methods, gammas, prompts, engines, outputs."""

from __future__ import annotations

import argparse

from specdec.cli.arguments import counts, floats, gammas, listed, names, positive_int


def bench_options(bench: argparse.ArgumentParser, bench_methods, families, RUNTIMES: tuple[str, ...]) -> None:
    """`specdec bench`'s options: pairs, methods, gammas, prompts, engines, outputs."""
    _suite_options(bench, bench_methods, families)
    _model_options(bench, RUNTIMES)
    _engine_options(bench)
    _output_options(bench)


def _suite_options(bench: argparse.ArgumentParser, bench_methods, families) -> None:
    """What the suite runs: pairs, methods, gammas, prompts, sampling and repeats."""
    bench.add_argument(
        "--pairs",
        nargs="+",
        default=["qwen2.5-coder-0.5b->qwen2.5-coder-1.5b"],
        metavar="DRAFT->TARGET",
        help="pairs as 'draft->target' (zoo names, hub ids or paths; draft may be prompt-lookup)",
    )
    bench.add_argument(
        "--methods",
        type=names,
        default=("speculative",),
        help=f"comma-separated: {listed(bench_methods())}; 'all' for every family side by side, Spec-Bench style "
        f"({listed(families())}; generate, the baseline, always runs)",
    )
    bench.add_argument(
        "--gammas",
        type=gammas,
        default=None,
        help="comma-separated gammas, 'default' (what speculative_generate drafts by default), 'adaptive', "
        "'stop' (a chain under the stop rule; default stop), 'tree' "
        "and/or 'tree-N' (a token tree of at most N nodes); with --engine vllm whole numbers only (default 5)",
    )
    bench.add_argument(
        "--max-adaptive-gamma", type=positive_int, default=12, help="the largest gamma 'adaptive' may pick (default 12)"
    )
    bench.add_argument("--categories", type=names, default=None, help="comma-separated prompt categories (default all)")
    bench.add_argument(
        "--prompts-per-category", type=positive_int, default=None, help="at most this many prompts per category"
    )
    bench.add_argument("--temperatures", type=floats, default=(0.0,), help="comma-separated temperatures (default 0)")
    bench.add_argument("--repeats", type=positive_int, default=1, help="runs of every combination (default 1)")
    bench.add_argument("--warmup", type=int, default=1, help="unrecorded warm-up runs per method (default 1)")
    bench.add_argument("--max-new-tokens", type=positive_int, default=128, help="tokens per run (default 128)")


def _model_options(bench: argparse.ArgumentParser, RUNTIMES: tuple[str, ...]) -> None:
    """How the models run (draft vocabulary, precision, seed,
    runtimes, device, dtype), and where the rows go (--out)."""
    bench.add_argument(
        "--draft-vocab-limit",
        type=positive_int,
        default=None,
        help="let the draft compute only its first K output rows (faster draft, still exact)",
    )
    bench.add_argument(
        "--quantization",
        default="auto",
        help="the target's weights for every method: auto (int8 on a CPU), none, int8 or int4",
    )
    bench.add_argument(
        "--draft-quantization",
        default="auto",
        help="the draft's weights for every method that uses it: auto (int4 on a CPU), none, int8 or int4",
    )
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument(
        "--runtime", default="auto", choices=RUNTIMES, help="what runs the target (as for `specdec run`; a CSV column)"
    )
    bench.add_argument(
        "--draft-runtime", default="auto", choices=RUNTIMES, help="what runs the draft model (as for `specdec run`)"
    )
    bench.add_argument("--device", default="auto")
    bench.add_argument("--dtype", default="auto")
    bench.add_argument("--out", default=None, help="write one row per run to this CSV file")


def _engine_options(bench: argparse.ArgumentParser) -> None:
    """Where it runs: specdec, vLLM offline or a vLLM server, or batches."""
    bench.add_argument(
        "--engine",
        choices=("specdec", "vllm"),
        default="specdec",
        help="specdec (default), or vllm: the same prompts through vLLM's offline LLM in its own environment "
        "(requirements-vllm.txt; a draft pair runs vLLM's draft model, a prompt-lookup pair its n-gram lookup)",
    )
    bench.add_argument(
        "--vllm-python",
        default=None,
        metavar="PYTHON",
        help="the Python that has vLLM (default: $SPECDEC_VLLM_PYTHON, else .venv-vllm/bin/python)",
    )
    bench.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="run the suite against a running vLLM server with --speculative-config (OpenAI API and /metrics) "
        "at each --concurrency, instead of loading models here",
    )
    bench.add_argument(
        "--baseline-server",
        default=None,
        metavar="URL",
        help="the same model served without speculation: the baseline of the server's speedups",
    )
    bench.add_argument(
        "--server-model", default=None, metavar="NAME", help="the served model's name (default: the server's only one)"
    )
    bench.add_argument(
        "--concurrency",
        type=counts,
        default=(1, 4, 16),
        help="comma-separated numbers of requests in flight at a time (default 1,4,16)",
    )
    bench.add_argument(
        "--batch-sizes",
        type=counts,
        default=None,
        metavar="B,B,...",
        help="measure batches instead of the suite: plain and speculative throughput of the same prompts at "
        "each batch size (e.g. 1,2,4,8; the first pair, greedy by default)",
    )


def _output_options(bench: argparse.ArgumentParser) -> None:
    """What it writes: a summary of earlier CSVs, the charts, markdown tables."""
    bench.add_argument(
        "--from-csv",
        nargs="+",
        default=None,
        metavar="CSV",
        help="run nothing: summarise (and chart, with --figure) the rows of earlier --out files, together",
    )
    bench.add_argument(
        "--figure", default=None, help="write the charts to this .html or .png file (png needs kaleido and chromium)"
    )
    bench.add_argument("--markdown", action="store_true", help="print the summary as a markdown table")
