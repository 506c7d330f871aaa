"""Plain decoding, one target pass per token: the baseline speculative decoding must beat.

It is the speculative loop with a drafter that drafts nothing (`specdec.drafting.no_draft.PLAIN`): every round, the
target reads the last token and adds one of its own. So it shares everything with speculative decoding (sampling,
caches, batches, checks, timing) but the drafting, and a comparison between the two measures
speculation and nothing else. With temperature 0 its tokens equal `model.generate(do_sample=False)`;
the tests hold it to that. Not handled: beam search, repetition penalties.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import torch

from specdec.drafting.no_draft import PLAIN
from specdec.engine.inputs import Decoding, prompts_of
from specdec.engine.results import GenerationResult
from specdec.generation.run import run_plan
from specdec.runtime import as_model


def autoregressive_generate(
    model: object,
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

    Same arguments and result type as `speculative_generate`, without the draft; `rounds` is empty, and
    `timeline` holds one entry per token (its target pass, and when it ended on the run's clock).
    `on_token`, if given, is called with every new token as soon as it is chosen. A batch (a list of
    prompts, or a padded [B, T] tensor with its `attention_mask`) returns one result per row, and
    `on_token` is called with (row, token); row b draws from its own stream, as in `speculative_generate`.
    """
    decoding = Decoding(max_new_tokens, temperature, top_k, top_p, seed)
    prompts, batched = prompts_of(input_ids, attention_mask)
    if on_token is None:
        callback = None
    elif batched:
        callback = lambda row, round_: on_token(row, round_.next_token)  # noqa: E731
    else:
        callback = lambda row, round_: on_token(round_.next_token)  # noqa: E731
    results = [
        replace(result, rounds=(), drafting="", by_default=False)
        for result in run_plan(as_model(model), PLAIN, prompts, decoding, eos_token_id, callback)
    ]
    return results if batched else results[0]
