"""specdec.bench.race and the timeline it reads: a hand-worked race, and the timelines real runs stamp.

The Playground draws its race from these, so every segment must come from a measured second: the tests
hold each lane to its run's own totals (verify seconds, draft seconds, tokens, wall time).
"""

from __future__ import annotations

import math

import pytest
import torch
from tiny_models import tiny_pair

from specdec import autoregressive_generate, speculative_generate
from specdec.bench.race import DRAFT, OTHER, PASS, lane, race
from specdec.engine.results import GenerationResult, GenerationStats, PassTime
from specdec.errors import SpecdecError


def result(timeline: tuple[PassTime, ...], wall: float) -> GenerationResult:
    tokens = sum(time.tokens for time in timeline)
    return GenerationResult(
        list(range(tokens)), GenerationStats(tokens, 0, 0, len(timeline), 0, wall, 0.0, 0.0), timeline=timeline
    )


def test_a_hand_worked_race():
    """Speculative: prompt pass 0.4 s (1 token, ends 0.5), a round 0.2 + 0.5 s (3 tokens, ends 1.5), wall 1.6 s.
    Target alone: 4 tokens, each 0.5 s of pass and 0.1 s of other; wall 2.4 s. Ratio 2.4 / 1.6 = 1.5."""
    speculative = result((PassTime(0.0, 0.4, 0.5, 1), PassTime(0.2, 0.5, 1.5, 3)), wall=1.6)
    plain = result(tuple(PassTime(0.01, 0.5, 0.6 * (i + 1), 1) for i in range(4)), wall=2.4)
    racing = race(speculative, plain)
    assert [(s.kind, s.step, s.tokens) for s in racing.speculative.segments] == [
        (PASS, 0, 1),
        (OTHER, 0, 1),
        (DRAFT, 1, 4),
        (PASS, 1, 4),
        (OTHER, 1, 4),
        (OTHER, -1, 4),
    ]
    assert [round(s.seconds, 9) for s in racing.speculative.segments] == [0.4, 0.1, 0.2, 0.5, 0.3, 0.1]
    alone = racing.target_alone.segments
    assert [s.kind for s in alone] == [PASS, OTHER] * 4  # plain decoding's no-op drafter is folded into "other"
    assert [round(s.seconds, 9) for s in alone] == [0.5, 0.1] * 4
    times, tokens = racing.target_alone.progress()
    assert times == pytest.approx([0.0, 0.6, 1.2, 1.8, 2.4]) and tokens == [0, 1, 2, 3, 4]
    assert racing.speculative.finish_s == 1.6 and racing.target_alone.finish_s == 2.4
    assert math.isclose(racing.ratio, 1.5) and racing.same_length
    assert racing.speculative.steps == 2 and racing.target_alone.steps == 4


def test_segments_never_leave_their_window_and_a_run_without_a_timeline_is_refused():
    """A pass reported longer than its window (which `run_plan` cannot
    produce) is cut at the window's end, never drawn past it."""
    odd = lane(result((PassTime(0.3, 0.5, 0.6, 2),), wall=0.6), "speculative")
    assert [(s.kind, s.start_s, s.end_s) for s in odd.segments] == [(DRAFT, 0.0, 0.3), (PASS, 0.3, 0.6)]
    with pytest.raises(SpecdecError, match="no timeline"):
        lane(result((), wall=1.0), "speculative")
    shorter = result((PassTime(0.0, 0.4, 0.5, 1),), wall=0.5)
    assert not race(shorter, result((PassTime(0.0, 0.4, 0.5, 2),), wall=0.5)).same_length


def contiguous(segments) -> bool:
    return all(math.isclose(a.end_s, b.start_s) for a, b in zip(segments, segments[1:])) and all(
        s.seconds > 0 for s in segments
    )


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_real_runs_stamp_every_pass_and_the_race_adds_up_to_their_totals(temperature):
    target, draft = tiny_pair("llama")
    prompt = torch.tensor([[1, 2, 3, 4]])
    speculative = speculative_generate(
        target, draft, prompt, gamma=3, max_new_tokens=20, temperature=temperature, seed=2
    )
    plain = autoregressive_generate(target, prompt, max_new_tokens=20, temperature=temperature, seed=2)
    assert len(speculative.timeline) == len(speculative.rounds) == speculative.stats.target_passes
    assert [t.tokens for t in speculative.timeline] == [len(r.emitted) for r in speculative.rounds]
    assert len(plain.timeline) == plain.stats.new_tokens == 20 and not plain.rounds
    for run in (speculative, plain):
        ends = [0.0] + [t.end_s for t in run.timeline]
        assert all(a < b for a, b in zip(ends, ends[1:])) and ends[-1] <= run.stats.wall_time_s
        # inside its window
        assert all(t.draft_s + t.verify_s <= b - a + 1e-9 for t, a, b in zip(run.timeline, ends, ends[1:]))
        assert math.isclose(sum(t.verify_s for t in run.timeline), run.stats.verify_time_s, rel_tol=1e-9)
        assert math.isclose(sum(t.draft_s for t in run.timeline), run.stats.draft_time_s, rel_tol=1e-9, abs_tol=1e-12)
    racing = race(speculative, plain)
    for one, run in ((racing.speculative, speculative), (racing.target_alone, plain)):
        assert contiguous(one.segments) and one.segments[0].start_s == 0.0
        assert one.finish_s == run.stats.wall_time_s == one.segments[-1].end_s and one.tokens == run.stats.new_tokens
        passes = [s for s in one.segments if s.kind == PASS]
        assert len(passes) == run.stats.target_passes
        assert math.isclose(sum(s.seconds for s in passes), run.stats.verify_time_s, rel_tol=1e-9)
    drafts = sum(s.seconds for s in racing.speculative.segments if s.kind == DRAFT)
    assert math.isclose(drafts, speculative.stats.draft_time_s, rel_tol=1e-9) and drafts > 0
    assert not any(s.kind == DRAFT for s in racing.target_alone.segments)
    assert math.isclose(racing.ratio, plain.stats.wall_time_s / speculative.stats.wall_time_s)
    assert racing.speculative.progress()[1][-1] == racing.target_alone.progress()[1][-1] == 20


def test_a_batchs_rows_share_one_clock():
    target, draft = tiny_pair("llama")
    rows = speculative_generate(
        target,
        draft,
        [torch.tensor([1, 2, 3]), torch.tensor([4, 5])],
        gamma=2,
        max_new_tokens=8,
        temperature=1.0,
        seed=0,
    )
    for row in rows:
        assert [t.tokens for t in row.timeline] == [len(r.emitted) for r in row.rounds] and sum(
            t.tokens for t in row.timeline
        ) == 8
    shared = min(len(row.timeline) for row in rows)
    assert [t.end_s for t in rows[0].timeline[:shared]] == [t.end_s for t in rows[1].timeline[:shared]]
