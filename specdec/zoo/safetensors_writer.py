"""Writing a safetensors file one tensor at a time, hashing the bytes as they go, so a long save can show progress.

`safetensors.torch.save_file` writes a whole checkpoint in one call (6 GB for Qwen2.5-Coder-1.5B in
float32: tens of seconds with nothing to show, and no point where a Stop can land). The format is
simple enough to write piece by piece:

    8 bytes     N, the header's length (unsigned, little-endian)
    N bytes     a JSON header: {"__metadata__": {...}, name: {"dtype": "F32", "shape": [2, 3],
                "data_offsets": [begin, end]}, ...}, padded with spaces to a multiple of 8 bytes
    the rest    every tensor's bytes (row-major, little-endian), back to back, in the header's order

Tensors are laid out in safetensors' own order (by dtype, widest first, then by name), so every
tensor starts at a multiple of its element size, and the file is byte for byte what `save_file`
writes for the same tensors (a test holds it to that). `on_bytes(done, total)` is called after each tensor;
if it raises, writing stops there (the caller deletes the partial file).

    >>> import tempfile, torch
    >>> from safetensors.torch import load_file
    >>> path = tempfile.mkdtemp() + "/tiny.safetensors"
    >>> sha256 = write_safetensors({"w": torch.ones(2, 3)}, path, on_bytes=lambda done, total: print(done, total))
    24 24
    >>> load_file(path)["w"].tolist()
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]

It does not handle tensors that share memory (`save_file` refuses them too: drop the duplicates
first) or dtypes safetensors has no name for.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

# safetensors' names, in the order of its own dtype list (the file lays tensors out from the last of these)
DTYPE_NAMES = {
    torch.bool: "BOOL",
    torch.uint8: "U8",
    torch.int8: "I8",
    torch.float8_e5m2: "F8_E5M2",
    torch.float8_e4m3fn: "F8_E4M3",
    torch.int16: "I16",
    torch.uint16: "U16",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int32: "I32",
    torch.uint32: "U32",
    torch.float32: "F32",
    torch.float64: "F64",
    torch.int64: "I64",
    torch.uint64: "U64",
}
_RANK = {dtype: rank for rank, dtype in enumerate(DTYPE_NAMES)}


def _layout(tensors: Mapping[str, torch.Tensor]) -> list[str]:
    """The names in file order: the dtype last in safetensors' list first, then alphabetical (safetensors' own order).

    Wider dtypes come later in that list, so every tensor starts at a multiple of its element size.
    """
    return sorted(tensors, key=lambda name: (-_RANK.get(tensors[name].dtype, -1), name))


def header_bytes(tensors: Mapping[str, torch.Tensor], metadata: Mapping[str, str] | None = None) -> bytes:
    """The 8-byte length and the padded JSON header for `tensors`.

    >>> header_bytes({"b": torch.zeros(2, dtype=torch.int8)})[8:]
    b'{"b":{"dtype":"I8","shape":[2],"data_offsets":[0,2]}}   '
    """
    header: dict = {"__metadata__": dict(metadata)} if metadata else {}
    offset = 0
    for name in _layout(tensors):
        tensor = tensors[name]
        if tensor.dtype not in DTYPE_NAMES:
            raise ValueError(
                f"safetensors has no name for {tensor.dtype} (tensor {name}): convert it to one of "
                f"{', '.join(str(dtype) for dtype in DTYPE_NAMES)}"
            )
        size = tensor.numel() * tensor.element_size()
        header[name] = {
            "dtype": DTYPE_NAMES[tensor.dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text


def write_safetensors(
    tensors: Mapping[str, torch.Tensor],
    path: str | Path,
    metadata: Mapping[str, str] | None = None,
    on_bytes: Callable[[int, int], None] | None = None,
) -> str:
    """Write `tensors` to `path` as safetensors, tensor by tensor; return the file's SHA-256 (hex).

    `on_bytes(done, total)` hears the tensor bytes written so far after each tensor.
    """
    report = on_bytes or (lambda done, total: None)
    names = _layout(tensors)
    total = sum(tensors[name].numel() * tensors[name].element_size() for name in names)
    digest, done = hashlib.sha256(), 0
    with open(path, "wb") as out:
        head = header_bytes(tensors, metadata)
        out.write(head)
        digest.update(head)
        for name in names:
            data = tensors[name].detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy()  # [bytes], no copy
            out.write(data)
            digest.update(data)
            done += data.nbytes
            report(done, total)
        out.flush()
        os.fsync(out.fileno())
    return digest.hexdigest()
