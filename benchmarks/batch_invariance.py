"""Each torch target path, proved and cut: its k*, its v(k), and greedy speculative output against its own plain output.

For every target path asked for (`--paths dtype:quantization ...`), on the zoo's Qwen2.5-Coder pair with the 0.5B
drafting on llama.cpp's fastest settings: the self-test's verdict (k*, how long it took, or that it was kept), the cost
of a cut pass over k tokens in one-token steps, v(k), and for each prompt category, greedy speculative decoding (the
planner's drafting for this pair) and the same target alone, interleaved, each prompt's tokens compared token for
token. Writes one CSV row per path and prompt.

    python benchmarks/batch_invariance.py --paths float32:none bfloat16:none float32:int8 --max-new-tokens 128 \\
        --out benchmarks/batch-invariance-avx512-vnni.csv

`--self-test-only` runs each path's self-test afresh instead (k*, the padding chosen, its seconds: what a first
load pays). Needs the models fetched (`specdec models fetch qwen2.5-coder-0.5b qwen2.5-coder-1.5b`); time it on a
quiet machine.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

import torch

from specdec.bench.comparison import first_difference
from specdec.bench.prompts import encode_bench_prompt, suite
from specdec.engine.inputs import Decoding
from specdec.pair.loading import load_pair
from specdec.pair.running import generate_plain, generate_speculative
from specdec.store.machine import cpu_facts

TARGET, DRAFT = "qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"


def v_of_k(target, sizes=(1, 2, 4, 8, 12, 17), rounds=3) -> dict[int, float]:
    """The median time of a pass over k tokens after a 64-token text, in one-token steps, through the target's cut."""
    text = torch.arange(100, 100 + 64 + max(sizes))
    times: dict[int, list[float]] = {k: [] for k in sizes}
    rows = target.rows([0])
    rows.feed([text[:64]])
    for _ in range(rounds):
        for k in sizes:
            start = time.perf_counter()
            rows.feed([text[64 : 64 + k]], last=k)
            times[k].append(time.perf_counter() - start)
            rows.rollback(0, 64)
    step = statistics.median(times[1])
    return {k: statistics.median(t) / step for k, t in times.items()} | {0: step}


def self_tests(paths: list[str]) -> int:
    """Each path's self-test run afresh (not the kept verdict): k*, the padding it chose, and how long it took."""
    from specdec.kernels.batch_invariance import self_test
    from specdec.zoo.loading import load_model

    for path in paths:
        dtype, quantization = path.split(":")
        module = load_model(TARGET, device="cpu", dtype=dtype, quantization=quantization, role="target")
        verdict = self_test(module)
        print(
            f"{path}: k* = {verdict.k_star}, one-row calls padded to {verdict.min_rows}, {verdict.seconds:.1f} s"
            f" ({verdict.why})",
            flush=True,
        )
        del module
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", nargs="+", default=["float32:none", "bfloat16:none", "float32:int8"])
    parser.add_argument("--categories", nargs="+", default=["code", "summarization", "qa", "math"])
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--self-test-only", action="store_true", help="time each path's self-test afresh, no runs")
    args = parser.parse_args(argv)
    if args.self_test_only:
        return self_tests(args.paths)
    rows = []
    print(f"CPU: {cpu_facts()['cpu']} {cpu_facts()['flags']}", flush=True)
    for path in args.paths:
        dtype, quantization = path.split(":")
        start = time.perf_counter()
        pair = load_pair(
            TARGET,
            DRAFT,
            device="cpu",
            dtype=dtype,
            quantization=quantization,
            runtime="torch",
            draft_runtime="llama.cpp",
            progress=lambda line: print("  " + line, flush=True),
        )
        loaded = time.perf_counter() - start
        target = pair.target
        costs = v_of_k(target)
        print(
            f"{path}: k* = {target.k_star} ({target.rows_check}); load {loaded:.1f} s; step {costs[0] * 1000:.0f} ms;"
            f" v(k) " + ", ".join(f"v({k}) = {v:.2f}" for k, v in costs.items() if k),
            flush=True,
        )
        decoding = Decoding(temperature=0.0, max_new_tokens=args.max_new_tokens)
        for prompt in suite(args.categories, per_category=1):
            ids = encode_bench_prompt(pair.tokenizer, prompt)
            fast = generate_speculative(pair, ids, decoding)
            alone = generate_plain(pair, ids, decoding)
            parted = first_difference(fast.tokens, alone.tokens)
            row = {
                "path": path,
                "k_star": target.k_star,
                "prompt": prompt.id,
                "identical": parted is None,
                "first_difference": "" if parted is None else parted,
                "tokens_per_pass": round(fast.stats.tokens_per_target_pass, 2),
                "speculative_tok_s": round(fast.stats.tokens_per_second, 2),
                "alone_tok_s": round(alone.stats.tokens_per_second, 2),
                "speedup": round(fast.stats.tokens_per_second / alone.stats.tokens_per_second, 3),
                "step_ms": round(costs[0] * 1000, 1),
                **{f"v{k}": round(v, 2) for k, v in costs.items() if k},
                "cpu": cpu_facts()["cpu"],
            }
            rows.append(row)
            print(
                f"  {prompt.id}: identical {row['identical']} (first difference {row['first_difference'] or '-'}),"
                f" {row['tokens_per_pass']} tokens per pass, {row['speculative_tok_s']} against"
                f" {row['alone_tok_s']} tok/s alone: {row['speedup']}x",
                flush=True,
            )
        del pair, target
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0 if all(row["identical"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
