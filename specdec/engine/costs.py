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

from specdec.engine.inputs import as_prompt
from specdec.engine.kv_cache import CachedModel
from specdec.engine.timing import synchronize


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
        """The verification cost: a pass over gamma + 1 tokens / one target step.

        Between measured gammas it is interpolated linearly, beyond them held at the nearest one;
        v(0) is a plain one-token step, 1.

        >>> round(CostProfile(0.1, 0.02, {1: 0.11, 5: 0.15}).v(3), 6)
        1.3
        """
        if gamma == 0:
            return 1.0
        if gamma in self.verify_s:
            return self.verify_s[gamma] / self.target_step_s
        measured = sorted(self.verify_s)
        lower = max((g for g in measured if g < gamma), default=measured[0])
        upper = min((g for g in measured if g > gamma), default=measured[-1])
        if lower == upper:
            return self.verify_s[lower] / self.target_step_s
        weight = (gamma - lower) / (upper - lower)
        return ((1 - weight) * self.verify_s[lower] + weight * self.verify_s[upper]) / self.target_step_s


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
                  gammas: list[int], repeats: int = 5, draft_input_ids: torch.Tensor | None = None) -> CostProfile:
    """c and v(gamma) for `target` and `draft` (None: model-free, c = 0) after the prompt `input_ids`.

    A draft with another tokenizer reads the prompt as `draft_input_ids` (its own ids).
    """
    prompt = as_prompt(input_ids).to(target.device)    # [T]
    continuation = prompt[-1:].repeat(max(gammas, default=1) + 1)  # any tokens will do for timing
    target_lm = CachedModel(target)
    target_lm.feed(prompt[:-1] if prompt.numel() > 1 else prompt)
    target_step = _median_pass_time(target_lm, continuation[:1], repeats)
    verify = {gamma: _median_pass_time(target_lm, continuation[:gamma + 1], repeats) for gamma in sorted(set(gammas))}
    draft_step = 0.0
    if draft is not None:
        draft_prompt = prompt if draft_input_ids is None else as_prompt(draft_input_ids).to(draft.device)   # [T_draft]
        draft_lm = CachedModel(draft)
        draft_lm.feed(draft_prompt[:-1] if draft_prompt.numel() > 1 else draft_prompt)
        draft_step = _median_pass_time(draft_lm, draft_prompt[-1:], repeats)
    return CostProfile(target_step, draft_step, verify)


def weight_bytes(model: torch.nn.Module) -> int:
    """Bytes of weights one decoding step reads: every tensor once, the input embedding table left out.

    A step looks up one row of the input embedding but reads every other weight (the output layer
    included, even when it shares the embedding's storage). Packed int8 weights count one byte each.

    >>> weight_bytes(torch.nn.Linear(4, 2))                   # 8 float32 weights and 2 biases
    40
    """
    embedding = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    output = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    skip = set()
    table = getattr(embedding, "weight", None)            # None: rows looked up elsewhere (`specdec.zoo.gguf_files`)
    if table is not None and not (isinstance(output, torch.nn.Linear) and output.weight is table):
        skip.add(table.data_ptr())
    seen, total = set(), 0.0
    for module in model.modules():
        total += getattr(module, "packed_bytes", 0)   # a weight kept outside the state dict (`specdec.kernels.packed_linear`)
        scale = getattr(module, "read_cost", 1.0)     # a quantized layer whose kernel reads its bytes slower says so
        own: dict = {}
        module._save_to_state_dict(own, "", keep_vars=True)    # this module's tensors, not its children's
        for value in own.values():
            for tensor in value if isinstance(value, tuple) else (value,):   # PyTorch's own quantized layers pack (weight, bias)
                if not isinstance(tensor, torch.Tensor):
                    continue
                key = (tensor.data_ptr(), tensor.numel()) if not tensor.is_quantized else (id(tensor),)
                if tensor.is_quantized or (tensor.data_ptr() not in skip and key not in seen):
                    seen.add(key)
                    total += tensor.numel() * tensor.element_size() * scale
    return round(total)


def weight_cost_ratio(target: torch.nn.Module, draft: torch.nn.Module | None) -> float:
    """c estimated without running anything: the draft's weight bytes over the target's (0 without a draft model).

    Decoding one token is bound by reading the weights on CPUs and GPUs alike, so this lands near
    the measured c (Qwen2.5-Coder 0.5B for 1.5B in bfloat16: 0.32 estimated, 0.3-0.45 measured).
    """
    return 0.0 if draft is None else weight_bytes(draft) / weight_bytes(target)


def verify_slope_guess(target: torch.nn.Module) -> float:
    """s in v(k) = 1 + s k without measuring: 0.5 for float32 on a CPU (compute-bound), else 0.05.

    Measured on this project's 2-core CPU: a 5-token pass costs about 3 one-token steps in float32
    and 0.84-1.19 in bfloat16 (`measure_costs` gives the real v(k) for a pair). Quantized layers
    tell their own slope (`verify_slope`: int8 0.05, int4 0.4), and the steepest one counts.
    """
    slopes = [module.verify_slope for module in target.modules() if hasattr(module, "verify_slope")]
    if slopes:
        return max(slopes)
    weight = next(target.parameters())
    return 0.5 if weight.device.type == "cpu" and weight.dtype == torch.float32 else 0.05
