"""The race: a speculative run and the target alone on one time axis, drawn from the runs' own clocks.

Notation: p is the target, q the draft, gamma the drafted tokens per round.

Every generation stamps its target passes (`GenerationResult.timeline`): for each pass, the seconds
inside the drafter and inside the target's pass in its own window, when it ended, and how many tokens
it appended. A race lays the two runs out as lanes of segments, nothing estimated:

    speculative   per round: draft (the drafter's calls), target pass (one pass verifies the drafts), other
    target alone  per token: target pass, other

"other" is the rest of a window (sampling, the accept test, bookkeeping, streaming the text to the
page), and the last segment runs from the last pass's end to the run's wall time (building the result).
Each window's start and end are measured; the order inside a window is drawn draft first, pass next,
other last, though a drafter also looks at each pass's results after it.

    racing = race(speculative_result, plain_result)
    racing.speculative.finish_s, racing.target_alone.finish_s   # the two wall times
    racing.ratio                                                 # target alone / speculative: above 1 is a gain

There is no target-alone lane without a target-alone run: a speculative run's passes verify several
tokens at once and its prompt pass reads the whole prompt, so none of them is the time of the target's
own one-token step, and a line built from them would be invented.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from specdec.engine.results import GenerationResult
from specdec.errors import SpecdecError

DRAFT, PASS, OTHER = "draft", "target pass", "other"


@dataclass(frozen=True)
class Segment:
    """One stretch of a lane: what ran from `start_s` to `end_s` (seconds from the run's start)."""

    start_s: float
    end_s: float
    kind: str  # DRAFT, PASS or OTHER
    step: int  # the round (speculative; 0 is the prompt pass) or the token (target alone) it belongs to
    tokens: int  # tokens out when this step ended

    @property
    def seconds(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class Lane:
    """One run on the race's axis: its segments in time order, and where it finished."""

    name: str
    segments: tuple[Segment, ...]
    finish_s: float  # the run's wall time
    tokens: int  # the tokens it produced
    steps: int  # its target passes (rounds, or tokens for the target alone)

    def progress(self) -> tuple[list[float], list[int]]:
        """Tokens out against time, for a step line: (0, 0), then each step's end with the tokens out by then.

        >>> lane(_example(), "speculative").progress()
        ([0.0, 0.5, 1.5], [0, 1, 4])
        """
        ends = {segment.step: (segment.end_s, segment.tokens) for segment in self.segments if segment.step >= 0}
        times, tokens = [0.0], [0]
        for end_s, out in ends.values():
            times.append(end_s)
            tokens.append(out)
        return times, tokens


@dataclass(frozen=True)
class Race:
    """The speculative run and the target alone, on one axis."""

    speculative: Lane
    target_alone: Lane

    @property
    def ratio(self) -> float:
        """Target-alone wall time / speculative wall time (the Playground's wall-clock speedup). Above 1 is a gain."""
        return self.target_alone.finish_s / self.speculative.finish_s if self.speculative.finish_s > 0 else math.nan

    @property
    def same_length(self) -> bool:
        """Whether both runs produced the same number of tokens (else compare tokens per second, not finishes)."""
        return self.speculative.tokens == self.target_alone.tokens


def lane(result: GenerationResult, name: str, drafts: bool = True) -> Lane:
    """The segments of one run from its timeline; `drafts` False folds drafter time into "other" (plain decoding's
    drafter drafts nothing, and its empty calls are bookkeeping).

    >>> segments = lane(_example(), "speculative").segments
    >>> [(s.kind, s.start_s, s.end_s, s.step) for s in segments]  # doctest: +NORMALIZE_WHITESPACE
    [('target pass', 0.0, 0.4, 0), ('other', 0.4, 0.5, 0),
     ('draft', 0.5, 0.7, 1), ('target pass', 0.7, 1.2, 1), ('other', 1.2, 1.5, 1), ('other', 1.5, 1.6, -1)]
    """
    if not result.timeline:
        raise SpecdecError(
            f"the {name} run has no timeline (it was made before runs stamped their passes, or was stopped): "
            "run it again to race it"
        )
    segments, start, out = [], 0.0, 0
    for step, time in enumerate(result.timeline):
        out += time.tokens
        drafted = time.draft_s if drafts else 0.0
        pieces = ((DRAFT, drafted), (PASS, time.verify_s), (OTHER, time.end_s - start - drafted - time.verify_s))
        for kind, seconds in pieces:
            end = min(start + max(seconds, 0.0), time.end_s) if kind != OTHER else time.end_s
            if end > start:
                segments.append(Segment(start, end, kind, step, out))
            start = end
    finish = max(result.stats.wall_time_s, start)
    if finish > start:
        segments.append(Segment(start, finish, OTHER, -1, out))  # after the last pass: building the result
    return Lane(name, tuple(segments), finish, out, len(result.timeline))


def race(speculative: GenerationResult, target_alone: GenerationResult) -> Race:
    """The two runs as lanes on one axis; both must have their timelines (module docstring)."""
    return Race(lane(speculative, "speculative"), lane(target_alone, "target alone", drafts=False))


def _example() -> GenerationResult:
    """A prompt pass (0.4 s, one token) and one round (0.2 s
    drafting, 0.5 s verifying, three tokens), for the doctests."""
    from specdec.engine.results import GenerationStats, PassTime

    return GenerationResult(
        [1, 2, 3, 4],
        GenerationStats(4, 3, 2, 2, 3, 1.6, 0.2, 0.9),
        timeline=(PassTime(0.0, 0.4, 0.5, 1), PassTime(0.2, 0.5, 1.5, 3)),
    )
