"""Drafting for a batch: one draft pass for every row at once, or one copy of a model-free drafter per row.

Notation: q is the draft, gamma the tokens drafted per round, c a draft step's cost over a target step.

The batched loop (`specdec.generation.batched`) speaks to a batch drafter with the same three calls as the
single-text contract (`specdec.engine.contract`), each taking one entry per row still generating:

    drafter.begin({row: Generation})             the texts start
    proposals = drafter.draft({row: request})    a chain (or tree) per row; a row without a request drafts nothing
    drafter.observe({row: Verified})             what the target computed for each row, and what the rule kept
    drafter.finish(rows)                         the rows still generating (the others are done)

Two kinds exist:

- `BatchModelDrafter`: a draft model drafting a chain for every row, ONE draft pass per step for all
  rows (a `specdec.engine.batch_cache.BatchCache`). Each row stops on its own: at its limit, or where the
  stop rule says another token is not worth its cost for that row; a step runs while any row drafts.
  A draft model's token trees (`TreeDrafter`) stay one text at a time.
- `PerRow`: a drafter that holds no model (`Capabilities.model_free`: prompt lookup, Token Recycling,
  lookahead, suffix decoding) gets one independent copy per row; it costs no pass, so nothing is lost
  by not batching it. Its chains, trees and extra rows all go into the one target pass.

Drafters that run a model of their own per text (a draft with another tokenizer, the target skipping
its layers) are refused in a batch with one line (`batch_drafter`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from transformers import PreTrainedModel

from specdec.engine.batch_cache import BatchCache, check_batchable
from specdec.engine.contract import Capabilities, Draft, DraftRequest, Drafter, Generation, Proposal, Verified, as_drafter
from specdec.drafting.draft_model import ModelDrafter, check_draft_model, confidence, model_name
from specdec.errors import SpecdecError
from specdec.engine.sampling import choose_next
from specdec.engine.sampling import fit_vocabulary


class BatchModelDrafter:
    """A draft model drafting a chain for every row of a batch, one pass per draft step for all of them.

    Row by row it does what `ModelDrafter` does (the same tokens, the same q, the same stop rule): tokens a
    row's draft has not seen yet ride along in its first step; after the round its cache is cut to the text
    the target kept.
    """

    def __init__(self, model: PreTrainedModel, name: str | None = None, vocab_limit: int | None = None) -> None:
        check_batchable(model, "draft")
        self.model, self.vocab_limit = model, vocab_limit
        self.name = name or model_name(model)
        self.capabilities = Capabilities(reports_confidence=True, draft_model=model)
        self.cache: BatchCache | None = None
        self.vocab_size = 0
        self.embedding_rows = model.get_input_embeddings().num_embeddings
        self.steps: dict[int, int] = {}                  # draft steps each row took part in

    def begin(self, generations: dict[int, Generation]) -> None:
        for generation in generations.values():
            check_draft_model(self.model, generation)
        self.cache = BatchCache(self.model, list(generations), self.vocab_limit)
        self.vocab_size = next(iter(generations.values())).vocab_size
        self.steps = dict.fromkeys(generations, 0)

    def passes_of(self, row: int) -> int:
        return self.steps[row]

    def draft(self, requests: dict[int, DraftRequest]) -> dict[int, Draft]:
        cache = self.cache
        pending = {row: self._unseen(request.sequence, cache.length(row)) for row, request in requests.items()}  # [m >= 1] each
        tokens: dict[int, list[int]] = {row: [] for row in requests}
        distributions: dict[int, list[torch.Tensor | None]] = {row: [] for row in requests}
        drafting = {row for row, request in requests.items() if request.limit > 0}
        while drafting:
            logits, _ = cache.feed([pending[row] if row in drafting else None for row in cache.rows], keep=1)   # [B, 1, V_draft]
            for i, row in enumerate(cache.rows):
                if row not in drafting:
                    continue
                request = requests[row]
                row_logits = fit_vocabulary(logits[i, -1:], self.vocab_size)[0]                     # [V], the target's width
                token, q = choose_next(row_logits, request.sampling, request.generator)
                tokens[row].append(token)
                distributions[row].append(q)
                pending[row] = request.sequence.new_tensor([token])                                # the last one is never fed
                self.steps[row] += 1
                if len(tokens[row]) == request.limit or (request.keep_drafting is not None and
                                                         not request.keep_drafting(confidence(row_logits, token, q))):
                    drafting.discard(row)
        return {row: Draft(requests[row].sequence.new_tensor(tokens[row], dtype=torch.long),
                           None if requests[row].sampling.greedy or not tokens[row] else torch.stack(distributions[row]))
                for row in requests}

    def _unseen(self, sequence: torch.Tensor, cached: int) -> torch.Tensor:
        pending = sequence[cached:]
        return pending.masked_fill(pending >= self.embedding_rows, 0)      # an id the draft has no row for: shown as 0

    def observe(self, verified: dict[int, Verified]) -> None:
        for row, seen in verified.items():
            if seen.proposal is not None:
                self.cache.rollback(row, min(seen.text.numel() - 1, self.cache.length(row)))

    def finish(self, rows: Sequence[int]) -> None:
        self.cache.compact(rows)


class PerRow:
    """One copy of a model-free drafter per row: each row drafts from its own text and learns from its own passes.

    Every row starts from a copy of the drafter as it was given (with what it learned from earlier texts, for
    the methods that keep it); what the rows learn stays in their copies.
    """

    def __init__(self, drafter: Drafter) -> None:
        self.template, self.name, self.capabilities = drafter, drafter.name, drafter.capabilities
        self.drafters: dict[int, Drafter] = {}

    def begin(self, generations: dict[int, Generation]) -> None:
        self.drafters = {row: copy.deepcopy(self.template) for row in generations}
        for row, generation in generations.items():
            self.drafters[row].begin(generation)

    def passes_of(self, row: int) -> int:
        return self.drafters[row].passes

    def draft(self, requests: dict[int, DraftRequest]) -> dict[int, Proposal]:
        return {row: self.drafters[row].draft(request) for row, request in requests.items()}

    def observe(self, verified: dict[int, Verified]) -> None:
        for row, seen in verified.items():
            self.drafters[row].observe(seen)

    def finish(self, rows: Sequence[int]) -> None:
        pass


BatchDrafter = BatchModelDrafter | PerRow


def batch_drafter(draft: object, name: str | None = None) -> BatchDrafter:
    """The batch drafter for `draft`: a draft model (or its `ModelDrafter`) drafts in one pass per step; a model-free
    drafter gets a copy per row; anything else is refused with one line.

    >>> from specdec.drafting.prompt_lookup import PromptLookupDrafter
    >>> type(batch_drafter(PromptLookupDrafter())).__name__
    'PerRow'
    """
    if isinstance(draft, PreTrainedModel):
        return BatchModelDrafter(draft, name)
    if type(draft) is ModelDrafter:
        return BatchModelDrafter(draft.model, draft.name, draft.vocab_limit)
    drafter = as_drafter(draft)
    if drafter.capabilities.model_free:
        return PerRow(drafter)
    raise SpecdecError(f"{drafter.name} drafts one text at a time ({type(drafter).__name__} runs a model per text): in a batch "
                       "use a draft model (chains), prompt lookup, Token Recycling, lookahead or suffix decoding, or give one prompt")

