"""Plain decoding on the llama.cpp runtime when another process takes a core *after* the model loaded, quiet first.

    python benchmarks/busy_after_start.py --rounds 2 --tokens 64

The zoo's 1.5B (GGUF, llama.cpp runtime, its thread governor on), greedy, one prompt: each round times a quiet run, then
starts a busy loop (`sh -c 'while :; do :; done'`) and times a run beside it, for torch's intra-op threads at 2 and at 1
(the order alternates between rounds). What the thread wait policy decided at `import specdec` stays as it was: the
machine was quiet then. Nothing here is run by the tests; the numbers depend on the CPU (name the kind beside them).
"""

from __future__ import annotations

import argparse
import subprocess
import time

import torch

from specdec import load_model
from specdec.generation.autoregressive import autoregressive_generate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--target", default="qwen2.5-coder-1.5b")
    args = parser.parse_args()
    model = load_model(args.target, runtime="llama.cpp")
    ids = torch.tensor(list(range(1000, 1041)))
    autoregressive_generate(model, ids, max_new_tokens=16, temperature=0)  # warm up

    def rate() -> float:
        start = time.perf_counter()
        autoregressive_generate(model, ids, max_new_tokens=args.tokens, temperature=0)
        return args.tokens / (time.perf_counter() - start)

    for round_ in range(args.rounds):
        for threads in (2, 1) if round_ % 2 == 0 else (1, 2):
            torch.set_num_threads(threads)
            quiet = rate()
            busy = subprocess.Popen(["sh", "-c", "while :; do :; done"])
            time.sleep(0.5)
            beside = rate()
            busy.kill()
            busy.wait()
            time.sleep(0.5)
            print(
                f"torch threads {threads}: quiet {quiet:.1f} tok/s, a core busy after start {beside:.1f} tok/s "
                f"({beside / quiet:.2f}x)",
                flush=True,
            )


if __name__ == "__main__":
    main()
