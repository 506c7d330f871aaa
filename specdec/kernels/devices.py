"""Devices and dtypes: the names a user picks, checked against this machine and resolved for torch.

    resolve_device("auto")                 # cuda, then mps, then cpu: the best this machine has
    resolve_dtype("auto", "cpu")           # torch.float32 (exact comparisons on the CPU)
    dtype_name(torch.bfloat16)             # 'bfloat16', for reports and file names

The one list of dtypes (`DTYPES`, and `DTYPE_CHOICES` with "auto") lives here; the CLI, the
benchmark and the dashboard's sidebar all read it. Asking for a device this machine lacks is a
`SpecdecError` that lists the ones it has.
"""

from __future__ import annotations

import torch

from specdec.errors import SpecdecError

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DTYPE_CHOICES = ("auto", *DTYPES)  # what a user may ask for: "auto" picks per device


def available_devices() -> list[str]:
    """The device names this machine really has, best first: e.g. ['cuda', 'cpu']."""
    devices = []
    if torch.cuda.is_available():
        devices.append("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        devices.append("mps")
    return devices + ["cpu"]


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """'auto' -> the best available device; anything else is checked to exist here.

    >>> resolve_device("cpu")
    device(type='cpu')
    """
    if str(device) == "auto":
        return torch.device(available_devices()[0])
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError):
        raise SpecdecError(f"unknown device '{device}': use auto, {', '.join(available_devices())}") from None
    if resolved.type not in available_devices():
        raise SpecdecError(
            f"device '{device}' is not available on this machine (it has: "
            f"{', '.join(available_devices())}): use --device auto"
        )
    if resolved.type == "cuda" and resolved.index is not None and resolved.index >= torch.cuda.device_count():
        raise SpecdecError(
            f"device '{device}' does not exist: this machine has {torch.cuda.device_count()} CUDA device(s)"
        )
    return resolved


def resolve_dtype(
    dtype: str | torch.dtype = "auto", device: torch.device | str = "cpu", quantization: str = "none"
) -> torch.dtype:
    """'auto' -> float32 on the CPU (bfloat16 with int4 or w8a8 weights, whose kernels take it), bfloat16 (or float16)
    on CUDA, float16 on MPS.

    >>> resolve_dtype("auto", "cpu"), resolve_dtype("bfloat16", "cpu"), resolve_dtype("auto", "cpu", "int4")
    (torch.float32, torch.bfloat16, torch.bfloat16)
    """
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype != "auto":
        if dtype not in DTYPES:
            raise SpecdecError(f"unknown dtype '{dtype}': use auto, {', '.join(DTYPES)}")
        return DTYPES[dtype]
    device_type = torch.device(device).type
    if device_type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device_type == "mps":
        return torch.float16
    return torch.bfloat16 if quantization in ("int4", "w8a8") else torch.float32


def dtype_name(dtype: torch.dtype) -> str:
    """torch.bfloat16 -> 'bfloat16'.

    >>> dtype_name(torch.bfloat16)
    'bfloat16'
    """
    return str(dtype).removeprefix("torch.")
