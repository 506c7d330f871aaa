"""`specdec run`'s options: the pair and how it drafts, how it decodes, what runs it and what it reports."""

from __future__ import annotations

import argparse

from specdec.cli.arguments import fields, gamma, listed, positive_int

DEFAULT_PROMPT = "Write a Python function that checks whether a number is prime."


def run_options(
    run: argparse.ArgumentParser, registry, GAMMA_RANGE: tuple[int, int], RUNTIMES: tuple[str, ...]
) -> None:
    """`specdec run`'s options: the pair, how it drafts, decodes and runs, and what it reports."""
    _pair_options(run, registry)
    _decoding_options(run, GAMMA_RANGE)
    _running_options(run, RUNTIMES)


def _pair_options(run: argparse.ArgumentParser, registry) -> None:
    """The pair and how it drafts: target, draft, method, the method's options, a corpus, the prompt."""
    run.add_argument(
        "--target",
        default="qwen2.5-coder-1.5b",
        help="target model p: a zoo name (specdec models list), hub id, local folder or .gguf file",
    )
    run.add_argument(
        "--draft",
        default="qwen2.5-coder-0.5b",
        help="draft model q (any tokenizer), or a method that needs no draft model: "
        f"{listed(registry.target_only())}; or a trained EAGLE-3 head: eagle (the one `specdec heads train` made "
        "for the target) or a head's folder",
    )
    from specdec.run_spec import FASTEST_PLAN

    run.add_argument(
        "--method",
        default=None,
        choices=[*registry.METHODS, FASTEST_PLAN],
        metavar="METHOD",
        help="how to draft (default: what the draft implies; a draft model drafts a chain or tree as the policy "
        f"chooses, even where it does not pay here, and the plan says so); {FASTEST_PLAN}: the fastest exact "
        "plan here, which may draft without the draft model or not at all; "
        + "; ".join(f"{name}: {method.summary}" for name, method in registry.METHODS.items()),
    )
    run.add_argument(
        "--option",
        action="append",
        default=None,
        metavar="NAME=VALUE",
        help="an option of the method (repeatable), e.g. --method tree --option budget=8; "
        + "; ".join(
            f"{name}: {', '.join(fields(method))}" for name, method in registry.METHODS.items() if fields(method)
        ),
    )
    run.add_argument(
        "--corpus",
        nargs="+",
        default=None,
        metavar="FILE",
        help="text files whose tokens a method that reads a corpus also drafts from: "
        f"{listed(name for name, method in registry.METHODS.items() if registry.CORPUS in method.uses)}",
    )
    run.add_argument("--prompt", default=DEFAULT_PROMPT, help="the text to continue")


def _decoding_options(run: argparse.ArgumentParser, GAMMA_RANGE: tuple[int, int]) -> None:
    """How it decodes: gamma or a tree, how many tokens, the sampling settings and the seed."""
    run.add_argument(
        "--gamma",
        type=gamma,
        default=None,
        metavar="GAMMA",
        help=f"drafted tokens per round, {GAMMA_RANGE[0]}..{GAMMA_RANGE[1]}, or auto (default): draft while another "
        "token "
        "is worth its cost, a token tree where a draft step is dear (a bfloat16 draft; specdec.default_drafter)",
    )
    run.add_argument(
        "--tree",
        action="store_true",
        help="draft a token tree instead of a chain (--method tree), verified in one target pass",
    )
    run.add_argument(
        "--tree-budget",
        type=positive_int,
        default=None,
        metavar="N",
        help="at most N drafted nodes per tree (implies --tree; --option budget=N; default 16)",
    )
    run.add_argument("--max-new-tokens", type=int, default=64, help="tokens to generate at most (default 64)")
    run.add_argument("--temperature", type=float, default=1.0, help="0 is greedy (default 1.0)")
    run.add_argument("--top-k", type=int, default=0, help="keep the k most likely tokens; 0 keeps all (default)")
    run.add_argument(
        "--top-p", type=float, default=1.0, help="keep the smallest set with this much probability; 1 keeps all"
    )
    run.add_argument("--seed", type=int, default=None, help="random seed: the same seed gives the same text")


def _running_options(run: argparse.ArgumentParser, RUNTIMES: tuple[str, ...]) -> None:
    """What runs it (device, precision, runtimes) and what it reports."""
    run.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps (default auto)")
    run.add_argument(
        "--dtype",
        default="auto",
        help="auto, float32, bfloat16 or float16 (default auto: float32 on a CPU, bfloat16 for int4 weights)",
    )
    run.add_argument(
        "--quantization",
        default="auto",
        help="the target's weights: auto (default: int8 on a CPU, none elsewhere), none, int8 or int4 (CPU); "
        "exactness holds against the target as loaded",
    )
    run.add_argument(
        "--draft-quantization",
        default="auto",
        help="the draft's weights: auto (default: int4 on a CPU, none elsewhere), none, int8 or int4 (cheaper drafts, "
        "same output)",
    )
    run.add_argument(
        "--runtime",
        default="auto",
        choices=RUNTIMES,
        help="what runs the models: auto (default: llama.cpp for a GGUF model on a CPU where its self-test passes, "
        "else torch), torch (transformers: any model, CUDA, MPS, hidden states) or llama.cpp (GGUF files); "
        "auto may pick w8a8 weights on torch where this machine measured them faster",
    )
    run.add_argument(
        "--draft-runtime",
        default="auto",
        choices=RUNTIMES,
        help="what runs the draft model: auto (default: llama.cpp's fastest settings for a GGUF draft on a CPU that "
        "shares the target's tokenizer, whatever runs the target), torch or llama.cpp",
    )
    run.add_argument("--chat", action="store_true", help="wrap the prompt in the target's chat template")
    run.add_argument(
        "--compare", action="store_true", help="also run the target alone and report the wall-clock speedup"
    )
    run.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
