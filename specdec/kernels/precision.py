"""A model's precision, resolved once: its device, dtype, weights, the kernel that runs it, and why.

Notation: p is the target, q the draft, c the cost of a draft step over a target step, v(gamma)
the cost of one target pass over gamma + 1 tokens over one step.

A user picks four things, each of which may be "auto": the device, the dtype, the target's weights
and the draft's. Which kernel computes the linear layers follows from them, and that kernel is what
sets c and v(gamma). They are resolved here once, into one frozen `Precision` per model, which
loading (`specdec.zoo.loading`), the pair (`specdec.pair`), the reports and the dashboard
carry; nothing downstream resolves them again.

    >>> target = resolve_precision("cpu", "auto", "auto", role="target")
    >>> target.name, target.kernel
    ('float32 int8', 'fbgemm int8 x int8, one activation scale per token')
    >>> target.why.split("; ")
    ['int8 weights: auto on a CPU, cheap steps and cheap verification',
     'float32 activations: auto on a CPU, exact comparisons']
    >>> target, draft = resolve_pair_precision("cpu", "auto", "auto", "auto")
    >>> draft.name, draft.kernel
    ('bfloat16 int4', 'aten int4pack, groups of 32, bfloat16 activations')
    >>> # prompt lookup: nothing to resolve
    >>> resolve_pair_precision("cpu", "auto", "auto", "auto", draft_model=False)[1] is None
    True

A model that "auto" cannot quantize (GPT-2 keeps its weights in `Conv1D`, not `nn.Linear`) loads
as it is; `as_loaded` then says so, so a report never claims weights a model does not have.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import nn

from specdec.kernels.devices import dtype_name, resolve_device, resolve_dtype
from specdec.kernels.quantization import INT4_GROUP, check_quantization, precision_name, quantization_of

AUTO = "auto"


@dataclass(frozen=True)
class Precision:
    """How one model runs: on `device`, activations in `dtype`, linear weights `weights` ("none", "int8", "int4").

    `kernel` names what computes its linear layers; `why` says, in one line, where each choice came
    from. `strict` is False when the weights were "auto": a model they cannot be applied to stays as it is.
    """

    device: torch.device
    dtype: torch.dtype
    weights: str
    kernel: str
    why: str
    strict: bool = True

    @property
    def name(self) -> str:
        """'float32 int8', 'bfloat16': the short form every report and CSV carries."""
        return precision_name(dtype_name(self.dtype), self.weights)

    def describe(self) -> str:
        """One line for a report: 'float32 int8 on cpu (fbgemm int8 x int8, ...): int8 weights: auto on a CPU, ...'."""
        return f"{self.name} on {self.device} ({self.kernel}): {self.why}"

    def as_loaded(self, model: nn.Module) -> Precision:
        """This precision as `model` really holds it: unchanged, unless "auto" left its weights as they were."""
        held = quantization_of(model)
        if held == self.weights:
            return self
        why = (
            f"{self.weights} asked for by auto, but this {model.config.model_type} model keeps most of its weights "
            "outside nn.Linear, so they stay as they are"
        )
        return replace(self, weights=held, kernel=kernel_of(self.device, self.dtype, held), why=why)

    def to_dict(self) -> dict[str, str]:
        """For JSON reports: name, device, dtype, weights, kernel, why."""
        return {
            "name": self.name,
            "device": str(self.device),
            "dtype": dtype_name(self.dtype),
            "weights": self.weights,
            "kernel": self.kernel,
            "why": self.why,
        }


def kernel_of(device: torch.device | str, dtype: torch.dtype, weights: str) -> str:
    """What computes the linear layers of a model with these weights, on this device, in this dtype.

    >>> kernel_of("cpu", torch.float32, "none")
    'float32 GEMM (MKL/oneDNN)'
    """
    device_type = torch.device(device).type
    if weights == "w8a8":
        return "vLLM CPU int8_scaled_mm_with_quant, int8 activations per token"
    if weights == "int8":
        return "fbgemm int8 x int8, one activation scale per token"
    if weights == "int4":
        return f"aten int4pack, groups of {INT4_GROUP}, {dtype_name(dtype)} activations"
    if device_type == "cuda":
        return f"cuBLAS {dtype_name(dtype)}"
    if device_type == "mps":
        return f"Metal {dtype_name(dtype)}"
    if dtype == torch.bfloat16:
        native = torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()
        return (
            "oneDNN bfloat16, weights packed once"
            if native
            else "bfloat16 emulated in float32 (this CPU has no bfloat16 kernels)"
        )
    return f"{dtype_name(dtype)} GEMM (MKL/oneDNN)"


def _weights_reason(asked: str, weights: str, device: torch.device, role: str) -> str:
    if asked != AUTO:
        return f"{weights} weights as asked" if weights != "none" else "weights as stored, as asked"
    if device.type != "cpu":
        return f"auto on {device.type}: the weights as stored (int8 and int4 kernels here run on a CPU only)"
    if role == "target":
        return "int8 weights: auto on a CPU, cheap steps and cheap verification"
    return "int4 weights: auto on a CPU, the cheapest draft step"


def _dtype_reason(asked: str | torch.dtype, dtype: torch.dtype, device: torch.device, weights: str) -> str:
    if not (isinstance(asked, str) and asked == AUTO):
        return f"{dtype_name(dtype)} activations as asked"
    if device.type != "cpu":
        return f"{dtype_name(dtype)} activations: auto on {device.type}"
    if weights == "int4":
        return "bfloat16 activations: auto for int4 weights, whose kernel is fast only there"
    if weights == "w8a8":
        return "bfloat16 activations: auto for w8a8 weights, whose kernel takes them"
    return "float32 activations: auto on a CPU, exact comparisons"


def resolve_precision(
    device: str | torch.device = AUTO, dtype: str | torch.dtype = AUTO, quantization: str = "none", role: str = "target"
) -> Precision:
    """The one `Precision` a model of `role` ("target" or "draft") gets from these choices; a `SpecdecError` for a bad
    one.

    >>> resolve_precision("cpu", "float32", "none").describe()
    'float32 on cpu (float32 GEMM (MKL/oneDNN)): weights as stored, as asked; float32 activations as asked'
    """
    resolved_device = resolve_device(device)
    weights = check_quantization(quantization, resolved_device, role)
    resolved_dtype = resolve_dtype(dtype, resolved_device, weights)
    why = (
        f"{_weights_reason(quantization, weights, resolved_device, role)}; "
        f"{_dtype_reason(dtype, resolved_dtype, resolved_device, weights)}"
    )
    return Precision(
        resolved_device,
        resolved_dtype,
        weights,
        kernel_of(resolved_device, resolved_dtype, weights),
        why,
        strict=quantization != AUTO,
    )


def resolve_pair_precision(
    device: str | torch.device,
    dtype: str | torch.dtype,
    quantization: str,
    draft_quantization: str,
    draft_model: bool = True,
) -> tuple[Precision, Precision | None]:
    """The target's and the draft's `Precision` (None when the draft is a method with no `draft_model`), resolved once
    for a pair.

    An int4 draft runs in bfloat16 whatever `dtype` says: its kernel is fast only there, and a
    draft's rounding changes c, never the output (the target alone decides what is kept).
    """
    target = resolve_precision(device, dtype, quantization, "target")
    if not draft_model:
        return target, None
    draft = resolve_precision(target.device, dtype, draft_quantization, "draft")
    if draft.weights == "int4" and draft.dtype != torch.bfloat16:
        draft = replace(
            draft,
            dtype=torch.bfloat16,
            kernel=kernel_of(draft.device, torch.bfloat16, "int4"),
            why=draft.why.split("; ")[0] + "; bfloat16 activations: an int4 draft runs where its kernel is fast",
        )
    return target, draft


def read_off(model: nn.Module, role: str = "target") -> Precision:
    """The `Precision` a model already built holds (for pairs put together by hand, as the tests do)."""
    device = next(model.parameters()).device
    weights = quantization_of(model)
    return Precision(
        device, model.dtype, weights, kernel_of(device, model.dtype, weights), f"read off the {role} as built"
    )


GGUF_KERNELS = {
    "exact": "llama.cpp's ggml kernels, exact settings (repacked weights in ubatches of 3, flash attention, V cache "
    "bfloat16; the prompt pass in ubatches of 512)",
    "fastest": "llama.cpp's ggml kernels, its own fastest settings (a draft needs no batch invariance)",
}


def gguf_precision(file_type: str, why: str, settings: str = "exact") -> Precision:
    """How a GGUF file runs on llama.cpp's CPU kernels: its weights as stored (`file_type`, e.g. "Q4_K_M"), float32
    activations, with the `settings` ("exact" for a target, "fastest" for a draft).

    >>> gguf_precision("Q4_K_M", "auto: a GGUF file on a CPU").name
    'float32 Q4_K_M'
    """
    return Precision(torch.device("cpu"), torch.float32, file_type, GGUF_KERNELS[settings], why)
