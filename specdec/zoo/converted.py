"""Converted copies: a GGUF checkpoint, once dequantized (and quantized again), kept so the next load is quick.

Loading a GGUF file dequantizes every tensor (about 40 s for a 1.5B model on a 2-core CPU). After
the first load `specdec.zoo.loading` saves the model in the dtype it was loaded in, with its
tokenizer, under `<cache>/models/<name>/converted-<dtype>/`, and later loads read that folder.
A copy with int8 or int4 weights (`specdec.kernels.quantization`) is kept the same way under
`converted-<dtype>-<quantization>/`: its layers' int8/int4 tensors in one safetensors file, the
config, the generation config and the tokenizer; it records the torch version whose kernels packed
it and is ignored under another.

Writes are atomic: the copy is saved into a temporary folder next to its final place and renamed
only when complete. A `specdec-manifest.json` records the SHA-256 of the GGUF it came from and the
size and SHA-256 of every file written; a copy whose source changed or whose files do not match
their recorded sizes and checksums is ignored (and replaced on the next load).

Saving takes a while too (6 GB for the 1.5B model in float32), so the weights are written tensor by
tensor (`specdec.zoo.safetensors_writer`), hashed as they are written, and the bytes written are
reported as a stage of the load (`specdec.zoo.load_progress`): the progress bar moves, shows the
time left, and a Stop lands between two tensors (the temporary folder is then deleted).

Hashing 3 GB takes seconds, so, as git does for its index, a file is hashed again only when its
size or modification time differs from the last time its checksum matched (`specdec-verified.json`
keeps those). A file changed in place, or truncated, is therefore caught on its next load.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file
from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig
from transformers.initialization import no_init_weights

from specdec.kernels.devices import dtype_name
from specdec.kernels.quantization import mark_quantized, rebuild_quantized_layers
from specdec.zoo import load_progress
from specdec.zoo.catalog import ModelEntry
from specdec.zoo.fetch import model_dir
from specdec.zoo.safetensors_writer import write_safetensors

MANIFEST = "specdec-manifest.json"
VERIFIED = "specdec-verified.json"   # {file: [size, mtime_ns]} as of the last time its SHA-256 matched


QUANTIZED_WEIGHTS = "model.safetensors"


def converted_dir(entry: ModelEntry, dtype: torch.dtype, quantization: str = "none") -> Path:
    """`converted-bfloat16`, or `converted-float32-int8` for a quantized copy: the precision is part of the name."""
    suffix = "" if quantization == "none" else f"-{quantization}"
    return model_dir(entry) / f"converted-{dtype_name(dtype)}{suffix}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(8 * 1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def find_converted(entry: ModelEntry, dtype: torch.dtype, quantization: str = "none") -> Path | None:
    """The converted copy for this model, dtype and quantization if it is complete and matches its source, else None."""
    folder = converted_dir(entry, dtype, quantization)
    manifest_path = folder / MANIFEST
    if entry.package is None or not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        return None
    if manifest.get("source_sha256") != entry.package.sha256:
        return None
    if quantization != "none" and manifest.get("torch") != torch.__version__:   # packed by another torch's kernels
        return None
    files = manifest.get("files", {})
    for name, recorded in files.items():
        path = folder / name
        if not path.is_file() or path.stat().st_size != recorded["bytes"]:
            return None
    return folder if _checksums_match(folder, files) else None


def _stamp(path: Path) -> list[int]:
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns]


def _checksums_match(folder: Path, files: dict) -> bool:
    """Whether every file matches its recorded SHA-256, hashing only those changed since they last matched."""
    try:
        verified = json.loads((folder / VERIFIED).read_text())
    except (OSError, ValueError):
        verified = {}
    stamps = {}
    for name, recorded in files.items():
        stamps[name] = _stamp(folder / name)
        if verified.get(name) != stamps[name] and _sha256(folder / name) != recorded["sha256"]:
            return False
    if stamps != verified:
        _write_atomically(folder / VERIFIED, json.dumps(stamps))
    return True


def _write_atomically(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(handle, "w") as out:
        out.write(text)
    os.replace(temporary, path)


def any_converted_tokenizer(entry: ModelEntry) -> Path | None:
    """A converted copy of any dtype (they all carry the same tokenizer), or None."""
    for dtype in (torch.bfloat16, torch.float32, torch.float16):
        folder = find_converted(entry, dtype)
        if folder is not None:
            return folder
    return None


def tokenizer_checksums(folder: Path) -> dict[str, str]:
    """The SHA-256 of each file of a verified converted copy that maps text to ids, from its manifest: every
    file but the weights, the model's configs and the chat template (tokenizer.json, tokenizer_config.json, ...)."""
    files = json.loads((folder / MANIFEST).read_text()).get("files", {})
    other = ("config.json", "generation_config.json", "chat_template.jinja", "chat_template.json")
    return {name: recorded["sha256"] for name, recorded in files.items() if not name.startswith("model") and name not in other}


class _SavedBytes:
    """Writes weight files for one converted copy, reporting the bytes written as `stage` of `model_name`'s load.

    It counts across files (a sharded save writes several) against `total`, the model's tensor bytes,
    and keeps each file's SHA-256, computed while writing, so the manifest need not read them again.
    """

    def __init__(self, model_name: str, stage: str, total: int) -> None:
        self.model_name, self.stage, self.total = model_name, stage, total
        self.done = 0
        self.sha256: dict[str, str] = {}

    def report(self, done: int) -> None:
        self.done = min(max(done, self.done), self.total)      # never backwards, never past the end
        load_progress.report(self.model_name, self.stage, self.done, self.total, "bytes")

    def write(self, tensors: dict[str, torch.Tensor], filename: str | Path, metadata: dict | None = None) -> None:
        """`safetensors.torch.save_file`'s signature: what `save_pretrained` calls for each weight file."""
        before = self.done
        self.sha256[Path(filename).name] = write_safetensors(tensors, filename, metadata, lambda done, _: self.report(before + done))


def tensor_bytes(model: torch.nn.Module) -> int:
    """The bytes of `model`'s tensors, those sharing memory (tied embeddings) counted once: what a save writes.

    >>> tied = torch.nn.Linear(4, 2, bias=False)
    >>> tensor_bytes(torch.nn.ModuleDict({"a": tied, "b": tied}))     # 2 x 4 float32 weights, once
    32
    """
    return sum({tensor.data_ptr(): tensor.numel() * tensor.element_size() for tensor in model.state_dict().values()}.values())


def _save_dequantized(model: torch.nn.Module, folder: Path, saved: _SavedBytes) -> None:
    """`save_pretrained` for a model loaded from GGUF, its weight files written by `saved`.

    transformers marks such a model as GGUF-quantized and refuses to save it, although its layers
    hold ordinary dequantized tensors. We detach that marker for the save, so the copy is a plain
    safetensors checkpoint that loads without any GGUF machinery, and put it back afterwards.
    `save_pretrained` writes each weight file with the name `safe_save_file` of
    `transformers.modeling_utils`; for the save that name is `saved.write` (when a transformers
    version names it otherwise, the save still works, without progress).
    """
    from transformers import modeling_utils

    quantizer = getattr(model, "hf_quantizer", None)
    quantization_config = getattr(model.config, "quantization_config", None)
    writer = getattr(modeling_utils, "safe_save_file", None)
    try:
        model.hf_quantizer = None
        if quantization_config is not None:
            del model.config.quantization_config
        if writer is not None:
            modeling_utils.safe_save_file = saved.write
        model.save_pretrained(folder)
    finally:
        if writer is not None:
            modeling_utils.safe_save_file = writer
        model.hf_quantizer = quantizer
        if quantization_config is not None:
            model.config.quantization_config = quantization_config


def _save_quantized(model: torch.nn.Module, folder: Path, saved: _SavedBytes) -> None:
    """The model's tensors (int8/int4 layers included) in one safetensors file, with its config and generation config."""
    state = {name: tensor.contiguous() for name, tensor in model.state_dict().items()}
    saved.write(state, folder / QUANTIZED_WEIGHTS, {"format": "pt"})
    config = copy.deepcopy(model.config)
    if hasattr(config, "quantization_config"):   # the GGUF marker: this copy loads without any GGUF machinery
        del config.quantization_config
    config.save_pretrained(folder)
    model.generation_config.save_pretrained(folder)


def saving_stage(quantization: str) -> str:
    """The name the save's progress goes by: 'saving a converted copy for next time', 'saving the int8 copy for next time'."""
    return "saving a converted copy for next time" if quantization == "none" else f"saving the {quantization} copy for next time"


def save_converted(entry: ModelEntry, model: torch.nn.Module, tokenizer, dtype: torch.dtype, quantization: str = "none") -> Path:
    """Save `model` and `tokenizer` as the converted copy of `entry` in `dtype` (and `quantization`), atomically.

    The bytes of weights written are reported as `saving_stage(quantization)` of `entry`'s load, from
    0 to the model's `tensor_bytes`; if the progress callback raises, nothing is kept.
    """
    final = converted_dir(entry, dtype, quantization)
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".convert-", dir=final.parent))
    saved = _SavedBytes(entry.name, saving_stage(quantization), tensor_bytes(model))
    try:
        saved.report(0)
        if quantization == "none":
            _save_dequantized(model, work, saved)
        else:
            _save_quantized(model, work, saved)
        tokenizer.save_pretrained(work)
        files = {path.name: {"bytes": path.stat().st_size, "sha256": saved.sha256.get(path.name) or _sha256(path)}
                 for path in sorted(work.iterdir()) if path.is_file()}
        manifest = {"model": entry.name, "dtype": dtype_name(dtype), "source_sha256": entry.package.sha256, "files": files}
        if quantization != "none":
            manifest.update(quantization=quantization, torch=torch.__version__)
        (work / MANIFEST).write_text(json.dumps(manifest, indent=2))
        (work / VERIFIED).write_text(json.dumps({name: _stamp(work / name) for name in files}))   # just hashed
        if final.exists():
            shutil.rmtree(final)
        os.replace(work, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    saved.report(saved.total)
    return final


def load_quantized_copy(folder: Path, dtype: torch.dtype, quantization: str) -> torch.nn.Module:
    """A model from a quantized copy: built empty from its config, its linear layers rebuilt from their int8/int4 tensors."""
    state = load_file(folder / QUANTIZED_WEIGHTS)
    with no_init_weights():   # every tensor comes from the file: skip the random initialisation
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(folder), dtype=dtype)
    rebuild_quantized_layers(model, state, quantization)
    model.load_state_dict(state, strict=True, assign=True)
    model.generation_config = GenerationConfig.from_pretrained(folder)
    return mark_quantized(model, quantization)
