"""Quantized weights: fewer bytes read per forward pass, so cheaper target steps and cheaper drafts.

Notation: p is the target, q the draft, c the cost of a draft step over a target step, v(gamma)
the cost of one target pass over gamma + 1 tokens over one step.

On a CPU a decoding step of a small model is bound by how fast its weights can be read. Storing
the linear layers' weights in 8 or 4 bits reads 4x or 8x fewer bytes than float32. Two kinds, both
PyTorch's own CPU kernels, both keeping the model a transformers model (only its `nn.Linear`
layers are swapped, the output layer included):

- "int8" (`Int8Linear`): int8 weights, one scale per output row; activations quantized to int8 on
  the fly, one scale per token; int32 accumulation in fbgemm's kernel. Its pass over several
  tokens costs little more than one step (v(5) = 1.28 for Qwen2.5-Coder-1.5B's shapes on a
  2-core CPU, `benchmarks/weight_kernels.py`), which is what speculative decoding needs from a target.
- "int4" (`Int4Linear`): int4 weights in groups of 32 with a scale and an offset per group;
  activations in the model's dtype (PyTorch's `_weight_int4pack_mm_for_cpu`, as in gpt-fast). In
  bfloat16 the cheapest one-token step, but its kernel's cost grows with every token of a pass
  (v(5) = 2.98): a fine draft, a poor target to verify with. In float32 the kernel is many times
  slower: only for exact checks on small models (dtype "auto" is bfloat16 for it, `resolve_dtype`).

A quantized model is a different model: its p is not the float model's p. Speculative decoding
stays exact with respect to the model *as loaded*: the engine compares against the same quantized
object. For that, one token's logits must not depend on the other tokens of the pass. PyTorch's
own dynamic quantization picks one activation scale for the whole pass, so a token's logits move
with its neighbours; `Int8Linear` scales each token to absolute maximum 1 and appends the columns
+1 and -1 (whose weights are zero), so the pass-wide scale is always the same and every token is
quantized alone. Both layers give bit-identical rows whichever pass they are computed in, and a
quantized model's attention is switched to `specdec.zoo.invariant_attention`, so the whole model
gives a token the same logits in a verification pass as in a one-token step:

    >>> layer = torch.nn.Linear(64, 32)
    >>> int8 = Int8Linear.from_linear(layer)
    >>> x = torch.randn(5, 64)
    >>> bool((int8(x) == torch.cat([int8(row[None]) for row in x])).all())
    True

    model = quantize_model(load_model("qwen2.5-coder-1.5b"), "int8")      # in place; CPU only
    quantization_of(model)                                               # 'int8'
"""

from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn
from transformers import PreTrainedModel

from specdec.errors import SpecdecError
from specdec.zoo import load_progress
from specdec.zoo.invariant_attention import use_invariant_attention

QUANTIZATIONS = ("none", "int8", "int4")
QUANTIZATION_CHOICES = ("auto", *QUANTIZATIONS)   # "auto": the fastest exact choice for the device (`auto_quantization`)
INT4_GROUP = 32                                    # weights per int4 scale/offset (a probe on the real pair: 32 kept 99-100% of
                                                   # bfloat16's greedy choices, 128 kept 97-98%, for 5% less time)
MIN_QUANTIZED_SHARE = 0.5                          # refuse a model when less than this share of its weights can be quantized


class Int8Linear(nn.Module):
    """y = x W^T + b with W in int8 (a scale per output row) and x quantized per token, in fbgemm.

    Stored: `weight_int8` [N, K] int8, `weight_scale` [N] float32, `bias` [N] or None.
    """

    verify_slope = 0.05   # v(k) = 1 + s k: v(5) = 1.28, v(17) = 2.67 for Qwen2.5-Coder-1.5B's shapes (2 cores); fits the short passes

    def __init__(self, weight_int8: torch.Tensor, weight_scale: torch.Tensor, bias: torch.Tensor | None) -> None:
        super().__init__()
        self.out_features, self.in_features = weight_int8.shape
        self.register_buffer("weight_int8", weight_int8)
        self.register_buffer("weight_scale", weight_scale.float())
        self.register_buffer("bias", None if bias is None else bias.detach().float())
        self.register_buffer("_bounds", torch.tensor([[1.0, -1.0]]), persistent=False)   # the +1/-1 columns
        padded = torch.cat([weight_int8, weight_int8.new_zeros(self.out_features, 2)], dim=1)     # [N, K + 2]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # PyTorch's notice about its quantized tensor type; the kernel is what we measured
            quantized = torch._make_per_channel_quantized_tensor(padded, self.weight_scale.double(),
                                                                  torch.zeros(self.out_features, dtype=torch.long), 0)
            self._packed = torch.ops.quantized.linear_prepack(quantized, None)    # the bias is added after the rescale

    @classmethod
    def from_linear(cls, layer: nn.Linear) -> Int8Linear:
        weight = layer.weight.detach().float()                                  # [N, K]
        scale = weight.abs().amax(dim=1).clamp(min=1e-12) / 127                 # [N]
        weight_int8 = torch.round(weight / scale[:, None]).clamp(-127, 127).to(torch.int8)
        return cls(weight_int8, scale, layer.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:                        # [..., K] -> [..., N]
        rows = x.reshape(-1, self.in_features).float()                          # [M, K]
        size = rows.abs().amax(dim=1, keepdim=True).clamp(min=1e-30)            # [M, 1]: each token alone
        padded = torch.cat([rows / size, self._bounds.expand(rows.shape[0], 2)], dim=1)       # [M, K + 2], min -1, max 1
        y = torch.ops.quantized.linear_dynamic(padded, self._packed, True) * size              # [M, N]
        if self.bias is not None:
            y = y + self.bias
        return y.to(x.dtype).reshape(*x.shape[:-1], self.out_features)


class Int4Linear(nn.Module):
    """y = x W^T + b with W in int4, groups of `INT4_GROUP` weights sharing a scale and an offset.

    Stored: `weight_int4` (PyTorch's CPU packing of [N, K] 4-bit values), `scales_and_zeros`
    [K / group, N, 2] bfloat16, `bias` [N] or None.
    """

    verify_slope = 0.4    # v(5) = 2.98, v(17) = 7.01: the kernel unpacks the weights again for every token of a pass
    read_cost = 1.6       # it reads about 16 GB/s where int8 reads 25 (1.5B shapes, same CPU): its bytes count 1.6 times in c's estimate

    def __init__(self, weight_int4: torch.Tensor, scales_and_zeros: torch.Tensor, bias: torch.Tensor | None,
                 in_features: int, group: int = INT4_GROUP) -> None:
        super().__init__()
        self.in_features, self.out_features, self.group = in_features, scales_and_zeros.shape[1], group
        self.register_buffer("weight_int4", weight_int4)
        self.register_buffer("scales_and_zeros", scales_and_zeros)
        self.register_buffer("bias", None if bias is None else bias.detach().to(torch.bfloat16))

    @staticmethod
    def fits(layer: nn.Linear, group: int = INT4_GROUP) -> bool:
        """The kernel needs K divisible by the group and N by 16."""
        return layer.in_features % group == 0 and layer.out_features % 16 == 0

    @classmethod
    def from_linear(cls, layer: nn.Linear, group: int = INT4_GROUP) -> Int4Linear:
        weight = layer.weight.detach().float()                                  # [N, K]
        n, k = weight.shape
        groups = weight.reshape(n, k // group, group)                           # [N, K/g, g]
        low, high = groups.amin(dim=-1), groups.amax(dim=-1)                    # [N, K/g]
        scale = (high - low).clamp(min=1e-12) / 15
        values = torch.round((groups - low[..., None]) / scale[..., None]).clamp(0, 15).to(torch.int32).reshape(n, k)
        zero = low + 8 * scale                                                  # the kernel computes (value - 8) * scale + zero
        scales_and_zeros = torch.stack([scale, zero], dim=-1).transpose(0, 1).contiguous().to(torch.bfloat16)  # [K/g, N, 2]
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(values, 1)
        return cls(packed, scales_and_zeros, layer.bias, k, group)

    def forward(self, x: torch.Tensor) -> torch.Tensor:                        # [..., K] -> [..., N]
        rows = x.reshape(-1, self.in_features).contiguous()                                # [M, K], bfloat16 (fast) or float32 (slow, exact checks)
        scales_and_zeros = self.scales_and_zeros.to(rows.dtype)                 # exact: bfloat16 values widen without rounding
        y = torch.ops.aten._weight_int4pack_mm_for_cpu(rows, self.weight_int4, self.group, scales_and_zeros)
        if self.bias is not None:
            y = y + self.bias.to(rows.dtype)
        return y.reshape(*x.shape[:-1], self.out_features)


LAYERS = {"int8": Int8Linear, "int4": Int4Linear}


def quantization_of(model: nn.Module) -> str:
    """'none', 'int8' or 'int4': how `model`'s linear layers are stored."""
    return getattr(model, "specdec_quantization", "none")


def auto_quantization(device: torch.device | str, role: str) -> str:
    """The fastest exact choice: on a CPU an int8 target (cheap steps *and* cheap verification) and an int4 draft.

    >>> auto_quantization("cpu", "target"), auto_quantization("cpu", "draft"), auto_quantization("cuda", "target")
    ('int8', 'int4', 'none')
    """
    if torch.device(device).type != "cpu":
        return "none"
    return "int8" if role == "target" else "int4"


def precision_name(dtype: str, quantization: str) -> str:
    """How a model ran, in words: the dtype of its activations, then its weights' quantization if any.

    >>> precision_name("float32", "int8"), precision_name("bfloat16", "none")
    ('float32 int8', 'bfloat16')
    """
    return dtype + ("" if quantization == "none" else f" {quantization}")


def precision_summary(target: str, draft: str | None) -> str:
    """'target float32 int8, draft bfloat16 int4'; just the target's without a draft model.

    >>> precision_summary("float32 int8", None)
    'target float32 int8'
    """
    return f"target {target}" + ("" if draft is None else f", draft {draft}")


def check_quantization(quantization: str, device: torch.device | str, role: str = "target") -> str:
    """The quantization to use, 'auto' resolved; a `SpecdecError` for a name or device that cannot work."""
    if quantization == "auto":
        return auto_quantization(device, role)
    if quantization not in QUANTIZATIONS:
        raise SpecdecError(f"unknown quantization '{quantization}': use one of {', '.join(QUANTIZATION_CHOICES)}")
    if quantization != "none" and torch.device(device).type != "cpu":
        flag = "--quantization" if role == "target" else "--draft-quantization"
        raise SpecdecError(f"{quantization} weights run on the CPU only (PyTorch's CPU kernels), not on {device}: use {flag} none")
    return quantization


def _quantizable(quantization: str, layer: nn.Module) -> bool:
    return isinstance(layer, nn.Linear) and (quantization != "int4" or Int4Linear.fits(layer))


def quantize_model(model: PreTrainedModel, quantization: str, strict: bool = True, name: str | None = None) -> PreTrainedModel:
    """Swap `model`'s linear layers for int8 or int4 ones, in place (the output layer is untied from the embeddings).

    A model that keeps most of its weights elsewhere (GPT-2's `Conv1D`) is refused: quantizing
    only its output layer would not make it faster. With `strict=False` (what "auto" asks for)
    such a model is returned as it is. Each layer done is reported as a `load_progress.LoadStep` for `name`.
    """
    if quantization == "none":
        return model
    check_quantization(quantization, model.device)
    return apply_quantization(model, quantization, strict, name)


def apply_quantization(model: PreTrainedModel, quantization: str, strict: bool = True, name: str | None = None) -> PreTrainedModel:
    """`quantize_model` for a `quantization` already checked for this device (`specdec.zoo.precision` did it, once)."""
    if quantization == "none":
        return model
    total = sum(parameter.numel() for parameter in model.parameters())
    targets = [(name, layer) for name, layer in model.named_modules() if _quantizable(quantization, layer)]
    if sum(layer.weight.numel() for _, layer in targets) < MIN_QUANTIZED_SHARE * total:
        if not strict:
            return model
        kinds = sorted({type(layer).__name__ for layer in model.modules() if list(layer.parameters(recurse=False))} - {"Embedding"})
        raise SpecdecError(f"{quantization} quantizes nn.Linear layers, and this {model.config.model_type} model keeps most "
                           f"of its weights elsewhere ({', '.join(kinds)}): use quantization none for it")
    model_name = name or model.config.model_type
    for done, (layer_name, layer) in enumerate(targets, start=1):
        _replace(model, layer_name, LAYERS[quantization].from_linear(layer))
        load_progress.report(model_name, f"quantizing linear layers to {quantization}", done, len(targets))
    return mark_quantized(model, quantization)


def mark_quantized(model: PreTrainedModel, quantization: str) -> PreTrainedModel:
    """Record the quantization, and give the model attention whose rows do not depend on the pass (`invariant_attention`)."""
    model.specdec_quantization = quantization
    model.config.tie_word_embeddings = False   # the output layer now has weights of its own
    use_invariant_attention(model)
    return model


def _replace(model: nn.Module, name: str, layer: nn.Module) -> None:
    parent_name, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent_name) if parent_name else model, child, layer)


def rebuild_quantized_layers(model: nn.Module, state: dict[str, torch.Tensor], quantization: str) -> None:
    """Swap each `nn.Linear` whose int8/int4 tensors are in `state` (a saved quantized model) for its quantized layer.

    The layers are built on every CPU thread at once: most of a quantized copy's load is fbgemm packing
    each int8 weight for its kernel (measured: 7.9 of 10.1 s for Qwen2.5-Coder-1.5B, one layer at a time),
    and the packing of one layer runs on one core. The largest layers go first, so that the output
    layer (15% of the 1.5B's weights, the longest single packing) does not end the load on one core
    while the others wait (measured on 2 threads, the 1.5B int8 copy: 8.9 s in model order, 6.5-7.1 s largest first).
    """
    marker = {"int8": "weight_int8", "int4": "weight_int4"}[quantization]
    names = [name for name, layer in model.named_modules() if isinstance(layer, nn.Linear) and f"{name}.{marker}" in state]
    names.sort(key=lambda name: -state[f"{name}.{marker}"].numel())
    with ThreadPoolExecutor(max_workers=max(1, torch.get_num_threads())) as pool:
        layers = list(pool.map(lambda name: _layer_from_state(quantization, state, f"{name}."), names))
    for name, layer in zip(names, layers):
        _replace(model, name, layer)


def _layer_from_state(quantization: str, state: dict[str, torch.Tensor], prefix: str) -> nn.Module:
    """One saved layer from its tensors (`prefix` is the layer's name plus '.')."""
    bias = state.get(prefix + "bias")
    if quantization == "int8":
        return Int8Linear(state[prefix + "weight_int8"], state[prefix + "weight_scale"], bias)
    scales_and_zeros, weight = state[prefix + "scales_and_zeros"], state[prefix + "weight_int4"]   # [K/g, N, 2], [N, K/2]
    in_features = weight.shape[1] * 2
    return Int4Linear(weight, scales_and_zeros, bias, in_features, group=in_features // scales_and_zeros.shape[0])
