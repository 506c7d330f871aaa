"""What a drafted token costs inside a run whose target is on torch and whose draft is on llama.cpp, against the draft's
own step alone, in one process.

The two runtimes share the machine's cores: torch's threads may still be spinning after a verification pass while
llama.cpp's threads draft. This times, interleaved, (a) the draft's one-token steps alone (a loop of `llama_decode`
after the target has run) and (b) the draft's one-token passes inside a greedy speculative run drafting chains of 5
(each `feed` timed), for each OpenMP wait setting asked for. The wait setting is read when torch loads libgomp,
so each setting runs in a fresh subprocess.

    python benchmarks/mixed_draft_step.py --waits default passive --max-new-tokens 64
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

WAITS = {
    "default": {},  # what `import specdec` chooses here (spin 3,000,000 turns on a quiet machine)
    "passive": {"OMP_WAIT_POLICY": "PASSIVE"},
    "spin-300k": {"GOMP_SPINCOUNT": "300000"},
}
PROMPT = "Write a Python function that checks whether a number is prime."


def one(max_new_tokens: int, rounds: int) -> dict:
    import torch

    from specdec.engine.inputs import Decoding
    from specdec.pair.loading import load_pair
    from specdec.pair.running import encode_prompt, generate_speculative
    from specdec.run_spec import Drafting

    pair = load_pair(
        "qwen2.5-coder-1.5b",
        "qwen2.5-coder-0.5b",
        device="cpu",
        quantization="int8",
        runtime="torch",
        draft_runtime="llama.cpp",
    )
    ids = encode_prompt(pair.tokenizer, PROMPT, chat=True)
    draft, inside = pair.draft, []
    make_rows = draft.rows

    def timed_rows(*args, **kwargs):  # every one-token draft pass inside the run, timed
        rows = make_rows(*args, **kwargs)
        feed = rows.feed

        def timed(tokens, *a, **k):
            start = time.perf_counter()
            out = feed(tokens, *a, **k)
            if max(0 if t is None else int(t.numel()) for t in tokens) == 1:
                inside.append(time.perf_counter() - start)
            return out

        rows.feed = timed
        return rows

    alone = []
    for _ in range(rounds):
        rows = make_rows([0])
        rows.feed([ids.reshape(-1)])
        for token in range(16):
            start = time.perf_counter()
            rows.feed([torch.tensor([100 + token])])
            alone.append(time.perf_counter() - start)
        draft.rows = timed_rows
        generate_speculative(
            pair, ids, Decoding(temperature=0.0, max_new_tokens=max_new_tokens), Drafting(method="draft-model", gamma=5)
        )  # a chain: one-token draft passes
        draft.rows = make_rows
    return {
        "draft_step_alone_ms": round(1000 * statistics.median(alone), 1),
        "draft_step_inside_ms": round(1000 * statistics.median(inside), 1),
        "ratio": round(statistics.median(inside) / statistics.median(alone), 2),
        "steps_inside": len(inside),
        "wait": os.environ.get("OMP_WAIT_POLICY") or "default",
        "spin": os.environ.get("GOMP_SPINCOUNT") or "default",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waits", nargs="+", default=["default", "passive"], choices=sorted(WAITS))
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.max_new_tokens, args.rounds)), flush=True)
        return 0
    for wait in args.waits:
        env = {key: value for key, value in os.environ.items() if key not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
        command = [
            sys.executable,
            __file__,
            "--one",
            "--max-new-tokens",
            str(args.max_new_tokens),
            "--rounds",
            str(args.rounds),
        ]
        done = subprocess.run(command, env=env | WAITS[wait], capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        print(f"{wait}: {lines[-1] if lines else done.stderr.strip().splitlines()[-1:]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
