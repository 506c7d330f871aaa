"""Reading GGUF files: each header parsed once per load, and the embedding table read alone from its offset.

A GGUF file's header holds the model's configuration and its whole tokenizer (151,936 strings and as
many merges for Qwen2.5), and `gguf.GGUFReader` parses all of it before anything else: about 8 s for
Qwen2.5-Coder-1.5B's file on this project's 2-core CPU. transformers builds a reader for the tokenizer,
another for the config and a third for the tensors, so a first load parsed the same header three
times. `parsed_once()` makes every reader built inside the block for one file the same object (a
reader only reads: its tensors are views of the memory-mapped file).

A quantized copy (`specdec.zoo.converted`) does not store the embedding table the GGUF file already
holds; `gguf_embedding_location` notes where the table lies when the copy is saved, and a loaded model
looks its rows up there (`GGUFEmbedding`), with no header to parse and no table to dequantize.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

GGUF_EMBEDDING = "token_embd.weight"

_readers: dict[tuple[str, str], object] | None = None    # inside `parsed_once`: (path, mode) -> its reader


@contextmanager
def parsed_once() -> Iterator[None]:
    """Inside the block, `gguf.GGUFReader(path)` parses each file once (transformers imports it from `gguf` at each call).
    Blocks may nest; the readers are dropped when the outermost one ends."""
    global _readers
    import gguf

    if _readers is not None:
        yield
        return
    original, _readers = gguf.GGUFReader, {}

    def shared_reader(path, mode="r"):
        key = (str(Path(path).resolve()), mode)
        if key not in _readers:
            _readers[key] = original(path, mode)
        return _readers[key]

    gguf.GGUFReader = shared_reader
    try:
        yield
    finally:
        gguf.GGUFReader, _readers = original, None


def gguf_embedding_location(gguf_path: Path) -> dict[str, object] | None:
    """Where the token embedding lies in a GGUF file (byte offset, ggml type, dims), or None when it has none."""
    import gguf

    tensor = next((t for t in gguf.GGUFReader(gguf_path).tensors if t.name == GGUF_EMBEDDING), None)
    if tensor is None:
        return None
    return {"offset": int(tensor.data_offset), "type": int(tensor.tensor_type), "dims": [int(d) for d in tensor.shape]}


def _quantized_rows(gguf_path: Path, location: dict[str, object]) -> tuple[np.ndarray, object]:
    """The embedding's rows as they lie in the file (memory-mapped, nothing read yet) and their ggml type."""
    from gguf import GGMLQuantizationType, quant_shape_to_byte_shape

    kind = GGMLQuantizationType(location["type"])
    shape = tuple(reversed(location["dims"]))                                 # ggml lists dims fastest first: [H, V]
    plain = {GGMLQuantizationType.F32: np.float32, GGMLQuantizationType.F16: np.float16}
    if kind in plain:
        return np.memmap(gguf_path, dtype=plain[kind], mode="r", offset=location["offset"], shape=shape), kind
    return np.memmap(gguf_path, dtype=np.uint8, mode="r", offset=location["offset"], shape=quant_shape_to_byte_shape(shape, kind)), kind


class GGUFEmbedding(torch.nn.Module):
    """An embedding table left in its GGUF file: the rows looked up are dequantized when they are looked up.

    A step looks up one row of 151,936; dequantizing the whole Q4_K table of Qwen2.5-Coder-1.5B takes
    7.7 s on this project's CPU and holds 0.93 GB in float32. Each row is dequantized alone (ggml's
    blocks never cross a row), so a row comes out with the bits the whole table's dequantization gives
    it (`gguf.dequantize`, as transformers' GGUF loader calls it), then cast to `dtype` as that loader casts:

        embedding = GGUFEmbedding(path, location, torch.float32)
        embedding(torch.tensor([[17, 42]]))          # [1, 2, H], the same as the full table's rows 17 and 42
    """

    def __init__(self, gguf_path: Path, location: dict[str, object], dtype: torch.dtype) -> None:
        super().__init__()
        self.rows, self.kind = _quantized_rows(gguf_path, location)
        self.embedding_dim, self.num_embeddings = location["dims"]
        self.dtype = dtype

    def forward(self, ids: torch.Tensor) -> torch.Tensor:                    # [...] -> [..., H]
        from gguf import dequantize

        flat = ids.reshape(-1).cpu().numpy()
        rows = dequantize(np.ascontiguousarray(self.rows[flat]), self.kind)     # [N, H] float32
        return torch.from_numpy(np.copy(rows)).to(self.dtype).reshape(*ids.shape, self.embedding_dim).to(ids.device)


def gguf_rows_match(gguf_path: Path, location: dict[str, object], table: torch.Tensor, every: int = 97) -> bool:
    """Whether `GGUFEmbedding` gives `table` [V, H] back bit for bit: every `every`-th row and the last (each row is
    dequantized alone, so a row that differs would differ by type, scale or cast: in every row alike)."""
    if [table.shape[1], table.shape[0]] != list(location["dims"]):
        return False
    ids = torch.tensor(sorted({*range(0, table.shape[0], every), table.shape[0] - 1}))
    return torch.equal(GGUFEmbedding(gguf_path, location, table.dtype)(ids), table[ids])
