"""Reading GGUF files: a model and its tokenizer read with their progress reported, each header parsed once, and the
embedding table left in the file.

    read = read_model(path, torch.float32, report, with_tokenizer=True, find_embedding=True)
    read.model, read.tokenizer, read.embedding        # the dequantized model; its tokenizer; where its embedding lies

A GGUF file's header holds the model's configuration and its whole tokenizer (151,936 strings and as
many merges for Qwen2.5), and `gguf.GGUFReader` parses all of it before anything else: about 8 s for
Qwen2.5-Coder-1.5B's file on this project's 2-core CPU. transformers builds a reader for the tokenizer,
another for the config and a third for the tensors, so a first load parsed the same header three
times. `parsed_once()` makes every reader built inside the block for one file the same object (a
reader only reads: its tensors are views of the memory-mapped file); a tokenizer is parsed once per
process (`read_tokenizer`).

A first load takes minutes on a CPU: transformers matches the GGUF tensor names to the model's (one
call per module of the model: its cost grows with the square of the number of layers, 4 s of
SmolLM2-135M's 18 s first load here) and dequantizes every tensor. `read_model` follows it from inside
transformers and reports each step to the `specdec.store.Reporter` it is given (`GGUF_READ`,
`GGUF_NAMES`, `GGUF_TENSORS`); a report may raise (the dashboard's Stop), which ends the load there.

A quantized copy (`specdec.zoo.converted`) does not store the embedding table the GGUF file already
holds; `read_model` notes where the table lies when its rows come back bit for bit, and a loaded model
looks its rows up there (`GGUFEmbedding`), with no header to parse and no table to dequantize.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from specdec.errors import SpecdecError, first_line
from specdec.store import Reporter

GGUF_EMBEDDING = "token_embd.weight"
GGUF_READ = "reading the GGUF file"  # its metadata, twice: for the config, then before the tensors (seconds each)
GGUF_NAMES = "matching GGUF tensor names"
GGUF_TENSORS = "dequantizing GGUF tensors"


@dataclass
class GGUFRead:
    """What one read of a GGUF file gives: the model, its tokenizer
    if asked for, where its embedding lies if asked for."""

    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase | None = None
    embedding: dict[str, object] | None = None  # `gguf_embedding_location`, when `GGUFEmbedding` gives the table back


def read_model(
    path: Path, dtype: torch.dtype, report: Reporter, with_tokenizer: bool = False, find_embedding: bool = False
) -> GGUFRead:
    """The model of a GGUF file in `dtype`, each step reported; its
    tokenizer and its embedding's place in the file if asked."""
    with parsed_once():
        with _steps_reported(report):
            model = _from_gguf(AutoModelForCausalLM, path, "model", dtype=dtype)
        tokenizer = read_tokenizer(path) if with_tokenizer else None
        embedding = _embedding_in_file(path, model) if find_embedding else None
    return GGUFRead(model, tokenizer, embedding)


_TOKENIZERS: dict[tuple[str, int, int], PreTrainedTokenizerBase] = {}  # (file, size, mtime) -> its tokenizer


def read_tokenizer(path: Path) -> PreTrainedTokenizerBase:
    """A GGUF file's tokenizer, parsed once per process and then shared (a first load needs it twice: for the pair, and
    for the converted copy it saves). The tokenizer's class is named from the file's architecture (`tokenizer_type`), so
    transformers does not read the whole file for a config it needs only to pick that class: Qwen2.5's tokenizer then
    takes 1.6 s instead of 14.8 s on this project's 2-core AVX2 CPU (measured in one process, both identical)."""
    stat = Path(path).stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _TOKENIZERS:
        _TOKENIZERS[key] = _from_gguf(AutoTokenizer, Path(path), "tokenizer", **_tokenizer_type(Path(path)))
    return _TOKENIZERS[key]


def _tokenizer_type(path: Path) -> dict[str, str]:
    """{"tokenizer_type": the file's architecture} where transformers
    names a tokenizer after it, else {} (its slower path)."""
    from transformers.integrations.gguf.reader import read_gguf_metadata
    from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING_NAMES

    try:
        architecture = read_gguf_metadata(str(path))[0].get("general.architecture")
    except (OSError, ValueError, KeyError):
        return {}  # a malformed file: the loader below says so in one line
    return {"tokenizer_type": architecture} if architecture in TOKENIZER_MAPPING_NAMES else {}


def _from_gguf(loader, path: Path, what: str, **kwargs):
    """`loader.from_pretrained` on a GGUF file (no download, no
    code from a model repository), its failure in one line."""
    try:
        return loader.from_pretrained(
            str(path.parent), gguf_file=path.name, local_files_only=True, trust_remote_code=False, **kwargs
        )
    except (OSError, ValueError, KeyError, RuntimeError) as error:  # a missing, partial or malformed file
        raise SpecdecError(f"could not load the {what} from {path}: {first_line(error)}") from None


def embedding_in_file(path: Path, model: torch.nn.Module) -> dict[str, object] | None:
    """Where `model`'s embedding table lies in the GGUF file at
    `path`, if looking its rows up there gives the same bits."""
    with parsed_once():
        return _embedding_in_file(path, model)


def _embedding_in_file(path: Path, model: torch.nn.Module) -> dict[str, object] | None:
    """Only a plain `nn.Embedding` (Gemma's scales its rows)
    whose rows `GGUFEmbedding` gives back with the same bits."""
    if type(model.get_input_embeddings()) is not torch.nn.Embedding:
        return None
    location = gguf_embedding_location(path)
    table = model.get_input_embeddings().weight.detach()
    return location if location is not None and gguf_rows_match(path, location, table) else None


_readers: dict[tuple[str, str], object] | None = None  # inside `parsed_once`: (path, mode) -> its reader


@contextmanager
def parsed_once() -> Iterator[None]:
    """Inside the block, `gguf.GGUFReader(path)` parses each file once (transformers imports it from `gguf` at each
    call). Blocks may nest; the readers are dropped when the outermost one ends."""
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
    shape = tuple(reversed(location["dims"]))  # ggml lists dims fastest first: [H, V]
    plain = {GGMLQuantizationType.F32: np.float32, GGMLQuantizationType.F16: np.float16}
    if kind in plain:
        return np.memmap(gguf_path, dtype=plain[kind], mode="r", offset=location["offset"], shape=shape), kind
    return np.memmap(
        gguf_path, dtype=np.uint8, mode="r", offset=location["offset"], shape=quant_shape_to_byte_shape(shape, kind)
    ), kind


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

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # [...] -> [..., H]
        from gguf import dequantize

        flat = ids.reshape(-1).cpu().numpy()
        rows = dequantize(np.ascontiguousarray(self.rows[flat]), self.kind)  # [N, H] float32
        return torch.from_numpy(np.copy(rows)).to(self.dtype).reshape(*ids.shape, self.embedding_dim).to(ids.device)


def gguf_rows_match(gguf_path: Path, location: dict[str, object], table: torch.Tensor, every: int = 97) -> bool:
    """Whether `GGUFEmbedding` gives `table` [V, H] back bit for bit: every `every`-th row and the last (each row is
    dequantized alone, so a row that differs would differ by type, scale or cast: in every row alike)."""
    if [table.shape[1], table.shape[0]] != list(location["dims"]):
        return False
    ids = torch.tensor(sorted({*range(0, table.shape[0], every), table.shape[0] - 1}))
    return torch.equal(GGUFEmbedding(gguf_path, location, table.dtype)(ids), table[ids])


@contextmanager
def _steps_reported(report: Reporter) -> Iterator[None]:
    """While transformers loads a GGUF file, report each module whose names it matches and each tensor it dequantizes.

    Three names in `transformers.modeling_gguf_pytorch_utils` are wrapped for the block, so each step
    also reaches `report`: `load_gguf_checkpoint`, which reads the file's metadata for the config and
    again before the tensors (`GGUF_READ`, 8 s each for Qwen2.5-Coder-1.5B here: its tokenizer is in
    there), `get_gguf_hf_weights_map`, which calls itself once per module of the model (`GGUF_NAMES`),
    and `tqdm`, which it iterates the tensors through (`GGUF_TENSORS`; its terminal bar stays). Nothing
    changes when nobody listens, and a name a transformers version lacks is left alone.
    """
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    originals = {
        name: getattr(gguf_utils, name, None) for name in ("tqdm", "get_gguf_hf_weights_map", "load_gguf_checkpoint")
    }
    if not report.listening or originals["tqdm"] is None:
        yield
        return
    wrapped = {name: wrapper for name, wrapper in _reporting(report, originals).items() if originals[name] is not None}
    for name, wrapper in wrapped.items():
        setattr(gguf_utils, name, wrapper)
    try:
        yield
    finally:
        for name in wrapped:
            setattr(gguf_utils, name, originals[name])


def _reporting(report: Reporter, originals: dict[str, Callable]) -> dict[str, Callable]:
    """transformers' three GGUF-loading names, each wrapped to tell `report` how far it got (`_steps_reported`)."""
    original_bar, original_match, original_read = (
        originals[name] for name in ("tqdm", "get_gguf_hf_weights_map", "load_gguf_checkpoint")
    )

    def reading(*args, **kwargs):  # the config's read: half of the reading before the names
        if kwargs.get("return_tensors", False):
            return original_read(*args, **kwargs)
        report(GGUF_READ, 0, 2)
        result = original_read(*args, **kwargs)
        report(GGUF_READ, 1, 2)
        return result

    def counted(iterable: Iterable, *args, **kwargs):
        total = len(iterable) if hasattr(iterable, "__len__") else 0
        sizes = [getattr(tensor, "n_elements", None) for tensor in iterable] if total else []
        weights = sum(sizes) if sizes and None not in sizes else 0  # the pace goes by weights: the first tensor (the
        read = 0  # embeddings) can take as long as a hundred others
        report(GGUF_TENSORS, 0, total, share=0.0 if weights else None)
        for done, item in enumerate(original_bar(iterable, *args, **kwargs), start=1):
            yield item
            read += sizes[done - 1] if weights else 0
            report(GGUF_TENSORS, done, total, share=read / weights if weights else None)

    matched = {"depth": 0, "done": 0, "total": 0}

    def matching(hf_model, *args, **kwargs):
        if matched["depth"] == 0:  # the outer call, on the whole model: count the calls to come
            report(GGUF_READ, 2, 2)  # (the file's second read is over)
            matched.update(done=0, total=_module_tree_size(hf_model))
            report(GGUF_NAMES, 0, matched["total"])
        matched["depth"] += 1
        try:
            names = original_match(hf_model, *args, **kwargs)
        finally:
            matched["depth"] -= 1
        matched["done"] += 1
        report(GGUF_NAMES, matched["done"], matched["total"])
        return names

    return {"tqdm": counted, "get_gguf_hf_weights_map": matching, "load_gguf_checkpoint": reading}


def _module_tree_size(module) -> int:
    """How many modules `module`'s tree of named children holds, itself included: one name-matching call each.

    >>> _module_tree_size(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Sequential(torch.nn.ReLU())))
    4
    """
    return 1 + sum(_module_tree_size(child) for _, child in module.named_children())
