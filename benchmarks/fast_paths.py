"""Each model on its fastest path, measured: what the draft's settings, the prompt pass and the target's runtime cost
here.

    python benchmarks/fast_paths.py --out guide/measurements/avx512-amx/fast-paths.json --llama-bench LLAMA_BENCH

One process, the zoo's Q4_K_M files on llama.cpp (`specdec models fetch qwen2.5-coder-0.5b qwen2.5-coder-1.5b`), 2
threads, medians of `--repeats` runs, each pair of variants alternated so a busy moment hits both:

- draft: the 0.5B's one-token step and a pass over 4 rows (a tree level), on the exact settings and on llama.cpp's
  fastest (`settings.FASTEST`): a draft needs no batch invariance, so it runs on the second;
- prompt: the 1.5B's first pass over a `--prompt-tokens` prompt (what the first token waits for) in ubatches of 3 (every
  pass on the exact settings before) and of 512 (a prompt pass now, plain decoding defined the same way);
- target: the 1.5B's step and v(7), a pass over 8 rows in steps, on llama.cpp's exact settings and as W8A8 on torch
  (where this CPU passes its test: `specdec.kernels.w8a8_gate`);
- llama.cpp's own prompt pass over as many tokens (`llama-bench -p N -n 0`, its default settings), where `--llama-bench`
  names the tool (built as `../shared/NOTES.md` says);
- library: the 1.5B's step through the wheel's llama.cpp and through one built for this CPU (`specdec runtime build`),
  each in a subprocess (a process loads one library), where a build is recorded.

The JSON also holds the CPU's model and flags. Nothing here decides anything: the planner measures on its own at load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch: no thread of this process spins while another runs
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from specdec.runtime.llama_cpp.model import load_gguf  # noqa: E402
from specdec.runtime.llama_cpp.settings import EXACT, FASTEST  # noqa: E402
from specdec.store.machine import cpu_facts  # noqa: E402
from specdec.zoo.fetch import where  # noqa: E402


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def pass_ms(model, prompt: list[int], rows: int) -> float:
    """One pass over `rows` tokens after `prompt` (the prompt fed first, not timed), in ms."""
    cache = model.rows([0])
    cache.feed([torch.tensor(prompt)])
    return 1000 * timed(lambda: cache.feed([torch.tensor(prompt[:rows])], last=rows))


def alternated(variants: dict, repeats: int) -> dict[str, float]:
    """The median of each variant's measurement, the variants alternated run by run."""
    runs: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, measure in variants.items():
            runs[name].append(measure())
    return {name: round(statistics.median(values), 2) for name, values in runs.items()}


def draft_costs(path: str, prompt: list[int], repeats: int) -> dict:
    models = {
        "exact": load_gguf(path, threads=2, settings=EXACT),
        "fastest": load_gguf(path, threads=2, settings=FASTEST),
    }
    step = alternated({name: (lambda m=m: pass_ms(m, prompt[:32], 1)) for name, m in models.items()}, repeats)
    level = alternated({name: (lambda m=m: pass_ms(m, prompt[:32], 4)) for name, m in models.items()}, repeats)
    for model in models.values():
        model.close()
    return {"step_ms": step, "four_rows_ms": level}


def prompt_costs(path: str, prompt: list[int], repeats: int) -> dict:
    """The first pass over the whole prompt: ubatches of 3 (fed
    as a pass after one token, so not a prompt) or a prompt."""
    model = load_gguf(path, threads=2, settings=EXACT)

    def in_threes() -> float:
        cache = model.rows([0])
        cache.feed([torch.tensor(prompt[:1])])
        return 1000 * timed(lambda: cache.feed([torch.tensor(prompt[1:])]))

    def as_a_prompt() -> float:
        return 1000 * timed(lambda: model.rows([0]).feed([torch.tensor(prompt)]))

    found = alternated({"ubatches of 3": in_threes, "prompt pass": as_a_prompt}, repeats)
    model.close()
    return {"tokens": len(prompt), "first_pass_ms": found}


def target_costs(prompt: list[int], repeats: int) -> dict:
    """The 1.5B's step and v(7) on llama.cpp's exact settings and as W8A8 on torch (where this CPU passes its test)."""
    from specdec.pair.loading import load_model
    from specdec.runtime import as_model

    found = {}
    llama = load_gguf(where("qwen2.5-coder-1.5b").location, threads=2, settings=EXACT)
    ways = {"llama.cpp exact": llama}
    try:
        ways["torch w8a8"] = as_model(load_model("qwen2.5-coder-1.5b", device="cpu", quantization="w8a8"))
    except Exception as error:  # a CPU without AVX-512 VNNI, or a kernel that failed here
        found["w8a8_refused"] = str(error).splitlines()[0]
    for name, model in ways.items():
        times = alternated(
            {"step": lambda m=model: pass_ms(m, prompt[:32], 1), "eight": lambda m=model: pass_ms(m, prompt[:32], 8)},
            repeats,
        )
        found[name] = {"step_ms": times["step"], "v7": round(times["eight"] / times["step"], 2)}
    llama.close()
    return found


def library_steps(path: str, repeats: int) -> dict:
    """The 1.5B's step through each library, in a subprocess each (`--step-only`)."""
    from specdec.runtime.llama_cpp.native import recorded_library

    found = {}
    libraries = {"wheel": "wheel"} | ({"built for this CPU": str(recorded_library())} if recorded_library() else {})
    for _ in range(2):  # alternated, twice
        for name, library in libraries.items():
            done = subprocess.run(
                [sys.executable, __file__, "--step-only", path, "--repeats", str(repeats)],
                text=True,
                capture_output=True,
                env=os.environ | {"SPECDEC_LLAMA_LIBRARY": library},
                check=True,
            )
            found.setdefault(name, []).append(float(done.stdout.strip().splitlines()[-1]))
    return {name: round(min(values), 2) for name, values in found.items()}


def llama_bench_prompt(tool: Path, path: str, tokens: int) -> dict:
    """llama.cpp's own prompt pass over `tokens` tokens, 2 threads: its tokens a second, and the ms that makes."""
    done = subprocess.run(
        [str(tool), "-m", path, "-t", "2", "-p", str(tokens), "-n", "0", "-r", "3", "-o", "json"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=True,
    )
    rate = json.loads(done.stdout)[0]["avg_ts"]
    return {"tokens_per_s": round(rate, 2), "first_pass_ms": round(1000 * tokens / rate, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--prompt-tokens", type=int, default=500)
    parser.add_argument(
        "--llama-bench", type=Path, default=None, help="llama.cpp's llama-bench, for its own prompt pass"
    )
    parser.add_argument("--step-only", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    prompt = torch.randint(1000, 20000, (args.prompt_tokens,), generator=torch.Generator().manual_seed(0)).tolist()
    if args.step_only:
        model = load_gguf(args.step_only, threads=2, settings=EXACT)
        for _ in range(3):  # warm: the weights paged in
            pass_ms(model, prompt[:32], 1)
        print(statistics.median(pass_ms(model, prompt[:32], 1) for _ in range(args.repeats)))
        return 0
    target, draft = where("qwen2.5-coder-1.5b").location, where("qwen2.5-coder-0.5b").location
    from specdec.runtime.llama_cpp.library import load_library

    steps = library_steps(target, 15)  # first, while this process holds no model
    report = {
        "cpu": cpu_facts(),
        "threads": 2,
        "repeats": args.repeats,
        "library": str(load_library().path),
        "library_step_ms_1.5b": steps,
        "draft_0.5b": draft_costs(draft, prompt, args.repeats),
        "prompt_1.5b": prompt_costs(target, prompt, max(3, args.repeats // 2)),
        "target_1.5b": target_costs(prompt, args.repeats),
    }
    if args.llama_bench:
        report["llama_bench_prompt_1.5b"] = llama_bench_prompt(args.llama_bench, target, args.prompt_tokens)
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
