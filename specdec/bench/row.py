"""One run's row of the benchmark frame (`specdec.bench.tables.COLUMNS`), as the harness (`specdec.bench.harness`)
records it: what the run measured, what ran on what (pair, method, schedule, gamma, prompt, decoding, machine,
versions, plan), and its costs: c and v(gamma) measured for the pair (`specdec.engine.costs`), theory's prediction
E[tokens per round] / (gamma * c + v(gamma)) from the alpha estimated in that run, and the oracle bound
(`specdec.bench.comparison`).
"""

from __future__ import annotations

import platform
from datetime import datetime, timezone

import torch
import transformers

from specdec.bench.comparison import draft_agreement, greedy_oracle_speedup, oracle_speedup
from specdec.bench.gammas import is_schedule
from specdec.bench.methods import BenchMethod, Outcome
from specdec.bench.settings import BenchSettings, Run
from specdec.engine.costs import CostProfile
from specdec.engine.inputs import Decoding
from specdec.engine.results import GenerationResult
from specdec.kernels.devices import dtype_name
from specdec.pair.resources import LoadedPair
from specdec.reference.theory import walltime_speedup


def run_row(
    pair: LoadedPair,
    run: Run,
    method: BenchMethod,
    input_ids: torch.Tensor,
    decoding: Decoding,
    settings: BenchSettings,
    outcome: Outcome,
    costs: CostProfile,
) -> dict:
    """The row of one run of `method` on `pair`, from its `outcome`."""
    row = _measured(outcome)
    takes_gamma = method.gammas((1,)) != (None,)
    row |= _described(
        pair,
        run,
        method,
        takes_gamma,
        input_ids,
        decoding,
        settings,
        outcome,
        tokens_per_second=row["new_tokens"] / row["wall_time_s"] if row["wall_time_s"] > 0 else None,
    )
    _priced(row, pair, run, method, takes_gamma, input_ids, outcome, costs)
    return row


def _measured(outcome: Outcome) -> dict:
    """What the run measured: new tokens and wall time, and with our engine its stats and drafting rounds."""
    row = dict(new_tokens=len(outcome.tokens), wall_time_s=outcome.wall_time_s)
    if outcome.result is not None:
        stats = outcome.result.stats
        drafting_rounds = sum(1 for round_ in outcome.result.rounds if round_.drafted)
        row = stats.to_dict() | dict(
            rounds=drafting_rounds,
            mean_gamma=stats.drafted / drafting_rounds if drafting_rounds else None,
            mean_accepted_per_round=stats.accepted / drafting_rounds if drafting_rounds else None,
        )
    return row


def _described(
    pair: LoadedPair,
    run: Run,
    method: BenchMethod,
    takes_gamma: bool,
    input_ids: torch.Tensor,
    decoding: Decoding,
    settings: BenchSettings,
    outcome: Outcome,
    tokens_per_second: float | None,
) -> dict:
    """The row's labels: what ran (pair, method, schedule, gamma, prompt, decoding), its speed, on what machine and
    versions, and its plan."""
    return dict(
        timestamp=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        pair=f"{pair.draft_name}->{pair.target_name}",
        draft=run.method if method.family else pair.draft_name,
        target=pair.target_name,
        method=run.method,
        schedule=run.gamma if is_schedule(run.gamma) else ("fixed" if takes_gamma else "none"),
        gamma=None if is_schedule(run.gamma) else run.gamma,
        category=run.prompt.category,
        prompt_id=run.prompt.id,
        repeat=run.repeat,
        prompt_tokens=input_ids.shape[-1],
        **decoding.as_kwargs(),
        tokens_per_second=tokens_per_second,
        device=str(pair.device),
        dtype=dtype_name(pair.dtype),
        torch_version=torch.__version__,
        draft_quantization="none" if method.family else pair.draft_quantization,
        draft_vocab_limit=settings.draft_vocab_limit,
        quantization=pair.quantization,
        draft_dtype=None if pair.draft is None or method.family else dtype_name(pair.precision_of("draft").dtype),
        transformers_version=transformers.__version__,
        specdec_version=_specdec_version(),
        engine="specdec",
        python_version=platform.python_version(),
        **_planned(pair, outcome.result),
    )


def _priced(
    row: dict,
    pair: LoadedPair,
    run: Run,
    method: BenchMethod,
    takes_gamma: bool,
    input_ids: torch.Tensor,
    outcome: Outcome,
    costs: CostProfile,
) -> None:
    """Add the row's costs: the oracle bound, c and v(gamma), and theory's predicted speedup for a fixed gamma."""
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


def _planned(pair: LoadedPair, result: GenerationResult | None) -> dict:
    """The row's plan: what ran each model, the measured c and v(k) the rounds were priced with, and the header line."""
    target, draft = pair.models
    measured = result is not None and bool(result.verify_costs)
    return dict(
        target_runtime=target.runtime,
        draft_runtime=draft.runtime if draft is not None and (result is None or result.draft_cost_ratio) else None,
        measured_c=result.draft_cost_ratio if measured else None,
        measured_verify=" ".join(f"{v:.3f}" for v in result.verify_costs[1:17]) if measured else None,
        plan=result.plan if result is not None and result.plan else None,
    )


def measured_cost_ratio(result: GenerationResult, costs: CostProfile) -> float | None:
    """c as one run measured it: draft seconds per draft step (per
    drafting round without a draft model) over a target step."""
    stats = result.stats
    steps = stats.draft_passes or sum(1 for round_ in result.rounds[1:] if round_.drafted)
    return stats.draft_time_s / steps / costs.target_step_s if steps else None


def _oracle(pair: LoadedPair, run: Run, input_ids: torch.Tensor, outcome: Outcome, costs: CostProfile) -> float | None:
    """The oracle bound for this run: from the draft's greedy agreement
    with the output when greedy (same tokenizer), else from the trace."""
    if run.temperature == 0 and pair.draft is not None and not pair.cross_tokenizer and outcome.tokens:
        return greedy_oracle_speedup(draft_agreement(pair.draft, input_ids, outcome.tokens), costs)
    if outcome.result is not None and outcome.result.rounds:
        return oracle_speedup(outcome.result.rounds, costs)
    return None


def _specdec_version() -> str:
    from specdec import __version__

    return __version__
