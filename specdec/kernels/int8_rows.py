"""int8 weights with one scale per output row: the storage the "int8" and "w8a8" kinds share.

Each row of W [N, K] is divided by its own scale, its absolute maximum over 127, and rounded, so
the row's largest weight becomes +-127 and W is about `weight_int8 * weight_scale[:, None]`:

    >>> weight = torch.tensor([[0.5, -1.0, 0.25], [2.0, 1.0, 0.0]])
    >>> weight_int8, weight_scale = int8_rows(weight)
    >>> weight_int8.tolist(), [round(float(s) * 127, 3) for s in weight_scale]
    ([[64, -127, 32], [127, 64, 0]], [1.0, 2.0])
"""

from __future__ import annotations

import torch


def int8_rows(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """W [N, K] as (int8 values [N, K], float32 scale per row [N])."""
    weight = weight.detach().float()  # [N, K]
    scale = weight.abs().amax(dim=1).clamp(min=1e-12) / 127  # [N]
    return torch.round(weight / scale[:, None]).clamp(-127, 127).to(torch.int8), scale
