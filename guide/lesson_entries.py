"""The kinds of entry in `lesson_numbers.py`, and how an entry turns into the text its chapter must contain.

    entry_text(Computed("01-math.md", r"$\\alpha = <<.2f>>$", lambda: 0.7))   # '$\\alpha = 0.70$'

Helpers that read numbers out of saved runs (`stats`, `report_line`) and out of the CLI
(`cli_output`) live here too, so the registry itself is only data.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MEASUREMENTS = Path(__file__).resolve().parent / "measurements"


@dataclass(frozen=True)
class Computed:
    chapter: str
    text: str
    value: Callable[[], object]


@dataclass(frozen=True)
class Measured:
    chapter: str
    text: str
    command: str
    source: str
    value: Callable[[str], object]


@dataclass(frozen=True)
class Reported:
    chapter: str
    text: str
    source: str


@dataclass(frozen=True)
class Output:
    chapter: str
    command: str
    produce: Callable[[], str]


PLACEHOLDER = re.compile(r"<<([^<>]*)>>")


def render(template: str, values: object) -> str:
    """Fill each <<format>> of `template` with the next value: render("a <<.2f>>", 0.5) == "a 0.50"."""
    items = iter(values if isinstance(values, tuple) else (values,))
    rendered = PLACEHOLDER.sub(lambda match: format(next(items), match.group(1)), template)
    leftover = list(items)
    if leftover:
        raise ValueError(f"{template!r} has fewer placeholders than values; left over: {leftover}")
    return rendered


def entry_text(entry: Computed | Measured | Reported) -> str:
    """The exact text an entry expects in its chapter, with today's values filled in."""
    if isinstance(entry, Computed):
        return render(entry.text, entry.value())
    if isinstance(entry, Measured):
        return render(entry.text, entry.value((MEASUREMENTS / entry.source).read_text(encoding="utf-8")))
    return entry.text


def vector(values, digits: int = 2) -> str:
    """(0.3, 0.4) -> '0.30, 0.40': how the lessons write a distribution."""
    return ", ".join(f"{float(v):.{digits}f}" for v in values)


def stats(saved: str, key: str, baseline: bool = False) -> float:
    """A field of `specdec run --json` output: stats of the speculative run, or of the target alone."""
    report = json.loads(saved)
    return (report["compare"]["target_alone_stats"] if baseline else report["stats"])[key]


def report_line(saved: str, pattern: str) -> float:
    """A number from `specdec run`'s text report, found by a regular expression with one group."""
    match = re.search(pattern, saved)
    if not match:
        raise ValueError(f"no match for {pattern!r} in the saved report")
    return float(match.group(1))


def tree_against_chain(saved: str) -> dict[str, float]:
    """From a saved `specdec bench` CSV with fixed gammas and 'tree': the tree against the best fixed chain.

    The best chain is the fixed gamma with the highest median speedup; everything is a median over
    the prompts, `paired` the median of the per-prompt ratios tree / best chain; "stop" is the stop rule's
    speedup, "stop_oracle" and "chain_oracle" each one's share of the oracle bound; "<category>_tree",
    "<category>_chain" and "<category>_stop" are one category's median speedups.
    """
    import io

    import pandas as pd

    frame = pd.read_csv(io.StringIO(saved))
    runs = frame[frame["method"] == "speculative"]
    fixed = runs[runs["schedule"] == "fixed"]
    best = fixed.groupby("gamma")["speedup"].median().idxmax()
    chain, tree, stop = (
        fixed[fixed["gamma"] == best],
        runs[runs["schedule"] == "tree"],
        runs[runs["schedule"] == "stop"],
    )
    ratio = tree.set_index("prompt_id")["speedup"] / chain.set_index("prompt_id")["speedup"]
    return {
        "gamma": int(best),
        "tree_tpp": tree["tokens_per_target_pass"].median(),
        "chain_tpp": chain["tokens_per_target_pass"].median(),
        "tree": tree["speedup"].median(),
        "chain": chain["speedup"].median(),
        "ratio": tree["speedup"].median() / chain["speedup"].median(),
        "paired": ratio.median(),
        "nodes": tree["mean_gamma"].median(),
        "c": runs["draft_cost_ratio"].median(),
        "stop": stop["speedup"].median(),
        "stop_gamma": stop["mean_gamma"].median(),
        "stop_oracle": stop["oracle_efficiency"].median(),
        "chain_oracle": chain["oracle_efficiency"].median(),
        **{
            f"{category}_tree": group[group["schedule"] == "tree"]["speedup"].median()
            for category, group in runs.groupby("category")
        },
        **{
            f"{category}_chain": group[(group["schedule"] == "fixed") & (group["gamma"] == best)]["speedup"].median()
            for category, group in runs.groupby("category")
        },
        **{
            f"{category}_stop": group[group["schedule"] == "stop"]["speedup"].median()
            for category, group in runs.groupby("category")
        },
    }


def drafts_for_one_target(saved: str) -> dict[str, float]:
    """From a saved `specdec bench` CSV of several drafts for one target (stop rule, transformers' defaults):
    per draft name, medians over the prompts.

    Keys "<draft>_<what>": "speedup" and "code" (ours, stop rule: all prompts, code prompts), "alpha"
    (accepted / drafted), "tpp" (tokens per target pass), "c" (the measured draft cost ratio), "hf" and
    "hf_code" (transformers' assisted generation with its defaults and the same draft).
    """
    import io

    import pandas as pd

    frame = pd.read_csv(io.StringIO(saved))
    values: dict[str, float] = {}
    for pair, runs in frame.groupby("pair"):
        draft = pair.split("->")[0]
        ours = runs[(runs["method"] == "speculative") & (runs["schedule"] == "stop")]
        theirs = runs[runs["method"] == "assisted-dynamic"]
        values |= {
            f"{draft}_speedup": ours["speedup"].median(),
            f"{draft}_code": ours[ours["category"] == "code"]["speedup"].median(),
            f"{draft}_alpha": ours["acceptance_rate"].median(),
            f"{draft}_tpp": ours["tokens_per_target_pass"].median(),
            f"{draft}_c": runs["draft_cost_ratio"].median(),
            f"{draft}_hf": theirs["speedup"].median(),
            f"{draft}_hf_code": theirs[theirs["category"] == "code"]["speedup"].median(),
        }
    return values


def kernel_costs(saved: str) -> dict[str, float]:
    """From `benchmarks/weight_kernels.py`'s CSV: one-token steps (ms), v5 and v17 per engine and precision, and c per
    pairing.

    Keys: "<precision>_step" for the 1.5B target, "<precision>_draft_step" for the 0.5B, "<precision>_v5",
    "<precision>_v17"; "c_<target precision>_<draft precision>" is the 0.5B's step over the 1.5B's.
    """
    import io

    import pandas as pd

    frame = pd.read_csv(io.StringIO(saved))
    values: dict[str, float] = {}
    for row in frame.itertuples():
        suffix = "_step" if row.model.endswith("1.5b") else "_draft_step"
        values[row.precision + suffix] = row.step_ms
        if row.model.endswith("1.5b"):
            values[f"{row.precision}_v5"], values[f"{row.precision}_v17"] = row.v5, row.v17
    for target in frame["precision"].unique():
        for draft in frame["precision"].unique():
            if f"{target}_step" in values and f"{draft}_draft_step" in values:
                values[f"c_{target}_{draft}"] = values[f"{draft}_draft_step"] / values[f"{target}_step"]
    return values


def w8a8_probe(saved: str) -> dict[str, object]:
    """From `benchmarks/w8a8_probe.py`'s report: per "<library> <path>", its error, whether rows agree and ms at M =
    1/6/18.

    Keys "<library>|<path>|<field>" with fields error_full, rows_equal (bool), ms_m1, ms_m6, ms_m18, v6 (ms_m6 / ms_m1),
    v18; "<library>|died" holds how a library's probe died; "cpu" the report's first line.

    >>> numbers = w8a8_probe("CPU: X\\n_C.so: loaded; W8A8 paths: sgl k\\n"
    ...                      "  sgl k: ms per pass over the 1.5B's linear layers, M=1 50.0, M=6 60.0, M=18 100.0\\n"
    ...                      "_D.so: died: SIGILL (an instruction this CPU lacks)")
    >>> numbers["_C.so|sgl k|v6"], numbers["_D.so|died"]
    (1.2, 'SIGILL (an instruction this CPU lacks)')
    """
    import re

    lines = saved.splitlines()
    values: dict[str, object] = {"cpu": lines[0]}
    library = ""
    for line in lines[1:]:
        if not line.startswith(" ") and ": " in line:
            library, _, rest = line.partition(": ")
            if rest.startswith("died: "):
                values[f"{library}|died"] = rest.removeprefix("died: ")
            continue
        path, _, rest = line.strip().partition(": ")
        if "17 rows equal" in rest:
            (error,) = re.findall(r"error full-range weights ([0-9.e-]+)", rest)
            values[f"{library}|{path}|error_full"] = float(error)
            values[f"{library}|{path}|rows_equal"] = rest.endswith("True")
        elif "ms per pass" in rest:
            m1, m6, m18 = (float(x) for x in re.findall(r"M=\d+ ([0-9.]+)", rest))
            values |= {
                f"{library}|{path}|ms_m1": m1,
                f"{library}|{path}|ms_m6": m6,
                f"{library}|{path}|ms_m18": m18,
                f"{library}|{path}|v6": m6 / m1,
                f"{library}|{path}|v18": m18 / m1,
            }
    return values


def side_by_side(saved: str) -> dict[str, float]:
    """From `benchmarks/llama_cpp.py`'s CSV: median generating tokens/s per variant, and specdec's default against
    llama.cpp.

    "best_llama" is, per prompt, the faster of llama.cpp's plain and speculative tools; "default_vs_best" the
    median over prompts of specdec's default (int8 target, int4 draft, stop rule) over it.
    """
    import io

    import pandas as pd

    frame = pd.read_csv(io.StringIO(saved))
    rates = frame.pivot_table(index="prompt_id", columns="variant", values="tokens_per_s")
    llama = sorted(set(frame.loc[frame["engine"] == "llama.cpp", "variant"]))
    best = rates[llama].max(axis=1)
    default = rates["speculative float32 int8 / int4"]
    return {
        **{name: rates[name].median() for name in rates.columns},
        "best_llama": best.median(),
        "default_vs_best": (default / best).median(),
        "default_vs_plain": (default / rates["plain Q4_K_M"]).median(),
        "int8_plain_vs_llama_plain": (rates["plain float32 int8"] / rates["plain Q4_K_M"]).median(),
        "int4_plain_vs_llama_plain": (rates["plain bfloat16 int4"] / rates["plain Q4_K_M"]).median(),
        "default_vs_own_plain": (default / rates["plain float32 int8"]).median(),
    }


def families(saved: str) -> dict[str, float]:
    """From a saved `specdec bench --methods all` CSV: `specdec.bench.spec_bench.families_table`'s numbers, flat.

    Keys "<method>_<column>" for the columns speedup, tokens_per_target_pass, c, spec_bench_speedup,
    spec_bench_tokens_per_step and each category's median speedup; "<method>_rank" is its place by
    speedup (1 is the fastest); "best" names the fastest method that needs no draft model; "<method>_v" is the
    median over prompts of its seconds per target pass over the target alone's seconds per token (v, the
    pass's cost in one-token steps, the prompt pass included) and "<method>_nodes" its median tokens drafted
    per drafting round; "prompts" counts the prompts.
    """
    import io

    import pandas as pd

    from specdec.bench.methods import families
    from specdec.bench.spec_bench import families_table

    frame = pd.read_csv(io.StringIO(saved))
    table = families_table(frame)
    values: dict[str, float] = {}
    plain = frame[frame["method"] == "generate"].set_index("prompt_id")
    step = plain["wall_time_s"] / plain["new_tokens"]  # the target alone: seconds per token
    for method, runs in frame[frame["method"] != "generate"].groupby("method"):
        runs = runs.set_index("prompt_id")
        values[f"{method}_v"] = ((runs["verify_time_s"] / runs["target_passes"]) / step[runs.index]).median()
        values[f"{method}_nodes"] = runs["mean_gamma"].median()
    values["prompts"] = plain.index.nunique()
    for rank, row in enumerate(table.itertuples(index=False), start=1):
        values |= {
            f"{row.method}_{column}": getattr(row, column)
            for column in table.columns
            if column not in ("method", "spec_bench_row")
        }
        values[f"{row.method}_rank"] = rank
    values["best"] = next(method for method in table["method"] if method in families()[1:])
    return values


def eagle_curve(saved: str) -> dict[str, float]:
    """From `benchmarks/eagle_curve.py`'s CSV: per method ("speculative" for the draft model, "eagle-<minutes>" for a
    head), the median over prompts of each column, and "<method>_paired" the median per-prompt ratio of its tokens/s
    over the draft model's; "prompts" counts the prompts."""
    import io

    import pandas as pd

    frame = pd.read_csv(io.StringIO(saved))
    frame["key"] = [
        ("speculative" if method.startswith("speculative") else f"eagle-{minutes:.0f}")
        for method, minutes in zip(frame["method"], frame["minutes"])
    ]
    values: dict[str, float] = {"prompts": frame["prompt"].nunique()}
    draft = frame[frame["key"] == "speculative"].set_index("prompt")["tokens_per_s"]
    for key, runs in frame.groupby("key"):
        values |= {
            f"{key}_{column}": runs[column].median()
            for column in ("tokens_per_target_pass", "acceptance_rate", "c", "speedup")
        }
        values[f"{key}_paired"] = (runs.set_index("prompt")["tokens_per_s"] / draft).median()
    return values


def cli_output(*argv: str) -> str:
    """What `specdec <argv>` prints, run in this process."""
    from specdec.cli import main

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        main(list(argv))
    return f"$ specdec {' '.join(argv)}\n{buffer.getvalue()}".rstrip("\n")


def batch_numbers(saved: str) -> dict[str, float]:
    """From a saved `specdec bench --batch-sizes` CSV, flat, per batch size B and variant V ("plain", "stop", "g1",
    "g3"...): "V_tok_B" (tokens/s of all rows), "V_gain_B" (over plain at B), "V_scaling_B" (over V at batch 1),
    "V_tpp_B" (tokens per target pass per row), "V_c_B" (a draft step over all rows over plain decoding's step at B),
    "V_pass_B" (a target pass over plain decoding's step at B), "V_seconds_B" (seconds per target pass), "V_exact_B" (1
    if every row equals plain decoding); "prompts", "tokens"."""
    import pandas as pd

    frame = pd.read_csv(io.StringIO(saved))
    values: dict[str, float] = {
        "prompts": int(frame["prompts"].iloc[0]),
        "tokens": int(frame["max_new_tokens"].iloc[0]),
    }
    for size, rows in frame.groupby("batch_size"):
        b = int(size)
        plain_step = rows[rows["method"] == "plain"]["seconds_per_target_pass"].iloc[0]
        for row in rows.itertuples():
            name = "plain" if row.method == "plain" else ("stop" if row.schedule == "stop" else f"g{int(row.gamma)}")
            values |= {
                f"{name}_seconds_{b}": row.seconds_per_target_pass,
                f"{name}_tok_{b}": row.tokens_per_second,
                f"{name}_gain_{b}": row.speedup,
                f"{name}_scaling_{b}": row.scaling,
                f"{name}_tpp_{b}": row.tokens_per_target_pass,
                f"{name}_pass_{b}": row.seconds_per_target_pass / plain_step,
                f"{name}_c_{b}": (row.draft_time_s / row.draft_passes / plain_step) if row.draft_passes else 0.0,
                f"{name}_exact_{b}": int(row.exact == True),  # noqa: E712  (NaN for plain)
            }
    return values


def batch_bug_demo() -> dict[str, float]:
    """The classic batching bug, computed on a tiny random Llama and a noisy copy of it as the draft (no download).

    Four prompts of different lengths, greedy, gamma 4, 24 tokens: with each row's own bookkeeping
    (`specdec.runtime.pytorch.batch_cache.BatchCache`) and with one count for the batch (`specdec.bugs.batches`).
    Keys: "rows", "tokens", "right_rows" (rows equal to their own plain run), "bug_rows" (rows that differ with the
    bug), "bug_tokens" (their tokens that differ from the right ones, all rows), "first" (the earliest differing
    token, 1-based), "same_round" (1 if every row that differs was right in the first round).
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from specdec import ModelDrafter, autoregressive_generate, speculative_generate
    from specdec.engine.inputs import Decoding
    from specdec.bugs.batches import generate_with_one_count

    def tiny(noise: float) -> LlamaForCausalLM:
        torch.manual_seed(0)
        model = LlamaForCausalLM(
            LlamaConfig(
                vocab_size=32,
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=2,
                num_key_value_heads=1,
                max_position_embeddings=128,
                bos_token_id=None,
                eos_token_id=None,
                pad_token_id=None,
                tie_word_embeddings=False,
            )
        )
        with torch.no_grad():
            model.lm_head.weight.normal_(0.0, 3.0 / 32**0.5)
            generator = torch.Generator().manual_seed(1)
            for parameter in model.parameters():
                parameter.add_(noise * float(parameter.std()) * torch.randn(parameter.shape, generator=generator))
        return model.float().eval()

    target, draft = tiny(0.0), tiny(0.5)
    prompts = [torch.tensor(p) for p in ([2, 3, 4, 5, 6, 7, 8, 9], [10, 11], [12, 2, 13, 3, 14], [15])]
    tokens = 24
    alone = [autoregressive_generate(target, p, max_new_tokens=tokens, temperature=0).tokens for p in prompts]
    right = speculative_generate(target, draft, prompts, gamma=4, max_new_tokens=tokens, temperature=0)
    rounds = generate_with_one_count(
        target, ModelDrafter(draft), prompts, 4, Decoding(max_new_tokens=tokens, temperature=0)
    )
    bug = [[token for round_ in row for token, _ in round_.emitted] for row in rounds]
    differing = [
        next(i for i, (a, b) in enumerate(zip(row, own)) if a != b) for row, own in zip(bug, alone) if row != own
    ]
    first_round = [len(row[0].emitted) + len(row[1].emitted) for row, out, own in zip(rounds, bug, alone) if out != own]
    return {
        "rows": len(prompts),
        "tokens": tokens,
        "right_rows": sum(r.tokens == own for r, own in zip(right, alone)),
        "bug_rows": len(differing),
        "bug_tokens": sum(a != b for row, own in zip(bug, alone) for a, b in zip(row, own)),
        "first": min(differing) + 1 if differing else 0,
        "same_round": int(all(d >= f for d, f in zip(differing, first_round))),
    }


def llama_cpp_runs(saved: str) -> dict[str, dict]:
    """From `benchmarks/llama_cpp_exactness.py`'s JSON lines: each run's result keyed by its command without `--out
    FILE` ('controls --threads 2' -> {'1.5b ubatch 4': {...}, ...}); a command run again replaces its older line."""
    runs = {}
    for line in saved.splitlines():
        if line.strip():
            record = json.loads(line)
            argv = list(record["argv"])
            if "--out" in argv:
                del argv[argv.index("--out") : argv.index("--out") + 2]
            runs[" ".join(argv)] = record["result"]
    return runs


def first_differing_k(passes: dict[str, dict]) -> int | None:
    """The fewest tokens of a pass whose rows differ from one-token steps (None: every pass was exact)."""
    return min((int(k) for k, rows in passes.items() if rows["rows_differ"]), default=None)


def llama_cpp_numbers(saved: str) -> dict[str, object]:
    """What chapter 4 quotes of llama.cpp's exactness and costs, from the JSON lines of
    `benchmarks/llama_cpp_exactness.py`.

    Keys: "exact_rows" (rows of k-token passes compared per model and thread count: a row per token, "exact_passes" the
    pass lengths k), "exact_runs", "exact_differ" (rows
    that differed, all runs), "tree_rows", "keep_rows", "long_rows"; per control C ("defaults", "ubatch4", "ubatch",
    "unrepacked", "flash", "value") and model M ("1.5b", "0.5b"): "C_M_first" (first k whose rows differ, or None),
    "C_M_max" (largest
    |logit difference| over the passes), "C_M_rows", "C_M_differ", "C_M_argmax", "C_M_passes" (the pass lengths k),
    "C_M_long" (largest difference of the 6 tokens after 300); "greedy_*" the speculative loop; timings "t1", "t2" (the
    1.5B at 1 and 2 threads, the quieter run), "t1_defaults", "busy_t1", "busy_t2", "draft_t1" (the run with another
    process busy, the 0.5B at 1 thread): each {"step", "min", "v"} with v[k] a pass over k tokens over one step.
    """
    runs = llama_cpp_runs(saved)
    exact = runs["exactness"]

    def checks(run: dict) -> list[dict]:
        return [
            *run["passes"].values(),
            run["after_rollback"],
            run["tree"]["branches"],
            run["tree"]["after_keep"],
            run["6_after_300"],
        ]

    pass_rows = {sum(rows["rows"] for rows in run["passes"].values()) for run in exact.values()}
    assert len(pass_rows) == 1, f"the exactness runs compared different passes: {pass_rows}"
    first = next(iter(exact.values()))
    numbers: dict[str, object] = {
        "exact_runs": len(exact),
        "exact_rows": pass_rows.pop(),
        "exact_differ": sum(rows["rows_differ"] for run in exact.values() for rows in checks(run)),
        "tree_rows": first["tree"]["branches"]["rows"],
        "keep_rows": first["tree"]["after_keep"]["rows"],
        "long_rows": first["6_after_300"]["rows"],
        "exact_passes": sorted(int(k) for k in first["passes"]),
    }
    controls = runs["controls --threads 2"]
    for key, label in (
        ("defaults", "llama.cpp defaults"),
        ("ubatch4", "ubatch 4"),
        ("ubatch", "ubatch 512"),
        ("unrepacked", "ubatch 512 unrepacked"),
        ("flash", "flash attention off"),
        ("value", "V cache float16"),
    ):
        for model in ("1.5b", "0.5b"):
            run = controls[f"{model} {label}"]
            passes = run["passes"].values()
            numbers |= {
                f"{key}_{model}_first": first_differing_k(run["passes"]),
                f"{key}_{model}_max": max(r["max_abs"] for r in passes),
                f"{key}_{model}_rows": sum(r["rows"] for r in passes),
                f"{key}_{model}_differ": sum(r["rows_differ"] for r in passes),
                f"{key}_{model}_argmax": sum(r["argmax_differ"] for r in passes),
                f"{key}_{model}_long": run["6_after_300"]["max_abs"],
                f"{key}_{model}_passes": sorted(int(k) for k in run["passes"]),
            }
    greedy = runs["greedy --threads 2 --tokens 64"]
    numbers |= {f"greedy_{key}": value for key, value in greedy.items()}

    def timing(run: dict) -> dict:
        return {"step": run["step_ms"], "min": run["step_ms_min"], "v": {int(k): v for k, v in run["v"].items()}}

    quiet, busy = runs["timing --models 1.5b --repeats 9"], runs["timing --repeats 7 --max-k 9 --busy 1"]
    numbers |= {
        "t1": timing(quiet["1.5b threads=1"]),
        "t2": timing(quiet["1.5b threads=2"]),
        "t1_defaults": timing(
            runs["timing --models 1.5b --threads 1 --repeats 9 --settings defaults"][
                "1.5b threads=1 llama.cpp defaults"
            ]
        ),
        "busy_t1": timing(busy["1.5b threads=1"]),
        "busy_t2": timing(busy["1.5b threads=2"]),
        "draft_t1": timing(busy["0.5b threads=1"]),
    }
    return numbers


def runtime_side_by_side(saved: str) -> dict[str, float]:
    """From `benchmarks/llama_cpp.py`'s CSV with `--specdec llama.cpp:...` variants: median generating tokens/s per
    variant (keys: "completion", "speculative" for llama.cpp's tools; "plain", "defaults", "draft-model",
    "prompt-lookup" for specdec's llama.cpp runtime), and specdec's plain and default over `llama-completion`, medians
    of per-prompt ratios."""
    import io

    import pandas as pd

    frame = pd.read_csv(io.StringIO(saved))
    frame["key"] = [
        tool.removeprefix("llama-") if engine == "llama.cpp" else variant.split(" on ")[0]
        for engine, tool, variant in zip(frame["engine"], frame["tool"], frame["variant"])
    ]
    rates = frame.pivot_table(index="prompt_id", columns="key", values="tokens_per_s")
    return {
        **{name: rates[name].median() for name in rates.columns},
        "plain_vs_completion": (rates["plain"] / rates["completion"]).median(),
        "defaults_vs_completion": (rates["defaults"] / rates["completion"]).median(),
    }
