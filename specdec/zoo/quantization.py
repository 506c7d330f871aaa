"""A cheaper draft: the same draft model with its linear layers quantized to int8 (CPU only).

Notation: q is the draft, p the target, c the cost of a draft step over a target step.

Speculative decoding's speed depends on c: every drafted token costs a draft pass. On a CPU a
small model's pass is limited by how fast its weights can be read, so storing the linear layers'
weights as int8 (a quarter of float32, half of bfloat16) makes each draft pass several times
cheaper. The draft's q changes slightly, which can move alpha a little either way; the output
does not change at all, because the accept/reject rule is exact for any q.

    draft = quantize_draft(load_model("qwen2.5-coder-0.5b", dtype="float32"))
    speculative_generate(target, draft, input_ids)

This uses PyTorch's dynamic quantization (int8 weights, activations quantized on the fly), which
runs on the CPU only. The target is never quantized here: its p is what the user asked for.
"""

from __future__ import annotations

import warnings

import torch
from transformers import PreTrainedModel

from specdec.errors import SpecdecError

QUANTIZATIONS = ("none", "int8")


def quantize_draft(model: PreTrainedModel) -> PreTrainedModel:
    """An int8 copy of `model`'s linear layers (the model passed in is left as it is)."""
    if model.device.type != "cpu":
        raise SpecdecError(f"int8 drafting runs on the CPU only, and this draft is on {model.device}: use --draft-quantization none")
    source = model if model.dtype == torch.float32 else _float32_copy(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch points eager quantization users at torchao; it still works as documented
        quantized = torch.ao.quantization.quantize_dynamic(source, {torch.nn.Linear}, dtype=torch.qint8, inplace=source is not model)
    return quantized.eval()


def _float32_copy(model: PreTrainedModel) -> PreTrainedModel:
    """Dynamic quantization starts from float32 weights."""
    import copy

    return copy.deepcopy(model).float()
