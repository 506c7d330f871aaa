"""alpha_1, alpha_2, ...: the acceptance rate at each position of a chain round, measured from one run's rounds.

Chapter 1's formulas take one alpha for every position, each token accepted independently; these numbers show
where that holds (the Playground draws them beside the single alpha, `pages.common.figures`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from specdec.engine.results import Round


@dataclass(frozen=True)
class PositionAcceptance:
    """Of the drafted tokens at one position of a chain round that the rule tested, how many it accepted."""

    position: int  # 1 for the first drafted token of a round
    tested: int
    accepted: int

    @property
    def rate(self) -> float:
        """alpha_position: accepted / tested (nan when none was tested)."""
        return self.accepted / self.tested if self.tested else math.nan


def acceptance_by_position(rounds: Sequence[Round]) -> list[PositionAcceptance]:
    """alpha_1, alpha_2, ...: alpha at each position of a chain round, accepted / tested (tree rounds are left out).

    Chapter 1's formulas take one alpha for every position, each token accepted independently. A
    measured run shows where that holds: a draft that is right on easy stretches keeps high alpha
    deep into a round, and the positions only long rounds reach are tested rarely.

    >>> from specdec.engine.results import DraftedToken, Round, TokenOrigin as O
    >>> d = lambda ok: DraftedToken(5, 0.5, 0.5, None, ok)
    >>> rounds = [Round((d(True), d(False), d(None)), 1, 7, O.RESAMPLED, ()), Round((d(True), d(True)), 2, 8, O.BONUS,
    ...     ())]
    >>> [(a.position, a.tested, a.accepted) for a in acceptance_by_position(rounds)]
    [(1, 2, 2), (2, 2, 1), (3, 0, 0)]
    """
    positions: list[list[int]] = []
    for round_ in rounds:
        if round_.tree is not None:
            continue
        for index, drafted in enumerate(round_.drafted):
            while len(positions) <= index:
                positions.append([0, 0])
            if drafted.accepted is not None:
                positions[index][0] += 1
                positions[index][1] += int(drafted.accepted)
    return [PositionAcceptance(index + 1, tested, accepted) for index, (tested, accepted) in enumerate(positions)]
