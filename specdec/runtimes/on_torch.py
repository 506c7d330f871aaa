"""The torch runtime's entry: any Hugging Face causal LM, on a CPU, CUDA or MPS (`specdec.runtime.pytorch.torch_model`).

A target proves on this machine which passes give one-token steps' bits (`specdec.kernels.batch_invariance`), and
every pass it makes is cut into those sizes.

It is the fallback: it runs every model the others refuse, at the precision `specdec.kernels.precision` resolves (the
zoo converts a GGUF file's weights for it once and keeps the copy).

    >>> from specdec.runtimes import RUNTIMES
    >>> RUNTIMES["torch"].where(resolve_precision("cpu", "float32", "none"), "")
    'torch (cpu)'
"""

from __future__ import annotations

from specdec.kernels.batch_invariance import check_target
from specdec.kernels.precision import Precision, kernel_of, resolve_precision  # noqa: F401  (the doctest's)
from specdec.runtime.pytorch.torch_model import TorchModel
from specdec.runtimes.registry import FALLBACK, LoadRequest, Runtime, register
from specdec.zoo.loading import load_model


def _load(request: LoadRequest) -> tuple[TorchModel, Precision]:
    """The zoo's module (converted once, kept) behind the model contract, and its precision as it holds it."""
    module = request.build_module()
    if request.role != "target":  # a draft needs no batch invariance: any kernel may compute q
        return TorchModel(module, request.name), request.precision.as_loaded(module)
    verdict = check_target(module)  # which passes give one-token steps' bits here; kept, so later loads run nothing
    model = TorchModel(module, request.name, cut=verdict.sizes, rows_check=verdict.why)
    return model, request.precision.as_loaded(module)


def _read_off(model, why: str) -> tuple[Precision, str]:
    """A model built by hand: its device, dtype and weights as it holds them (no settings on torch)."""
    return Precision(
        model.device, model.dtype, model.weights, kernel_of(model.device, model.dtype, model.weights), why
    ), ""


TORCH = register(
    Runtime(
        name=FALLBACK,
        help="transformers on torch: any Hugging Face causal LM on a CPU, CUDA or MPS",
        load=_load,
        where=lambda precision, settings: f"torch ({precision.device})",
        read_off=_read_off,
        load_for_user=load_model,  # `specdec.load_model`: the transformers model itself, for your own code
    )
)
