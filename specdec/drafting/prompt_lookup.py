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

import torch

from specdec.engine.contract import Capabilities, ChainMethods, Draft
from specdec.engine.sampling import SamplingConfig


class PromptLookupDrafter(ChainMethods):
    """Model-free drafting by n-gram lookup in the prompt and the text generated so far.

    >>> drafter = PromptLookupDrafter()
    >>> text = torch.tensor([7, 8, 9, 4, 5, 7, 8])                  # "7 8" appeared before, then 9 4 5
    >>> drafter.start(text, vocab_size=10)
    >>> drafter.propose(text, 3, SamplingConfig(temperature=0), None).tokens.tolist()
    [9, 4, 5]
    """

    capabilities = Capabilities(model_free=True)

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1) -> None:
        if not 1 <= min_ngram <= max_ngram:
            raise ValueError(f"need 1 <= min_ngram <= max_ngram, got {min_ngram} and {max_ngram}")
        self.name = "prompt-lookup"
        self.max_ngram, self.min_ngram = max_ngram, min_ngram
        self.vocab_size = 0
        self.passes = 0

    def start(self, prompt: torch.Tensor, vocab_size: int) -> None:
        self.vocab_size = vocab_size

    def lookup(self, text: list[int], gamma: int) -> list[int]:
        """The tokens that followed the most recent earlier occurrence of the longest matching tail."""
        for n in range(min(self.max_ngram, len(text) - 1), self.min_ngram - 1, -1):
            tail = text[-n:]
            for start in range(len(text) - n - 1, -1, -1):              # most recent match first
                if text[start:start + n] == tail:
                    return text[start + n:start + n + gamma]
        return []

    def propose(self, sequence: torch.Tensor, gamma: int, sampling: SamplingConfig, generator: torch.Generator | None) -> Draft:
        tokens = sequence.new_tensor(self.lookup(sequence.tolist(), gamma), dtype=torch.long)  # [k]
        if sampling.greedy or tokens.numel() == 0:
            return Draft(tokens, None)
        q = torch.zeros(tokens.numel(), self.vocab_size, device=sequence.device)  # [k, V] point masses
        q[torch.arange(tokens.numel(), device=sequence.device), tokens] = 1.0
        return Draft(tokens, q)

    def rollback(self, length: int) -> None:
        pass  # nothing cached
