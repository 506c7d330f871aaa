"""Checking and normalising what a user passes to the generate functions, and what every generation starts with.

Both `speculative_generate` and `autoregressive_generate` accept the same decoding arguments
(`Decoding`: max_new_tokens, temperature, top-k, top-p, seed); the checks live here once so both
refuse bad input with the same one-line `SpecdecError`, and `start_generation` sets up what both
loops need before their first pass (the prompt as [T], the warping, the stop ids, the random
generator and the stopwatch).

    decoding = Decoding(max_new_tokens=32, temperature=0.7, seed=1)
    speculative_generate(target, draft, input_ids, gamma=4, **decoding.as_kwargs())
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import NamedTuple

import torch
from transformers import PreTrainedModel

from specdec.errors import SpecdecError
from specdec.engine.sampling import SamplingConfig
from specdec.engine.timing import Stopwatch

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


def as_batch(input_ids: object, attention_mask: torch.Tensor | None = None) -> list[torch.Tensor] | None:
    """Several prompts as a list of [T_b] tensors, or None for one prompt (a [T] or [1, T] tensor without a mask).

    A batch is a list of prompts (tensors or lists of ids, of any lengths), or a [B, T] tensor with B > 1 or
    with an `attention_mask` [B, T] (1 for a token, 0 for padding, on either side).

    >>> [row.tolist() for row in as_batch(torch.tensor([[0, 5, 6], [7, 8, 9]]), torch.tensor([[0, 1, 1], [1, 1, 1]]))]
    [[5, 6], [7, 8, 9]]
    >>> as_batch(torch.tensor([[5, 6]])) is None, [row.tolist() for row in as_batch([[5, 6], [7]])]
    (True, [[5, 6], [7]])
    """
    if isinstance(input_ids, (list, tuple)):
        if attention_mask is not None:
            raise SpecdecError("give either a list of prompts or a padded [B, T] tensor with its attention_mask, not both")
        if not input_ids:
            raise SpecdecError("the batch is empty: give at least one prompt")
        return [as_prompt(row if isinstance(row, torch.Tensor) else _ids(row)) for row in input_ids]
    if not isinstance(input_ids, torch.Tensor) or input_ids.ndim != 2 or (input_ids.shape[0] == 1 and attention_mask is None):
        if attention_mask is not None:
            raise SpecdecError(f"an attention_mask goes with a padded [B, T] tensor of prompts, got input_ids of shape "
                               f"{tuple(getattr(input_ids, 'shape', ()))}")
        return None
    if attention_mask is None:
        return [as_prompt(row) for row in input_ids]
    if not isinstance(attention_mask, torch.Tensor) or attention_mask.shape != input_ids.shape:
        raise SpecdecError(f"the attention_mask must have the shape of input_ids {tuple(input_ids.shape)}, got "
                           f"{tuple(getattr(attention_mask, 'shape', ()))}")
    return [as_prompt(row[mask.bool()]) for row, mask in zip(input_ids, attention_mask)]


def _ids(row: object) -> torch.Tensor:
    try:
        return torch.tensor(list(row), dtype=torch.long)
    except (TypeError, ValueError, RuntimeError) as error:
        raise SpecdecError(f"each prompt of a batch must be a tensor or a list of token ids: {error}") from None


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


@dataclass(frozen=True)
class Decoding:
    """How to decode, whatever drafts: the arguments plain and speculative decoding share.

    >>> Decoding(max_new_tokens=8, temperature=0).sampling.greedy
    True
    >>> Decoding(max_new_tokens=0)
    Traceback (most recent call last):
    ...
    specdec.errors.SpecdecError: max_new_tokens must be a whole number >= 1, got 0
    """

    max_new_tokens: int = 64
    temperature: float = 1.0     # 0 is greedy
    top_k: int = 0               # 0 keeps every token
    top_p: float = 1.0           # 1.0 keeps every token
    seed: int | None = None      # None: a fresh random seed every run

    def __post_init__(self) -> None:
        check_counts(self.max_new_tokens)
        self.sampling  # noqa: B018 - refuses a bad temperature, top-k or top-p now, not at the first token

    @property
    def sampling(self) -> SamplingConfig:
        """The warping both p and q get."""
        return SamplingConfig(self.temperature, self.top_k, self.top_p)

    def as_kwargs(self) -> dict[str, float | int | None]:
        """The keyword arguments of `speculative_generate` and `autoregressive_generate`."""
        return asdict(self)


class Start(NamedTuple):
    """What a generation loop holds before its first pass (unpack it: prompt, sampling, stop_ids, generator, watch)."""

    prompt: torch.Tensor              # [T] on the model's device
    sampling: SamplingConfig
    stop_ids: frozenset[int]
    generator: torch.Generator
    watch: Stopwatch


def start_generation(model: PreTrainedModel, input_ids: torch.Tensor, decoding: Decoding,
                     eos_token_id: int | Iterable[int] | None, role: str = "model") -> Start:
    """Check the prompt against `model`'s context and set up sampling, stop ids, the generator and the stopwatch."""
    prompt = as_prompt(input_ids).to(model.device)                                       # [T]
    check_fits_context(model, prompt.numel(), decoding.max_new_tokens, role)
    return Start(prompt, decoding.sampling, eos_ids(eos_token_id), make_generator(decoding.seed, model.device),
                 Stopwatch(model.device))
