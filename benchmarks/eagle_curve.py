"""What an EAGLE-3 head buys, against the 0.5B draft model and against minutes of training, on the bench suite.

    python benchmarks/eagle_curve.py --heads ~/.cache/specdec/heads/qwen2.5-coder-1.5b SNAPSHOT... \
        --out benchmarks/eagle-curve.csv

Heads are folders `save_head` wrote: the final one, and the snapshots `train_pair_head(snapshots=...)` kept along the
way (their minutes of training are in `training/progress.json` or the folder's name). For every prompt of the bench
suite (`--per-category` per category, greedy, `--max-new-tokens`), interleaved in one process: the target alone, the
0.5B draft model at `specdec run`'s defaults (int8 target, int4 draft, what `speculative_generate` drafts by
default), and each head in int8 (as `specdec run --draft eagle` runs it on a CPU). Every speculative run is checked
against the target alone's tokens. c is a draft pass's seconds over the target alone's seconds per token.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
from pathlib import Path

from specdec.bench.prompts import encode_bench_prompt, suite
from specdec.heads.reader import EagleDrafter
from specdec.engine.inputs import Decoding
from specdec.planner.drafting import plan_for
from specdec.generation.run import run_plan
from specdec.heads.files import load_head
from specdec.kernels.quantization import quantize_linears
from specdec.kernels.precision import AUTO
from specdec.pair.running import generate_plain, generate_speculative
from specdec.pair.loading import load_pair


def minutes_of(folder: Path) -> float:
    progress = folder / "training" / "progress.json"
    if progress.is_file():
        return json.loads(progress.read_text())["history"][-1]["minutes"]
    found = re.search(r"([\d.]+)min", folder.name)
    return float(found.group(1)) if found else float("nan")


def row(method: str, minutes: float, prompt, result, alone) -> dict:
    stats = result.stats
    step = alone.stats.wall_time_s / max(alone.stats.new_tokens, 1)
    assert result.tokens == alone.tokens, f"{method} on {prompt.id}: not the target's greedy text"
    return {
        "method": method,
        "minutes": minutes,
        "category": prompt.category,
        "prompt": prompt.id,
        "tokens_per_target_pass": round(stats.tokens_per_target_pass, 3),
        "acceptance_rate": round(stats.acceptance_rate, 3),
        "c": round(stats.draft_time_s / max(stats.draft_passes, 1) / step, 4),
        "speedup": round(alone.stats.wall_time_s / stats.wall_time_s, 3),
        "tokens_per_s": round(stats.new_tokens / stats.wall_time_s, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heads", nargs="+", required=True, help="head folders")
    parser.add_argument("--target", default="qwen2.5-coder-1.5b")
    parser.add_argument("--draft", default="qwen2.5-coder-0.5b")
    parser.add_argument("--per-category", type=int, default=1)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    pair = load_pair(args.target, args.draft, "auto", "auto", quantization="auto", draft_quantization="auto")
    heads = [
        (
            f"eagle ({minutes_of(Path(folder)):.0f} min)",
            minutes_of(Path(folder)),
            quantize_linears(load_head(folder, pair.target), "int8"),
        )
        for folder in sorted(args.heads, key=lambda h: minutes_of(Path(h)))
    ]
    decoding = Decoding(max_new_tokens=args.max_new_tokens, temperature=0.0)
    # warm-up
    generate_plain(pair, encode_bench_prompt(pair.tokenizer, suite(per_category=1)[0]), Decoding(max_new_tokens=8))
    rows = []
    for prompt in suite(per_category=args.per_category):
        ids = encode_bench_prompt(pair.tokenizer, prompt)
        alone = generate_plain(pair, ids, decoding)
        rows.append(
            row(
                f"speculative ({args.draft})",
                float("nan"),
                prompt,
                generate_speculative(pair, ids, decoding, tree=AUTO),
                alone,
            )
        )
        for name, minutes, head in heads:
            result = run_plan(
                pair.target, plan_for(pair.target, EagleDrafter(head)), [ids.reshape(-1)], decoding, pair.eos_token_ids
            )[0]
            rows.append(row(name, minutes, prompt, result, alone))
        for done in rows[-1 - len(heads) :]:
            print(done, flush=True)
    if args.out:
        with open(args.out, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    for method in dict.fromkeys(r["method"] for r in rows):
        mine = [r for r in rows if r["method"] == method]
        print(
            f"{method:32} median over {len(mine)} prompts: tokens per target pass "
            f"{statistics.median(r['tokens_per_target_pass'] for r in mine):.2f}, acceptance "
            f"{statistics.median(r['acceptance_rate'] for r in mine):.2f}, "
            f"c {statistics.median(r['c'] for r in mine):.3f}, speedup "
            f"{statistics.median(r['speedup'] for r in mine):.2f}x, "
            f"{statistics.median(r['tokens_per_s'] for r in mine):.1f} tokens/s"
        )


if __name__ == "__main__":
    main()
