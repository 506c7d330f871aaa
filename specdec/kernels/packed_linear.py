"""bfloat16 linear layers whose weights are laid out for the CPU kernel once, not at every call.

Notation: p is the target, q the draft, c the cost of a draft step over a target step.

On a CPU, PyTorch runs a bfloat16 `nn.Linear` through oneDNN, which wants the weight in a blocked
layout of its own: `F.linear` reorders the whole weight into that layout at *every call*, then
multiplies. For a decoding step (one token, so a matrix-vector product) the reorder costs as much
as the product itself: each weight is read twice and written once. `PackedLinear` does the reorder
once, when the model is loaded (`torch.ops.mkldnn._reorder_linear_weight`, the step Intel's
extension and `torch.compile`'s CPU backend take too), and calls the same oneDNN product on the
packed weight. Measured on this project's 2-core CPU (`python benchmarks/packed_linear.py`):
Qwen2.5-Coder-1.5B's one-token step in bfloat16 238 -> 120 ms, the 0.5B's 93 -> 63 ms.

The arithmetic is oneDNN's either way, so the results are the same bits as `F.linear`'s (the tests
check it on every pass shape the engine uses): the model is the same model, p and q unchanged,
only faster. Only bfloat16 layers on a CPU whose oneDNN has bfloat16 kernels are packed; float32
goes to MKL's sgemm, which needs no reorder, and quantized layers (`specdec.kernels.quantization`) pack
their own weights already.

    layers = pack_linear_layers(model)     # in place; returns how many layers were packed (0: nothing to gain)
"""

from __future__ import annotations

import torch
from torch import nn


class PackedLinear(nn.Module):
    """y = x W^T + b, bfloat16, with W kept in oneDNN's blocked layout (`packed`, [N, K] as an mkldnn tensor).

    >>> layer = torch.nn.Linear(64, 32).to(torch.bfloat16)
    >>> x = torch.randn(3, 64, dtype=torch.bfloat16)
    >>> # same bits where it packs (not at all without AVX-512)
    >>> not packable(layer) or torch.equal(PackedLinear.from_linear(layer)(x), layer(x))
    True
    """

    def __init__(
        self, packed: torch.Tensor, bias: torch.Tensor | None, out_features: int, in_features: int, min_rows: int = 1
    ) -> None:
        super().__init__()
        self.out_features, self.in_features = out_features, in_features
        # a call with fewer rows is padded to this many (`rows_invariant`): oneDNN multiplies one row by another kernel
        self.min_rows = min_rows
        self.packed = packed  # not a buffer: mkldnn tensors have no storage to save
        self.bias = None if bias is None else nn.Parameter(bias.detach(), requires_grad=False)
        self._cuts: dict[int, PackedLinear] = {}  # first_rows(k) for each k asked

    @classmethod
    def from_linear(cls, layer: nn.Linear) -> PackedLinear:
        weight = layer.weight.detach()  # [N, K]
        return cls(torch.ops.mkldnn._reorder_linear_weight(weight, 1), layer.bias, *weight.shape)

    def first_rows(self, rows: int) -> PackedLinear:
        """A layer computing only the first `rows` outputs (a draft's
        vocabulary limit, `specdec.runtime.pytorch.kv_cache`); made once per size."""
        if rows not in self._cuts:
            weight = self.packed.to_dense()[:rows].contiguous()  # [rows, K], back from the blocked layout
            bias = None if self.bias is None else self.bias[:rows]
            self._cuts[rows] = PackedLinear(
                torch.ops.mkldnn._reorder_linear_weight(weight, 1),
                bias,
                weight.shape[0],
                self.in_features,
                self.min_rows,
            )
        return self._cuts[rows]

    @property
    def packed_bytes(self) -> int:
        """The packed weight's bytes, which `specdec.runtime.pytorch.torch_model.weight_bytes`
        cannot see in the state dict."""
        return self.out_features * self.in_features * self.packed.element_size()

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., K] -> [..., N]
        rows = x.reshape(-1, self.in_features)  # [M, K]
        m = rows.shape[0]
        if m < self.min_rows:  # padded with zero rows, which no kept row reads
            rows = torch.cat([rows, rows.new_zeros(self.min_rows - m, self.in_features)])  # [min_rows, K]
        y = torch.ops.mkldnn._linear_pointwise(rows, self.packed, self.bias, "none", [], "")[:m]  # [M, N]
        return y.reshape(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
            "packed for oneDNN"
        )


def packable(layer: nn.Module, dtypes: tuple[torch.dtype, ...] = (torch.bfloat16,)) -> bool:
    """A plain `nn.Linear` in one of `dtypes` on a CPU whose oneDNN computes in it (bfloat16 needs its kernels)."""
    return (
        type(layer) is nn.Linear
        and layer.weight.dtype in dtypes
        and layer.weight.device.type == "cpu"
        and torch.backends.mkldnn.is_available()
        and (layer.weight.dtype != torch.bfloat16 or torch.ops.mkldnn._is_mkldnn_bf16_supported())
    )


def pack_linear_layers(model: nn.Module, dtypes: tuple[torch.dtype, ...] = (torch.bfloat16,)) -> int:
    """Swap every layer of `model` packable in `dtypes` for a `PackedLinear`, in place; return how many were swapped.

    An output layer tied to the input embedding keeps the embedding's table (the lookup needs it) and
    gets a packed copy of its own: the only extra memory this costs.
    """
    targets = [(name, layer) for name, layer in model.named_modules() if packable(layer, dtypes)]
    for name, layer in targets:
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name) if parent_name else model, child, PackedLinear.from_linear(layer))
    return len(targets)


def set_min_rows(model: nn.Module, rows: int) -> int:
    """Pad every `PackedLinear` call of `model` to at least `rows` rows; return how many layers there are.

    Measured on an Intel Xeon with AVX-512 VNNI (no AMX, no AVX-512 BF16; `benchmarks/batch_invariance.py`): oneDNN
    gives a one-row call other bits than the same row in a call of 2..64 rows, in float32 and bfloat16 alike, and
    every call of 2..64 rows the same bits per row. Padded to two rows, a pass's rows are one-token steps' rows.
    """
    layers = [layer for layer in model.modules() if isinstance(layer, PackedLinear)]
    for layer in layers:
        layer.min_rows = rows
        for cut in layer._cuts.values():
            cut.min_rows = rows
    return len(layers)
