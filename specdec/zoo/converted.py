"""Converted copies: a GGUF checkpoint, once dequantized (and quantized again), kept so the next load is quick.

    model = load(where("qwen2.5-coder-1.5b"), precision, report)      # the copy if there is one, else the GGUF file

Loading a GGUF file dequantizes every tensor (about 40 s for a 1.5B model on a 2-core CPU). After
the first load of a fetched zoo model, `load` keeps one copy of the model as it was asked for, with its
tokenizer, so later loads read that folder: an unquantized model under
`<cache>/models/<name>/converted-<dtype>/`; a model with int8 or int4 weights
(`specdec.kernels.quantization`) under `converted-<dtype>-<quantization>/`, its layers' int8/int4
tensors in one safetensors file, the config, the generation config and the tokenizer (it records the
torch version whose kernels packed it and is ignored under another). A quantized copy is made straight
from the GGUF's tensors: the unquantized model it passes through is not kept (it would be 6 GB in
float32 for the 1.5B target, beside a 1.5 GB int8 copy; `remove_superseded` deletes such leftovers of
older versions), and its embedding table is looked up in the GGUF file row by row instead of being
stored twice (`specdec.zoo.gguf_files.GGUFEmbedding`). So the default pair costs its GGUF files plus its quantized
layers.

A copy is written whole or not at all (`specdec.store.new_folder`: built in a temporary sibling, then
renamed into place), with the store's manifest (`specdec.store.write_manifest`): the SHA-256 of the GGUF
it came from, and the size and SHA-256 of every file, whose stamps spare the next load from hashing
gigabytes again. A copy whose source changed or whose files do not match is ignored (and replaced on
the next load). Copies saved by earlier versions have this very layout and load as they are.

Saving takes a while too (6 GB for the 1.5B model in float32), so the weights are written tensor by
tensor (`specdec.zoo.safetensors_writer`), hashed as they are written, and the bytes written are
reported as a stage of the load: the progress bar moves, shows the time left, and a Stop lands between
two tensors (the temporary folder is then deleted).
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    GenerationConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers.initialization import no_init_weights

from specdec.kernels.devices import dtype_name
from specdec.kernels.precision import Precision
from specdec.kernels.quantization import apply_quantization, mark_quantized, quantization_of, rebuild_quantized_layers
from specdec.store import MANIFEST, Reporter, check_folder, new_folder, read_manifest, settle, write_manifest
from specdec.zoo import gguf_files
from specdec.zoo.catalog import ModelEntry
from specdec.zoo.fetch import Source, is_cached, model_dir
from specdec.zoo.safetensors_writer import write_safetensors

WEIGHTS = "model.safetensors"
EMBEDDING = "model.embed_tokens.weight"
QUANTIZING = "quantizing linear layers to {}"  # the stage's name, for a quantization
# manifests of copies kept because they were asked for; an unquantized copy without it was an older version's
# intermediate
FORMAT = 2


def copy_name(dtype: torch.dtype, quantization: str = "none") -> str:
    """`converted-bfloat16`, or `converted-float32-int8` for a quantized copy: the precision is part of the name."""
    return f"converted-{dtype_name(dtype)}" + ("" if quantization == "none" else f"-{quantization}")


def saving_stage(quantization: str) -> str:
    """The name the save's progress goes by: 'saving a converted
    copy for next time', 'saving the int8 copy for next time'."""
    what = "a converted copy" if quantization == "none" else f"the {quantization} copy"
    return f"saving {what} for next time"


# ---------------------------------------------------------------- the load


def load(source: Source, precision: Precision, report: Reporter) -> PreTrainedModel:
    """A fetched zoo model (`source.copies` set) in `precision`: from its checked copy, else from its GGUF file, keeping
    the copy asked for (and only that one)."""
    dtype, weights = precision.dtype, precision.weights
    folder = _checked(source.copies / copy_name(dtype, weights), source.entry, gguf_fetched=True)
    if folder is not None:
        report("loading the saved copy" if weights == "none" else f"loading the saved {weights} copy")
        model = _read_copy(folder, Path(source.location), dtype, weights)
    else:
        model = _convert(source, precision, report)
    if weights != "none" and quantization_of(model) != "none":
        freed = remove_superseded(source.entry, source.copies)  # an older version's intermediate
        if freed:
            report(f"removed the unquantized copy an older version kept ({freed / 1e6:,.0f} MB)", 1, 1)
    return model


def _convert(source: Source, precision: Precision, report: Reporter) -> PreTrainedModel:
    """Read the model (from an unquantized copy when one of this dtype is kept, else from its GGUF file), quantize it as
    asked, and keep it as a copy (not when "auto" kept a model that int8/int4 cannot handle as it is)."""
    dtype, weights, gguf = precision.dtype, precision.weights, Path(source.location)
    plain = _checked(source.copies / copy_name(dtype), source.entry, gguf_fetched=True) if weights != "none" else None
    if plain is not None:
        report("loading the saved copy")
        model = AutoModelForCausalLM.from_pretrained(plain, dtype=dtype)
        tokenizer, embedding = AutoTokenizer.from_pretrained(plain), gguf_files.embedding_in_file(gguf, model)
    else:
        read = gguf_files.read_model(gguf, dtype, report, with_tokenizer=True, find_embedding=weights != "none")
        model, tokenizer, embedding = read.model, read.tokenizer, read.embedding
    model = apply_quantization(model, weights, precision.strict, report.counter(QUANTIZING.format(weights)))
    if quantization_of(model) == weights:
        _save(source, model, tokenizer, dtype, weights, embedding, report)
    return model


def load_tokenizer(source: Source) -> PreTrainedTokenizerBase:
    """A fetched zoo model's tokenizer: from any of its checked copies (they all carry it), else from its GGUF file."""
    folder = next((folder for folder, _, _ in _copies(source.entry, source.copies, gguf_fetched=True)), None)
    if folder is not None:
        return AutoTokenizer.from_pretrained(folder)
    return gguf_files.read_tokenizer(Path(source.location))


# ---------------------------------------------------------------- finding and checking copies


def converted_dir(entry: ModelEntry, dtype: torch.dtype, quantization: str = "none") -> Path:
    """Where `entry`'s copy in `dtype` (and `quantization`) is kept."""
    return model_dir(entry) / copy_name(dtype, quantization)


def find_converted(entry: ModelEntry, dtype: torch.dtype, quantization: str = "none") -> Path | None:
    """The converted copy for this model, dtype and quantization if it is complete and matches its source, else None."""
    return _checked(converted_dir(entry, dtype, quantization), entry, is_cached(entry))


def _checked(folder: Path, entry: ModelEntry, gguf_fetched: bool) -> Path | None:
    """`folder` if it holds a copy of `entry` made from its pinned
    GGUF file and every file matches the manifest, else None."""
    manifest = read_manifest(settle(folder)) if entry.package is not None else None
    if manifest is None or manifest.get("source_sha256") != entry.package.sha256:
        return None
    # packed by another torch
    if manifest.get("quantization", "none") != "none" and manifest.get("torch") != torch.__version__:
        return None
    if manifest.get("gguf_embedding") and not gguf_fetched:  # it reads its embedding from the GGUF file
        return None
    return folder if check_folder(folder, manifest) is None else None


def _copies(entry: ModelEntry, models: Path, gguf_fetched: bool) -> list[tuple[Path, torch.dtype, str]]:
    """Every complete, checked converted copy in `models` (a model's
    folder): (folder, dtype, quantization), by folder name."""
    copies = []
    for path in sorted(models.glob("converted-*")) if models.is_dir() else []:
        dtype_text, _, quantization = path.name.removeprefix("converted-").partition("-")
        dtype = getattr(torch, dtype_text, None)
        if isinstance(dtype, torch.dtype) and _checked(path, entry, gguf_fetched) == path:
            copies.append((path, dtype, quantization or "none"))
    return copies


def tokenizer_files_match(sources: list[Source]) -> bool:
    """Whether fetched zoo models' converted copies hold byte-identical tokenizer files (by their manifests' checksums).

    Every file of a copy but the weights, the model's configs and the chat template maps text to ids
    (tokenizer.json, tokenizer_config.json, ...). False whenever a model has no checked copy.
    """
    other = ("config.json", "generation_config.json", "chat_template.jinja", "chat_template.json")
    checksums = []
    for source in sources:
        found = _copies(source.entry, source.copies, gguf_fetched=True) if source.copies is not None else []
        if not found:
            return False
        files = read_manifest(found[0][0])["files"]
        checksums.append(
            {
                name: recorded["sha256"]
                for name, recorded in files.items()
                if not name.startswith("model") and name not in other
            }
        )
    return bool(checksums[0]) and all(sums == checksums[0] for sums in checksums)


def remove_superseded(entry: ModelEntry, models: Path | None = None) -> int:
    """Delete the unquantized copies an older specdec kept on the way to a quantized one; return the bytes freed.

    Before format 2, every first load of a quantized model also saved the unquantized model it was
    made from (6 GB in float32 for the 1.5B target, beside its 1.5 GB int8 copy). Now a quantized
    load keeps only its quantized copy, and an unquantized copy is saved only when an unquantized
    model is asked for (its manifest then says `format` 2). So an unquantized copy without that
    mark, next to a quantized copy of the same model, is a leftover: it goes (and should such a model
    be asked for again, it is converted again and kept).
    """
    models = models or model_dir(entry)
    if not any(quantization != "none" for _, _, quantization in _copies(entry, models, gguf_fetched=True)):
        return 0
    freed = 0
    for folder in sorted(models.glob("converted-*")):
        manifest = read_manifest(folder)
        if "-" in folder.name.removeprefix("converted-") or manifest is None or manifest.get("format", 1) >= FORMAT:
            continue
        freed += sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
        shutil.rmtree(folder, ignore_errors=True)
    return freed


# ---------------------------------------------------------------- writing and reading a copy


def _state(model: torch.nn.Module, once: bool) -> dict[str, torch.Tensor]:
    """The model's tensors to save; with `once`, a tensor that is the very same memory as one before it (a tied output
    layer) is left out, as `save_pretrained` leaves it out (loading an unquantized copy ties it again)."""
    state, seen = {}, set()
    for name, tensor in model.state_dict().items():
        alias = (tensor.data_ptr(), tensor.dtype, tuple(tensor.shape), tensor.stride())
        if once and tensor.numel() and alias in seen:
            continue
        seen.add(alias)
        state[name] = tensor.contiguous()
    return state


def _save(
    source: Source,
    model: torch.nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    dtype: torch.dtype,
    quantization: str,
    embedding: dict[str, object] | None,
    report: Reporter,
) -> Path:
    """Keep `model` and `tokenizer` as `source`'s copy in `dtype` (and `quantization`), whole or not at all.

    The weights go in one safetensors file (less the embedding table when the GGUF file gives it back: `embedding`),
    with the config (without the GGUF marker: the copy loads without any GGUF machinery), the generation config, the
    tokenizer and the manifest. The bytes of weights written are reported as `saving_stage(quantization)`, from 0 to
    the total; if the report raises, nothing is kept.
    """
    entry = source.entry
    state = _state(model, once=quantization == "none")  # a quantized copy's layers are rebuilt name by name
    if quantization != "none" and embedding is not None:
        del state[EMBEDDING]  # its rows are looked up in the GGUF file
    count = report.counter(
        saving_stage(quantization), sum(t.numel() * t.element_size() for t in state.values()), "bytes"
    )
    count(0)
    final = source.copies / copy_name(dtype, quantization)
    with new_folder(final) as work:
        sha256 = write_safetensors(state, work / WEIGHTS, {"format": "pt"}, count)
        config = copy.deepcopy(model.config)
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        config.save_pretrained(work)
        model.generation_config.save_pretrained(work)
        tokenizer.save_pretrained(work)
        extra = (
            {}
            if quantization == "none"
            else {"quantization": quantization, "torch": torch.__version__, "gguf_embedding": embedding}
        )
        write_manifest(
            work,
            known={WEIGHTS: sha256},
            model=entry.name,
            dtype=dtype_name(dtype),
            source_sha256=entry.package.sha256,
            format=FORMAT,
            **extra,
        )
    return final


def _read_copy(folder: Path, gguf: Path, dtype: torch.dtype, quantization: str) -> PreTrainedModel:
    """A model from its copy: `from_pretrained` for an unquantized one; for a quantized one, built empty from its
    config, its linear layers rebuilt from their int8/int4 tensors, and its embedding, where the copy left it to the
    GGUF file, looked up there."""
    if quantization == "none":
        return AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
    state = load_file(folder / WEIGHTS)
    location = json.loads((folder / MANIFEST).read_text()).get("gguf_embedding")
    with no_init_weights():  # every tensor comes from the file: skip the random initialisation
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(folder), dtype=dtype)
    if location is not None:  # its rows are looked up in the GGUF file (the state has none)
        model.set_input_embeddings(gguf_files.GGUFEmbedding(gguf, location, dtype))
    rebuild_quantized_layers(model, state, quantization)
    model.load_state_dict(state, strict=True, assign=True)
    model.generation_config = GenerationConfig.from_pretrained(folder)
    return mark_quantized(model, quantization)
