"""What one generation drafts with, decided before its first pass: the drafter, its gamma schedule, its costs.

Notation: p is the target, q the draft, gamma the drafted tokens per round, c a draft step's cost over a
target step, v(k) a verification pass over k drafted tokens in target steps.

The planner (`specdec.planner`) decides a `DraftingPlan` once; the runner (`specdec.generation.run`)
runs it, and every report reads its `description`. Plain decoding is a plan too: a drafter that drafts
nothing (`specdec.drafting.no_draft.PLAIN`).

    >>> from specdec.drafting.no_draft import PLAIN
    >>> PLAIN.description, PLAIN.schedules(2)
    ('nothing', [None, None])
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from specdec.engine.contract import DraftCosts, Drafter
from specdec.engine.schedule import GammaSchedule


@dataclass(frozen=True)
class DraftingPlan:
    """What one generation drafts with: decided once, before the first pass."""

    drafter: Drafter
    schedule: GammaSchedule | None  # None: the drafter sizes its own rounds
    costs: DraftCosts  # c and v(k) the rounds are priced with
    by_default: bool = False  # True: the planner chose the drafter (nothing was named)
    why: str = ""  # the planner's reason, when it chose something other than what it was given

    @property
    def description(self) -> str:
        """How the rounds are drafted, in words, the one wording every report uses: 'chain, stop rule', 'chain, gamma
        4', 'tree (budget 16), the default here' (the planner's own choice says so, with its reason when it has one)."""
        words = self.drafter.capabilities.drafts if self.schedule is None else self.schedule.describe()
        if self.why:
            return f"{words}: {self.why}"
        return f"{words}, the default here" if self.by_default else words

    def schedules(self, rows: int) -> list[GammaSchedule | None]:
        """One schedule per text: the plan's own for one text, a fresh copy of it for each text of a batch."""
        if rows == 1 or self.schedule is None:
            return [self.schedule] * rows
        return [copy.deepcopy(self.schedule) for _ in range(rows)]
