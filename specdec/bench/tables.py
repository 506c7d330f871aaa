"""A benchmark's rows: their columns, the CSV round trip, and the summaries people read first.

    frame = run_benchmark(pairs, settings)        # specdec.bench.harness: one row per run
    overview(frame)                               # medians per (pair, method, schedule, gamma)
    by_category(frame); best_gammas(frame); by_concurrency(frame)   # a vLLM server's levels (specdec.bench.vllm.server)
    save_csv(frame, "results.csv"); load_csv("results.csv"); to_markdown(overview(frame))

Nothing here runs a model; the dashboard's Compare page and `specdec bench` both read frames
through these functions, so their tables agree.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from specdec.bench.gammas import is_schedule
from specdec.errors import SpecdecError
from specdec.kernels.quantization import precision_name, precision_summary
from specdec.store import write_file

COLUMNS = [
    "timestamp",
    "pair",
    "draft",
    "target",
    "method",
    "schedule",
    "gamma",
    "mean_gamma",
    "category",
    "prompt_id",
    "temperature",
    "top_k",
    "top_p",
    "repeat",
    "seed",
    "max_new_tokens",
    "prompt_tokens",
    "new_tokens",
    "wall_time_s",
    "tokens_per_second",
    "draft_time_s",
    "verify_time_s",
    "other_time_s",
    "drafted",
    "accepted",
    "acceptance_rate",
    "alpha_estimate",
    "rounds",
    "mean_accepted_per_round",
    "tokens_per_target_pass",
    "target_passes",
    "draft_cost_ratio",
    "verify_cost",
    "predicted_speedup",
    "speedup",
    "efficiency",
    "oracle_speedup",
    "oracle_efficiency",
    "device",
    "dtype",
    "torch_version",
    "transformers_version",
    "specdec_version",
    "python_version",
    "draft_quantization",
    "draft_vocab_limit",
    "quantization",
    "draft_dtype",
    # specdec, vllm or vllm-server (`specdec.bench.vllm`)
    "engine",
    "engine_version",
    "concurrency",
    "mean_acceptance_length",
    "matches_plain",  # vLLM, greedy: 1 when its speculative output equals its own plain output on the prompt, else 0
    # what ran each model (torch, llama.cpp); the draft's is empty where none was used
    "target_runtime",
    "draft_runtime",
    # c and v(1..16) the plan priced its rounds with, measured on this machine (else empty)
    "measured_c",
    "measured_verify",
    "plan",  # the planner's header line: what `specdec run` prints for the same run spec
]
# a batch benchmark's own columns (`specdec.bench.batches`), kept when a CSV has them
BATCH_COLUMNS = ["batch_size", "variant", "prompts", "scaling", "exact", "seconds_per_target_pass", "threads"]


def precisions(frame: pd.DataFrame) -> dict[str, str]:
    """How each pair's models ran, for a caption: {'d->t': 'target
    float32 int8, draft bfloat16 int4'} (older CSVs: the dtype)."""
    described = {}
    for pair, rows in frame.groupby("pair"):
        row = rows.iloc[0]
        described[pair] = precision_summary(
            _precision(row.get("dtype"), row.get("quantization")) or "unknown",
            _precision(row.get("draft_dtype"), row.get("draft_quantization")),
        )
    return described


def _precision(dtype: object, quantization: object) -> str | None:
    """`precision_name` of a CSV row's cells; None where the dtype is missing (no draft model, or an older CSV)."""
    if not isinstance(dtype, str):
        return None
    return precision_name(dtype, quantization if isinstance(quantization, str) else "none")


def overview(frame: pd.DataFrame) -> pd.DataFrame:
    """One line per (pair, method, schedule, gamma) over all prompts: the medians a reader wants first."""
    measures = {
        "speedup": "median",
        "tokens_per_second": "median",
        "acceptance_rate": "median",
        "alpha_estimate": "median",
        "tokens_per_target_pass": "median",
        "predicted_speedup": "median",
        "efficiency": "median",
        "oracle_speedup": "median",
        "oracle_efficiency": "median",
        "prompt_id": "count",
    }
    table = frame.assign(gamma=_gamma_labels(frame)).groupby(["pair", "method", "schedule", "gamma"]).agg(measures)
    return table.rename(columns={"prompt_id": "runs"}).reset_index()


def _gamma_labels(frame: pd.DataFrame) -> pd.Series:
    """gamma as text for tables: '5', 'adaptive', 'stop', or '' for methods without one (zero-padded so they sort)."""
    return frame.apply(
        lambda row: (
            row["schedule"]
            if is_schedule(row["schedule"])
            else ("" if pd.isna(row["gamma"]) else f"{int(row['gamma']):2d}")
        ),
        axis=1,
    )


def by_category(frame: pd.DataFrame, measure: str = "speedup") -> pd.DataFrame:
    """Median `measure` per variant (method, schedule, gamma) and prompt category, one column per category."""
    labels = _gamma_labels(frame)
    variant = frame["method"] + labels.map(
        lambda label: "" if not label else (f" {label}" if is_schedule(label) else f" gamma={label.strip()}")
    )
    table = frame.assign(variant=variant).pivot_table(
        index="variant", columns="category", values=measure, aggfunc="median"
    )
    return table.reset_index().rename_axis(columns=None)


def by_concurrency(frame: pd.DataFrame) -> pd.DataFrame:
    """A vLLM server's rows per concurrency level: throughput,
    acceptance and speedup over the baseline server (none: empty)."""
    rows = frame[frame["engine"] == "vllm-server"]
    columns = [
        "pair",
        "method",
        "concurrency",
        "tokens_per_second",
        "acceptance_rate",
        "mean_acceptance_length",
        "speedup",
    ]
    return rows[columns].sort_values(["pair", "concurrency", "method"]).reset_index(drop=True)


def best_gammas(frame: pd.DataFrame, method: str = "speculative") -> pd.DataFrame:
    """Per pair, the fixed gamma with the highest median speedup of `method` over all prompts."""
    rows = frame[(frame["method"] == method) & (frame["schedule"] == "fixed")]
    medians = rows.groupby(["pair", "gamma"])["speedup"].median().reset_index()
    best = medians.loc[medians.groupby("pair")["speedup"].idxmax()]
    return best.rename(columns={"speedup": "median_speedup"}).reset_index(drop=True)


def save_csv(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write `frame` to `path` whole or not at all (`specdec.store.write_file`: a file beside it, then a rename)."""
    write_file(path, lambda temporary: frame.to_csv(temporary, index=False))
    return Path(path)


def load_csv(path_or_buffer) -> pd.DataFrame:
    """Read a benchmark CSV back, refusing files that are not one."""
    try:
        frame = pd.read_csv(path_or_buffer)
    except (ValueError, OSError, UnicodeDecodeError) as error:
        raise SpecdecError(f"could not read the benchmark CSV: {error}") from None
    if "schedule" not in frame.columns and "gamma" in frame.columns:  # files written before adaptive gamma existed
        frame["schedule"] = frame["gamma"].notna().map({True: "fixed", False: "none"})
    missing = [
        column
        for column in ("pair", "method", "schedule", "gamma", "category", "speedup")
        if column not in frame.columns
    ]
    if missing:
        raise SpecdecError(
            f"this CSV is not a specdec benchmark (missing columns {missing}): download one from the Compare page "
            "or write one with `specdec bench --out results.csv`"
        )
    frame = frame.reindex(columns=COLUMNS + [column for column in BATCH_COLUMNS if column in frame.columns])
    frame["engine"] = frame["engine"].fillna("specdec")  # files written before other engines existed
    return frame


def to_markdown(frame: pd.DataFrame) -> str:
    """A frame as a markdown table, numbers with two decimals and '–' for what was not measured.

    >>> print(to_markdown(pd.DataFrame({"method": ["plain"], "speedup": [float("nan")]})))
    | method | speedup |
    |---|---|
    | plain | – |
    """

    def cell(value) -> str:
        if isinstance(value, float):
            return "–" if value != value else f"{value:.2f}"  # NaN: not measured for this method
        return str(value).strip()

    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)
