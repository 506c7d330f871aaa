"""Checking and normalising what a user passes to the generate functions, and the random stream of each text.

Both `speculative_generate` and `autoregressive_generate` accept the same decoding arguments
(`Decoding`: max_new_tokens, temperature, top-k, top-p, seed), which travel together as one value
from there on; the checks live here once so both refuse bad input with the same one-line
`SpecdecError`. A prompt is a [T] tensor; several prompts are a batch (`prompts_of`).

Every text draws from a random generator of its own (`row_generator`): text b of a run with seed s
from a stream seeded by `numpy.random.SeedSequence([s, b])`. Streams of different (seed, row) pairs
never coincide, so two runs with neighbouring seeds share nothing (seeding row b with s + b would make
row 1 of seed s row 0 of seed s + 1), and a single text is row 0 of a batch of one.

    decoding = Decoding(max_new_tokens=32, temperature=0.7, seed=1)
    speculative_generate(target, draft, input_ids, gamma=4, **decoding.as_kwargs())
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np
import torch
from specdec.engine.model import Model
from specdec.engine.sampling import SamplingConfig
from specdec.errors import SpecdecError

MAX_GAMMA = 64


def as_ids(ids: object, what: str = "input_ids") -> torch.Tensor:
    """Token ids as a 1-D LongTensor [T]: a [T] or [1, T] tensor of integers, or a list (or tuple) of ints; else one
    clear line.

    >>> as_ids(torch.tensor([[1, 2, 3]])).tolist(), as_ids([4, 5]).tolist()
    ([1, 2, 3], [4, 5])
    >>> as_ids("hello")
    Traceback (most recent call last):
    ...
    specdec.errors.SpecdecError: input_ids must be token ids (a LongTensor [T] or a list of ints), got str: use
    tokenizer(text).input_ids
    """
    if isinstance(ids, (list, tuple)) and all(isinstance(token, int) and not isinstance(token, bool) for token in ids):
        ids = torch.tensor(list(ids), dtype=torch.long)
    if not isinstance(ids, torch.Tensor):
        raise SpecdecError(
            f"{what} must be token ids (a LongTensor [T] or a list of ints), got {type(ids).__name__}: "
            "use tokenizer(text).input_ids"
        )
    if ids.ndim == 2 and ids.shape[0] == 1:
        ids = ids[0]
    if ids.ndim != 1:
        raise SpecdecError(f"{what} must have shape [T] or [1, T] (one sequence), got {tuple(ids.shape)}")
    if ids.numel() and ids.dtype not in (torch.int64, torch.int32):
        raise SpecdecError(f"{what} must hold integer token ids, got dtype {ids.dtype}")
    return ids.long()


def as_prompt(input_ids: object) -> torch.Tensor:
    """One prompt's token ids (`as_ids`) as a 1-D tensor [T], refused when empty.

    >>> as_prompt(torch.tensor([[1, 2, 3]])).tolist(), as_prompt([1, 2]).tolist()
    ([1, 2, 3], [1, 2])
    """
    input_ids = as_ids(input_ids)
    if input_ids.numel() == 0:
        raise SpecdecError("the prompt is empty: give at least one token")
    return input_ids


def prompts_of(input_ids: object, attention_mask: torch.Tensor | None = None) -> tuple[list[torch.Tensor], bool]:
    """The prompts [T_b] of a call and whether it was a batch (a list of results comes back) or one prompt.

    One prompt is a [T] or [1, T] tensor or a list of ints; a batch is a list of prompts or a padded [B, T] tensor.

    >>> prompts, batched = prompts_of(torch.tensor([[5, 6]]))
    >>> [prompt.tolist() for prompt in prompts], batched
    ([[5, 6]], False)
    >>> prompts_of([5, 6])[1], prompts_of([[5, 6], [7]])[1]
    (False, True)
    """
    batch = as_batch(input_ids, attention_mask)
    return (batch, True) if batch is not None else ([as_prompt(input_ids)], False)


def as_batch(input_ids: object, attention_mask: torch.Tensor | None = None) -> list[torch.Tensor] | None:
    """Several prompts as a list of [T_b] tensors, or None for one prompt (a [T] or [1, T] tensor without a mask).

    A batch is a list of prompts (tensors or lists of ids, of any lengths), or a [B, T] tensor with B > 1 or
    with an `attention_mask` [B, T] (1 for a token, 0 for padding, on either side).

    >>> [row.tolist() for row in as_batch(torch.tensor([[0, 5, 6], [7, 8, 9]]), torch.tensor([[0, 1, 1], [1, 1, 1]]))]
    [[5, 6], [7, 8, 9]]
    >>> as_batch(torch.tensor([[5, 6]])) is None, [row.tolist() for row in as_batch([[5, 6], [7]])]
    (True, [[5, 6], [7]])
    """
    if isinstance(input_ids, (list, tuple)) and input_ids and isinstance(input_ids[0], int):
        return None  # a list of ints: one prompt
    if isinstance(input_ids, (list, tuple)):
        if attention_mask is not None:
            raise SpecdecError(
                "give either a list of prompts or a padded [B, T] tensor with its attention_mask, not both"
            )
        if not input_ids:
            raise SpecdecError("the batch is empty: give at least one prompt")
        return [as_prompt(row if isinstance(row, torch.Tensor) else _ids(row)) for row in input_ids]
    if (
        not isinstance(input_ids, torch.Tensor)
        or input_ids.ndim != 2
        or (input_ids.shape[0] == 1 and attention_mask is None)
    ):
        if attention_mask is not None:
            raise SpecdecError(
                f"an attention_mask goes with a padded [B, T] tensor of prompts, got input_ids of shape "
                f"{tuple(getattr(input_ids, 'shape', ()))}"
            )
        return None
    if attention_mask is None:
        return [as_prompt(row) for row in input_ids]
    if not isinstance(attention_mask, torch.Tensor) or attention_mask.shape != input_ids.shape:
        raise SpecdecError(
            f"the attention_mask must have the shape of input_ids {tuple(input_ids.shape)}, got "
            f"{tuple(getattr(attention_mask, 'shape', ()))}"
        )
    return [as_prompt(row[mask.bool()]) for row, mask in zip(input_ids, attention_mask)]


def _ids(row: object) -> torch.Tensor:
    try:
        # any iterable of ids; else the line below
        return torch.tensor(list(row), dtype=torch.long)  # type: ignore[call-overload]
    except (TypeError, ValueError, RuntimeError) as error:
        raise SpecdecError(f"each prompt of a batch must be a tensor or a list of token ids: {error}") from None


def check_counts(max_new_tokens: int, gamma: float | None = None) -> None:
    """Refuse max_new_tokens < 1 and gamma outside 1..64."""
    if int(max_new_tokens) != max_new_tokens or max_new_tokens < 1:
        raise SpecdecError(f"max_new_tokens must be a whole number >= 1, got {max_new_tokens}")
    if gamma is not None and (int(gamma) != gamma or not 1 <= gamma <= MAX_GAMMA):
        raise SpecdecError(f"gamma must be a whole number from 1 to {MAX_GAMMA}, got {gamma}; 4 is a good start")


def check_round_length(name: str, sizes_rounds: bool, *lengths: object) -> None:
    """Refuse a length of round (a gamma, an adaptive gamma's cap, a schedule) given to a drafter that sizes its own
    rounds, and a gamma outside 1..64: one line each, the same wherever a run is checked (the run spec, the planner).

    >>> check_round_length("tree", True, None, None)          # nothing given: fine
    >>> check_round_length("tree", True, 4)
    Traceback (most recent call last):
    ...
    specdec.errors.SpecdecError: tree sizes its own rounds (a tree's budget, a lookup's match): leave gamma out
    """
    given = [length for length in lengths if length is not None]
    if given and sizes_rounds:
        raise SpecdecError(f"{name} sizes its own rounds (a tree's budget, a lookup's match): leave gamma out")
    for length in given:
        if isinstance(length, (int, float)):  # a number (a schedule object sizes itself)
            check_counts(1, length)


def check_fits_context(model: Model, prompt_tokens: int, max_new_tokens: int, role: str = "model") -> None:
    """Refuse a prompt plus new tokens that would run past the
    model's context window (`Model.context_length`, when known)."""
    limit = model.context_length
    if limit is None or prompt_tokens + max_new_tokens <= limit:
        return
    if prompt_tokens >= limit:
        raise SpecdecError(
            f"the prompt has {prompt_tokens} tokens but the {role}'s context holds {limit}: shorten the prompt"
        )
    raise SpecdecError(
        f"the prompt ({prompt_tokens} tokens) plus max_new_tokens ({max_new_tokens}) exceeds the {role}'s "
        f"context of {limit} tokens: ask for at most {limit - prompt_tokens} new tokens"
    )


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


def row_generator(seed: int | None, row: int, device: torch.device | str = "cpu") -> torch.Generator:
    """The random generator of text `row` in a run with `seed` (None: freshly seeded), on `device`.

    Seeded from `numpy.random.SeedSequence([seed, row])`: no two (seed, row) pairs share a stream.

    >>> a, b = row_generator(7, 1), row_generator(8, 0)              # seed + row would have made these one stream
    >>> bool(torch.rand(4, generator=a).eq(torch.rand(4, generator=b)).any())
    False
    """
    generator = torch.Generator(device=device)
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(int(np.random.SeedSequence([int(seed), int(row)]).generate_state(1, np.uint64)[0]))
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
    temperature: float = 1.0  # 0 is greedy
    top_k: int = 0  # 0 keeps every token
    top_p: float = 1.0  # 1.0 keeps every token
    seed: int | None = None  # None: a fresh random seed every run

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
