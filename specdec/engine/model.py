"""The model contract: what the loop and the drafters ask of a loaded model, whatever runtime runs it.

Notation: p is the target, q the draft; a "row" is one text of a batch (a single text is row 0).

Speculative decoding needs four things of a model, and nothing else: feed it new tokens (with the
positions and the attention pattern a token tree needs), read the logits of the last rows it fed, keep
only the cached tokens the rule accepted, and drop the texts that are done. Two runtimes meet this
contract (`specdec.runtime`): transformers on torch (any Hugging Face model, on a CPU, CUDA or MPS, with
hidden states for the methods that read them) and llama.cpp's own kernels for GGUF files. The loop
(`specdec.engine.loop`) and the drafters speak only to this contract, so the rule and the loop do not
change with the runtime.

    model.vocab_size                              # V: the width of every logits row
    rows = model.rows([0, 1])                     # a KV cache for two texts (rows 0 and 1), both empty
    logits, _ = rows.feed([prompt_a, prompt_b])   # [2, 1, V]: one pass, the last row of each text
    logits, _ = rows.feed([draft_a, None], last=3, attend=[mask_a, None], offsets=[offsets_a, None])
    rows.keep(0, [0, 1, 2, 3, 5])                 # row 0 keeps these cached tokens (a tree's accepted path)
    rows.rollback(1, 4)                           # row 1 forgets every token after its first four
    rows.compact([0])                             # row 1 is done: the cache drops it

A pass feeds each row its own new tokens `tokens[i]` [m_i] (None or an empty tensor: nothing), in the
order of `rows.rows`. By default new tokens attend causally to the row's cached tokens and to the new
tokens before them, at positions length_i, length_i + 1, ... . A token tree gives per row:

    attend[i]    [m_i, length_i + m_i] bool: what each new token sees among the row's cached tokens (in
                 their order) and the new tokens (True: may attend); every token sees itself
    offsets[i]   [m_i] long: each new token's position after the row's length (position length_i + offset)

`feed` returns the logits of the `last` new tokens of every row, [B, last, V] (rows fed fewer tokens
are padded at the front; rows fed nothing have rows that mean nothing), and with `hidden=True` the hidden
states of every new token, per layer [B, M, H] (right-aligned the same way), where the model's traits say
it has them. `keep(row, tokens)` keeps only the row's cached tokens at those indices (increasing), in
that order; the kept tokens' positions must be 0, 1, 2, ... again (a text and an accepted path always are).

A runtime is exact for speculative decoding when a row's logits do not depend on how its tokens were cut
into passes: one pass over k tokens gives, row for row, the logits of k one-token passes (batch
invariance). A torch target loaded through the runtimes proves on this machine up to which pass size it is
(`specdec.kernels.batch_invariance`: k*) and cuts every pass into checked sizes; a transformers model built by hand is
not checked (in float32 its rows equal one-token steps' up to the last bits, not bit for bit). llama.cpp is with the
settings `specdec.runtime.llama_cpp` fixes, and a self-test proves it on this machine before it is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import torch


@dataclass(frozen=True)
class ModelTraits:
    """What a loaded model's runtime can do, declared once (as a drafter declares its `Capabilities`).

    >>> ModelTraits("torch", hidden_states=True).batches, ModelTraits("llama.cpp").hidden_states
    (True, False)
    """

    runtime: str  # "torch" or "llama.cpp": which runtime runs it
    hidden_states: bool = False  # `feed(hidden=True)` gives per-layer hidden states (heads, layer skipping read them)
    sliding_window: bool = False  # some layers see only a window of recent tokens: no token trees, no batches
    batches: bool = True  # several texts in one cache
    internals: bool = False  # the model's modules can be reached (`module`): layer skipping, trained heads


class Rows(Protocol):
    """A model's KV cache for several texts ("rows"), each with its own length (module docstring)."""

    rows: list[int]  # the caller's row ids, in the order `feed` takes and returns them
    passes: int  # forward passes made so far

    def length(self, row: int) -> int:
        """Tokens the cache holds for `row`."""

    def feed(
        self,
        tokens: Sequence[torch.Tensor | None],
        last: int = 1,
        attend: Sequence[torch.Tensor | None] | None = None,
        offsets: Sequence[torch.Tensor | None] | None = None,
        hidden: bool = False,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """One forward pass over every row's new tokens: logits [B,
        last, V] and (if asked) hidden states per layer [B, M, H]."""

    def keep(self, row: int, tokens: list[int]) -> None:
        """Keep only the cached tokens of `row` at these indices (increasing), in that order."""

    def rollback(self, row: int, length: int) -> None:
        """Forget every cached token of `row` after its first `length`."""

    def compact(self, rows: Sequence[int] | None = None) -> None:
        """Keep only `rows` (the caller's ids, in this order; default: all): the others are done and leave the cache."""


class Model(Protocol):
    """A loaded causal LM, whatever runs it: what the loop, the drafters and the policy read of it."""

    name: str  # how reports call it
    identity: str  # what measurements of it are kept under: the model, its precision and its threads
    traits: ModelTraits
    vocab_size: int  # V: the width of every logits row
    embedding_rows: int  # the ids it can read (a draft may have fewer rows than the target's V)
    context_length: int | None  # the longest text it can read, when known
    device: torch.device
    dtype: torch.dtype  # its activations' dtype (llama.cpp: float32)
    weights: str  # how its weights are stored: "none" (as the dtype), "int8", "int4", "w8a8", or a GGUF
    # file's type ("Q4_K_M")
    eos_token_ids: tuple[int, ...]  # the ids the model itself ends a text with (its tokenizer may name another)
    passes: int  # forward passes its caches have made: a run counts a draft's passes from outside

    def rows(self, rows: Sequence[int], output_rows: int | None = None) -> Rows:
        """An empty cache for the texts `rows` (ids, in order);
        `output_rows=K`: logits of the first K ids only (a draft's saving)."""

    def weight_bytes(self) -> int:
        """Bytes of weights one decoding step reads: the ratio of a draft's and a target's is c from the weights."""

    def verify_slope(self) -> float:
        """beta in v(k) = 1 + beta k, guessed without measuring (what one more token costs a verification pass)."""
