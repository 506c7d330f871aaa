"""Running a plan: the loop with its timing, streaming and results around it.

Notation: p is the target, q the draft, gamma the drafted tokens per round.

The loop (`specdec.engine.loop`) only decides rounds. Here, from the outside, the target's cache and the
drafter are wrapped in `Timed` proxies (every target pass lands in the "verify" bucket, every call into
the drafter in "draft"), each pass's rounds are stamped with the seconds they took and handed to
`on_round` as soon as they are decided, and each row's rounds become its `GenerationResult`. Each pass is
also stamped on the run's clock (`GenerationResult.timeline`: its own draft and verify seconds, and when it
ended), which plain decoding keeps though it returns no rounds: the Playground's race is drawn from it.

A batch's rows share one wall clock: each row's times are the batch's (every row waited for the whole
batch), so a batch's throughput is all its new tokens over one wall time (`batch_throughput`). Draft passes
are counted here too, from outside the drafter: the passes its draft model (`Drafter.draft_model`, a model
behind `specdec.engine.model`) made during the run, shared by a batch's rows like its time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import torch

from specdec.engine.inputs import Decoding, check_fits_context, eos_ids
from specdec.engine.loop import speculate
from specdec.engine.model import Model
from specdec.engine.results import GenerationResult, GenerationStats, PassTime, Round, TokenOrigin
from specdec.engine.timing import Stopwatch, Timed
from specdec.engine.drafting_plan import DraftingPlan

DRAFTER_CALLS = ("draft", "observe")  # the drafter's share of a round (setting up for the texts is not a round's)


def run_plan(
    target: Model,
    plan: DraftingPlan,
    prompts: Sequence[torch.Tensor],
    decoding: Decoding,
    eos_token_id: int | Sequence[int] | None = None,
    on_round: Callable[[int, Round], None] | None = None,
) -> list[GenerationResult]:
    """Generate after each prompt [T_b] with `plan`'s drafter and schedule: one result per prompt, in order.

    `on_round(row, round)` is called with every round as soon as it is decided (the first pass first).
    """
    prompts = [prompt.to(target.device) for prompt in prompts]
    for prompt in prompts:
        check_fits_context(target, prompt.numel(), decoding.max_new_tokens, "target")
    watch = Stopwatch(target.device)
    cache = Timed(target.rows(range(len(prompts))), watch, "verify", ("feed",))
    drafter = Timed(plan.drafter, watch, "draft", DRAFTER_CALLS)
    draft_model = plan.drafter.draft_model
    # counted from outside: the draft model's own count
    passes_before = 0 if draft_model is None else draft_model.passes
    rounds: list[list[Round]] = [[] for _ in prompts]
    timelines: list[list[PassTime]] = [[] for _ in prompts]
    spent, before = {"draft": 0.0, "verify": 0.0}, {"draft": 0.0, "verify": 0.0}
    for index, decided in enumerate(
        speculate(
            target, cache, drafter, prompts, decoding, plan.schedules(len(prompts)), plan.costs, eos_ids(eos_token_id)
        )
    ):
        end = watch.elapsed()  # the pass's tokens are decided
        # this pass's own seconds, for the timeline
        window = {bucket: watch.totals[bucket] - before[bucket] for bucket in before}
        before = {bucket: watch.totals[bucket] for bucket in before}
        seconds = {bucket: watch.totals[bucket] - spent[bucket] for bucket in spent}
        if index == 0:  # the first pass drafts nothing: the drafter's look at it counts towards round 1
            seconds["draft"] = 0.0
        spent = {bucket: spent[bucket] + seconds[bucket] for bucket in spent}
        for row, round_ in decided:
            round_ = replace(round_, draft_s=seconds["draft"], verify_s=seconds["verify"])
            rounds[row].append(round_)
            timelines[row].append(PassTime(window["draft"], window["verify"], end, len(round_.emitted)))
            if on_round is not None:
                on_round(row, round_)
    wall = watch.elapsed()
    # a batch's rows share them, as they share time
    draft_passes = 0 if draft_model is None else draft_model.passes - passes_before
    return _results(plan, prompts, rounds, timelines, draft_passes, wall, watch)


def _results(
    plan: DraftingPlan,
    prompts: Sequence[torch.Tensor],
    rounds: Sequence[Sequence[Round]],
    timelines: Sequence[Sequence[PassTime]],
    draft_passes: int,
    wall: float,
    watch: Stopwatch,
) -> list[GenerationResult]:
    """Each row's result: its tokens, rounds and timeline, its counts and times (the batch's wall time and draft passes,
    which its rows share), and the plan's description and costs."""
    return [
        GenerationResult(
            tokens=[token for round_ in rounds[row] for token, _ in round_.emitted],
            stats=run_stats(rounds[row], draft_passes, wall, watch, prompts[row].numel()),
            rounds=tuple(rounds[row]),
            drafting=plan.description,
            by_default=plan.by_default,
            timeline=tuple(timelines[row]),
            draft_cost_ratio=plan.costs.c,
            verify_costs=plan.costs.verify,
        )
        for row in range(len(prompts))
    ]


def run_stats(
    rounds: Sequence[Round], draft_passes: int, wall_time: float, watch: Stopwatch, prompt_tokens: int
) -> GenerationStats:
    """A run's counts and times, from its rounds (the prompt pass first: one target pass each) and its stopwatch."""
    return GenerationStats(
        new_tokens=sum(len(r.emitted) for r in rounds),
        drafted=sum(len(r.drafted) for r in rounds),
        accepted=sum(r.accepted for r in rounds),
        rejections=sum(1 for r in rounds if r.emitted[-1][1] == TokenOrigin.RESAMPLED),
        target_passes=len(rounds),
        draft_passes=draft_passes,
        wall_time_s=wall_time,
        draft_time_s=watch.totals["draft"],
        verify_time_s=watch.totals["verify"],
        prompt_tokens=prompt_tokens,
    )


def batch_throughput(results: Sequence[GenerationResult]) -> float:
    """All new tokens of a batch over its wall time, tokens per second (every row of a batch shares one wall time)."""
    wall = max(result.stats.wall_time_s for result in results)
    return sum(result.stats.new_tokens for result in results) / wall if wall > 0 else float("nan")
