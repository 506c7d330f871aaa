"""The benchmark harness: pairs x methods x gammas x prompts x temperatures x repeats, one row per run.

    pairs = [load_pair("qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", dtype="bfloat16")]
    frame = run_benchmark(pairs, BenchSettings(methods=("speculative", "assisted"), gammas=(2, 4, 6)))
    overview(frame); best_gammas(frame); save_csv(frame, "results.csv")      # specdec.bench.tables

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
  `GenerationStats.alpha_estimate`) and c and v(gamma) measured for the pair (`specdec.engine.costs`),
  and efficiency = measured speedup / predicted speedup.

Methods are objects (`specdec.bench.methods`): "speculative" (ours, the pair's draft), "plain" (ours,
target alone), the drafting families that need only the pair's target ("prompt-lookup", "recycling",
"lookahead", "suffix", "layer-skip", a trained head: every family of `specdec.registry`), and transformers'
"generate", "assisted", "assisted-dynamic", "assisted-default" and "hf-prompt-lookup". "all" is every family
side by side, Spec-Bench style (`specdec.bench.methods.families`). A method that does not apply to a pair (assisted
generation without a draft model) is skipped for that pair. A family's c is measured in its own run: its draft time per
draft step (per round for a model-free drafter) over the target's step.

Gammas are labels (`specdec.bench.gammas`): whole numbers, "default", "stop", "tree" or "tree-N", and
"adaptive"; each method says which it runs. Every row also carries the oracle bound (`oracle_speedup`,
see `specdec.bench.comparison`) and measured / oracle.

What to run is `specdec.bench.settings` (`BenchSettings`, `Run`); each run's row is made in `specdec.bench.row`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd
import torch

from specdec.bench.gammas import tree_budget
from specdec.bench.methods import BASELINE, bench_methods
from specdec.bench.prompts import encode_bench_prompt, suite
from specdec.bench.row import run_row
from specdec.bench.settings import BenchSettings, Run
from specdec.bench.tables import COLUMNS
from specdec.engine.costs import CostProfile
from specdec.runtime.costs import measure_costs
from specdec.engine.stop_rule import ConfidenceStop
from specdec.pair.resources import LoadedPair

STOP_MAX_GAMMA = ConfidenceStop().max_gamma
ORACLE_MAX_GAMMA = 32  # v(k) is measured up to here, for the oracle's long runs of agreement


def applicable(method: str, pair: LoadedPair, temperature: float = 0.0) -> bool:
    """Whether `method` can run on `pair` at `temperature` (`BenchMethod.applies`)."""
    return bench_methods()[method].applies(pair, temperature)


def plan_runs(pair: LoadedPair, settings: BenchSettings) -> list[Run]:
    """Every run for one pair, interleaved: per (prompt, temperature, repeat) all methods back to back,
    in reverse order on odd repeats."""
    variants = [
        (method, gamma)
        for method in settings.all_methods
        if applicable(method, pair)
        for gamma in settings.gammas_for(method)
        # trees: same-tokenizer drafts
        if tree_budget(gamma) is None or (pair.draft is not None and not pair.cross_tokenizer)
    ]
    runs = []
    for prompt in suite(settings.categories, settings.prompts_per_category):
        for temperature in settings.temperature_sweep:
            for repeat in range(settings.repeats):
                ordered = variants if repeat % 2 == 0 else variants[::-1]
                runs += [
                    Run(method, gamma, prompt, temperature, repeat)
                    for method, gamma in ordered
                    if applicable(method, pair, temperature)
                ]
    return runs


def run_benchmark(
    pairs: Sequence[LoadedPair],
    settings: BenchSettings,
    progress: Callable[[int, int, str], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_row: Callable[[dict], None] | None = None,
) -> pd.DataFrame:
    """Run the benchmark and return one row per run (columns `COLUMNS`). Stopping early keeps the rows so far.

    `on_row` is given every row as soon as it is measured, so a caller that is interrupted (an
    exception from its `progress` callback, say) still holds the rows so far: `rows_to_frame(rows)`.
    """
    plans = [(pair, plan_runs(pair, settings)) for pair in pairs]
    total = sum(len(runs) for _, runs in plans)
    rows: list[dict] = []
    done = 0
    for pair, runs in plans:
        encoded = {prompt.id: encode_bench_prompt(pair.tokenizer, prompt) for prompt in {run.prompt for run in runs}}
        first = next(iter(encoded.values()))
        costs = measure_costs(
            pair.target,
            pair.draft,
            first,
            sorted(
                set(settings.fixed_gammas) | {1, 2, 4, 8, settings.max_adaptive_gamma, STOP_MAX_GAMMA, ORACLE_MAX_GAMMA}
            ),
            draft_input_ids=pair.draft_ids(first),
        )
        for run in runs[: settings.warmup_runs * len({(r.method, r.gamma) for r in runs})]:
            _execute(pair, run, encoded[run.prompt.id], settings, costs, warmup=True)
        for run in runs:
            if progress is not None:
                progress(
                    done,
                    total,
                    f"{pair.draft_name}->{pair.target_name}: {run.method}"
                    f"{'' if run.gamma is None else f' gamma={run.gamma}'} on {run.prompt.id}",
                )
            if should_stop is not None and should_stop():  # asked after the progress report a Stop button may answer
                return rows_to_frame(rows)
            rows.append(_execute(pair, run, encoded[run.prompt.id], settings, costs))
            if on_row is not None:
                on_row(rows[-1])
            done += 1
    if progress is not None:
        progress(done, total, "done")
    return rows_to_frame(rows)


def _execute(
    pair: LoadedPair,
    run: Run,
    input_ids: torch.Tensor,
    settings: BenchSettings,
    costs: CostProfile,
    warmup: bool = False,
) -> dict | None:
    """Run one method once; return its row (None for a warm-up)."""
    decoding = settings.decoding_for(run)
    method = bench_methods()[run.method]
    outcome = method.run(pair, input_ids, decoding, run.gamma, costs, settings)
    if warmup:
        return None
    return run_row(pair, run, method, input_ids, decoding, settings, outcome, costs)


def rows_to_frame(rows: list[dict]) -> pd.DataFrame:
    """Rows to a frame with every column, plus speedup vs `generate` on the same (pair, prompt, temperature, repeat)."""
    frame = pd.DataFrame(rows).reindex(columns=COLUMNS)
    if frame.empty:
        return frame
    key = ["pair", "prompt_id", "temperature", "repeat"]
    baseline = frame[frame["method"] == BASELINE].set_index(key)["tokens_per_second"]
    frame["speedup"] = (
        frame["tokens_per_second"].to_numpy() / baseline.reindex(pd.MultiIndex.from_frame(frame[key])).to_numpy()
    )
    frame["efficiency"] = frame["speedup"] / frame["predicted_speedup"]
    frame["oracle_efficiency"] = frame["speedup"] / frame["oracle_speedup"]
    return frame
