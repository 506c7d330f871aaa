"""What a waiting OpenMP thread costs: plain decoding of the default target under each wait policy, quiet and beside a
busy core, interleaved in one script (each run a fresh process: libgomp reads its policy once, when it loads).

    python benchmarks/thread_wait.py --rounds 2 --tokens 64 --out guide/measurements/avx2/thread-wait.csv

Policies: PASSIVE (threads sleep at once between parallel regions), libgomp's default (spin about 300,000 times, then
sleep: OMP_WAIT_POLICY left empty), ACTIVE (spin forever, idle threads too), "spin 30M" and "spin 3M"
(GOMP_SPINCOUNT=30000000 or 3000000: spin about 0.7 s or 0.07 s after the last operation, then sleep). "busy" runs `yes
> /dev/null` beside the decoding, one core of two taken. Needs the zoo's qwen2.5-coder-1.5b fetched (`specdec models
fetch qwen2.5-coder-1.5b`).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

POLICIES = {
    "passive": {"OMP_WAIT_POLICY": "PASSIVE"},
    "default spin": {"OMP_WAIT_POLICY": ""},
    "active": {"OMP_WAIT_POLICY": "ACTIVE"},
    "spin 30M": {"OMP_WAIT_POLICY": "", "GOMP_SPINCOUNT": "30000000"},  # spins long, then sleeps: idle is idle
    "spin 3M": {"OMP_WAIT_POLICY": "", "GOMP_SPINCOUNT": "3000000"},
}
CHILD = r"""
import json, sys, time
from specdec.pair import loading, running
from specdec.run_spec import RunSpec
from specdec.engine.inputs import Decoding
from specdec.cli.run_options import DEFAULT_PROMPT
spec = RunSpec(draft="prompt-lookup", decoding=Decoding(int(sys.argv[1]), 0.0))
pair = loading.load_spec(spec)
ids = running.encode_prompt(pair.tokenizer, DEFAULT_PROMPT, chat=True)
running.generate_plain(pair, ids, Decoding(8, 0.0))                       # warm
result = running.generate_plain(pair, ids, spec.decoding)
print(json.dumps({"tokens_per_s": result.stats.tokens_per_second, "new_tokens": result.stats.new_tokens}))
"""


def one_run(policy: dict[str, str], busy: bool, tokens: int) -> float:
    """Tokens per second of one plain decoding in a fresh process under `policy`, beside `yes` when `busy`."""
    hog = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) if busy else None
    try:
        env = {name: value for name, value in os.environ.items() if name != "GOMP_SPINCOUNT"} | policy
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(tokens)], env=env, capture_output=True, text=True, check=True
        )
        return json.loads(out.stdout.strip().splitlines()[-1])["tokens_per_s"]
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--out", default=None)
    parser.add_argument("--policies", default=",".join(POLICIES), help="comma-separated, of: " + ", ".join(POLICIES))
    args = parser.parse_args(argv)
    rows = []
    for round_ in range(args.rounds):
        for busy in (False, True):
            for name in args.policies.split(","):
                speed = one_run(POLICIES[name], busy, args.tokens)
                rows.append(
                    {
                        "round": round_,
                        "load": "one core busy" if busy else "quiet",
                        "policy": name,
                        "tokens_per_s": round(speed, 2),
                    }
                )
                print(rows[-1], flush=True)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", newline="") as file:
            writer = csv.DictWriter(file, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
