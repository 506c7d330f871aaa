"""Is the llama.cpp runtime exact on the zoo's real GGUF files, and what does a step and a pass cost? Measured here.

    #  the 1.5B and the 0.5B, exact settings, 1 and 2 threads
    python benchmarks/llama_cpp_exactness.py exactness
    #  each exact setting undone alone, and llama.cpp's defaults
    python benchmarks/llama_cpp_exactness.py controls
    #  one-token step ms at 1 and 2 threads, v(k) for k = 1..17
    python benchmarks/llama_cpp_exactness.py timing --repeats 15
    python benchmarks/llama_cpp_exactness.py timing --busy 1      # the same while another process keeps a core busy
    #  a greedy speculative loop (0.5B drafts 4) vs plain greedy
    python benchmarks/llama_cpp_exactness.py greedy --tokens 64
    #  the results as markdown
    python benchmarks/llama_cpp_exactness.py table --out benchmarks/llama-cpp-exactness.jsonl

Add `--out FILE` to a measuring part to append its results there as one JSON line.

Models: the zoo's Q4_K_M files (`specdec models fetch qwen2.5-coder-1.5b qwen2.5-coder-0.5b`), read from
specdec's cache, or `--target`/`--draft` paths. Text: a code prompt through the model's own tokenizer
(transformers reads it from the GGUF), then the target's own greedy continuation, so passes see real text.

What each part checks, always bit for bit (`torch.equal`) against the same model fed one token a pass:

- exactness: the rows of a k-token pass after the prompt for k = 2 .. 32 (each pass rolled back before the
  next, so every k also checks rollback); a 16-node token tree in one pass against each branch fed as a chain,
  then the steps after keeping a branch that is not the first; a 6-token pass after 300 tokens of text (where
  one-token attention takes another path with several threads);
- controls: the same, fewer k, with one exact setting undone at a time and with llama.cpp's defaults: how far
  the rows move (the largest logit difference) and whether the argmax changes; the prompt goes in one token a
  pass there, so a pass is compared on the reference's own cache (a loose prompt pass caches other values);
- timing: medians of one-token steps and of k-token passes at the same length (each rolled back), alternated
  between 1 and 2 threads, and v(k) = pass(k) / step: the cost of verifying k tokens in one-token steps;
- greedy: a chain loop (the 0.5B drafts gamma greedily, the 1.5B verifies gamma + 1 rows in one pass, both roll
  back) must produce exactly the 1.5B's own plain greedy tokens.

Timings on a shared machine are noisy: compare the numbers of one run, and rerun.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specdec.runtime.llama_cpp.model import load_gguf  # noqa: E402
from specdec.runtime.llama_cpp.settings import EXACT, GGML_TYPE_F16, LLAMA_DEFAULTS  # noqa: E402
from specdec.zoo.fetch import cache_dir  # noqa: E402

MODELS = {
    "1.5b": "qwen2.5-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    "0.5b": "qwen2.5-coder-0.5b/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
}
PROMPT = (
    "<|im_start|>user\nWrite a Python function that checks whether a number is prime, with a docstring "
    "and a few doctests.<|im_end|>\n<|im_start|>assistant\n"
)
CONTROLS = {
    "llama.cpp defaults": LLAMA_DEFAULTS,
    "ubatch 4": replace(EXACT, ubatch=4),
    "flash attention off": replace(EXACT, flash_attention=0),
    "ubatch 512": replace(EXACT, ubatch=512),
    "ubatch 512 unrepacked": replace(EXACT, ubatch=512, repacked_weights=False),
    "V cache float16": replace(EXACT, value_type=GGML_TYPE_F16),
}


def model_path(name: str) -> Path:
    return cache_dir() / "models" / MODELS[name]


def prompt_ids(path: Path) -> torch.Tensor:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    return torch.tensor(tokenizer(PROMPT)["input_ids"])


def steps(model, ids: torch.Tensor) -> torch.Tensor:
    rows = model.rows([0])
    return torch.cat([rows.feed([ids[i : i + 1]])[0][0] for i in range(len(ids))])


def greedy_text(model, prompt: torch.Tensor, new: int) -> torch.Tensor:
    """The prompt and `new` greedy tokens, one-token steps (the reference every check below shares)."""
    rows = model.rows([0])
    logits, _ = rows.feed([prompt])
    out = prompt.tolist()
    for _ in range(new):
        out.append(int(logits[0, -1].argmax()))
        logits, _ = rows.feed([torch.tensor(out[-1:])])
    return torch.tensor(out)


def difference(a: torch.Tensor, b: torch.Tensor) -> dict:
    """Rows that differ, the largest logit difference, rows whose argmax differs."""
    differ = [i for i in range(len(a)) if not torch.equal(a[i], b[i])]
    return {
        "rows": len(a),
        "rows_differ": len(differ),
        "max_abs": float((a - b).abs().max()),
        "argmax_differ": int((a.argmax(-1) != b.argmax(-1)).sum()),
    }


def tree_layout(parents: list[int], cached: int) -> tuple[torch.Tensor, torch.Tensor]:
    seen = torch.eye(len(parents), dtype=torch.bool)
    for node, parent in enumerate(parents):
        if parent >= 0:
            seen[node] |= seen[parent]
    return torch.cat([torch.ones(len(parents), cached, dtype=torch.bool), seen], dim=1), seen.sum(dim=1) - 1


def check(
    model,
    text: torch.Tensor,
    prompt: int,
    ks: list[int],
    tree: bool = True,
    long: int = 300,
    prompt_steps: bool = False,
) -> dict:
    """The exactness checks of the module docstring on one loaded model.

    `prompt_steps`: feed the prompt one token a pass, so that a pass's rows are compared on the reference's own
    cache (the controls: with a loose setting, a prompt pass already caches other keys and values).
    """
    need = prompt + max(ks)
    reference = steps(model, text[:need])
    result = {"passes": {}}
    rows = model.rows([0])
    for chunk in [text[i : i + 1] for i in range(prompt)] if prompt_steps else [text[:prompt]]:
        rows.feed([chunk])
    for k in ks:
        together, _ = rows.feed([text[prompt : prompt + k]], last=k)
        result["passes"][k] = difference(together[0], reference[prompt : prompt + k])
        rows.rollback(0, prompt)
    after = rows.feed([text[prompt : prompt + 1]])[0][0]
    result["after_rollback"] = difference(after, reference[prompt : prompt + 1])
    if tree:
        result["tree"] = check_tree(model, text, prompt)
    if long and len(text) >= long + 6:
        rows = model.rows([0])
        rows.feed([text[:long]])
        alone = torch.cat([rows.feed([text[i : i + 1]])[0][0] for i in range(long, long + 6)])
        rows.rollback(0, long)
        together, _ = rows.feed([text[long : long + 6]], last=6)
        result[f"6_after_{long}"] = difference(together[0], alone)
    return result


def check_tree(model, text: torch.Tensor, prompt: int) -> dict:
    """A 16-node tree (the text's own next tokens down one branch, other tokens elsewhere) in one pass."""
    parents = [-1, 0, 1, 2, 3, 4, -1, 6, 7, 0, 9, 1, 11, 12, 6, 14]
    own = text[prompt : prompt + 6]
    others = torch.tensor([int(t) + 7 for t in text[prompt : prompt + 10]])
    nodes = torch.cat([own, others])  # node 0..5: the text's continuation
    attend, offsets = tree_layout(parents, prompt)
    rows = model.rows([0])
    rows.feed([text[:prompt]])
    tree, _ = rows.feed([nodes], last=16, attend=[attend], offsets=[offsets])
    worst = {"rows": 0, "rows_differ": 0, "max_abs": 0.0, "argmax_differ": 0}
    for leaf in [n for n in range(16) if n not in parents]:
        path = [leaf]
        while parents[path[0]] >= 0:
            path.insert(0, parents[path[0]])
        chain = steps(model, torch.cat([text[:prompt], nodes[path]]))[prompt:]
        d = difference(tree[0, path], chain)
        worst = {key: (max(worst[key], d[key]) if key == "max_abs" else worst[key] + d[key]) for key in worst}
    branch = [6, 7, 8]  # the second root's chain: not the first cells
    rows.keep(0, list(range(prompt)) + [prompt + n for n in branch])
    going = torch.cat([nodes[branch], text[prompt : prompt + 4]])
    reference = steps(model, torch.cat([text[:prompt], going]))[prompt + 3 :]
    after = torch.cat([rows.feed([going[i : i + 1]])[0][0] for i in range(3, len(going))])
    return {"branches": worst, "after_keep": difference(after, reference)}


def text_tokens(args, prompt: torch.Tensor) -> int:
    """Greedy tokens to generate after the prompt: enough for the longest pass and the long-text check."""
    return max(args.long + 6, len(prompt) + args.max_k + 16) - len(prompt)


def run_exactness(args) -> dict:
    out = {}
    for name in args.models:
        path = model_path(name) if name in MODELS else Path(name)
        prompt = prompt_ids(path)
        for threads in args.threads:
            model = load_gguf(path, threads=threads)
            start = time.perf_counter()
            text = greedy_text(model, prompt, text_tokens(args, prompt))
            out[f"{name} threads={threads}"] = check(
                model, text, len(prompt), list(range(2, args.max_k + 1)), long=args.long
            )
            out[f"{name} threads={threads}"]["seconds"] = round(time.perf_counter() - start, 1)
            print(json.dumps({f"{name} threads={threads}": out[f"{name} threads={threads}"]}), flush=True)
            model.close()
    return out


def run_controls(args) -> dict:
    out = {}
    for name in args.models:
        path = model_path(name) if name in MODELS else Path(name)
        prompt = prompt_ids(path)
        for label, settings in CONTROLS.items():
            model = load_gguf(path, threads=args.threads[-1], settings=settings)
            text = greedy_text(model, prompt, text_tokens(args, prompt))
            out[f"{name} {label}"] = check(
                model, text, len(prompt), [2, 3, 4, 6, 7, 8, 17], tree=False, long=args.long, prompt_steps=True
            )
            print(json.dumps({f"{name} {label}": out[f"{name} {label}"]}), flush=True)
            model.close()
    return out


def run_timing(args) -> dict:
    out = {}
    for name in args.models:
        path = model_path(name) if name in MODELS else Path(name)
        prompt = prompt_ids(path)
        settings = LLAMA_DEFAULTS if args.settings == "defaults" else EXACT
        models = {threads: load_gguf(path, threads=threads, settings=settings) for threads in args.threads}
        caches = {}
        for threads, model in models.items():
            caches[threads] = model.rows([0])
            caches[threads].feed([prompt])
        times = {(threads, k): [] for threads in models for k in range(1, args.max_k + 1)}
        text = torch.cat([prompt, prompt])
        length = len(prompt)
        for repeat in range(args.repeats):
            order = list(times) if repeat % 2 == 0 else list(reversed(times))
            for threads, k in order:
                rows = caches[threads]
                start = time.perf_counter()
                rows.feed([text[length : length + k]], last=k)
                times[(threads, k)].append(time.perf_counter() - start)
                rows.rollback(0, length)
        for threads in models:
            step = statistics.median(times[(threads, 1)])
            out[f"{name} threads={threads}" + (" llama.cpp defaults" if args.settings == "defaults" else "")] = {
                "step_ms": round(1000 * step, 1),
                "step_ms_min": round(1000 * min(times[(threads, 1)]), 1),
                "v": {k: round(statistics.median(times[(threads, k)]) / step, 2) for k in range(1, args.max_k + 1)},
            }
            label = f"{name} threads={threads}" + (" llama.cpp defaults" if args.settings == "defaults" else "")
            print(json.dumps({label: out[label]}), flush=True)
        del caches
        for model in models.values():
            model.close()
    return out


def run_greedy(args) -> dict:
    target_path, draft_path = model_path("1.5b"), model_path("0.5b")
    prompt = prompt_ids(target_path)
    target = load_gguf(target_path, threads=args.threads[-1])
    draft = load_gguf(draft_path, threads=args.threads[-1])
    start = time.perf_counter()
    plain = greedy_text(target, prompt, args.tokens)[len(prompt) :].tolist()
    plain_s = time.perf_counter() - start
    start = time.perf_counter()
    spec, passes = speculative_greedy(target, draft, prompt, args.tokens, args.gamma)
    spec_s = time.perf_counter() - start
    result = {
        "equal": spec == plain,
        "tokens": args.tokens,
        "gamma": args.gamma,
        "target_passes": passes,
        "plain_tok_s": round(args.tokens / plain_s, 2),
        "speculative_tok_s": round(args.tokens / spec_s, 2),
        "first_difference": next((i for i, (a, b) in enumerate(zip(spec, plain)) if a != b), None),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    print(json.dumps(result), flush=True)
    return result


def speculative_greedy(target, draft, prompt: torch.Tensor, new: int, gamma: int) -> tuple[list[int], int]:
    """A greedy chain loop: q drafts gamma tokens, p verifies gamma + 1 rows in one pass, both caches roll back."""
    p_rows, q_rows = target.rows([0]), draft.rows([0])
    p_logits, _ = p_rows.feed([prompt])
    q_rows.feed([prompt[:-1]])
    out, passes = [int(p_logits[0, -1].argmax())], 1
    while len(out) < new:
        base = len(prompt) + len(out) - 1  # tokens both caches should hold before the last one
        q_rows.rollback(0, min(q_rows.length(0), base))
        drafted, last = [], torch.tensor(([int(t) for t in prompt] + out)[q_rows.length(0) :])
        for _ in range(gamma):
            q_logits, _ = q_rows.feed([last])
            drafted.append(int(q_logits[0, -1].argmax()))
            last = torch.tensor(drafted[-1:])
        p_logits, _ = p_rows.feed([torch.tensor(out[-1:] + drafted)], last=gamma + 1)
        passes += 1
        choice = p_logits[0].argmax(-1).tolist()  # p's greedy token after each prefix
        accepted = 0
        while accepted < gamma and drafted[accepted] == choice[accepted]:
            accepted += 1
        out += drafted[:accepted] + [choice[accepted]]
        p_rows.rollback(0, base + 1 + accepted)
    return out[:new], passes


def markdown(path: Path) -> str:
    """The results appended to `path` (JSON lines) as markdown tables: what the parts measured, one line each."""
    lines = []
    for record in map(json.loads, path.read_text().splitlines()):
        part, result = record["part"], record["result"]
        if part in ("exactness", "controls"):
            lines += [
                f"\n{part} (`{' '.join(record['argv'])}`): rows that differ / rows compared, largest |logit "
                "difference|, "
                "argmax changes\n",
                "| run | k-token passes | by k (first differing k) | after rollback | tree branches "
                "| after keep | 6 after 300 |",
                "|---|---|---|---|---|---|---|",
            ]
            for name, r in result.items():
                passes = r["passes"].values()

                def cell(d):
                    return (
                        "-"
                        if d is None
                        else f"{d['rows_differ']}/{d['rows']}, {d['max_abs']:.3g}, {d['argmax_differ']}"
                    )

                total = {
                    "rows": sum(d["rows"] for d in passes),
                    "rows_differ": sum(d["rows_differ"] for d in passes),
                    "max_abs": max(d["max_abs"] for d in passes),
                    "argmax_differ": sum(d["argmax_differ"] for d in passes),
                }
                first = next((k for k, d in r["passes"].items() if d["rows_differ"]), "none")
                ks = [int(k) for k in r["passes"]]
                shown = (
                    f"{ks[0]}..{ks[-1]}"
                    if ks == list(range(ks[0], ks[-1] + 1)) and len(ks) > 3
                    else ", ".join(map(str, ks))
                )
                tree = r.get("tree") or {}
                lines.append(
                    f"| {name} | {cell(total)} | k = {shown} ({first}) | {cell(r['after_rollback'])} "
                    f"| {cell(tree.get('branches'))} | {cell(tree.get('after_keep'))} | {cell(r.get('6_after_300'))} |"
                )
        elif part == "timing":
            ks = list(next(iter(result.values()))["v"])
            lines += [
                f"\ntiming (`{' '.join(record['argv'])}`): one-token step, medians, and v(k) = pass(k) / step\n",
                "| run | step ms (min) | " + " | ".join(f"v({k})" for k in ks) + " |",
                "|---|---|" + "---|" * len(ks),
            ]
            for name, r in result.items():
                lines.append(
                    f"| {name} | {r['step_ms']} ({r['step_ms_min']}) | " + " | ".join(str(r["v"][k]) for k in ks) + " |"
                )
        elif part == "greedy":
            lines.append(f"\ngreedy (`{' '.join(record['argv'])}`): {json.dumps(result)}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["exactness", "controls", "timing", "greedy", "table"])
    parser.add_argument("--models", nargs="+", default=["1.5b", "0.5b"])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--max-k", type=int, default=None)
    parser.add_argument("--long", type=int, default=300, help="tokens of text before the long-text pass")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--gamma", type=int, default=4)
    parser.add_argument("--settings", choices=["exact", "defaults"], default="exact", help="timing: whose settings")
    parser.add_argument(
        "--busy", type=int, default=0, help="keep this many other processes busy (`yes > /dev/null`) meanwhile"
    )
    parser.add_argument("--out", type=Path, help="append the results as one JSON line to this file")
    args = parser.parse_args(argv)
    if args.part == "table":  # python benchmarks/llama_cpp_exactness.py table --out FILE
        print(markdown(args.out))
        return 0
    args.max_k = args.max_k or (32 if args.part == "exactness" else 17)
    busy = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(args.busy)]
    try:
        result = {"exactness": run_exactness, "controls": run_controls, "timing": run_timing, "greedy": run_greedy}[
            args.part
        ](args)
    finally:
        for process in busy:
            process.kill()
    if args.out:
        with args.out.open("a") as out:
            out.write(json.dumps({"part": args.part, "argv": argv or sys.argv[1:], "result": result}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
