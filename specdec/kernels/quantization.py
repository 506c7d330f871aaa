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

import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn
from transformers import PreTrainedModel

from specdec.errors import SpecdecError
from specdec.kernels.int8_rows import int8_rows
from specdec.kernels.invariant_attention import use_invariant_attention
from specdec.kernels.w8a8 import W8A8Linear

QUANTIZATIONS = ("none", "int8", "int4", "w8a8")
QUANTIZATION_CHOICES = ("auto", *QUANTIZATIONS)   # "auto": the fastest exact choice for the device (`auto_quantization`)
INT4_GROUP = 32                                    # weights per int4 scale/offset (a probe on the real pair: 32 kept 99-100% of
                                                   # bfloat16's greedy choices, 128 kept 97-98%, for 5% less time)
MIN_QUANTIZED_SHARE = 0.5                          # refuse a model when less than this share of its weights can be quantized


BOUNDS = torch.tensor([[1.0, -1.0]])   # the +1/-1 columns appended to every token (their weights are zero)


def _pack_int8(weight_int8: torch.Tensor, weight_scale: torch.Tensor) -> object:
    """fbgemm's packed form of int8 weights [N, K] with a scale per row, two zero columns appended for the bounds."""
    padded = torch.cat([weight_int8, weight_int8.new_zeros(weight_int8.shape[0], 2)], dim=1)     # [N, K + 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # PyTorch's notice about its quantized tensor type; the kernel is what we measured
        quantized = torch._make_per_channel_quantized_tensor(padded, weight_scale.double(),
                                                              torch.zeros(weight_int8.shape[0], dtype=torch.long), 0)
        return torch.ops.quantized.linear_prepack(quantized, None)    # the bias is added after the rescale


def _int8_product(x: torch.Tensor, packed: object, bias: torch.Tensor | None, in_features: int, out_features: int) -> torch.Tensor:
    """x [..., K] times packed int8 weights [N, K]: each token scaled to absolute maximum 1 and quantized alone."""
    rows = x.reshape(-1, in_features).float()                                   # [M, K]
    size = rows.abs().amax(dim=1, keepdim=True).clamp(min=1e-30)                # [M, 1]: each token alone
    padded = torch.cat([rows / size, BOUNDS.expand(rows.shape[0], 2)], dim=1)   # [M, K + 2], min -1, max 1
    y = torch.ops.quantized.linear_dynamic(padded, packed, True) * size         # [M, N]
    if bias is not None:
        y = y + bias
    return y.to(x.dtype).reshape(*x.shape[:-1], out_features)


class Int8Linear(nn.Module):
    """y = x W^T + b with W in int8 (a scale per output row) and x quantized per token, in fbgemm.

    Stored: `weight_int8` [N, K] int8, `weight_scale` [N] float32, `bias` [N] or None. With
    `pack=False` the fbgemm form is made later, alone (`pack`) or with its siblings (`SharedInput`).
    """

    verify_slope = 0.05   # v(k) = 1 + s k: v(5) = 1.28, v(17) = 2.67 for Qwen2.5-Coder-1.5B's shapes (2 cores); fits the short passes

    def __init__(self, weight_int8: torch.Tensor, weight_scale: torch.Tensor, bias: torch.Tensor | None, pack: bool = True) -> None:
        super().__init__()
        self.out_features, self.in_features = weight_int8.shape
        self.register_buffer("weight_int8", weight_int8)
        self.register_buffer("weight_scale", weight_scale.float())
        self.register_buffer("bias", None if bias is None else bias.detach().float())
        self._packed: object | None = None
        self._shared: SharedInput | None = None          # computed with its siblings in one call
        self._columns = slice(0, self.out_features)      # its outputs among the shared call's
        if pack:
            self.pack()

    def pack(self) -> None:
        """Lay the weights out for fbgemm, for this layer alone."""
        self._packed = _pack_int8(self.weight_int8, self.weight_scale)

    @classmethod
    def from_linear(cls, layer: nn.Linear, pack: bool = True) -> Int8Linear:
        return cls(*int8_rows(layer.weight), layer.bias, pack)

    def forward(self, x: torch.Tensor) -> torch.Tensor:                        # [..., K] -> [..., N]
        if self._shared is not None:
            return self._shared.output(self, x)
        return _int8_product(x, self._packed, self.bias, self.in_features, self.out_features)


SHARED_INPUTS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))   # siblings transformers calls on one input, one after another


class SharedInput:
    """Sibling `Int8Linear` layers that read the same input (attention's q, k and v; the MLP's gate and up), in one fbgemm call.

    The first member called computes every member's outputs at once, their weights packed side by
    side as one [N1 + N2 + ..., K] matrix, and keeps them with a copy of the input until each other
    member has taken its columns; a member called on an input equal to that copy takes them, and
    any other call is computed afresh. So the result is right whatever the order of the calls and
    whatever happens to the input or an output in between, and fast in the usual order (one call
    instead of three, or two). Every output is the same number as the member's own call gives: each
    is one row of int32 sums rescaled by its own row's scale (`benchmarks/weight_kernels.py`
    measures the time saved; the tests check the bits):

        >>> layers = [torch.nn.Linear(64, n) for n in (32, 16, 16)]
        >>> alone = [Int8Linear.from_linear(layer) for layer in layers]
        >>> shared = SharedInput([Int8Linear.from_linear(layer, pack=False) for layer in layers])
        >>> x = torch.randn(5, 64)
        >>> all(torch.equal(one(x), member(x)) for one, member in zip(alone, shared.members))
        True

    One pass at a time: a model is not run from two threads at once (the dashboard queues its runs).
    """

    def __init__(self, members: list[Int8Linear]) -> None:
        if len({member.in_features for member in members}) != 1:
            raise ValueError("layers that share an input have the same in_features")
        self.members = members
        self.in_features = members[0].in_features
        self.out_features = sum(member.out_features for member in members)
        self.packed = _pack_int8(torch.cat([m.weight_int8 for m in members]), torch.cat([m.weight_scale for m in members]))
        biases = [m.bias if m.bias is not None else m.weight_scale.new_zeros(m.out_features) for m in members]
        self.bias = None if all(m.bias is None for m in members) else torch.cat(biases)
        start = 0
        for member in members:
            member._shared, member._columns = self, slice(start, start + member.out_features)
            start += member.out_features
        self._input: torch.Tensor | None = None          # a copy of the last input, and every member's outputs for it
        self._output: torch.Tensor | None = None
        self._waiting: set[int] = set()                  # the members that have not taken their columns of it yet

    def output(self, member: Int8Linear, x: torch.Tensor) -> torch.Tensor:    # [..., K] -> [..., N_member]
        """`member`'s outputs for `x`: from the call its sibling made on an equal input, else from a new call for all."""
        last = self._input
        if id(member) in self._waiting and last.shape == x.shape and last.dtype == x.dtype and torch.equal(last, x):
            self._waiting.discard(id(member))
            output = self._output[..., member._columns]
            if not self._waiting:                        # every member served: nothing kept past this round
                self._input = self._output = None
            return output
        output = _int8_product(x, self.packed, self.bias, self.in_features, self.out_features)
        self._input, self._output = x.detach().clone(), output
        self._waiting = {id(other) for other in self.members if other is not member}
        return output[..., member._columns]


def int8_groups(model: nn.Module, names: list[str]) -> list[list[str]]:
    """`names` (linear layers of `model`) in groups made in one call: `SHARED_INPUTS` siblings together, every other alone.

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> tiny = LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
    ...                                     num_attention_heads=2, num_key_value_heads=1))
    >>> int8_groups(tiny, [name for name, m in tiny.named_modules() if isinstance(m, nn.Linear)])    # doctest: +NORMALIZE_WHITESPACE
    [['model.layers.0.self_attn.q_proj', 'model.layers.0.self_attn.k_proj', 'model.layers.0.self_attn.v_proj'],
     ['model.layers.0.self_attn.o_proj'], ['model.layers.0.mlp.gate_proj', 'model.layers.0.mlp.up_proj'],
     ['model.layers.0.mlp.down_proj'], ['lm_head']]
    """
    wanted, groups, grouped = set(names), [], set()
    for name in names:
        if name in grouped:
            continue
        parent, _, child = name.rpartition(".")
        siblings = next(([f"{parent}.{n}" if parent else n for n in group] for group in SHARED_INPUTS if child in group), None)
        same_input = siblings is not None and all(sibling in wanted for sibling in siblings) and \
            len({model.get_submodule(sibling).in_features for sibling in siblings}) == 1
        group = siblings if same_input else [name]
        groups.append(group)
        grouped.update(group)
    return groups


def _layer_groups(model: nn.Module, quantization: str, names: list[str]) -> list[list[str]]:
    """The layers `names` in the groups they are made in: int8 siblings sharing an input together (`int8_groups`), int4 alone."""
    return int8_groups(model, names) if quantization == "int8" else [[name] for name in names]


def _packed_group(layers: list[nn.Module]) -> list[nn.Module]:
    """One group's layers, packed: int8 ones built unpacked alone or side by side (`SharedInput`); int4 ones pack as built."""
    if not isinstance(layers[0], Int8Linear):
        return layers
    if len(layers) == 1:
        layers[0].pack()
    else:
        SharedInput(layers)
    return layers


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
        raise SpecdecError(f"{quantization} weights run on the CPU only (PyTorch's CPU kernels), not on {device}: use {flag} none")
    return quantization   # w8a8 is checked where it is loaded: its kernel must first pass this machine's test (`w8a8_gate`)


def _quantizable(quantization: str, layer: nn.Module) -> bool:
    fits = {"int4": Int4Linear.fits, "w8a8": W8A8Linear.fits}.get(quantization, lambda layer: True)
    return isinstance(layer, nn.Linear) and fits(layer)


def quantize_model(model: PreTrainedModel, quantization: str, strict: bool = True,
                   on_layer: Callable[[int, int], None] | None = None) -> PreTrainedModel:
    """Swap `model`'s linear layers for int8 or int4 ones, in place (the output layer is untied from the embeddings).

    A model that keeps most of its weights elsewhere (GPT-2's `Conv1D`) is refused: quantizing
    only its output layer would not make it faster. With `strict=False` (what "auto" asks for)
    such a model is returned as it is. `on_layer(done, total)` is called after each layer (a loader's progress bar).
    """
    if quantization == "none":
        return model
    check_quantization(quantization, model.device)
    return apply_quantization(model, quantization, strict, on_layer)


def apply_quantization(model: PreTrainedModel, quantization: str, strict: bool = True,
                       on_layer: Callable[[int, int], None] | None = None) -> PreTrainedModel:
    """`quantize_model` for a `quantization` already checked for this device (`specdec.kernels.precision` did it, once)."""
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
    groups = _layer_groups(model, quantization, [layer_name for layer_name, _ in targets])
    groups.sort(key=lambda group: -sum(model.get_submodule(name).weight.numel() for name in group))
    done = 0
    for group, layers in _built_on_every_thread(groups, lambda group: _packed_group(
            [quantized_layer(quantization, model.get_submodule(layer_name)) for layer_name in group])):
        for layer_name, layer in zip(group, layers):
            _replace(model, layer_name, layer)
            done += 1
            if on_layer is not None:
                on_layer(done, len(targets))
    return mark_quantized(model, quantization)


def quantize_linears(module: nn.Module, quantization: str) -> nn.Module:
    """Every `nn.Linear` of a small module that is not a transformers model (an EAGLE head) in int8, in place; "none" leaves it.

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


def _built_on_every_thread(groups: list[list[str]], build: Callable[[list[str]], list[nn.Module]]) -> Iterator[tuple[list[str], list[nn.Module]]]:
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
    """`layer` with its weights in `quantization` ("int8", "int4" or "w8a8"); an int8 layer is left for its group to pack."""
    if quantization == "int8":
        return Int8Linear.from_linear(layer, pack=False)
    return W8A8Linear.from_linear(layer) if quantization == "w8a8" else Int4Linear.from_linear(layer)


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
    marker = {"int8": "weight_int8", "w8a8": "weight_int8", "int4": "weight_int4"}[quantization]
    names = [name for name, layer in model.named_modules() if isinstance(layer, nn.Linear) and f"{name}.{marker}" in state]
    groups = _layer_groups(model, quantization, names)                  # int8 siblings packed as one
    groups.sort(key=lambda group: -sum(state[f"{name}.{marker}"].numel() for name in group))
    for group, layers in _built_on_every_thread(groups, lambda group: _packed_group(
            [_layer_from_state(quantization, state, f"{name}.") for name in group])):
        for name, layer in zip(group, layers):
            _replace(model, name, layer)


def _layer_from_state(quantization: str, state: dict[str, torch.Tensor], prefix: str) -> nn.Module:
    """One saved layer from its tensors (`prefix` is the layer's name plus '.')."""
    bias = state.get(prefix + "bias")
    if quantization == "int8":
        return Int8Linear(state[prefix + "weight_int8"], state[prefix + "weight_scale"], bias, pack=False)   # packed by its group
    if quantization == "w8a8":
        return W8A8Linear(state[prefix + "weight_int8"], state[prefix + "weight_scale"], bias)   # packed for its kernel now
    scales_and_zeros, weight = state[prefix + "scales_and_zeros"], state[prefix + "weight_int4"]   # [K/g, N, 2], [N, K/2]
    in_features = weight.shape[1] * 2
    return Int4Linear(weight, scales_and_zeros, bias, in_features, group=in_features // scales_and_zeros.shape[0])
