"""Converted copies: a GGUF checkpoint, once dequantized (and quantized again), kept so the next load is quick.

Loading a GGUF file dequantizes every tensor (about 40 s for a 1.5B model on a 2-core CPU). After
the first load `specdec.zoo.loading` keeps one copy of the model as it was asked for, with its
tokenizer, so later loads read that folder: an unquantized model under
`<cache>/models/<name>/converted-<dtype>/`; a model with int8 or int4 weights
(`specdec.kernels.quantization`) under `converted-<dtype>-<quantization>/`, its layers' int8/int4
tensors in one safetensors file, the config, the generation config and the tokenizer (it records the
torch version whose kernels packed it and is ignored under another). A quantized copy is made straight
from the GGUF's tensors: the unquantized model it passes through is not kept (it would be 6 GB in
float32 for the 1.5B target, beside a 1.5 GB int8 copy; `remove_superseded` deletes such leftovers of
older versions), and its embedding table is looked up in the GGUF file row by row instead of being
stored twice (`_quantized_state`, `specdec.zoo.gguf_files.GGUFEmbedding`). So the default pair costs its GGUF files plus its quantized layers.

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
from specdec.zoo.fetch import checkpoint_path, file_sha256, is_cached, model_dir
from specdec.zoo.gguf_files import GGUFEmbedding, gguf_embedding_location, gguf_rows_match
from specdec.zoo.safetensors_writer import write_safetensors

MANIFEST = "specdec-manifest.json"
VERIFIED = "specdec-verified.json"   # {file: [size, mtime_ns]} as of the last time its SHA-256 matched


QUANTIZED_WEIGHTS = "model.safetensors"


def converted_dir(entry: ModelEntry, dtype: torch.dtype, quantization: str = "none") -> Path:
    """`converted-bfloat16`, or `converted-float32-int8` for a quantized copy: the precision is part of the name."""
    suffix = "" if quantization == "none" else f"-{quantization}"
    return model_dir(entry) / f"converted-{dtype_name(dtype)}{suffix}"


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
    if manifest.get("gguf_embedding") and not is_cached(entry):                 # it reads its embedding from the GGUF file
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
        if verified.get(name) != stamps[name] and file_sha256(folder / name) != recorded["sha256"]:
            return False
    if stamps != verified:
        _write_atomically(folder / VERIFIED, json.dumps(stamps))
    return True


def _write_atomically(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(handle, "w") as out:
        out.write(text)
    os.replace(temporary, path)


def converted_copies(entry: ModelEntry) -> list[tuple[Path, torch.dtype, str]]:
    """Every complete, checked converted copy of `entry` on disk: (folder, dtype, quantization), by folder name."""
    copies = []
    folder = model_dir(entry)
    for path in sorted(folder.glob("converted-*")) if folder.is_dir() else []:
        dtype_text, _, quantization = path.name.removeprefix("converted-").partition("-")
        dtype = getattr(torch, dtype_text, None)
        if isinstance(dtype, torch.dtype) and find_converted(entry, dtype, quantization or "none") == path:
            copies.append((path, dtype, quantization or "none"))
    return copies


def any_converted_tokenizer(entry: ModelEntry) -> Path | None:
    """A converted copy of any dtype and quantization (they all carry the same tokenizer), or None."""
    return next((folder for folder, _, _ in converted_copies(entry)), None)


FORMAT = 2   # manifests of copies kept because they were asked for; an unquantized copy without it was an older version's intermediate


def remove_superseded(entry: ModelEntry) -> int:
    """Delete the unquantized copies an older specdec kept on the way to a quantized one; return the bytes freed.

    Before format 2, every first load of a quantized model also saved the unquantized model it was
    made from (6 GB in float32 for the 1.5B target, beside its 1.5 GB int8 copy). Now a quantized
    load keeps only its quantized copy, and an unquantized copy is saved only when an unquantized
    model is asked for (its manifest then says `format` 2). So an unquantized copy without that
    mark, next to a quantized copy of the same model, is a leftover: it goes (and should such a model
    be asked for again, it is converted again and kept).
    """
    copies = converted_copies(entry)
    if not any(quantization != "none" for _, _, quantization in copies):
        return 0
    freed = 0
    for folder in sorted(model_dir(entry).glob("converted-*")):
        manifest = folder / MANIFEST
        if "-" in folder.name.removeprefix("converted-") or not manifest.is_file():
            continue
        try:
            kept_on_purpose = json.loads(manifest.read_text()).get("format", 1) >= FORMAT
        except (OSError, ValueError):
            kept_on_purpose = False
        if not kept_on_purpose:
            freed += sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
            shutil.rmtree(folder, ignore_errors=True)
    return freed


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


EMBEDDING = "model.embed_tokens.weight"


def _quantized_state(model: torch.nn.Module, gguf_path: Path) -> tuple[dict[str, torch.Tensor], dict[str, object] | None]:
    """What a quantized copy must hold: the model's tensors, less the embedding table when the GGUF file gives it back
    bit for bit (then also where it lies in that file).

    The embedding is the largest tensor a quantized copy would otherwise hold, kept in the model's
    dtype: 0.93 GB in float32 for the 1.5B, over a third of its int8 copy, and a second copy of what
    the GGUF file beside it already holds. It is left out only for a plain `nn.Embedding` (Gemma's
    scales its rows) whose rows `GGUFEmbedding` gives back with the same bits.
    """
    state = {name: tensor.contiguous() for name, tensor in model.state_dict().items()}
    embedding = state.get(EMBEDDING)
    if embedding is None or type(model.get_input_embeddings()) is not torch.nn.Embedding:
        return state, None
    location = gguf_embedding_location(gguf_path)
    if location is None or not gguf_rows_match(gguf_path, location, embedding):
        return state, None
    del state[EMBEDDING]
    return state, location


def _save_quantized(model: torch.nn.Module, folder: Path, saved: _SavedBytes, state: dict[str, torch.Tensor]) -> None:
    """`state` (the model's tensors, int8/int4 layers included) in one safetensors file, with its config and generation config."""
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
    state, embedding = _quantized_state(model, checkpoint_path(entry)) if quantization != "none" else ({}, None)
    total = tensor_bytes(model) if quantization == "none" else sum(t.numel() * t.element_size() for t in state.values())
    work = Path(tempfile.mkdtemp(prefix=".convert-", dir=final.parent))
    saved = _SavedBytes(entry.name, saving_stage(quantization), total)
    try:
        saved.report(0)
        if quantization == "none":
            _save_dequantized(model, work, saved)
        else:
            _save_quantized(model, work, saved, state)
        tokenizer.save_pretrained(work)
        files = {path.name: {"bytes": path.stat().st_size, "sha256": saved.sha256.get(path.name) or file_sha256(path)}
                 for path in sorted(work.iterdir()) if path.is_file()}
        manifest = {"model": entry.name, "dtype": dtype_name(dtype), "source_sha256": entry.package.sha256, "files": files,
                    "format": FORMAT}
        if quantization != "none":
            manifest.update(quantization=quantization, torch=torch.__version__, gguf_embedding=embedding)
        (work / MANIFEST).write_text(json.dumps(manifest, indent=2))
        (work / VERIFIED).write_text(json.dumps({name: _stamp(work / name) for name in files}))   # just hashed
        if final.exists():
            shutil.rmtree(final)
        os.replace(work, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    saved.report(saved.total)
    return final


def load_quantized_copy(entry: ModelEntry, folder: Path, dtype: torch.dtype, quantization: str) -> torch.nn.Module:
    """A model from a quantized copy: built empty from its config, its linear layers rebuilt from their int8/int4 tensors,
    and its embedding, where the copy left it to the GGUF file (`_quantized_state`), looked up there."""
    state = load_file(folder / QUANTIZED_WEIGHTS)
    location = json.loads((folder / MANIFEST).read_text()).get("gguf_embedding")
    with no_init_weights():   # every tensor comes from the file: skip the random initialisation
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(folder), dtype=dtype)
    if location is not None:                      # its rows are looked up in the GGUF file (the state has none)
        model.set_input_embeddings(GGUFEmbedding(checkpoint_path(entry), location, dtype))
    rebuild_quantized_layers(model, state, quantization)
    model.load_state_dict(state, strict=True, assign=True)
    model.generation_config = GenerationConfig.from_pretrained(folder)
    return mark_quantized(model, quantization)
