"""A causal language model together with its KV cache: feed tokens, get logits, roll back.

Speculative decoding runs both models incrementally. Each forward pass only processes the tokens
that are new since the last pass; the keys and values of everything before them stay in the cache.
When the target rejects a drafted token, the cache holds keys and values for tokens that are no
longer part of the text, and `rollback` cuts them off: no pass is ever repeated over the whole
prefix.

    model = CachedModel(hf_model)
    logits = model.feed(torch.tensor([5, 6, 7]), keep=1)   # [1, V]: prefill, keep the last logits
    logits = model.feed(torch.tensor([8, 9]), keep=2)      # [2, V]: two more tokens, one pass
    model.rollback(4)                                      # forget token 9: the cache holds 5 6 7 8

Invariant: `length` is the number of tokens whose keys and values are in the cache, and the
cache is only ever fed tokens of the text being generated (or drafted continuations of it).

With `output_rows=K` only the first K rows of the output layer are computed: the logits cover
token ids 0..K-1. A draft may do this to save work (byte-pair vocabularies give frequent tokens low
ids); its q then lives on those ids, which the accept/reject rule handles exactly like any other q.

Not handled: batches (one sequence at a time), sliding-window caches that already dropped tokens.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache, PreTrainedModel

from specdec.errors import SpecdecError


class CachedModel:
    """A transformers causal LM plus a `DynamicCache` and the count of forward passes made."""

    def __init__(self, model: PreTrainedModel, output_rows: int | None = None) -> None:
        self.model = model
        self.cache = DynamicCache(config=model.config)
        self.length = 0   # tokens held in the cache
        self.passes = 0   # forward passes made
        self.head = None  # the first `output_rows` rows of the output layer, when restricted
        if output_rows is not None:
            head = model.get_output_embeddings()
            if not isinstance(head, torch.nn.Linear) or getattr(model.config, "final_logit_softcapping", None):
                raise SpecdecError(f"cannot restrict the output layer of this {type(model).__name__}: it is not a plain linear "
                                   "layer (an int8 draft's is not); drop the vocabulary limit")
            self.head = (head.weight[:output_rows], None if head.bias is None else head.bias[:output_rows])  # views, no copy

    @property
    def vocab_size(self) -> int:
        """The width of the logits this model returns."""
        return self.head[0].shape[0] if self.head is not None else self.model.get_output_embeddings().out_features

    @property
    def device(self) -> torch.device:
        return self.model.device

    @torch.inference_mode()
    def feed(self, tokens: torch.Tensor, keep: int = 1) -> torch.Tensor:
        """Run one forward pass over `tokens` [n] appended to the cache; return the last `keep` logits [keep, V]."""
        if tokens.ndim != 1 or tokens.numel() == 0:
            raise ValueError(f"feed takes a non-empty 1-D tensor of token ids, got shape {tuple(tokens.shape)}")
        keep = min(max(keep, 1), tokens.numel())  # transformers reads logits_to_keep=0 as "all"
        input_ids = tokens[None].to(self.device)   # [1, n]
        if self.head is None:
            logits = self.model(input_ids=input_ids, cache=self.cache, use_cache=True, logits_to_keep=keep).logits[0]
        else:
            hidden = self.model.base_model(input_ids=input_ids, cache=self.cache, use_cache=True).last_hidden_state
            logits = torch.nn.functional.linear(hidden[0, -keep:], *self.head)  # [keep, K]
        self.length += tokens.numel()
        self.passes += 1
        return logits[-keep:]                      # [keep, V]

    def rollback(self, length: int) -> None:
        """Forget every cached token after the first `length`."""
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot roll back a cache of {self.length} tokens to {length}")
        if length < self.length:
            self.cache.crop(length - self.length)  # transformers 5 takes a negative count to drop
            self.length = length
