"""A small causal LM as the draft: the method of Leviathan et al. 2023 and Chen et al. 2023.

Notation: q is the draft's distribution, p the target's, gamma the tokens drafted per round.

`ModelDrafter` runs the draft incrementally with its own KV cache. It samples each token from q warped
exactly like the target's p (same temperature, top-k, top-p); the accept/reject rule stays exact for
any q, so a draft can only make decoding faster or slower, never change the output distribution.
After a round its cache is cut to the text the target kept; tokens the draft has not seen yet (the
target's resampled or bonus token, and after a full accept the last drafted token) are fed at the start
of the next round, in the same pass as the first new draft step, so catching up costs no pass.

Several texts draft together: ONE draft pass per step for every row still drafting (its cache is a
`specdec.runtime.pytorch.batch_cache.BatchCache`; one text's is a plain cache, `OneRow`). Each row stops on its
own, at its limit or where the stop rule says another token is not worth its cost for that row.

It reports how sure it is of each token (its q of the token), so the stop rule
(`specdec.engine.stop_rule.ConfidenceStop`, the default schedule) can end a round early when another token is
not worth its cost.

    drafter = ModelDrafter(draft_model)                  # or just pass the model: speculative_generate wraps it
    speculative_generate(target, drafter, input_ids, gamma=4)

Not handled here: a draft with another tokenizer (`specdec.drafting.cross_tokenizer`), trees
(`specdec.drafting.tree_drafter`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from specdec.engine.contract import Capabilities, DraftRequest, Generation, Verified
from specdec.engine.inputs import check_fits_context
from specdec.engine.model import Model, Rows
from specdec.engine.sampling import choose_next, fit_vocabulary
from specdec.engine.trees import DraftTree
from specdec.errors import SpecdecError
from specdec.runtime import as_model


class ModelDrafter:
    """A small causal LM as the draft, run incrementally with its own KV cache, every row in one pass per step.

    `model` is a transformers model or a model on another runtime (`specdec.engine.model`). `vocab_limit=K`
    makes the draft compute only the first K rows of its output layer, so it can only propose ids below K
    (in byte-pair vocabularies, roughly the K most frequent tokens). That saves the draft work; its q is
    still a proper distribution, so the output stays exact.
    """

    capabilities = Capabilities(reports_confidence=True)

    def __init__(self, model: object, name: str | None = None, vocab_limit: int | None = None) -> None:
        self.model = self.draft_model = as_model(model)
        if vocab_limit is not None:
            self.model.rows([0], vocab_limit)  # refuse an output layer that cannot be cut, now
        self.name = name or self.model.name
        self.vocab_limit = vocab_limit
        self.cache: Rows | None = None
        self.vocab_size = 0

    def begin(self, generation: Generation) -> None:
        check_draft_model(self.model, generation)
        self.cache = self.model.rows(list(generation.prompts), self.vocab_limit)
        self.vocab_size = generation.vocab_size

    def draft(self, requests: dict[int, DraftRequest]) -> dict[int, DraftTree]:
        """A chain for each row: its unseen text and first draft
        step in one pass, then one pass per token for all rows."""
        cache = self.cache
        # [m >= 1] each
        pending = {row: self._unseen(request.sequence, cache.length(row)) for row, request in requests.items()}
        tokens: dict[int, list[int]] = {row: [] for row in requests}
        laws: dict[int, list[torch.Tensor | None]] = {row: [] for row in requests}
        drafting = set(requests)
        while drafting:
            # [B, 1, V_draft]
            logits, _ = cache.feed([pending[row] if row in drafting else None for row in cache.rows], last=1)
            for i, row in enumerate(cache.rows):
                if row not in drafting:
                    continue
                request = requests[row]
                row_logits = fit_vocabulary(logits[i, -1:], self.vocab_size)[0]  # [V], the target's width
                token, q = choose_next(row_logits, request.sampling, request.generator)
                tokens[row].append(token)
                laws[row].append(q)
                pending[row] = request.sequence.new_tensor([token])  # [1]; the last one is never fed
                if len(tokens[row]) == request.limit or (
                    request.keep_drafting is not None and not request.keep_drafting(confidence(row_logits, token, q))
                ):
                    drafting.discard(row)  # the stop rule: not worth another
        return {
            row: DraftTree.chain(
                request.sequence.new_tensor(tokens[row], dtype=torch.long),
                None if request.sampling.greedy else torch.stack(laws[row]),
            )  # [k], [k, V]
            for row, request in requests.items()
        }

    def observe(self, verified: dict[int, Verified]) -> None:
        """Cut each row's cache to the text the target kept; forget the rows that are done."""
        for row, seen in verified.items():
            self.cache.rollback(row, min(seen.text.numel() - 1, self.cache.length(row)))
        self.cache.compact([row for row in self.cache.rows if not (row in verified and verified[row].finished)])

    def _unseen(self, sequence: torch.Tensor, cached: int) -> torch.Tensor:
        """The text the draft has not read yet. An id the draft has no embedding row for (only possible when the target
        has more rows) is shown to it as id 0: that can only make its guesses worse, never the output different."""
        pending = sequence[cached:]
        return pending.masked_fill(pending >= self.model.embedding_rows, 0)


def confidence(logits: torch.Tensor, token: int, q: torch.Tensor | None) -> float:
    """How sure the draft was of `token`: q(token), with q the softmax of `logits` [V] when greedy gave none.

    >>> round(confidence(torch.tensor([0.0, 2.0]), 1, None), 4)
    0.8808
    """
    if q is not None:
        return float(q[token])
    return float(torch.softmax(logits.float(), dim=-1)[token])


def check_draft_model(model: Model, generation: Generation, same_tokenizer: bool = True) -> None:
    """Refuse a draft on another device than the target, or
    (sharing its tokenizer) one whose context cannot hold a text."""
    if model.device != generation.target.device:
        raise SpecdecError(
            f"the draft is on {model.device} but the target on {generation.target.device}: load both on one device"
        )
    if len(generation.prompts) > 1 and not model.traits.batches:
        raise SpecdecError(
            "the draft has sliding-window layers, which batches do not handle: give one prompt at a time"
        )
    if same_tokenizer:  # the same count of tokens as the target reads
        for prompt in generation.prompts.values():
            check_fits_context(model, prompt.numel(), generation.max_new_tokens, "draft")


@dataclass(frozen=True)
class DraftModelOptions:
    """A draft model's chain."""

    vocab_limit: int = field(
        default=0, metadata={"help": "compute only the first K rows of the draft's output layer (0: all)"}
    )

    def __post_init__(self) -> None:
        if self.vocab_limit < 0:
            raise SpecdecError(f"vocab_limit must be >= 0 (0: the whole output layer), got {self.vocab_limit}")
