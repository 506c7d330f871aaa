"""Prompt lookup: model-free drafting by n-gram lookup in the prompt and the text so far (Saxena 2023).

Notation: q is the draft's distribution, gamma the tokens drafted per round.

Find the most recent earlier occurrence of the text's last n tokens (n from `max_ngram` down to
`min_ngram`) and propose the tokens that followed it. It costs no model pass (c about 0) and shines where
the output copies the input: summaries, edits of given code, answers quoting a document. Its q is a point
mass on each proposal, so the target accepts x with probability p(x) and otherwise resamples from p with
x removed: still exact (`specdec.engine.verification`).

    speculative_generate(target, PromptLookupDrafter(), input_ids)     # 4 tokens a round by default

Not handled: several candidates per round (`specdec.drafting.suffix` proposes a tree of them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from specdec.engine.contract import Capabilities, DraftRequest, Generation, Verified
from specdec.engine.trees import DraftTree


class PromptLookupDrafter:
    """Model-free drafting by n-gram lookup in the prompt and the text generated so far.

    >>> drafter = PromptLookupDrafter()
    >>> text = torch.tensor([7, 8, 9, 4, 5, 7, 8])                  # "7 8" appeared before, then 9 4 5
    >>> drafter.lookup(text.tolist(), 3)
    [9, 4, 5]
    """

    name, draft_model = "prompt-lookup", None
    capabilities = Capabilities()

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1) -> None:
        if not 1 <= min_ngram <= max_ngram:
            raise ValueError(f"need 1 <= min_ngram <= max_ngram, got {min_ngram} and {max_ngram}")
        self.max_ngram, self.min_ngram = max_ngram, min_ngram

    def begin(self, generation: Generation) -> None:
        pass  # nothing to remember: the text is the table

    def lookup(self, text: list[int], gamma: int) -> list[int]:
        """The tokens that followed the most recent earlier occurrence of the longest matching tail."""
        for n in range(min(self.max_ngram, len(text) - 1), self.min_ngram - 1, -1):
            tail = text[-n:]
            for start in range(len(text) - n - 1, -1, -1):  # most recent match first
                if text[start : start + n] == tail:
                    return text[start + n : start + n + gamma]
        return []

    def draft(self, requests: dict[int, DraftRequest]) -> dict[int, DraftTree]:
        """Each row: what followed its tail before, as a chain of fixed candidates (q=None: point masses)."""
        return {
            row: DraftTree.chain(
                request.sequence.new_tensor(self.lookup(request.sequence.tolist(), request.limit), dtype=torch.long)
            )
            for row, request in requests.items()
        }

    def observe(self, verified: dict[int, Verified]) -> None:
        pass


@dataclass(frozen=True)
class PromptLookupOptions:
    """Prompt lookup's n-grams."""

    max_ngram: int = field(default=3, metadata={"help": "the longest n-gram looked up"})
    min_ngram: int = field(default=1, metadata={"help": "the shortest n-gram looked up"})
