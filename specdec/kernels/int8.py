"""int8 weights with int8 activations, one scale per token: `Int8Linear` in fbgemm, and siblings sharing an input packed
together.

Notation: a token's row is one row of x [M, K]; W is [N, K] with a scale per output row (`specdec.kernels.int8_rows`).

Each token is scaled to absolute maximum 1 and quantized alone: PyTorch's dynamic quantization picks one scale for the
whole pass, so `Int8Linear` appends the columns +1 and -1 (whose weights are zero) to every row, which pins that scale,
and a token's row is then the same bits in any pass (`specdec.kernels.quantization` says why exactness needs it).
Sibling layers that read one input (attention's q, k, v; the MLP's gate and up) are packed side by side and computed in
one fbgemm call (`SharedInput`): the same bits, fewer calls.

    >>> layer = torch.nn.Linear(64, 32)
    >>> int8 = Int8Linear.from_linear(layer)
    >>> x = torch.randn(5, 64)
    >>> bool((int8(x) == torch.cat([int8(row[None]) for row in x])).all())
    True
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from specdec.kernels.int8_rows import int8_rows


BOUNDS = torch.tensor([[1.0, -1.0]])  # the +1/-1 columns appended to every token (their weights are zero)


def _pack_int8(weight_int8: torch.Tensor, weight_scale: torch.Tensor) -> object:
    """fbgemm's packed form of int8 weights [N, K] with a scale per row, two zero columns appended for the bounds."""
    padded = torch.cat([weight_int8, weight_int8.new_zeros(weight_int8.shape[0], 2)], dim=1)  # [N, K + 2]
    with warnings.catch_warnings():
        # PyTorch's notice about its quantized tensor type; the kernel is what we measured
        warnings.simplefilter("ignore")
        quantized = torch._make_per_channel_quantized_tensor(
            padded, weight_scale.double(), torch.zeros(weight_int8.shape[0], dtype=torch.long), 0
        )
        return torch.ops.quantized.linear_prepack(quantized, None)  # the bias is added after the rescale


def _int8_product(
    x: torch.Tensor, packed: object, bias: torch.Tensor | None, in_features: int, out_features: int
) -> torch.Tensor:
    """x [..., K] times packed int8 weights [N, K]: each token scaled to absolute maximum 1 and quantized alone."""
    rows = x.reshape(-1, in_features).float()  # [M, K]
    size = rows.abs().amax(dim=1, keepdim=True).clamp(min=1e-30)  # [M, 1]: each token alone
    padded = torch.cat([rows / size, BOUNDS.expand(rows.shape[0], 2)], dim=1)  # [M, K + 2], min -1, max 1
    y = torch.ops.quantized.linear_dynamic(padded, packed, True) * size  # [M, N]
    if bias is not None:
        y = y + bias
    return y.to(x.dtype).reshape(*x.shape[:-1], out_features)


class Int8Linear(nn.Module):
    """y = x W^T + b with W in int8 (a scale per output row) and x quantized per token, in fbgemm.

    Stored: `weight_int8` [N, K] int8, `weight_scale` [N] float32, `bias` [N] or None. With
    `pack=False` the fbgemm form is made later, alone (`pack`) or with its siblings (`SharedInput`).
    """

    # v(k) = 1 + beta k: v(5) = 1.28, v(17) = 2.67 for Qwen2.5-Coder-1.5B's shapes (2 cores); fits the short passes
    verify_slope = 0.05

    def __init__(
        self, weight_int8: torch.Tensor, weight_scale: torch.Tensor, bias: torch.Tensor | None, pack: bool = True
    ) -> None:
        super().__init__()
        self.out_features, self.in_features = weight_int8.shape
        self.register_buffer("weight_int8", weight_int8)
        self.register_buffer("weight_scale", weight_scale.float())
        self.register_buffer("bias", None if bias is None else bias.detach().float())
        self._packed: object | None = None
        self._shared: SharedInput | None = None  # computed with its siblings in one call
        self._columns = slice(0, self.out_features)  # its outputs among the shared call's
        if pack:
            self.pack()

    def pack(self) -> None:
        """Lay the weights out for fbgemm, for this layer alone."""
        self._packed = _pack_int8(self.weight_int8, self.weight_scale)

    @classmethod
    def from_linear(cls, layer: nn.Linear, pack: bool = True) -> Int8Linear:
        return cls(*int8_rows(layer.weight), layer.bias, pack)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., K] -> [..., N]
        if self._shared is not None:
            return self._shared.output(self, x)
        return _int8_product(x, self._packed, self.bias, self.in_features, self.out_features)


# siblings transformers calls on one input, one after another
SHARED_INPUTS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))


class SharedInput:
    """Sibling `Int8Linear` layers that read the same input (attention's q, k and v; the MLP's gate and up), in one
    fbgemm call.

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
        self.packed = _pack_int8(
            torch.cat([m.weight_int8 for m in members]), torch.cat([m.weight_scale for m in members])
        )
        biases = [m.bias if m.bias is not None else m.weight_scale.new_zeros(m.out_features) for m in members]
        self.bias = None if all(m.bias is None for m in members) else torch.cat(biases)
        start = 0
        for member in members:
            member._shared, member._columns = self, slice(start, start + member.out_features)
            start += member.out_features
        self._input: torch.Tensor | None = None  # a copy of the last input, and every member's outputs for it
        self._output: torch.Tensor | None = None
        self._waiting: set[int] = set()  # the members that have not taken their columns of it yet

    def output(self, member: Int8Linear, x: torch.Tensor) -> torch.Tensor:  # [..., K] -> [..., N_member]
        """`member`'s outputs for `x`: from the call its sibling
        made on an equal input, else from a new call for all."""
        last = self._input
        if id(member) in self._waiting and last.shape == x.shape and last.dtype == x.dtype and torch.equal(last, x):
            self._waiting.discard(id(member))
            output = self._output[..., member._columns]
            if not self._waiting:  # every member served: nothing kept past this round
                self._input = self._output = None
            return output
        output = _int8_product(x, self.packed, self.bias, self.in_features, self.out_features)
        self._input, self._output = x.detach().clone(), output
        self._waiting = {id(other) for other in self.members if other is not member}
        return output[..., member._columns]


def int8_groups(model: nn.Module, names: list[str]) -> list[list[str]]:
    """`names` (linear layers of `model`) in groups made in one call: `SHARED_INPUTS` siblings together, every other
    alone.

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> tiny = LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
    ...                                     num_attention_heads=2, num_key_value_heads=1))
    >>> linear = [name for name, m in tiny.named_modules() if isinstance(m, nn.Linear)]
    >>> int8_groups(tiny, linear)  # doctest: +NORMALIZE_WHITESPACE
    [['model.layers.0.self_attn.q_proj', 'model.layers.0.self_attn.k_proj', 'model.layers.0.self_attn.v_proj'],
     ['model.layers.0.self_attn.o_proj'], ['model.layers.0.mlp.gate_proj', 'model.layers.0.mlp.up_proj'],
     ['model.layers.0.mlp.down_proj'], ['lm_head']]
    """
    wanted, groups, grouped = set(names), [], set()
    for name in names:
        if name in grouped:
            continue
        parent, _, child = name.rpartition(".")
        siblings = next(
            ([f"{parent}.{n}" if parent else n for n in group] for group in SHARED_INPUTS if child in group), None
        )
        same_input = (
            siblings is not None
            and all(sibling in wanted for sibling in siblings)
            and len({model.get_submodule(sibling).in_features for sibling in siblings}) == 1
        )
        group = siblings if same_input else [name]
        groups.append(group)
        grouped.update(group)
    return groups
