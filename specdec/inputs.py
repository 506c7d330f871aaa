"""Checking and normalising what a user passes to the generate functions.

Both `speculative_generate` and `autoregressive_generate` accept the same arguments; the checks
live here once so both refuse bad input with the same one-line `SpecdecError`.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from transformers import PreTrainedModel

from specdec.errors import SpecdecError

MAX_GAMMA = 64


def as_prompt(input_ids: torch.Tensor) -> torch.Tensor:
    """A 1-D or [1, T] LongTensor of token ids as a 1-D tensor [T].

    >>> as_prompt(torch.tensor([[1, 2, 3]])).tolist()
    [1, 2, 3]
    """
    if not isinstance(input_ids, torch.Tensor):
        raise SpecdecError(f"input_ids must be a torch LongTensor, got {type(input_ids).__name__}: "
                           "use tokenizer(text, return_tensors='pt').input_ids")
    if input_ids.ndim == 2 and input_ids.shape[0] == 1:
        input_ids = input_ids[0]
    if input_ids.ndim != 1:
        raise SpecdecError(f"input_ids must have shape [T] or [1, T] (one prompt), got {tuple(input_ids.shape)}")
    if input_ids.numel() == 0:
        raise SpecdecError("the prompt is empty: give at least one token")
    if input_ids.dtype not in (torch.int64, torch.int32):
        raise SpecdecError(f"input_ids must hold integer token ids, got dtype {input_ids.dtype}")
    return input_ids.long()


def check_counts(max_new_tokens: int, gamma: int | None = None) -> None:
    """Refuse max_new_tokens < 1 and gamma outside 1..64."""
    if int(max_new_tokens) != max_new_tokens or max_new_tokens < 1:
        raise SpecdecError(f"max_new_tokens must be a whole number >= 1, got {max_new_tokens}")
    if gamma is not None and (int(gamma) != gamma or not 1 <= gamma <= MAX_GAMMA):
        raise SpecdecError(f"gamma must be a whole number from 1 to {MAX_GAMMA}, got {gamma}; 4 is a good start")


def context_length(model: PreTrainedModel) -> int | None:
    """The longest sequence the model's position embeddings cover, when its config says."""
    return getattr(model.config, "max_position_embeddings", None)


def check_fits_context(model: PreTrainedModel, prompt_tokens: int, max_new_tokens: int, role: str = "model") -> None:
    """Refuse a prompt plus new tokens that would run past the model's context window."""
    limit = context_length(model)
    if limit is None or prompt_tokens + max_new_tokens <= limit:
        return
    if prompt_tokens >= limit:
        raise SpecdecError(f"the prompt has {prompt_tokens} tokens but the {role}'s context holds {limit}: shorten the prompt")
    raise SpecdecError(f"the prompt ({prompt_tokens} tokens) plus max_new_tokens ({max_new_tokens}) exceeds the {role}'s "
                       f"context of {limit} tokens: ask for at most {limit - prompt_tokens} new tokens")


def eos_ids(eos_token_id: int | Iterable[int] | None) -> frozenset[int]:
    """The set of token ids that end generation.

    >>> sorted(eos_ids(2)), sorted(eos_ids([2, 7])), sorted(eos_ids(None))
    ([2], [2, 7], [])
    """
    if eos_token_id is None:
        return frozenset()
    if isinstance(eos_token_id, int):
        return frozenset({eos_token_id})
    return frozenset(int(token) for token in eos_token_id)


def make_generator(seed: int | None, device: torch.device) -> torch.Generator:
    """A random generator on `device`: seeded for repeatable runs, otherwise freshly seeded."""
    generator = torch.Generator(device=device)
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(int(seed))
    return generator
