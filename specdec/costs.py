"""Measuring what the speedup formula needs: the cost ratio c and the verification cost v(gamma).

Notation: c = one draft step / one target step; v(gamma) = one target pass over gamma + 1 tokens /
one target step. With them, the expected speedup of a round is

    E[tokens per round] / (gamma * c + v(gamma))     (see specdec.reference.theory.walltime_speedup)

Both are measured the way the engine really runs the models: through `CachedModel`, with a KV
cache already holding a prompt, timed with device synchronisation, each the median of a few
repetitions (rolled back after each, so the cache does not grow).

    profile = measure_costs(target, draft, input_ids, gammas=[2, 4, 8])
    profile.c, profile.v(4)
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

import torch
from transformers import PreTrainedModel

from specdec.inputs import as_prompt
from specdec.kv_cache import CachedModel
from specdec.timing import synchronize


@dataclass(frozen=True)
class CostProfile:
    """Median seconds of the passes a round is made of."""

    target_step_s: float                   # target, one new token
    draft_step_s: float                    # draft, one new token (0 for a model-free drafter)
    verify_s: dict[int, float] = field(default_factory=dict)  # gamma -> target pass over gamma + 1 tokens

    @property
    def c(self) -> float:
        """The cost ratio: one draft step / one target step."""
        return self.draft_step_s / self.target_step_s

    def v(self, gamma: int) -> float:
        """The verification cost: a pass over gamma + 1 tokens / one target step."""
        return self.verify_s[gamma] / self.target_step_s


def _median_pass_time(model: CachedModel, tokens: torch.Tensor, repeats: int) -> float:
    """Median seconds of one pass over `tokens` on top of the cached prompt."""
    times = []
    for _ in range(repeats + 1):                      # the first pass only warms up
        start_length = model.length
        synchronize(model.device)
        start = time.perf_counter()
        model.feed(tokens, keep=tokens.numel())
        synchronize(model.device)
        times.append(time.perf_counter() - start)
        model.rollback(start_length)
    return statistics.median(times[1:])


@torch.inference_mode()
def measure_costs(target: PreTrainedModel, draft: PreTrainedModel | None, input_ids: torch.Tensor,
                  gammas: list[int], repeats: int = 5) -> CostProfile:
    """c and v(gamma) for `target` and `draft` (None: model-free, c = 0) after the prompt `input_ids`."""
    prompt = as_prompt(input_ids).to(target.device)    # [T]
    continuation = prompt[-1:].repeat(max(gammas, default=1) + 1)  # any tokens will do for timing
    target_lm = CachedModel(target)
    target_lm.feed(prompt[:-1] if prompt.numel() > 1 else prompt)
    target_step = _median_pass_time(target_lm, continuation[:1], repeats)
    verify = {gamma: _median_pass_time(target_lm, continuation[:gamma + 1], repeats) for gamma in sorted(set(gammas))}
    draft_step = 0.0
    if draft is not None:
        draft_lm = CachedModel(draft)
        draft_lm.feed(prompt[:-1] if prompt.numel() > 1 else prompt)
        draft_step = _median_pass_time(draft_lm, continuation[:1], repeats)
    return CostProfile(target_step, draft_step, verify)
