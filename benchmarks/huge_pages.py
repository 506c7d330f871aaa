"""What huge pages for llama.cpp's weights cost at load and win per step (`specdec.runtime.llama_cpp.huge_pages`).

    python benchmarks/huge_pages.py --rounds 8 --out guide/measurements/avx512-bf16/huge-pages.json

The zoo's 1.5B Q4_K_M target on the llama.cpp runtime, 2 threads, greedy after the suite's code prompt:

- **load**: a fresh process loads the file, with and without asking for huge pages, in turns (A B, then B A, ...),
  `--gap` seconds apart, as runs of `specdec run` come; the seconds of `load_gguf` alone (the library already loaded).
  On this project's VMs memory a process freed a few seconds ago is slow to hand out again in huge pages; right after
  another process freed its huge pages it is fast (`--gap 0` shows both);
- **step**: one process loads it twice, once each way, and decodes 128 tokens with each in turns; tokens a second
  after the prompt pass, the per-round ratio, and a check that both wrote the same tokens.

Needs Linux with transparent huge pages set to `madvise` (`/sys/kernel/mm/transparent_hugepage/enabled`): with
`always` every large region gets them anyway, with `never` none. Nothing here is run by the tests.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LOAD_ONCE = """
import sys, time
sys.path.insert(0, {root!r})
from specdec.runtime.llama_cpp.library import load_library
from specdec.runtime.llama_cpp.model import load_gguf
load_library()
start = time.perf_counter()
load_gguf({path!r}, threads={threads}, huge_pages={huge})
print(time.perf_counter() - start)
"""


def huge_kib() -> int:
    """This process's anonymous memory on huge pages, KiB."""
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--gap", type=float, default=10.0, help="seconds between two loads")
    parser.add_argument("--out", type=Path, help="write the medians and every round here (JSON)")
    args = parser.parse_args()

    import torch

    import specdec
    from specdec.bench.prompts import encode_bench_prompt, suite
    from specdec.generation.autoregressive import autoregressive_generate
    from specdec.runtime.llama_cpp.huge_pages import thp_setting
    from specdec.runtime.llama_cpp.model import load_gguf

    from benchmarks.llama_cpp import TARGET, BenchmarkError, model_path

    if thp_setting() != "madvise":
        raise SystemExit(f"error: transparent huge pages are {thp_setting() or 'absent'} here, not madvise")
    try:
        path = model_path(TARGET)
    except BenchmarkError as error:
        raise SystemExit(f"error: {error}") from None
    loads: dict[str, list[float]] = {"huge": [], "small": []}
    for round_ in range(args.rounds):
        for huge in (True, False) if round_ % 2 == 0 else (False, True):
            time.sleep(args.gap)
            code = LOAD_ONCE.format(root=str(ROOT), path=str(path), threads=args.threads, huge=huge)
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            loads["huge" if huge else "small"].append(float(done.stdout.split()[-1]))
        print(f"load {round_}: huge {loads['huge'][-1]:.2f} s, small {loads['small'][-1]:.2f} s")

    models = {"huge": load_gguf(path, threads=args.threads, huge_pages=True)}
    on_huge_pages = huge_kib()
    models["small"] = load_gguf(path, threads=args.threads, huge_pages=False)
    tokenizer = specdec.load_tokenizer(TARGET)
    ids = encode_bench_prompt(tokenizer, suite(("code",), 1)[0])  # [1, T]

    def decode(name: str) -> tuple[float, list[int]]:
        first: list[float] = []
        result = autoregressive_generate(
            models[name], ids, max_new_tokens=args.tokens, temperature=0, eos_token_id=None,
            on_token=lambda _: first.append(time.perf_counter()) if not first else None,
        )  # fmt: skip
        return (len(result.tokens) - 1) / (time.perf_counter() - first[0]), result.tokens

    speeds: dict[str, list[float]] = {"huge": [], "small": []}
    with torch.inference_mode():
        written = {name: decode(name)[1] for name in models}  # warm-up, unrecorded
        if written["huge"] != written["small"]:
            raise SystemExit("error: the two loads wrote different tokens: huge pages must not change a bit")
        for round_ in range(args.rounds):
            for name in ("huge", "small") if round_ % 2 == 0 else ("small", "huge"):
                speed, tokens = decode(name)
                if tokens != written[name]:
                    raise SystemExit(f"error: the {name} load wrote other tokens in round {round_}")
                speeds[name].append(speed)
            print(f"step {round_}: huge {speeds['huge'][-1]:.1f}, small {speeds['small'][-1]:.1f} tokens/s")
    report = {
        "model": path.name,
        "threads": args.threads,
        "tokens": args.tokens,
        "rounds": args.rounds,
        "gap_s": args.gap,
        "on_huge_pages_mib": on_huge_pages // 1024,
        "load_s": {name: statistics.median(values) for name, values in loads.items()},
        "tokens_per_s": {name: statistics.median(values) for name, values in speeds.items()},
        "step_x": statistics.median(a / b for a, b in zip(speeds["huge"], speeds["small"])),
        "per_round": {"load_s": loads, "tokens_per_s": speeds},
    }
    print(json.dumps({key: value for key, value in report.items() if key != "per_round"}, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
