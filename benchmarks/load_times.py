"""First and second load time of zoo models: GGUF (dequantized, then a converted copy is saved) vs the copy.

    python benchmarks/load_times.py qwen2.5-coder-0.5b qwen2.5-coder-1.5b --dtype bfloat16

Each load runs in a fresh Python process and includes one forward pass, so lazily mapped weights
are really read. The models must be fetched already (`specdec models fetch ...`); the measurement
uses a temporary cache holding hard links to the fetched checkpoints, so your converted copies are
neither used nor touched.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

LOAD_ONE = """
import sys, time, torch
start = time.perf_counter()
from specdec import load_model
model = load_model(sys.argv[1], device="cpu", dtype=sys.argv[2])
with torch.inference_mode():
    model(input_ids=torch.tensor([[1, 2, 3, 4]]))
print(f"{time.perf_counter() - start:.1f}")
"""


def timed_load(name: str, dtype: str, cache: Path) -> float:
    env = {**os.environ, "SPECDEC_CACHE": str(cache)}
    completed = subprocess.run(
        [sys.executable, "-c", LOAD_ONE, name, dtype], env=env, capture_output=True, text=True, check=True
    )
    return float(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--dtype", default="bfloat16")
    args = parser.parse_args()

    from specdec.zoo.catalog import require_model
    from specdec.zoo.fetch import checkpoint_path, is_cached

    with tempfile.TemporaryDirectory(dir=Path(checkpoint_path(require_model(args.models[0]))).parents[2]) as scratch:
        cache = Path(scratch)
        print("| model | dtype | first load (GGUF, then converted copy saved) | second load (converted copy) | ratio |")
        print("|---|---|---|---|---|")
        for name in args.models:
            entry = require_model(name)
            if not is_cached(entry):
                raise SystemExit(f"{name} is not fetched: run `specdec models fetch {name}` first")
            link = cache / "models" / entry.name / entry.package.filename
            link.parent.mkdir(parents=True)
            os.link(checkpoint_path(entry), link)
            first, second = timed_load(name, args.dtype, cache), timed_load(name, args.dtype, cache)
            print(f"| {name} | {args.dtype} | {first:.1f} s | {second:.1f} s | {second / first:.2f} |")


if __name__ == "__main__":
    main()
