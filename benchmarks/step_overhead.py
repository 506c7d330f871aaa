"""Where plain decoding's time goes on llama.cpp: the engine's loop, a bare `llama_decode` loop and `llama-completion`,
interleaved in one script.

    specdec runtime build                      # the library and llama-completion built for this CPU (optional)
    python benchmarks/step_overhead.py --rounds 8 --out guide/measurements/avx512-bf16/step-overhead.json

Three ways to decode 128 tokens greedily after the suite's code prompt, with the zoo's 1.5B Q4_K_M on 2 threads, in the
order A B C on even rounds and C B A on odd ones, so slow drift hits all three alike:

- **engine**: `autoregressive_generate`, the one loop with the drafter that drafts nothing, on specdec's llama.cpp
  runtime (the exact settings): what `specdec run --method plain` runs;
- **bare**: the same runtime's `Context.decode`, one token a pass, and a NumPy argmax: nothing but the passes;
- **llama-completion**: llama.cpp's own tool on its defaults (a subprocess; its `eval time` line with the tokens' share
  of its sampling and printing, read as `benchmarks/llama_cpp.py` reads them), when one is found.

Reported, each as the median over rounds: tokens a second after the prompt pass, each ratio to `llama-completion` (per
round, then the median), and the engine's seconds a token outside `llama_decode` (its wall time less the time inside
the library's calls, timed around `Context._decode_one`). That last is Python between the passes: the loop, the rule,
the cache's bookkeeping; it runs with cold caches, since every pass streams a gigabyte of weights through them.
Nothing here is run by the tests.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def llama_completion_tokens_per_s(tool: Path, model: Path, prompt_file: Path, prompt_ids: list[int], args) -> float:
    """llama-completion's own generation speed (the tokens after the prompt pass), run and read as
    the side-by-side benchmark runs and reads it (`benchmarks/llama_cpp.py`, which also checks its prompt's tokens)."""
    from benchmarks.llama_cpp import llama_command, parse_completion

    command = llama_command(
        "llama-completion", tool.parent.parent, model, model, prompt_file, args.tokens, args.threads, 0, 4096
    )
    done = subprocess.run(command, capture_output=True, text=True, check=True, stdin=subprocess.DEVNULL)
    return parse_completion(done.stdout, done.stderr, prompt_ids).tokens_per_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--llama-completion", type=Path, help="the tool (default: the one `specdec runtime build` made)"
    )
    parser.add_argument("--out", type=Path, help="write the medians and every round here (JSON)")
    args = parser.parse_args()

    import numpy as np
    import torch

    import specdec
    from specdec.bench.prompts import encode_bench_prompt, suite
    from specdec.generation.autoregressive import autoregressive_generate
    from specdec.runtime.llama_cpp import context as llama_context
    from specdec.runtime.llama_cpp import native
    from specdec.runtime.llama_cpp.context import Entry
    from specdec.runtime.llama_cpp.model import load_gguf

    from benchmarks.llama_cpp import TARGET, BenchmarkError, model_path, prompt_text

    try:
        path = model_path(TARGET)
    except BenchmarkError as error:
        raise SystemExit(f"error: {error}") from None
    tool = args.llama_completion or native.folder() / "tools" / "bin" / "llama-completion"
    model = load_gguf(path, threads=args.threads)
    tokenizer = specdec.load_tokenizer(TARGET)
    prompt = suite(("code",), 1)[0]
    ids = encode_bench_prompt(tokenizer, prompt)  # [1, T]
    inside = [0.0]  # seconds inside llama_decode calls (and their logits copy) since the first new token
    decode_one = llama_context.Context._decode_one

    def timed(self, entries):
        start = time.perf_counter()
        try:
            return decode_one(self, entries)
        finally:
            inside[0] += time.perf_counter() - start

    llama_context.Context._decode_one = timed  # measured from outside; the runtime is unchanged

    def engine() -> tuple[float, float]:
        first: list[float] = []

        def mark(_) -> None:
            if not first:
                first.append(time.perf_counter())
                inside[0] = 0.0

        result = autoregressive_generate(
            model, ids, max_new_tokens=args.tokens, temperature=0, eos_token_id=None, on_token=mark
        )
        wall = time.perf_counter() - first[0]
        steps = len(result.tokens) - 1
        return steps / wall, (wall - inside[0]) / steps

    def bare() -> float:
        model.rows([0])  # an empty cache: the model's one idle context, cleared
        context = model._contexts[-1]
        row = context.acquire()
        prompt_ids = ids.reshape(-1).tolist()
        entries = [Entry(t, i, (row,), output=i == len(prompt_ids) - 1) for i, t in enumerate(prompt_ids)]
        token, position = int(np.argmax(context.decode(entries, prompt=True)[0])), len(prompt_ids)
        start = time.perf_counter()
        for _ in range(args.tokens - 1):
            token = int(np.argmax(context.decode([Entry(token, position, (row,), output=True)])[0]))
            position += 1
        return (args.tokens - 1) / (time.perf_counter() - start)

    with tempfile.TemporaryDirectory() as scratch, torch.inference_mode():
        prompt_file = Path(scratch) / "prompt.txt"
        text = prompt_text(tokenizer, prompt)
        prompt_file.write_text(text + "\n", encoding="utf-8")  # llama.cpp drops one final newline from a prompt file
        has_tool = tool.is_file()

        def completion() -> float:
            return llama_completion_tokens_per_s(tool, path, prompt_file, ids.reshape(-1).tolist(), args)

        runs = {"engine": engine, "bare": bare} | ({"llama-completion": completion} if has_tool else {})
        for run in runs.values():  # warm-up, unrecorded
            run()
        speeds: dict[str, list[float]] = {name: [] for name in runs}
        outside: list[float] = []
        for round_ in range(args.rounds):
            for name in list(runs) if round_ % 2 == 0 else list(runs)[::-1]:
                measured = runs[name]()
                if name == "engine":
                    measured, seconds = measured
                    outside.append(seconds)
                speeds[name].append(measured)
            print(f"round {round_}: " + ", ".join(f"{name} {values[-1]:.1f}" for name, values in speeds.items()))
    report = {
        "model": path.name,
        "library": str(model.library.path),
        "llama_completion": str(tool) if has_tool else None,
        "threads": args.threads,
        "tokens": args.tokens,
        "rounds": args.rounds,
        "tokens_per_s": {name: statistics.median(values) for name, values in speeds.items()},
        "outside_llama_decode_ms_per_token": 1000 * statistics.median(outside),
        "per_round": {name: [round(value, 2) for value in values] for name, values in speeds.items()},
    }
    if has_tool:
        report["x_llama_completion"] = {
            name: statistics.median(a / b for a, b in zip(speeds[name], speeds["llama-completion"]))
            for name in ("engine", "bare")
        }
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
