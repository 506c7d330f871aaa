"""Measuring c and v(gamma) on the models as they run: a draft step, a target step, a verification pass over k tokens.

Notation: c = one draft step / one target step; v(gamma) = one target pass over gamma + 1 tokens / one
target step (`specdec.engine.costs.CostProfile`). Each is timed through the model's own runtime cache
(`specdec.engine.model`), with a prompt already cached, device synchronised, the median of a few
repetitions (rolled back after each, so the cache does not grow).

    profile = measure_costs(target, draft, input_ids, gammas=[2, 4, 8])    # transformers models or runtime models
    profile.c, profile.v(4)
    weight_cost_ratio(target, draft)                                       # c from the weights, nothing run
"""

from __future__ import annotations

import statistics
import time

import torch

from specdec.engine.costs import CostProfile
from specdec.engine.inputs import as_prompt
from specdec.engine.model import Rows
from specdec.engine.timing import synchronize
from specdec.runtime import as_model


def _median_pass_time(rows: Rows, tokens: torch.Tensor, repeats: int, device: torch.device) -> float:
    """Median seconds of one pass over `tokens` on top of the cached prompt (row 0), rolled back after each."""
    times = []
    for _ in range(repeats + 1):                      # the first pass only warms up
        start_length = rows.length(0)
        synchronize(device)
        start = time.perf_counter()
        rows.feed([tokens], keep=tokens.numel())
        synchronize(device)
        times.append(time.perf_counter() - start)
        rows.rollback(0, start_length)
    return statistics.median(times[1:])


@torch.inference_mode()
def measure_costs(target: object, draft: object | None, input_ids: torch.Tensor, gammas: list[int], repeats: int = 5,
                  draft_input_ids: torch.Tensor | None = None) -> CostProfile:
    """c and v(gamma) for `target` and `draft` (None: model-free, c = 0) after `input_ids`.

    A draft with another tokenizer reads the prompt as `draft_input_ids` (its own ids).
    """
    target, draft = as_model(target), None if draft is None else as_model(draft)
    prompt = as_prompt(input_ids).to(target.device)    # [T]
    continuation = prompt[-1:].repeat(max(gammas, default=1) + 1)  # any tokens will do for timing
    target_rows = target.rows([0])
    target_rows.feed([prompt[:-1] if prompt.numel() > 1 else prompt])
    target_step = _median_pass_time(target_rows, continuation[:1], repeats, target.device)
    verify = {gamma: _median_pass_time(target_rows, continuation[:gamma + 1], repeats, target.device) for gamma in sorted(set(gammas))}
    draft_step = 0.0
    if draft is not None:
        draft_prompt = prompt if draft_input_ids is None else as_prompt(draft_input_ids).to(draft.device)   # [T_draft]
        draft_rows = draft.rows([0])
        draft_rows.feed([draft_prompt[:-1] if draft_prompt.numel() > 1 else draft_prompt])
        draft_step = _median_pass_time(draft_rows, draft_prompt[-1:], repeats, draft.device)
    return CostProfile(target_step, draft_step, verify)


def weight_cost_ratio(target: object, draft: object | None) -> float:
    """c estimated without running anything: the draft's weight bytes over the target's (0 without a draft model).

    Decoding one token is bound by reading the weights on CPUs and GPUs alike, so this lands near
    the measured c (Qwen2.5-Coder 0.5B for 1.5B in bfloat16: 0.32 estimated, 0.3-0.45 measured).
    """
    return 0.0 if draft is None else as_model(draft).weight_bytes() / as_model(target).weight_bytes()
