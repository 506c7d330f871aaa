"""int4 weights in groups (a scale and an offset per group), activations in the model's dtype: `Int4Linear`, PyTorch's
CPU kernel.

Notation: W is [N, K], cut along K into groups of `INT4_GROUP` weights. The cheapest one-token step in bfloat16 (the
draft's kernel), but its cost grows with every token of a pass (v(5) = 2.98 for the 1.5B's shapes): a fine draft, a poor
target.
"""

from __future__ import annotations

import torch
from torch import nn

INT4_GROUP = 32  # weights per int4 scale/offset (a probe on the real pair: 32 kept 99-100% of bfloat16's greedy
# choices, 128 kept 97-98%, for 5% less time)


class Int4Linear(nn.Module):
    """y = x W^T + b with W in int4, groups of `INT4_GROUP` weights sharing a scale and an offset.

    Stored: `weight_int4` (PyTorch's CPU packing of [N, K] 4-bit values), `scales_and_zeros`
    [K / group, N, 2] bfloat16, `bias` [N] or None.
    """

    verify_slope = 0.4  # v(5) = 2.98, v(17) = 7.01: the kernel unpacks the weights again for every token of a pass
    # it reads about 16 GB/s where int8 reads 25 (1.5B shapes, same CPU): its bytes count 1.6 times in c's estimate
    read_cost = 1.6

    def __init__(
        self,
        weight_int4: torch.Tensor,
        scales_and_zeros: torch.Tensor,
        bias: torch.Tensor | None,
        in_features: int,
        group: int = INT4_GROUP,
    ) -> None:
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
        weight = layer.weight.detach().float()  # [N, K]
        n, k = weight.shape
        groups = weight.reshape(n, k // group, group)  # [N, K/g, g]
        low, high = groups.amin(dim=-1), groups.amax(dim=-1)  # [N, K/g]
        scale = (high - low).clamp(min=1e-12) / 15
        values = torch.round((groups - low[..., None]) / scale[..., None]).clamp(0, 15).to(torch.int32).reshape(n, k)
        zero = low + 8 * scale  # the kernel computes (value - 8) * scale + zero
        # [K/g, N, 2]
        scales_and_zeros = torch.stack([scale, zero], dim=-1).transpose(0, 1).contiguous().to(torch.bfloat16)
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(values, 1)
        return cls(packed, scales_and_zeros, layer.bias, k, group)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., K] -> [..., N]
        rows = x.reshape(-1, self.in_features).contiguous()  # [M, K], bfloat16 (fast) or float32 (slow, exact checks)
        scales_and_zeros = self.scales_and_zeros.to(rows.dtype)  # exact: bfloat16 values widen without rounding
        y = torch.ops.aten._weight_int4pack_mm_for_cpu(rows, self.weight_int4, self.group, scales_and_zeros)
        if self.bias is not None:
            y = y + self.bias.to(rows.dtype)
        return y.reshape(*x.shape[:-1], self.out_features)
