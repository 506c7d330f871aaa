"""Drafters: whatever proposes the gamma tokens the target then checks.

Notation: q is the draft's distribution, gamma the number of tokens drafted per round.

A drafter only has to say which tokens it proposes and from which distribution q it drew each
one; the accept/reject rule stays exact for any q, so a drafter can only make decoding faster or
slower, never change the output distribution.

- `ModelDrafter` wraps a small causal LM with a KV cache. It samples each token from q warped
  exactly like the target's p (same temperature, top-k, top-p). After a round, the engine calls
  `rollback` with the accepted length; tokens the draft has not seen yet (the target's resampled
  or bonus token, and after a full accept the last drafted token) are fed at the start of the
  next `propose`, in the same pass as the first new draft step, so catching up costs no pass.
- `PromptLookupDrafter` needs no model (Saxena 2023, "prompt lookup decoding"): it finds the
  most recent earlier occurrence of the text's last n tokens and proposes what followed it. Its q
  is a point mass on the proposal, so the target accepts x with probability p(x) and otherwise
  resamples from p with x removed: still exact.

A drafter that reports how sure it is (`ModelDrafter`) can stop a round early when a stop rule
says another token is not worth its cost (`specdec.stop_rule.ConfidenceStop`, the default).

Elsewhere: token trees (`specdec.tree_drafter.TreeDrafter`), drafts with another tokenizer
(`specdec.cross_tokenizer.CrossTokenizerDrafter`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch
from transformers import PreTrainedModel

from specdec.kv_cache import CachedModel
from specdec.sampling import SamplingConfig, choose_next, fit_vocabulary


@dataclass(frozen=True)
class Draft:
    """The tokens proposed in one round and the distributions they were drawn from."""

    tokens: torch.Tensor       # [k] long, k <= gamma (k may be 0)
    q: torch.Tensor | None     # [k, V] float32; None when decoding greedily (q is then a point mass)


@runtime_checkable
class Drafter(Protocol):
    """What `speculative_generate` needs from a draft."""

    name: str
    passes: int  # draft model forward passes so far (0 for model-free drafters)

    def start(self, prompt: torch.Tensor, vocab_size: int) -> None:
        """Forget any previous text; the new one starts with `prompt` [T]. q must cover the target's `vocab_size` ids."""

    def propose(self, sequence: torch.Tensor, gamma: int, sampling: SamplingConfig, generator: torch.Generator | None) -> Draft:
        """Propose up to `gamma` tokens to follow `sequence` [n] (the whole accepted text so far).

        A drafter that knows how sure it is of each token may also accept `keep_drafting`, a callable
        given each token's confidence (its q of the token) that says whether to draft another; it
        then sets `reports_confidence = True` (see `specdec.stop_rule`).
        """

    def rollback(self, length: int) -> None:
        """The target kept only the first `length` tokens of the text; forget anything after them."""


class ModelDrafter:
    """A small causal LM as the draft, run incrementally with its own KV cache.

    `vocab_limit=K` makes the draft compute only the first K rows of its output layer, so it can
    only propose ids below K (in byte-pair vocabularies, roughly the K most frequent tokens). That
    saves the draft work; its q is still a proper distribution, so the output stays exact.
    """

    reports_confidence = True   # propose() takes keep_drafting (specdec.stop_rule)

    def __init__(self, model: PreTrainedModel, name: str | None = None, vocab_limit: int | None = None) -> None:
        self.model = model
        self.name = name or getattr(model.config, "_name_or_path", "") or type(model).__name__
        self.vocab_limit = vocab_limit
        self.cached = CachedModel(model, vocab_limit)
        self.vocab_size = self.cached.vocab_size
        self.embedding_rows = model.get_input_embeddings().num_embeddings
        self.passes = 0

    def start(self, prompt: torch.Tensor, vocab_size: int) -> None:
        self.cached = CachedModel(self.model, self.vocab_limit)
        self.vocab_size = vocab_size
        self.passes = 0

    def propose(self, sequence: torch.Tensor, gamma: int, sampling: SamplingConfig, generator: torch.Generator | None,
                keep_drafting: Callable[[float], bool] | None = None) -> Draft:
        pending = sequence[self.cached.length:]                          # [m >= 1] tokens the draft has not seen
        # An id the draft has no embedding row for (only possible when the target has more rows)
        # is shown to it as id 0: that can only make its guesses worse, never the output different.
        pending = pending.masked_fill(pending >= self.embedding_rows, 0)
        tokens, distributions = [], []
        for _ in range(gamma):
            logits = self.cached.feed(pending, keep=1)                   # [1, V_draft]
            logits = fit_vocabulary(logits, self.vocab_size)[0]          # [V], the target's width
            token, q = choose_next(logits, sampling, generator)
            tokens.append(token)
            distributions.append(q)
            pending = sequence.new_tensor([token])                       # [1]; the last one is never fed
            if keep_drafting is not None and not keep_drafting(confidence(logits, token, q)):
                break                                                    # the stop rule: not worth another token
        self.passes = self.cached.passes
        drafted = sequence.new_tensor(tokens, dtype=torch.long)          # [k]
        q = None if sampling.greedy or not tokens else torch.stack(distributions)  # [k, V]
        return Draft(drafted, q)

    def rollback(self, length: int) -> None:
        self.cached.rollback(min(length, self.cached.length))


def confidence(logits: torch.Tensor, token: int, q: torch.Tensor | None) -> float:
    """How sure the draft was of `token`: q(token), with q the softmax of `logits` [V] when greedy gave none.

    >>> round(confidence(torch.tensor([0.0, 2.0]), 1, None), 4)
    0.8808
    """
    if q is not None:
        return float(q[token])
    return float(torch.softmax(logits.float(), dim=-1)[token])


class PromptLookupDrafter:
    """Model-free drafting by n-gram lookup in the prompt and the text generated so far.

    >>> drafter = PromptLookupDrafter()
    >>> text = torch.tensor([7, 8, 9, 4, 5, 7, 8])                  # "7 8" appeared before, then 9 4 5
    >>> drafter.start(text, vocab_size=10)
    >>> drafter.propose(text, 3, SamplingConfig(temperature=0), None).tokens.tolist()
    [9, 4, 5]
    """

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
