"""Plain decoding, one target pass per token, with a KV cache: the baseline speculative decoding must beat.

It shares its sampling (`specdec.engine.sampling`), caches (`specdec.engine.kv_cache`) and checks with the
speculative loop, so a comparison between the two measures speculation and nothing else. With
temperature 0 its tokens equal `model.generate(do_sample=False)`; the tests hold it to that.

A batch runs one pass per token for all its rows (`specdec.generation.batched`). Not handled: beam search, repetition penalties.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from transformers import PreTrainedModel

from specdec.engine.inputs import Decoding, as_batch, start_generation
from specdec.engine.kv_cache import CachedModel
from specdec.engine.results import GenerationResult, GenerationStats
from specdec.engine.sampling import choose_next


def autoregressive_generate(
    model: PreTrainedModel,
    input_ids: torch.Tensor,
    *,
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int | None = None,
    eos_token_id: int | list[int] | None = None,
    on_token: Callable[[int], None] | None = None,
    attention_mask: torch.Tensor | None = None,
) -> GenerationResult | list[GenerationResult]:
    """Generate up to `max_new_tokens` tokens after `input_ids`, one forward pass per token.

    Same arguments and result type as `speculative_generate`, without the draft; `rounds` is empty.
    `on_token`, if given, is called with every new token as soon as it is chosen. A batch (a list of
    prompts, or a padded [B, T] tensor with its `attention_mask`) returns one result per row
    (`specdec.generation.batched`), and `on_token` is called with (row, token).
    """
    batch = as_batch(input_ids, attention_mask)
    if batch is not None:
        from specdec.generation.batched import autoregressive_generate_batch

        return autoregressive_generate_batch(model, batch, max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k,
                                             top_p=top_p, seed=seed, eos_token_id=eos_token_id, on_token=on_token)
    decoding = Decoding(max_new_tokens, temperature, top_k, top_p, seed)
    prompt, sampling, stop_ids, generator, watch = start_generation(model, input_ids, decoding, eos_token_id)   # prompt: [T]
    lm = CachedModel(model)

    tokens: list[int] = []
    pending = prompt                                                    # tokens the cache has not seen
    while len(tokens) < max_new_tokens and not (tokens and tokens[-1] in stop_ids):
        with watch.measure("verify"):
            logits = lm.feed(pending, keep=1)                           # [1, V]
        token, _ = choose_next(logits[0], sampling, generator)
        tokens.append(token)
        if on_token is not None:
            on_token(token)
        pending = prompt.new_tensor([token])                            # [1]

    stats = GenerationStats(
        new_tokens=len(tokens),
        drafted=0,
        accepted=0,
        target_passes=lm.passes,
        draft_passes=0,
        wall_time_s=watch.elapsed(),
        draft_time_s=0.0,
        verify_time_s=watch.totals["verify"],
        prompt_tokens=prompt.numel(),
    )
    return GenerationResult(tokens=tokens, stats=stats)
