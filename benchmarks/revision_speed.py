"""Is this revision's loop as fast as an earlier one's? Both engines in ONE process, on the same loaded models,
interleaved.

    # the default pair, as `specdec run` loads it
    python benchmarks/revision_speed.py --base bf679d9
    python benchmarks/revision_speed.py --base bf679d9 --repeats 5 --out benchmarks/revision-speed.csv

The earlier revision's `specdec/` is taken from git (`git archive`), renamed `specdec_base` (its imports
rewritten to match) and imported beside today's package. The pair is loaded once, by today's code, on torch
with the precisions `specdec run --runtime torch` uses by default, and both engines generate from the very same model
objects, greedy, on the suite's prompts: speculative decoding with gamma left out ("default": each engine's own default
drafting, a token tree for this pair), a chain (`ModelDrafter`, drafted under the stop rule) and plain decoding, in the
order A B on even repeats and B A on odd ones, so slow drift hits both alike. Reported: tokens per second of each, the
ratio today / base per prompt and its median, and whether the tokens are identical. Nothing here is run by the tests.
"""

from __future__ import annotations

import argparse
import importlib
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def import_revision(revision: str, into: Path):
    """The package `specdec` of `revision`, importable as `specdec_base` (extracted under `into`)."""
    archive = subprocess.run(["git", "archive", revision, "specdec"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    package = into / "specdec_base"
    (into / "specdec").rename(package)
    for path in package.rglob("*.py"):
        text = path.read_text()
        text = re.sub(r"\bspecdec(?=[.\s\"'])", "specdec_base", text)
        path.write_text(text)
    sys.path.insert(0, str(into))
    return importlib.import_module("specdec_base")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the earlier revision (a commit, tag or branch)")
    parser.add_argument("--target", default="qwen2.5-coder-1.5b")
    parser.add_argument("--draft", default="qwen2.5-coder-0.5b")
    parser.add_argument("--categories", default="code,summarization,qa,math")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", help="write one row per run to this CSV")
    args = parser.parse_args()

    import pandas as pd

    import specdec
    from specdec.bench.prompts import encode_bench_prompt, suite
    from specdec.pair.loading import load_pair

    with tempfile.TemporaryDirectory() as folder:
        base = import_revision(args.base, Path(folder))
        pair = load_pair(
            args.target,
            args.draft,
            quantization="auto",
            draft_quantization="auto",
            runtime="torch",
            draft_runtime="torch",
        )
        target, draft = pair.target.module, pair.draft.module  # the transformers models: what both revisions take
        print(f"{pair.draft_name} -> {pair.target_name}: {pair.precisions}", flush=True)
        prompts = [prompt for prompt in suite(tuple(args.categories.split(",")), 1)]
        engines = {"today": specdec, "base": base}
        options = dict(max_new_tokens=args.max_new_tokens, temperature=0, eos_token_id=pair.eos_token_ids)
        rows = []
        for engine in engines.values():  # warm-up, unrecorded
            engine.speculative_generate(
                target, draft, encode_bench_prompt(pair.tokenizer, prompts[0]), **options | {"max_new_tokens": 16}
            )
        for repeat in range(args.repeats):
            for prompt in prompts:
                input_ids = encode_bench_prompt(pair.tokenizer, prompt)
                order = ["today", "base"] if repeat % 2 == 0 else ["base", "today"]
                for method in ("default", "chain", "plain"):
                    for name in order:
                        engine = engines[name]
                        if method == "default":
                            result = engine.speculative_generate(target, draft, input_ids, **options)
                        elif method == "chain":
                            result = engine.speculative_generate(
                                target, engine.ModelDrafter(draft), input_ids, **options
                            )
                        else:
                            result = engine.autoregressive_generate(target, input_ids, **options)
                        rows.append(
                            dict(
                                repeat=repeat,
                                category=prompt.category,
                                method=method,
                                engine=name,
                                tokens_per_second=result.stats.tokens_per_second,
                                new_tokens=result.stats.new_tokens,
                                tokens=" ".join(map(str, result.tokens)),
                                drafting=getattr(result, "drafting", ""),
                            )
                        )
                        print(
                            f"{repeat} {prompt.category:14} {method:11} {name:5} {result.stats.tokens_per_second:6.2f} "
                            "tok/s",
                            flush=True,
                        )
        frame = pd.DataFrame(rows)
        if args.out:
            frame.to_csv(args.out, index=False)
        for method, runs in frame.groupby("method"):
            speeds = runs.pivot_table(index=["category", "repeat"], columns="engine", values="tokens_per_second")
            same = runs.pivot_table(index=["category", "repeat"], columns="engine", values="tokens", aggfunc="first")
            ratio = (speeds["today"] / speeds["base"]).groupby("category").median()
            print(f"\n{method}: today / base tokens per second, median over {args.repeats} repeats")
            for category, value in ratio.items():
                print(f"  {category:14} {value:.3f}")
            print(
                f"  median         {statistics.median(ratio):.3f}   (all runs: "
                f"{float((speeds['today'] / speeds['base']).median()):.3f}); "
                f"identical tokens: {bool((same['today'] == same['base']).all())}"
            )


if __name__ == "__main__":
    main()
