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
asked for is then saved for next time, and only that one), else from the model hub. When none of these is possible the
error names the fetch command. Quantization "none" (the default here) keeps the weights in `dtype`; "int8" and "int4"
quantize the linear layers (and keep such a copy too, so the next load is quick); "auto" picks the
fastest exact choice for the device and the model's role (`specdec.kernels.quantization.auto_quantization`).
bfloat16 linear layers on a CPU are packed for oneDNN once loaded (`specdec.kernels.packed_linear`: the
same bits, about twice as fast a step).

When the model hub cannot be reached, loading a hub id fails at once with one line that says so,
instead of transformers' half-minute of retries. `trust_remote_code` is never turned on: no code
from a model repository runs here.

A load goes down through the zoo's modules once, in one order, and never comes back into one it has
left (`tests/test_zoo_path.py` traces it): `where` (`specdec.zoo.fetch`, which asks the catalogue)
decides where the model loads from before anything is read; a fetched zoo model then goes to
`specdec.zoo.converted` (its checked copy, else its GGUF file through `specdec.zoo.gguf_files`, and the
copy written by `specdec.zoo.safetensors_writer`); anything else is read here or by `gguf_files`.
Progress travels down with the call, as a `specdec.store.Reporter` made here from the `progress` callback.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from specdec.errors import SpecdecError, first_line
from specdec.kernels.invariant_attention import use_invariant_attention
from specdec.kernels.packed_linear import pack_linear_layers
from specdec.kernels.precision import Precision, resolve_precision
from specdec.kernels.quantization import apply_quantization
from specdec.store import Progress, Reporter
from specdec.zoo import converted, gguf_files
from specdec.zoo.fetch import Source, where
from specdec.zoo.kernel_library import require_w8a8

# a stage of a pair's load (`specdec.pair`): from GGUF files on a first load, about 10 s each
TOKENIZERS = "reading the tokenizers"


def load_model(
    name_or_path: str,
    device: str | torch.device = "auto",
    dtype: str | torch.dtype = "auto",
    quantization: str = "none",
    role: str = "target",
    packed: bool = True,
    precision: Precision | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> PreTrainedModel:
    """A causal LM from a zoo name, a hub id, a local folder or a .gguf file, in eval mode on `device`.

    `quantization`: "none", "int8", "int4", "w8a8" or "auto" (which reads `role`, "target" or "draft"); "w8a8"
    first proves its kernel on this machine (`specdec.zoo.kernel_library`), else it is a `SpecdecError` saying why.
    `precision`: all of device, dtype and quantization already resolved (`specdec.kernels.precision`, as
    `load_pair` does once for both models); the three arguments are then not read.
    `packed`: lay bfloat16 linear layers out for the CPU kernel once (`specdec.kernels.packed_linear`; False: as
    stored). `progress`: told every step of a long load (`specdec.store.Progress`: GGUF tensors read, layers quantized,
    megabytes saved, with the time left); it may raise to stop the load there (nothing half-written is kept).
    """
    precision = precision or resolve_precision(device, dtype, quantization, role)
    if precision.weights == "w8a8":
        require_w8a8(Reporter(Path(name_or_path).name, progress))  # its kernel must pass this machine's test first
    source = where(name_or_path)  # decided once, before anything is read
    report = Reporter(source.name, progress)
    if source.copies is not None:  # a fetched zoo model: its copy, else its GGUF file
        model = converted.load(source, precision, report)
    else:
        model = _read_as_it_is(source, precision.dtype, report)
        model = apply_quantization(
            model, precision.weights, precision.strict, report.counter(converted.QUANTIZING.format(precision.weights))
        )
    model = model.to(precision.device).eval()
    exact_float = role == "target" and precision.weights == "none" and precision.device.type == "cpu"
    if packed:
        # bfloat16 on a CPU: the same bits, about twice as fast (`packed_linear`); a target's float32 too, whose
        # oneDNN rows are the same bits for every pass of 2..64 rows (`specdec.kernels.batch_invariance`)
        pack_linear_layers(model, (torch.bfloat16, torch.float32) if exact_float else (torch.bfloat16,))
    if exact_float:
        use_invariant_attention(model)  # a token's attention in float64: the same in a pass as alone
    return model


def load_tokenizer(name_or_path: str) -> PreTrainedTokenizerBase:
    """The tokenizer that goes with `load_model(name_or_path)`.

    A fetched zoo model's comes from any of its converted copies, else from its GGUF file, parsed once per process
    and then shared (`specdec.zoo.gguf_files.read_tokenizer`: about 10 s for Qwen2.5's on this project's CPU).
    """
    source = where(name_or_path)
    if source.copies is not None:
        return converted.load_tokenizer(source)
    if source.gguf:
        return gguf_files.read_tokenizer(Path(source.location))
    return _from_pretrained(AutoTokenizer, source, "tokenizer")


def _read_as_it_is(source: Source, dtype: torch.dtype, report: Reporter) -> PreTrainedModel:
    """A model that keeps no converted copy: a .gguf file, a folder, or a hub id."""
    if source.gguf:
        return gguf_files.read_model(Path(source.location), dtype, report).model
    return _from_pretrained(AutoModelForCausalLM, source, "model", dtype=dtype)


def _from_pretrained(loader, source: Source, what: str, **kwargs):
    """`loader.from_pretrained` on a folder or a hub id, local files first, its failures in one clear line.

    A hub id that is not in the hub cache is downloaded only when `where` found the hub reachable (`source.offline`
    False): an unreachable hub fails at once with one line instead of transformers' half-minute of retries. No code
    from a model repository runs here (`trust_remote_code=False`).
    """
    kwargs = {**kwargs, "trust_remote_code": False}
    try:
        return loader.from_pretrained(source.location, local_files_only=True, **kwargs)
    except (OSError, ValueError, KeyError, RuntimeError) as error:  # a missing, partial or malformed checkpoint
        if not source.hub or source.offline:
            raise SpecdecError(f"could not load the {what} from {source.location}: {first_line(error)}") from None
    try:
        return loader.from_pretrained(source.location, **kwargs)
    except (OSError, ValueError) as error:
        raise SpecdecError(
            f"could not load the {what} '{source.location}' from the model hub: {first_line(error)}"
        ) from None


def same_tokenizer_files(first: str, second: str) -> bool:
    """Whether two zoo models' converted copies map text to ids with byte-identical files (by their manifests'
    checksums).

    Then the target's tokenizer serves the draft too, and the draft's is never parsed (about 1 s for
    Qwen2.5's, half of loading the zoo pair's tokenizers). Their chat templates may differ (Qwen2.5-Coder
    0.5B's and 1.5B's do): prompts are always encoded with the target's. False whenever the manifests cannot tell.
    """
    try:
        sources = [where(first), where(second)]
    except SpecdecError:
        return False
    return all(source.copies is not None for source in sources) and converted.tokenizer_files_match(sources)


def same_tokenizer(target_tokenizer: PreTrainedTokenizerBase, draft_tokenizer: PreTrainedTokenizerBase) -> bool:
    """Whether both map text to the same ids: their token-to-id maps are equal (not `vocab_size`, which counts
    embedding rows and differs between Qwen2.5 sizes that share a tokenizer)."""
    return target_tokenizer.get_vocab() == draft_tokenizer.get_vocab()


def check_same_tokenizer(
    target_tokenizer: PreTrainedTokenizerBase,
    draft_tokenizer: PreTrainedTokenizerBase,
    target_name: str = "target",
    draft_name: str = "draft",
) -> None:
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
