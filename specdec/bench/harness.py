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
side by side, Spec-Bench style (`specdec.bench.methods.families`). A method that does not apply to a pair (assisted generation without
a draft model) is skipped for that pair. A family's c is measured in its own run: its draft time per
draft step (per round for a model-free drafter) over the target's step.

Gammas are labels (`specdec.bench.gammas`): whole numbers, "default", "stop", "tree" or "tree-N", and
"adaptive"; each method says which it runs. Every row also carries the oracle bound (`oracle_speedup`,
see `specdec.bench.comparison`) and measured / oracle.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

import pandas as pd
import torch
import transformers

from specdec.bench.comparison import draft_agreement, greedy_oracle_speedup, oracle_speedup
from specdec.bench.gammas import DEFAULT, STOP, check_gammas, is_schedule, tree_budget
from specdec.bench.methods import BASELINE, Outcome, bench_methods, families
from specdec.bench.prompts import BenchPrompt, encode_bench_prompt, suite
from specdec.bench.tables import COLUMNS
from specdec.engine.costs import CostProfile
from specdec.runtime.costs import measure_costs
from specdec.engine.inputs import Decoding
from specdec.engine.results import GenerationResult
from specdec.engine.stop_rule import ConfidenceStop
from specdec.errors import SpecdecError
from specdec.kernels.devices import dtype_name
from specdec.pair.resources import LoadedPair
from specdec.reference.theory import walltime_speedup

ALL = "all"
STOP_MAX_GAMMA = ConfidenceStop().max_gamma
ORACLE_MAX_GAMMA = 32    # v(k) is measured up to here, for the oracle's long runs of agreement


@dataclass(frozen=True)
class BenchSettings:
    """What to run. Every combination of methods x gammas x prompts x temperatures x repeats runs once."""

    methods: tuple[str, ...] = ("speculative", "generate")
    gammas: tuple[int | str, ...] = (4,)               # whole numbers, "stop" and/or "adaptive"
    categories: tuple[str, ...] | None = None       # None: all of `specdec.bench.prompts.CATEGORIES`
    prompts_per_category: int | None = None         # None: every prompt of a category
    decoding: Decoding = field(default_factory=lambda: Decoding(max_new_tokens=128, temperature=0.0, seed=0))
    temperatures: tuple[float, ...] | None = None    # a sweep of temperatures; None: the decoding's own
    repeats: int = 1                                 # repeat r runs with seed decoding.seed + r
    warmup_runs: int = 1
    draft_vocab_limit: int | None = None             # see ModelDrafter(vocab_limit=...)
    max_adaptive_gamma: int = 12

    def __post_init__(self) -> None:
        if ALL in self.methods:
            object.__setattr__(self, "methods", tuple(dict.fromkeys(method for name in self.methods
                                                                      for method in (families() if name == ALL else (name,)))))
        unknown = [method for method in self.methods if method not in bench_methods()]
        if unknown:
            raise SpecdecError(f"unknown methods {unknown}: choose from {', '.join(bench_methods())}, or {ALL}")
        check_gammas(self.gammas)
        if self.draft_vocab_limit is not None and any(tree_budget(gamma) is not None for gamma in self.gammas):
            raise SpecdecError("a tree drafter reads the whole output layer: drop the draft vocabulary limit or the tree gammas")
        if self.repeats < 1 or self.warmup_runs < 0:
            raise SpecdecError("repeats must be >= 1 and warmup_runs >= 0")
        if self.temperatures is not None and (any(t < 0 for t in self.temperatures) or not self.temperatures):
            raise SpecdecError(f"temperatures must be >= 0, got {list(self.temperatures)}")

    @classmethod
    def chosen(cls, methods: Sequence[str], gammas: Sequence[int | str] = (), **choices) -> BenchSettings:
        """The benchmark a person chose, built one way for `specdec bench` and the dashboard's Compare page: the methods as named
        (ALL: the pair's draft and every family side by side), the gamma labels given, else the default's: DEFAULT where every
        family runs (each drafts as it would by default, the pair's draft model too), else the stop rule. `choices` are the
        other fields (categories, prompts_per_category, decoding, temperatures, repeats, ...).

        >>> BenchSettings.chosen(["speculative"]).gammas, BenchSettings.chosen(["speculative", ALL]).gammas
        (('stop',), ('default',))
        """
        default = (DEFAULT,) if ALL in methods else (STOP,)
        return cls(methods=tuple(methods), gammas=tuple(gammas) or default, **choices)

    @property
    def temperature_sweep(self) -> tuple[float, ...]:
        """The temperatures every variant runs at."""
        return self.temperatures or (self.decoding.temperature,)

    def decoding_for(self, run: Run) -> Decoding:
        """The decoding of one run: its temperature, and the first seed plus its repeat."""
        return replace(self.decoding, temperature=run.temperature, seed=(self.decoding.seed or 0) + run.repeat)

    @property
    def all_methods(self) -> tuple[str, ...]:
        """The chosen methods with the baseline first (added when missing)."""
        return (BASELINE,) + tuple(method for method in self.methods if method != BASELINE)

    @property
    def fixed_gammas(self) -> list[int]:
        return [gamma for gamma in self.gammas if not is_schedule(gamma)]

    def gammas_for(self, method: str) -> tuple[int | str | None, ...]:
        """The gamma labels `method` runs with (None for methods without one)."""
        return bench_methods()[method].gammas(tuple(self.gammas))


@dataclass(frozen=True)
class Run:
    """One planned run: a method, its gamma (None for methods without one), a prompt, a temperature, a repeat."""

    method: str
    gamma: int | str | None
    prompt: BenchPrompt
    temperature: float
    repeat: int


def applicable(method: str, pair: LoadedPair, temperature: float = 0.0) -> bool:
    """Whether `method` can run on `pair` at `temperature` (`BenchMethod.applies`)."""
    return bench_methods()[method].applies(pair, temperature)


def plan_runs(pair: LoadedPair, settings: BenchSettings) -> list[Run]:
    """Every run for one pair, interleaved: per (prompt, temperature, repeat) all methods back to back,
    in reverse order on odd repeats."""
    variants = [(method, gamma) for method in settings.all_methods if applicable(method, pair)
                for gamma in settings.gammas_for(method)
                if tree_budget(gamma) is None or (pair.draft is not None and not pair.cross_tokenizer)]  # trees: same-tokenizer drafts
    runs = []
    for prompt in suite(settings.categories, settings.prompts_per_category):
        for temperature in settings.temperature_sweep:
            for repeat in range(settings.repeats):
                ordered = variants if repeat % 2 == 0 else variants[::-1]
                runs += [Run(method, gamma, prompt, temperature, repeat) for method, gamma in ordered
                         if applicable(method, pair, temperature)]
    return runs


def run_benchmark(pairs: Sequence[LoadedPair], settings: BenchSettings,
                  progress: Callable[[int, int, str], None] | None = None,
                  should_stop: Callable[[], bool] | None = None,
                  on_row: Callable[[dict], None] | None = None) -> pd.DataFrame:
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
        costs = measure_costs(pair.target, pair.draft, first,
                              sorted(set(settings.fixed_gammas) | {1, 2, 4, 8, settings.max_adaptive_gamma, STOP_MAX_GAMMA, ORACLE_MAX_GAMMA}),
                              draft_input_ids=pair.draft_ids(first))
        for run in runs[:settings.warmup_runs * len({(r.method, r.gamma) for r in runs})]:
            _execute(pair, run, encoded[run.prompt.id], settings, costs, warmup=True)
        for run in runs:
            if progress is not None:
                progress(done, total, f"{pair.draft_name}->{pair.target_name}: {run.method}"
                                      f"{'' if run.gamma is None else f' gamma={run.gamma}'} on {run.prompt.id}")
            if should_stop is not None and should_stop():  # asked after the progress report a Stop button may answer
                return rows_to_frame(rows)
            rows.append(_execute(pair, run, encoded[run.prompt.id], settings, costs))
            if on_row is not None:
                on_row(rows[-1])
            done += 1
    if progress is not None:
        progress(done, total, "done")
    return rows_to_frame(rows)


def _execute(pair: LoadedPair, run: Run, input_ids: torch.Tensor, settings: BenchSettings,
             costs: CostProfile, warmup: bool = False) -> dict | None:
    """Run one method once; return its row (None for a warm-up)."""
    decoding = settings.decoding_for(run)
    method = bench_methods()[run.method]
    outcome = method.run(pair, input_ids, decoding, run.gamma, costs, settings)
    if warmup:
        return None
    row = dict(new_tokens=len(outcome.tokens), wall_time_s=outcome.wall_time_s)
    if outcome.result is not None:
        stats = outcome.result.stats
        drafting_rounds = sum(1 for round_ in outcome.result.rounds if round_.drafted)
        row = stats.to_dict() | dict(rounds=drafting_rounds,
                                     mean_gamma=stats.drafted / drafting_rounds if drafting_rounds else None,
                                     mean_accepted_per_round=stats.accepted / drafting_rounds if drafting_rounds else None)
    takes_gamma = method.gammas((1,)) != (None,)
    row |= dict(
        timestamp=datetime.now(timezone.utc).isoformat(timespec="seconds"), pair=f"{pair.draft_name}->{pair.target_name}",
        draft=run.method if method.family else pair.draft_name, target=pair.target_name, method=run.method,
        schedule=run.gamma if is_schedule(run.gamma) else ("fixed" if takes_gamma else "none"),
        gamma=None if is_schedule(run.gamma) else run.gamma, category=run.prompt.category,
        prompt_id=run.prompt.id, repeat=run.repeat, prompt_tokens=input_ids.shape[-1], **decoding.as_kwargs(),
        tokens_per_second=row["new_tokens"] / row["wall_time_s"] if row["wall_time_s"] > 0 else None,
        device=str(pair.device), dtype=dtype_name(pair.dtype), torch_version=torch.__version__,
        draft_quantization="none" if method.family else pair.draft_quantization, draft_vocab_limit=settings.draft_vocab_limit,
        quantization=pair.quantization, draft_dtype=None if pair.draft is None or method.family else dtype_name(pair.precision_of('draft').dtype),
        transformers_version=transformers.__version__, specdec_version=_specdec_version(), engine="specdec",
        python_version=platform.python_version(), **_planned(pair, outcome.result),
    )
    row["oracle_speedup"] = None if method.family else _oracle(pair, run, input_ids, outcome, costs)
    if method.family:
        row["draft_cost_ratio"] = measured_cost_ratio(outcome.result, costs)
    if takes_gamma:
        row["draft_cost_ratio"] = costs.c
        if not is_schedule(run.gamma):
            row["verify_cost"] = costs.v(run.gamma)
            alpha = row.get("alpha_estimate")
            if method.uses_draft_model and outcome.result is not None and alpha is not None:
                row["predicted_speedup"] = walltime_speedup(alpha, run.gamma, costs.c, costs.v(run.gamma))
    return row


def _planned(pair: LoadedPair, result: GenerationResult | None) -> dict:
    """The row's plan: what ran each model, the measured c and v(k) the rounds were priced with, and the header line."""
    target, draft = pair.models
    measured = result is not None and bool(result.verify_costs)
    return dict(target_runtime=target.runtime,
                draft_runtime=draft.runtime if draft is not None and (result is None or result.draft_cost_ratio) else None,
                measured_c=result.draft_cost_ratio if measured else None,
                measured_verify=" ".join(f"{v:.3f}" for v in result.verify_costs[1:17]) if measured else None,
                plan=result.plan if result is not None and result.plan else None)


def measured_cost_ratio(result: GenerationResult, costs: CostProfile) -> float | None:
    """c as one run measured it: draft seconds per draft step (per drafting round without a draft model) over a target step."""
    stats = result.stats
    steps = stats.draft_passes or sum(1 for round_ in result.rounds[1:] if round_.drafted)
    return stats.draft_time_s / steps / costs.target_step_s if steps else None


def _oracle(pair: LoadedPair, run: Run, input_ids: torch.Tensor, outcome: Outcome, costs: CostProfile) -> float | None:
    """The oracle bound for this run: from the draft's greedy agreement with the output when greedy (same tokenizer),
    else from the trace."""
    if run.temperature == 0 and pair.draft is not None and not pair.cross_tokenizer and outcome.tokens:
        return greedy_oracle_speedup(draft_agreement(pair.draft, input_ids, outcome.tokens), costs)
    if outcome.result is not None and outcome.result.rounds:
        return oracle_speedup(outcome.result.rounds, costs)
    return None


def _specdec_version() -> str:
    from specdec import __version__

    return __version__


def rows_to_frame(rows: list[dict]) -> pd.DataFrame:
    """Rows to a frame with every column, plus speedup vs `generate` on the same (pair, prompt, temperature, repeat)."""
    frame = pd.DataFrame(rows).reindex(columns=COLUMNS)
    if frame.empty:
        return frame
    key = ["pair", "prompt_id", "temperature", "repeat"]
    baseline = frame[frame["method"] == BASELINE].set_index(key)["tokens_per_second"]
    frame["speedup"] = frame["tokens_per_second"].to_numpy() / baseline.reindex(pd.MultiIndex.from_frame(frame[key])).to_numpy()
    frame["efficiency"] = frame["speedup"] / frame["predicted_speedup"]
    frame["oracle_efficiency"] = frame["speedup"] / frame["oracle_speedup"]
    return frame
