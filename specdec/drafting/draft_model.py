"""A small causal LM as the draft: the method of Leviathan et al. 2023 and Chen et al. 2023.

Notation: q is the draft's distribution, p the target's, gamma the tokens drafted per round.

`ModelDrafter` runs the draft incrementally with its own KV cache. It samples each token from q warped
exactly like the target's p (same temperature, top-k, top-p); the accept/reject rule stays exact for
any q, so a draft can only make decoding faster or slower, never change the output distribution.
After a round the engine cuts the draft's cache to the text the target kept (`rollback`); tokens the
draft has not seen yet (the target's resampled or bonus token, and after a full accept the last drafted
token) are fed at the start of the next `propose`, in the same pass as the first new draft step, so
catching up costs no pass.

It reports how sure it is of each token (its q of the token), so the stop rule
(`specdec.engine.stop_rule.ConfidenceStop`, the default schedule) can end a round early when another token is
not worth its cost.

    drafter = ModelDrafter(draft_model)                  # or just pass the model: speculative_generate wraps it
    speculative_generate(target, drafter, input_ids, gamma=4)

Not handled here: a draft with another tokenizer (`specdec.drafting.cross_tokenizer`), trees
(`specdec.drafting.tree_drafter`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from transformers import PreTrainedModel

from specdec.engine.contract import Capabilities, ChainMethods, Draft, Generation
from specdec.errors import SpecdecError
from specdec.engine.inputs import check_fits_context
from specdec.engine.kv_cache import CachedModel
from specdec.engine.sampling import SamplingConfig, choose_next, fit_vocabulary


class ModelDrafter(ChainMethods):
    """A small causal LM as the draft, run incrementally with its own KV cache.

    `vocab_limit=K` makes the draft compute only the first K rows of its output layer, so it can
    only propose ids below K (in byte-pair vocabularies, roughly the K most frequent tokens). That
    saves the draft work; its q is still a proper distribution, so the output stays exact.
    """

    reports_confidence = True   # propose() takes keep_drafting (specdec.engine.stop_rule)

    def __init__(self, model: PreTrainedModel, name: str | None = None, vocab_limit: int | None = None) -> None:
        self.model = model
        self.name = name or model_name(model)
        self.vocab_limit = vocab_limit
        self.capabilities = Capabilities(reports_confidence=True, draft_model=model)
        self.cached = CachedModel(model, vocab_limit)
        self.vocab_size = self.cached.vocab_size
        self.embedding_rows = model.get_input_embeddings().num_embeddings
        self.passes = 0

    def begin(self, generation: Generation) -> None:
        check_draft_model(self.model, generation)
        self.start(generation.prompt, generation.vocab_size)

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


def model_name(model: PreTrainedModel) -> str:
    """The name a model was loaded under, else its class name: how drafters name themselves in reports."""
    return getattr(model.config, "_name_or_path", "") or type(model).__name__


def check_draft_model(model: PreTrainedModel, generation: Generation, same_tokenizer: bool = True) -> None:
    """Refuse a draft on another device than the target, or (sharing its tokenizer) one whose context cannot hold the text."""
    if model.device != generation.target.device:
        raise SpecdecError(f"the draft is on {model.device} but the target on {generation.target.device}: load both on one device")
    if same_tokenizer:                                       # the same count of tokens as the target reads
        check_fits_context(model, generation.prompt.numel(), generation.max_new_tokens, "draft")
