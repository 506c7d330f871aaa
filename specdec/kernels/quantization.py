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
- "w8a8" (`specdec.kernels.w8a8.W8A8Linear`): int8 weights stored as "int8" stores them, activations
  quantized to int8 per token inside vLLM's prebuilt CPU kernel, so a pass over several tokens costs
  little more than one step (v(5) = 1.19 on an AVX-512 CPU). It runs only where that kernel passed this
  machine's own test (`specdec.kernels.w8a8_gate`); bfloat16 activations.

A quantized model is a different model: its p is not the float model's p. Speculative decoding
stays exact with respect to the model *as loaded*: the engine compares against the same quantized
object. For that, one token's logits must not depend on the other tokens of the pass. PyTorch's
own dynamic quantization picks one activation scale for the whole pass, so a token's logits move
with its neighbours; `Int8Linear` scales each token to absolute maximum 1 and appends the columns
+1 and -1 (whose weights are zero), so the pass-wide scale is always the same and every token is
quantized alone. Both layers give bit-identical rows whichever pass they are computed in, and a
quantized model's attention is switched to `specdec.kernels.invariant_attention`, so the whole model
gives a token the same logits in a verification pass as in a one-token step. Sibling int8 layers
that read one input (attention's q, k, v; the MLP's gate and up) are packed side by side and
computed in one fbgemm call (`SharedInput`): the same bits, fewer calls, and most of a small
layer's cost on a CPU is the call, not the weights:

    >>> layer = torch.nn.Linear(64, 32)
    >>> int8 = Int8Linear.from_linear(layer)
    >>> x = torch.randn(5, 64)
    >>> bool((int8(x) == torch.cat([int8(row[None]) for row in x])).all())
    True

    model = quantize_model(load_model("qwen2.5-coder-1.5b"), "int8")      # in place; CPU only
    quantization_of(model)                                               # 'int8'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn
from transformers import PreTrainedModel

from specdec.errors import SpecdecError
from specdec.kernels.int4 import INT4_GROUP, Int4Linear  # noqa: F401  (INT4_GROUP: precision names the group)
from specdec.kernels.int8 import Int8Linear, SharedInput, int8_groups
from specdec.kernels.invariant_attention import use_invariant_attention
from specdec.kernels.w8a8 import W8A8Linear

QUANTIZATIONS = ("none", "int8", "int4", "w8a8")
QUANTIZATION_CHOICES = ("auto", *QUANTIZATIONS)  # "auto": the fastest exact choice for the device (`auto_quantization`)
MIN_QUANTIZED_SHARE = 0.5  # refuse a model when less than this share of its weights can be quantized


def _layer_groups(model: nn.Module, quantization: str, names: list[str]) -> list[list[str]]:
    """The layers `names` in the groups they are made in: int8
    siblings sharing an input together (`int8_groups`), int4 alone."""
    return int8_groups(model, names) if quantization == "int8" else [[name] for name in names]


def _packed_group(layers: list[nn.Module]) -> list[nn.Module]:
    """One group's layers, packed: int8 ones built unpacked alone
    or side by side (`SharedInput`); int4 ones pack as built."""
    if not isinstance(layers[0], Int8Linear):
        return layers
    if len(layers) == 1:
        layers[0].pack()
    else:
        SharedInput(layers)
    return layers


def quantization_of(model: nn.Module) -> str:
    """'none', 'int8', 'int4' or 'w8a8': how `model`'s linear layers are stored."""
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
        raise SpecdecError(
            f"{quantization} weights run on the CPU only (PyTorch's CPU kernels), not on {device}: use {flag} none"
        )
    # w8a8 is checked where it is loaded: its kernel must first pass this machine's test (`w8a8_gate`)
    return quantization


def _quantizable(quantization: str, layer: nn.Module) -> bool:
    fits = {"int4": Int4Linear.fits, "w8a8": W8A8Linear.fits}.get(quantization, lambda layer: True)
    return isinstance(layer, nn.Linear) and fits(layer)


def quantize_model(
    model: PreTrainedModel, quantization: str, strict: bool = True, on_layer: Callable[[int, int], None] | None = None
) -> PreTrainedModel:
    """Swap `model`'s linear layers for int8 or int4 ones, in place (the output layer is untied from the embeddings).

    A model that keeps most of its weights elsewhere (GPT-2's `Conv1D`) is refused: quantizing
    only its output layer would not make it faster. With `strict=False` (what "auto" asks for)
    such a model is returned as it is. `on_layer(done, total)` is called after each layer (a loader's progress bar).
    """
    if quantization == "none":
        return model
    check_quantization(quantization, model.device)
    return apply_quantization(model, quantization, strict, on_layer)


def apply_quantization(
    model: PreTrainedModel, quantization: str, strict: bool = True, on_layer: Callable[[int, int], None] | None = None
) -> PreTrainedModel:
    """`quantize_model` for a `quantization` already checked for
    this device (`specdec.kernels.precision` did it, once)."""
    if quantization == "none":
        return model
    total = sum(parameter.numel() for parameter in model.parameters())
    targets = [(name, layer) for name, layer in model.named_modules() if _quantizable(quantization, layer)]
    if sum(layer.weight.numel() for _, layer in targets) < MIN_QUANTIZED_SHARE * total:
        if not strict:
            return model
        kinds = sorted(
            {type(layer).__name__ for layer in model.modules() if list(layer.parameters(recurse=False))} - {"Embedding"}
        )
        raise SpecdecError(
            f"{quantization} quantizes nn.Linear layers, and this {model.config.model_type} model keeps most "
            f"of its weights elsewhere ({', '.join(kinds)}): use quantization none for it"
        )
    groups = _layer_groups(model, quantization, [layer_name for layer_name, _ in targets])
    groups.sort(key=lambda group: -sum(model.get_submodule(name).weight.numel() for name in group))
    done = 0
    for group, layers in _built_on_every_thread(
        groups,
        lambda group: _packed_group(
            [quantized_layer(quantization, model.get_submodule(layer_name)) for layer_name in group]
        ),
    ):
        for layer_name, layer in zip(group, layers):
            _replace(model, layer_name, layer)
            done += 1
            if on_layer is not None:
                on_layer(done, len(targets))
    return mark_quantized(model, quantization)


def quantize_linears(module: nn.Module, quantization: str) -> nn.Module:
    """Every `nn.Linear` of a small module that is not a transformers model (an EAGLE head) in int8, in place; "none"
    leaves it.

    A draft's weights change q, never the output (the rule is exact for any q), so a head may run in int8
    under a float32 target. Only int8 and none: int4 needs bfloat16 activations the head's float32 math does not use.
    """
    if quantization == "none":
        return module
    if quantization != "int8":
        raise SpecdecError(f"a head runs in int8 or none, got {quantization}: pass --draft-quantization int8 or none")
    check_quantization(quantization, next(module.parameters()).device, role="draft")
    for name, layer in [(name, layer) for name, layer in module.named_modules() if isinstance(layer, nn.Linear)]:
        _replace(module, name, Int8Linear.from_linear(layer))
    return module


def _built_on_every_thread(
    groups: list[list[str]], build: Callable[[list[str]], list[nn.Module]]
) -> Iterator[tuple[list[str], list[nn.Module]]]:
    """(group, its layers) for each group in order, the layers built on every CPU thread at once.

    Quantizing and packing one layer runs on one core (fbgemm's packing, measured: 18% of the 1.5B's
    first load, one layer at a time), so two cores build two layers at once. Give the largest groups
    first, so the last one to finish is small. Whoever iterates gets the layers in order, in its own
    thread (where a progress callback may raise: the layers not started yet are then not built).
    """
    pool = ThreadPoolExecutor(max_workers=max(1, torch.get_num_threads()))
    try:
        futures = [pool.submit(build, group) for group in groups]
        for group, future in zip(groups, futures):
            yield group, future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def quantized_layer(quantization: str, layer: nn.Linear) -> nn.Module:
    """`layer` with its weights in `quantization` ("int8", "int4"
    or "w8a8"); an int8 layer is left for its group to pack."""
    if quantization == "int8":
        return Int8Linear.from_linear(layer, pack=False)
    return W8A8Linear.from_linear(layer) if quantization == "w8a8" else Int4Linear.from_linear(layer)


def mark_quantized(model: PreTrainedModel, quantization: str) -> PreTrainedModel:
    """Record the quantization, and give the model attention whose rows do not depend on the pass
    (`invariant_attention`)."""
    model.specdec_quantization = quantization
    model.config.tie_word_embeddings = False  # the output layer now has weights of its own
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
    marker = {"int8": "weight_int8", "w8a8": "weight_int8", "int4": "weight_int4"}[quantization]
    names = [
        name for name, layer in model.named_modules() if isinstance(layer, nn.Linear) and f"{name}.{marker}" in state
    ]
    groups = _layer_groups(model, quantization, names)  # int8 siblings packed as one
    groups.sort(key=lambda group: -sum(state[f"{name}.{marker}"].numel() for name in group))
    for group, layers in _built_on_every_thread(
        groups, lambda group: _packed_group([_layer_from_state(quantization, state, f"{name}.") for name in group])
    ):
        for name, layer in zip(group, layers):
            _replace(model, name, layer)


def _layer_from_state(quantization: str, state: dict[str, torch.Tensor], prefix: str) -> nn.Module:
    """One saved layer from its tensors (`prefix` is the layer's name plus '.')."""
    bias = state.get(prefix + "bias")
    if quantization == "int8":
        # packed by its group
        return Int8Linear(state[prefix + "weight_int8"], state[prefix + "weight_scale"], bias, pack=False)
    if quantization == "w8a8":
        # packed for its kernel now
        return W8A8Linear(state[prefix + "weight_int8"], state[prefix + "weight_scale"], bias)
    # [K/g, N, 2], [N, K/2]
    scales_and_zeros, weight = state[prefix + "scales_and_zeros"], state[prefix + "weight_int4"]
    in_features = weight.shape[1] * 2
    return Int4Linear(weight, scales_and_zeros, bias, in_features, group=in_features // scales_and_zeros.shape[0])
