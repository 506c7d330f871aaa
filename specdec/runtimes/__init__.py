"""The runtimes, as a registry like the drafting methods (`specdec.runtimes.registry`), and the two built in.

    registry.py       `Runtime`, `register`, `RUNTIMES`, and the choice of a runtime for a run ("auto" loops over them)
    on_torch.py       transformers on torch: any Hugging Face causal LM on a CPU, CUDA or MPS (the fallback)
    on_llama_cpp.py   GGUF files on llama.cpp's own CPU kernels (exact settings for a target, fastest for a draft)

The runtimes themselves live in `specdec.runtime` (the model contract's two implementations); an entry here ties one to
the zoo's files and the kernels' precisions, one layer up, so that the planner, loading and every door loop over
entries.
"""

from specdec.runtimes import on_torch  # noqa: F401,I001  (each registers itself: torch first, as the lists show them)
from specdec.runtimes import on_llama_cpp  # noqa: F401,I001
from specdec.runtimes.registry import (
    AUTO,
    FALLBACK,
    RUNTIMES,
    LoadRequest,
    ModelFile,
    Runtime,
    choices,
    choose_draft_runtime,
    choose_runtime,
    model_file,
    register,
    runtime_of,
)

__all__ = [
    "AUTO",
    "FALLBACK",
    "RUNTIMES",
    "LoadRequest",
    "ModelFile",
    "Runtime",
    "choices",
    "choose_draft_runtime",
    "choose_runtime",
    "model_file",
    "register",
    "runtime_of",
]
