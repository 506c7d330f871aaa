"""The llama.cpp runtime's entry: a GGUF file's own weights on llama.cpp's CPU kernels (`specdec.runtime.llama_cpp`).

A target runs with the *exact* settings (every row of a pass bit-equal to a one-token step, proved on each machine by
the self-test), a draft with llama.cpp's *fastest* (a draft needs no batch invariance). "auto" takes it first for GGUF
files on a CPU, where nothing else about the precision was asked for and the self-test passed here.

    >>> from specdec.runtimes import RUNTIMES, ModelFile
    >>> RUNTIMES["llama.cpp"].kind([ModelFile("a-folder", None, gguf=False)], torch.device("cpu"))
    ['a-folder is not a GGUF file']
"""

from __future__ import annotations

import torch

from specdec.errors import SpecdecError
from specdec.kernels.precision import Precision, gguf_precision
from specdec.runtimes.registry import LoadRequest, ModelFile, Runtime, register
from specdec.zoo.gguf_metadata import gguf_file_type

NAME = "llama.cpp"
# the names plans print; the knobs are `settings.EXACT`, `settings.FASTEST`
EXACT_NAME, FASTEST_NAME = "exact", "fastest"


def _kind(files, device: torch.device) -> list[str]:
    """Why these files on this device are not llama.cpp's: a model that is no GGUF file, a device other than the CPU."""
    reasons = [f"{file.name} is not a GGUF file" for file in files if not file.gguf][:1]
    if device.type != "cpu":
        reasons.append(f"the models run on {device.type} (llama.cpp runs here on the CPU)")
    return reasons


def _usable_here() -> str | None:
    """Why llama.cpp cannot run on this machine (its library
    missing, or its exactness self-test failed here), or None."""
    from specdec.runtime.llama_cpp import check_runtime

    try:
        usable, refusal = check_runtime()
    except SpecdecError as error:  # the library is not installed, or does not load here
        usable, refusal = False, str(error)
    return None if usable else f"its exactness self-test failed here ({refusal})"


def _precision_of(file: ModelFile, why: str, settings: str) -> Precision:
    return gguf_precision(gguf_file_type(file.location), f"the GGUF file's own weights on llama.cpp ({why})", settings)


def _load(request: LoadRequest):
    """The GGUF file mapped into llama.cpp with the request's
    settings, named and holding its file's type as its weights."""
    from specdec.runtime.llama_cpp import load_gguf
    from specdec.runtime.llama_cpp import settings as knobs

    model = load_gguf(
        request.location,
        threads=request.threads,
        settings=knobs.FASTEST if request.settings == FASTEST_NAME else knobs.EXACT,
    )
    model.name, model.weights = request.name, gguf_file_type(request.location)
    return model, request.precision


def _read_off(model, why: str) -> tuple[Precision, str]:
    """A model loaded by hand: its file's type, and the settings it holds."""
    from specdec.runtime.llama_cpp import settings as knobs

    settings = EXACT_NAME if getattr(model, "settings", knobs.EXACT) == knobs.EXACT else FASTEST_NAME
    return gguf_precision(model.weights, why, settings), settings


LLAMA_CPP = register(
    Runtime(
        name=NAME,
        help="GGUF files on llama.cpp's own CPU kernels, exact settings for a target, fastest for a draft",
        load=_load,
        where=lambda precision, settings: f"llama.cpp ({settings} settings)",
        kind=_kind,
        usable_here=_usable_here,
        own_weights=True,
        precision_of=_precision_of,
        settings=(EXACT_NAME, FASTEST_NAME),
        auto_rank=10,
        auto_why=(
            "auto: GGUF files on a CPU, exact here",
            "auto: its fastest kernels, a draft needs no batch invariance",
        ),
        not_its_kind="not a GGUF file on a CPU",
        drafts_with_other_tokenizers=False,
        measures_costs=True,
        read_off=_read_off,
        short_name=lambda precision: precision.name.removeprefix("float32 "),
    )
)
