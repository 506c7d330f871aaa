"""Drafting nothing: plain decoding as the speculative loop, one target pass and one token a round.

Notation: p is the target; gamma is 0 every round.

`NoDraft` proposes an empty tree every round, so the loop (`specdec.engine.loop`) makes one target pass
and the rule emits the target's own next token: plain decoding, sharing every piece of speculative decoding
but the drafting (`specdec.generation.autoregressive` runs `PLAIN`; the planner picks it where no drafting is
predicted to beat the target alone).

    speculative_generate(target, NoDraft(), input_ids)      # the same tokens as autoregressive_generate
"""

from __future__ import annotations

from specdec.engine.contract import Capabilities, DraftCosts, DraftRequest, Generation, Verified
from specdec.engine.drafting_plan import DraftingPlan
from specdec.engine.trees import DraftTree


class NoDraft:
    """The drafter of plain decoding: it proposes nothing, so each round is one target pass and one token."""

    name, draft_model = "none", None
    capabilities = Capabilities(sizes_rounds=True, drafts="nothing")

    def begin(self, generation: Generation) -> None:
        pass

    def draft(self, requests: dict[int, DraftRequest]) -> dict[int, DraftTree]:
        return {row: DraftTree.empty() for row in requests}

    def observe(self, verified: dict[int, Verified]) -> None:
        pass


PLAIN = DraftingPlan(NoDraft(), None, DraftCosts(0.0, 0.0))  # plain decoding: the plan of the target alone
