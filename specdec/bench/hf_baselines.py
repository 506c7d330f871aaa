"""transformers' own decoding, as baselines measured in the same process as ours.

- `generate`: the target alone with `model.generate` (the baseline every speedup is relative to);
- `assisted`: transformers' assisted generation with the same draft (`assistant_model=`), drafting
  a constant gamma tokens per round;
- `assisted-dynamic`: the same with transformers' dynamic schedule (gamma +2 after a full accept,
  -1 otherwise, starting from gamma or from transformers' default of 20, and its default confidence
  threshold of 0.4 that stops drafting early when the draft is unsure);
- `assisted-default`: assisted generation exactly as transformers ships it, the draft's generation
  config untouched: up to 20 tokens a round (a constant schedule), drafting stopped as soon as the
  draft's probability of its token falls below 0.4, a threshold re-fitted from past acceptances
  (an ROC curve) when scikit-learn is installed;
- `prompt-lookup`: transformers' prompt lookup decoding (`prompt_lookup_num_tokens=gamma`).

A draft with another tokenizer runs as transformers' universal assisted generation (`tokenizer=`
and `assistant_tokenizer=`): greedy, it re-encodes the draft's text for the target; sampling, it
uses the shared tokens like `specdec.drafting.cross_tokenizer`.

Each returns the new tokens and the wall time, device synchronised. transformers does not report
how many drafted tokens it accepted, so those statistics are left empty for these rows.
"""

from __future__ import annotations

import copy
import time

import torch
from transformers import PreTrainedModel

from specdec.engine.timing import synchronize

HF_METHODS = ("generate", "assisted", "assisted-dynamic", "assisted-default", "hf-prompt-lookup")


@torch.inference_mode()
def hf_generate(
    method: str,
    target: PreTrainedModel,
    draft: PreTrainedModel | None,
    input_ids: torch.Tensor,
    *,
    gamma: int | None,
    max_new_tokens: int,
    temperature: float,
    top_k: int,
    top_p: float,
    seed: int,
    eos_token_id: list[int],
    tokenizers: tuple | None = None,
) -> tuple[list[int], float]:
    """Run one transformers baseline; return (new tokens, wall
    seconds). `tokenizers`: (target's, draft's) when they differ."""
    input_ids = input_ids.to(target.device)
    kwargs = dict(
        max_new_tokens=max_new_tokens,
        eos_token_id=eos_token_id or None,
        pad_token_id=(eos_token_id or [0])[0],
        attention_mask=torch.ones_like(input_ids),
    )
    if temperature > 0:
        kwargs |= dict(do_sample=True, temperature=temperature, top_k=top_k, top_p=top_p)  # top_k=0 turns it off
    else:
        kwargs |= dict(do_sample=False)
    saved_config = None
    if method in ("assisted", "assisted-dynamic", "assisted-default"):
        if draft is None:
            raise ValueError(f"{method} needs a draft model")
        saved_config = draft.generation_config
        draft.generation_config = copy.deepcopy(saved_config)  # (transformers re-fits the threshold in it)
        if gamma is not None and method != "assisted-default":  # None: transformers' own default start (20 tokens)
            draft.generation_config.num_assistant_tokens = gamma
        if method == "assisted":
            draft.generation_config.num_assistant_tokens_schedule = "constant"
            draft.generation_config.assistant_confidence_threshold = 0.0  # always draft gamma tokens
        elif method == "assisted-dynamic":
            draft.generation_config.num_assistant_tokens_schedule = "heuristic"
        kwargs["assistant_model"] = draft
        if tokenizers is not None:
            kwargs["tokenizer"], kwargs["assistant_tokenizer"] = tokenizers
    elif method == "hf-prompt-lookup":
        kwargs["prompt_lookup_num_tokens"] = gamma
    elif method != "generate":
        raise ValueError(f"unknown transformers method {method}")
    torch.manual_seed(seed)
    try:
        synchronize(target.device)
        start = time.perf_counter()
        output = target.generate(input_ids, **kwargs)
        synchronize(target.device)
        elapsed = time.perf_counter() - start
    finally:
        if saved_config is not None:
            draft.generation_config = saved_config
    return output[0, input_ids.shape[1] :].tolist(), elapsed
