"""The benchmark harness: pairs x methods x gammas x prompts x temperatures x repeats, one row per run.

    pairs = [load_pair("qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", dtype="bfloat16")]
    frame = run_benchmark(pairs, BenchSettings(methods=("speculative", "assisted"), gammas=(2, 4, 6)))
    summarize(frame); best_gammas(frame); save_csv(frame, "results.csv")

Honest measurement, by construction:

- every method runs in the same process on the same prompts; for each prompt, temperature and
  repeat, all methods run back to back (A B C, then C B A on the next repeat), so slow drift of the
  machine hits them alike;
- a warm-up run of every method comes first and is not recorded;
- speedup is always relative to the target alone with transformers' `generate` on the same prompt,
  temperature and repeat (it is added to the methods when missing), so a slow baseline of our own
  cannot flatter us;
- each speculative row with a fixed gamma carries its prediction from theory, E[tokens per round] /
  (gamma * c + v(gamma)), built from the alpha estimated in that run (accepted / tested tokens,
  `GenerationStats.alpha_estimate`) and c and v(gamma) measured for the pair (`specdec.costs`),
  and efficiency = measured speedup / predicted speedup.

Methods: "speculative" (ours), "plain" (ours, target alone), and transformers' "generate",
"assisted", "assisted-dynamic" and "hf-prompt-lookup" (`specdec.hf_baselines`). A method that
does not apply to a pair (assisted generation without a draft model) is skipped for that pair.

Gammas are whole numbers or "adaptive": our `AdaptiveGamma` schedule for "speculative", and
transformers' own dynamic schedule from its default start for "assisted-dynamic" (which then runs
only that way; without "adaptive" among the gammas it starts from each fixed gamma instead).
"""

from __future__ import annotations

import os
import platform
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import torch
import transformers

from specdec.converted import dtype_name
from specdec.costs import CostProfile, measure_costs
from specdec.errors import SpecdecError
from specdec.hf_baselines import HF_METHODS, hf_generate
from specdec.inputs import MAX_GAMMA
from specdec.pairing import LoadedPair, generate_plain, generate_speculative
from specdec.prompts import BenchPrompt, encode_bench_prompt, suite
from specdec.schedule import AdaptiveGamma
from specdec.theory import walltime_speedup

METHODS = ("speculative", "plain") + HF_METHODS
GAMMA_METHODS = {"speculative", "assisted", "assisted-dynamic", "hf-prompt-lookup"}
ADAPTIVE = "adaptive"
ADAPTIVE_METHODS = {"speculative", "assisted-dynamic"}
BASELINE = "generate"

COLUMNS = [
    "timestamp", "pair", "draft", "target", "method", "schedule", "gamma", "mean_gamma", "category", "prompt_id", "temperature", "top_k",
    "top_p", "repeat", "seed", "max_new_tokens", "prompt_tokens", "new_tokens", "wall_time_s", "tokens_per_second",
    "draft_time_s", "verify_time_s", "other_time_s", "drafted", "accepted", "acceptance_rate", "alpha_estimate", "rounds",
    "mean_accepted_per_round", "tokens_per_target_pass", "target_passes", "draft_cost_ratio", "verify_cost",
    "predicted_speedup", "speedup", "efficiency", "device", "dtype", "torch_version", "transformers_version",
    "specdec_version", "python_version", "draft_quantization", "draft_vocab_limit",
]


@dataclass(frozen=True)
class BenchSettings:
    """What to run. Every combination of methods x gammas x prompts x temperatures x repeats runs once."""

    methods: tuple[str, ...] = ("speculative", "generate")
    gammas: tuple[int | str, ...] = (4,)               # whole numbers and/or "adaptive"
    categories: tuple[str, ...] | None = None       # None: all of `specdec.prompts.CATEGORIES`
    prompts_per_category: int | None = None         # None: every prompt of a category
    temperatures: tuple[float, ...] = (0.0,)
    repeats: int = 1
    warmup_runs: int = 1
    max_new_tokens: int = 128
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0
    draft_vocab_limit: int | None = None             # see ModelDrafter(vocab_limit=...)
    max_adaptive_gamma: int = 12

    def __post_init__(self) -> None:
        unknown = [method for method in self.methods if method not in METHODS]
        if unknown:
            raise SpecdecError(f"unknown methods {unknown}: choose from {', '.join(METHODS)}")
        if not self.gammas or any(gamma != ADAPTIVE and not (isinstance(gamma, int) and 1 <= gamma <= MAX_GAMMA)
                                  for gamma in self.gammas):
            raise SpecdecError(f"gammas must be whole numbers from 1 to {MAX_GAMMA} or '{ADAPTIVE}', got {list(self.gammas)}")
        if self.repeats < 1 or self.max_new_tokens < 1 or self.warmup_runs < 0:
            raise SpecdecError("repeats and max_new_tokens must be >= 1 and warmup_runs >= 0")
        if any(t < 0 for t in self.temperatures) or not self.temperatures:
            raise SpecdecError(f"temperatures must be >= 0, got {list(self.temperatures)}")

    @property
    def all_methods(self) -> tuple[str, ...]:
        """The chosen methods with the baseline first (added when missing)."""
        return (BASELINE,) + tuple(method for method in self.methods if method != BASELINE)

    @property
    def fixed_gammas(self) -> list[int]:
        return [gamma for gamma in self.gammas if gamma != ADAPTIVE]

    def gammas_for(self, method: str) -> tuple[int | str | None, ...]:
        """The gamma values `method` runs with (None for methods without one)."""
        if method not in GAMMA_METHODS:
            return (None,)
        if method == "assisted-dynamic" and ADAPTIVE in self.gammas:
            return (ADAPTIVE,)  # transformers' schedule from its own default start, not from each fixed gamma
        return tuple(gamma for gamma in self.gammas if gamma != ADAPTIVE or method in ADAPTIVE_METHODS)


@dataclass(frozen=True)
class Run:
    """One planned run: a method, its gamma (None for methods without one), a prompt, a temperature, a repeat."""

    method: str
    gamma: int | str | None
    prompt: BenchPrompt
    temperature: float
    repeat: int


def applicable(method: str, pair: LoadedPair) -> bool:
    """Whether `method` can run on `pair` (transformers' assisted generation needs a draft model, its prompt lookup none)."""
    if method in ("assisted", "assisted-dynamic"):
        return pair.draft is not None
    if method == "hf-prompt-lookup":
        return pair.draft is None
    return True


def plan_runs(pair: LoadedPair, settings: BenchSettings) -> list[Run]:
    """Every run for one pair, interleaved: per (prompt, temperature, repeat) all methods back to back,
    in reverse order on odd repeats."""
    variants = [(method, gamma) for method in settings.all_methods if applicable(method, pair)
                for gamma in settings.gammas_for(method)]
    runs = []
    for prompt in suite(settings.categories, settings.prompts_per_category):
        for temperature in settings.temperatures:
            for repeat in range(settings.repeats):
                ordered = variants if repeat % 2 == 0 else variants[::-1]
                runs += [Run(method, gamma, prompt, temperature, repeat) for method, gamma in ordered]
    return runs


def run_benchmark(pairs: Sequence[LoadedPair], settings: BenchSettings,
                  progress: Callable[[int, int, str], None] | None = None,
                  should_stop: Callable[[], bool] | None = None) -> pd.DataFrame:
    """Run the benchmark and return one row per run (columns `COLUMNS`). Stopping early keeps the rows so far."""
    plans = [(pair, plan_runs(pair, settings)) for pair in pairs]
    total = sum(len(runs) for _, runs in plans)
    rows: list[dict] = []
    done = 0
    for pair, runs in plans:
        encoded = {prompt.id: encode_bench_prompt(pair.tokenizer, prompt) for prompt in {run.prompt for run in runs}}
        costs = measure_costs(pair.target, pair.draft, next(iter(encoded.values())),
                              sorted(set(settings.fixed_gammas) | {1, 2, 4, 8, settings.max_adaptive_gamma}))
        for run in runs[:settings.warmup_runs * len({(r.method, r.gamma) for r in runs})]:
            _execute(pair, run, encoded[run.prompt.id], settings, costs, warmup=True)
        for run in runs:
            if progress is not None:
                progress(done, total, f"{pair.draft_name}->{pair.target_name}: {run.method}"
                                      f"{'' if run.gamma is None else f' gamma={run.gamma}'} on {run.prompt.id}")
            if should_stop is not None and should_stop():  # asked after the progress report a Stop button may answer
                return _finish(rows)
            rows.append(_execute(pair, run, encoded[run.prompt.id], settings, costs))
            done += 1
    if progress is not None:
        progress(done, total, "done")
    return _finish(rows)


def _execute(pair: LoadedPair, run: Run, input_ids: torch.Tensor, settings: BenchSettings,
             costs: CostProfile, warmup: bool = False) -> dict | None:
    """Run one method once; return its row (None for a warm-up)."""
    seed = settings.seed + run.repeat
    common = dict(max_new_tokens=settings.max_new_tokens, temperature=run.temperature, top_k=settings.top_k,
                  top_p=settings.top_p, seed=seed)
    row: dict = {}
    adaptive = run.gamma == ADAPTIVE
    if run.method == "speculative":
        gamma = AdaptiveGamma(costs, settings.max_adaptive_gamma) if adaptive else run.gamma
        result = generate_speculative(pair, input_ids, gamma=gamma, draft_vocab_limit=settings.draft_vocab_limit, **common)
    elif run.method == "plain":
        result = generate_plain(pair, input_ids, **common)
    else:
        tokens, wall = hf_generate(run.method, pair.target, pair.draft, input_ids, gamma=None if adaptive else run.gamma,
                                   eos_token_id=pair.eos_token_ids, **common)
        result = None
        row = dict(new_tokens=len(tokens), wall_time_s=wall)
    if warmup:
        return None
    if result is not None:
        stats = result.stats
        drafting_rounds = sum(1 for round_ in result.rounds if round_.drafted)
        row = stats.to_dict() | dict(rounds=drafting_rounds,
                                     mean_gamma=stats.drafted / drafting_rounds if drafting_rounds else None,
                                     mean_accepted_per_round=stats.accepted / drafting_rounds if drafting_rounds else None)
    row |= dict(
        timestamp=datetime.now(timezone.utc).isoformat(timespec="seconds"), pair=f"{pair.draft_name}->{pair.target_name}",
        draft=pair.draft_name, target=pair.target_name, method=run.method,
        schedule=ADAPTIVE if adaptive else ("fixed" if run.method in GAMMA_METHODS else "none"),
        gamma=None if adaptive else run.gamma, category=run.prompt.category,
        prompt_id=run.prompt.id, temperature=run.temperature, top_k=settings.top_k, top_p=settings.top_p, repeat=run.repeat,
        seed=seed, max_new_tokens=settings.max_new_tokens, prompt_tokens=input_ids.shape[-1],
        tokens_per_second=row["new_tokens"] / row["wall_time_s"] if row["wall_time_s"] > 0 else None,
        device=str(pair.device), dtype=dtype_name(pair.dtype), torch_version=torch.__version__,
        draft_quantization=pair.draft_quantization, draft_vocab_limit=settings.draft_vocab_limit,
        transformers_version=transformers.__version__, specdec_version=_specdec_version(),
        python_version=platform.python_version(),
    )
    if run.method in GAMMA_METHODS:
        row["draft_cost_ratio"] = costs.c
        if not adaptive:
            row["verify_cost"] = costs.v(run.gamma)
            alpha = row.get("alpha_estimate")
            if run.method == "speculative" and alpha is not None:
                row["predicted_speedup"] = walltime_speedup(alpha, run.gamma, costs.c, costs.v(run.gamma))
    return row


def _specdec_version() -> str:
    from specdec import __version__

    return __version__


def _finish(rows: list[dict]) -> pd.DataFrame:
    """Rows to a frame with every column, plus speedup vs `generate` on the same (pair, prompt, temperature, repeat)."""
    frame = pd.DataFrame(rows).reindex(columns=COLUMNS)
    if frame.empty:
        return frame
    key = ["pair", "prompt_id", "temperature", "repeat"]
    baseline = frame[frame["method"] == BASELINE].set_index(key)["tokens_per_second"]
    frame["speedup"] = frame["tokens_per_second"].to_numpy() / baseline.reindex(pd.MultiIndex.from_frame(frame[key])).to_numpy()
    frame["efficiency"] = frame["speedup"] / frame["predicted_speedup"]
    return frame


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Median with min and max of the key measures per (pair, method, schedule, gamma, category); gamma 0 means none."""
    measures = ["speedup", "tokens_per_second", "acceptance_rate", "tokens_per_target_pass", "predicted_speedup", "efficiency"]
    grouped = frame.assign(gamma=frame["gamma"].fillna(0)).groupby(["pair", "method", "schedule", "gamma", "category"])[measures]
    summary = grouped.agg(["median", "min", "max"])
    summary.columns = [f"{measure}_{stat}" for measure, stat in summary.columns]
    return summary.reset_index().assign(runs=grouped.size().to_numpy())


def overview(frame: pd.DataFrame) -> pd.DataFrame:
    """One line per (pair, method, schedule, gamma) over all prompts: the medians a reader wants first."""
    measures = {"speedup": "median", "tokens_per_second": "median", "acceptance_rate": "median", "alpha_estimate": "median",
                "tokens_per_target_pass": "median", "predicted_speedup": "median", "efficiency": "median", "prompt_id": "count"}
    table = frame.assign(gamma=_gamma_labels(frame)).groupby(["pair", "method", "schedule", "gamma"]).agg(measures)
    return table.rename(columns={"prompt_id": "runs"}).reset_index()


def _gamma_labels(frame: pd.DataFrame) -> pd.Series:
    """gamma as text for tables: '5', 'adaptive', or '' for methods without one (zero-padded so they sort)."""
    return frame.apply(lambda row: ADAPTIVE if row["schedule"] == ADAPTIVE else
                       ("" if pd.isna(row["gamma"]) else f"{int(row['gamma']):2d}"), axis=1)


def by_category(frame: pd.DataFrame, measure: str = "speedup") -> pd.DataFrame:
    """Median `measure` per variant (method, schedule, gamma) and prompt category, one column per category."""
    labels = _gamma_labels(frame)
    variant = frame["method"] + labels.map(lambda label: "" if not label else (" adaptive" if label == ADAPTIVE else f" gamma={label.strip()}"))
    table = frame.assign(variant=variant).pivot_table(index="variant", columns="category", values=measure, aggfunc="median")
    return table.reset_index().rename_axis(columns=None)


def best_gammas(frame: pd.DataFrame, method: str = "speculative") -> pd.DataFrame:
    """Per pair, the fixed gamma with the highest median speedup of `method` over all prompts."""
    rows = frame[(frame["method"] == method) & (frame["schedule"] == "fixed")]
    medians = rows.groupby(["pair", "gamma"])["speedup"].median().reset_index()
    best = medians.loc[medians.groupby("pair")["speedup"].idxmax()]
    return best.rename(columns={"speedup": "median_speedup"}).reset_index(drop=True)


def save_csv(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write `frame` to `path` atomically (a temporary file, then a rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as out:
            frame.to_csv(out, index=False)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return path


def load_csv(path_or_buffer) -> pd.DataFrame:
    """Read a benchmark CSV back, refusing files that are not one."""
    try:
        frame = pd.read_csv(path_or_buffer)
    except (ValueError, OSError, UnicodeDecodeError) as error:
        raise SpecdecError(f"could not read the benchmark CSV: {error}") from None
    if "schedule" not in frame.columns and "gamma" in frame.columns:  # files written before adaptive gamma existed
        frame["schedule"] = frame["gamma"].notna().map({True: "fixed", False: "none"})
    missing = [column for column in ("pair", "method", "schedule", "gamma", "category", "speedup") if column not in frame.columns]
    if missing:
        raise SpecdecError(f"this CSV is not a specdec benchmark (missing columns {missing}): download one from the Compare page "
                           "or write one with `specdec bench --out results.csv`")
    return frame.reindex(columns=COLUMNS)

