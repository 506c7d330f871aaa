"""A causal language model together with its KV cache: feed tokens, get logits, roll back.

Speculative decoding runs both models incrementally. Each forward pass only processes the tokens
that are new since the last pass; the keys and values of everything before them stay in the cache.
When the target rejects a drafted token, the cache holds keys and values for tokens that are no
longer part of the text, and `rollback` cuts them off: no pass is ever repeated over the whole
prefix.

    model = CachedModel(hf_model)
    logits = model.feed(torch.tensor([5, 6, 7]), last=1)   # [1, V]: prefill, keep the last logits
    logits = model.feed(torch.tensor([8, 9]), last=2)      # [2, V]: two more tokens, one pass
    model.rollback(4)                                      # forget token 9: the cache holds 5 6 7 8

Invariant: `length` is the number of tokens whose keys and values are in the cache, and the
cache is only ever fed tokens of the text being generated (or drafted continuations of it).

With `output_rows=K` only the first K rows of the output layer are computed: the logits cover
token ids 0..K-1. A draft may do this to save work (byte-pair vocabularies give frequent tokens low
ids); its q then lives on those ids, which the accept/reject rule handles exactly like any other q.

Sliding-window layers (Gemma 2/3, Mistral-style windows) keep only the last `window - 1` tokens, so a
token they dropped cannot come back after a rollback. As transformers' assisted generation does, the
cache records the past (`activate_past_recording`): such a layer keeps every token of the last pass
until the next `crop`, which removes the rejected tokens and trims the layer back to its window. A
token tree's cache surgery (`keep`) needs every position, so trees refuse these models up front.

One sequence at a time; a batch of ragged rows lives in `specdec.runtime.pytorch.batch_cache`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from transformers import DynamicCache, PreTrainedModel

from specdec.errors import SpecdecError


def restricted_head(model: PreTrainedModel, output_rows: int) -> tuple[Callable[[torch.Tensor], torch.Tensor], int]:
    """(hidden [n, H] -> logits [n, K], K): the first K = min(`output_rows`, V) rows of `model`'s output layer alone.

    A `SpecdecError` for an output layer that cannot be cut so: one that is not a plain linear layer
    (an int8 draft's is not) or logits that are soft-capped after it (Gemma 2's), which the cut would skip.
    """
    head = model.get_output_embeddings()
    if getattr(model.config, "final_logit_softcapping", None) or not (
        isinstance(head, torch.nn.Linear) or hasattr(head, "first_rows")
    ):
        raise SpecdecError(
            f"cannot restrict the output layer of this {type(model).__name__}: it is not a plain linear "
            "layer (an int8 draft's is not); drop the vocabulary limit"
        )
    rows = min(output_rows, head.out_features)
    if hasattr(head, "first_rows"):
        return head.first_rows(rows), rows  # a layer that keeps its weight in its own layout makes the cut
    weight, bias = head.weight[:rows], None if head.bias is None else head.bias[:rows]  # views, no copy
    return (lambda hidden: torch.nn.functional.linear(hidden, weight, bias)), rows


class CachedModel:
    """A transformers causal LM plus a `DynamicCache` and the count of forward passes made."""

    def __init__(self, model: PreTrainedModel, output_rows: int | None = None) -> None:
        self.model = model
        self.cache = DynamicCache(config=model.config)
        self.sliding = has_sliding_window(model)
        if self.sliding:
            self.cache.activate_past_recording()  # keep the last pass whole until rollback crops it
        self.length = 0  # tokens held in the cache
        self.passes = 0  # forward passes made
        # hidden [n, H] -> logits [n, K]: the first `output_rows` rows of the output layer, when restricted
        self.head = None
        self.output_rows = output_rows
        if output_rows is not None:
            self.head, self.output_rows = restricted_head(model, output_rows)

    @property
    def vocab_size(self) -> int:
        """The width of the logits this model returns."""
        return self.output_rows if self.head is not None else self.model.get_output_embeddings().out_features

    @property
    def device(self) -> torch.device:
        return self.model.device

    def feed(
        self,
        tokens: torch.Tensor,
        last: int = 1,
        attend: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Run one forward pass over `tokens` [n] appended to the cache; return the logits of its `last` new tokens
        [last, V].

        By default each new token attends to the cache and the new tokens before it (causal). A token
        tree passes `attend` [n, length + n] bool (True: may attend) and `positions` [n] instead
        (`specdec.engine.trees.tree_attention`).
        """
        return self.feed_with_hidden(tokens, last, attend, positions, hidden=False)[0]

    @torch.inference_mode()
    def feed_with_hidden(
        self,
        tokens: torch.Tensor,
        last: int = 1,
        attend: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
        hidden: bool = True,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """`feed`, also returning the hidden states of every row when `hidden`: per layer [n, H] (the embeddings
        first, the last one after the final norm), as transformers' `output_hidden_states` gives them."""
        if tokens.ndim != 1 or tokens.numel() == 0:
            raise ValueError(f"feed takes a non-empty 1-D tensor of token ids, got shape {tuple(tokens.shape)}")
        last = min(max(last, 1), tokens.numel())  # transformers reads logits_to_keep=0 as "all"
        inputs = {"input_ids": tokens[None].to(self.device), "cache": self.cache, "use_cache": True}  # input_ids [1, n]
        if attend is not None:
            inputs["attention_mask"] = attend[None, None].to(self.device)  # [1, 1, n, length + n]: used as given
            inputs["position_ids"] = positions[None].to(self.device)  # [1, n]
        if hidden:
            inputs["output_hidden_states"] = True
        if self.head is None:
            output = self.model(**inputs, logits_to_keep=last)
            logits = output.logits[0]
        else:
            output = self.model.base_model(**inputs)
            logits = self.head(output.last_hidden_state[0, -last:])  # [last, K]
        self.length += tokens.numel()
        self.passes += 1
        states = tuple(layer[0] for layer in output.hidden_states) if hidden else None  # per layer [n, H]
        return logits[-last:], states  # [last, V]

    def rollback(self, length: int) -> None:
        """Forget every cached token after the first `length`."""
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot roll back a cache of {self.length} tokens to {length}")
        # crop(0) trims recorded sliding-window layers to their window
        if length < self.length or (self.sliding and length > 0):
            self.cache.crop(length - self.length)  # transformers 5 takes a negative count to drop
            self.length = length

    def keep(self, columns: list[int]) -> None:
        """Keep only the cached tokens at `columns` (increasing), in that order: a tree's accepted path.

        After a tree pass the cache holds the text, the root and every node; the text continues
        along one path, so the keys and values of that path are moved up behind the text and the
        rest dropped. Positions were given at the pass, so nothing is recomputed.
        """
        if columns == list(range(len(columns))):
            self.rollback(len(columns))
            return
        if self.sliding:
            raise SpecdecError(
                "a token tree cannot keep a path in a sliding-window cache: draft a chain for this model"
            )
        if any(b <= a for a, b in zip(columns, columns[1:])) or columns[0] < 0 or columns[-1] >= self.length:
            raise ValueError(f"columns to keep must increase within 0..{self.length - 1}, got {columns}")
        index = torch.tensor(columns, device=self.device)
        for layer in self.cache.layers:
            if getattr(layer, "is_initialized", True) and layer.keys is not None and layer.keys.numel():
                layer.keys = layer.keys.index_select(-2, index)  # [batch, heads, kept, head_dim]
                layer.values = layer.values.index_select(-2, index)
        self.length = len(columns)


def has_sliding_window(model: PreTrainedModel) -> bool:
    """Whether any layer of `model` attends only to a window of recent tokens (its cache then drops older ones).

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> has_sliding_window(LlamaForCausalLM(LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=1,
    ...                                                 num_attention_heads=1, vocab_size=4)))
    False
    """
    config = model.config.get_text_config(decoder=True)
    layer_types = getattr(config, "layer_types", None) or ()
    if any(kind in ("sliding_attention", "chunked_attention") for kind in layer_types):
        return True
    return (
        bool(getattr(config, "sliding_window", None))
        and getattr(config, "use_sliding_window", True)
        and not layer_types
    )
