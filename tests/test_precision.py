"""A model's precision is resolved once (`specdec.kernels.precision`)
and carried: by loading, the pair and the reports."""

import dataclasses

import pytest
import torch

import specdec.kernels.precision
import specdec.kernels.quantization
from specdec import SpecdecError
from specdec.pair.resources import LoadedPair
from specdec.pair.loading import load_pair
from specdec.kernels.precision import Precision, resolve_pair_precision, resolve_precision
from tiny_models import save_tiny_model, tiny_pair, tiny_tokenizer


def _counted(monkeypatch, module, name: str, calls: dict[str, int]) -> None:
    original = getattr(module, name)

    def counting(*args, **kwargs):
        calls[f"{module.__name__}.{name}"] = calls.get(f"{module.__name__}.{name}", 0) + 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)


def test_a_pair_resolves_each_models_precision_once_and_loading_does_not_resolve_it_again(tmp_path, monkeypatch):
    target, draft = tiny_pair("llama", vocab_size=32)
    paths = [str(save_tiny_model(tmp_path / name, model)) for name, model in (("t", target), ("d", draft))]
    calls: dict[str, int] = {}
    for name in ("resolve_device", "resolve_dtype", "check_quantization"):
        _counted(monkeypatch, specdec.kernels.precision, name, calls)
    _counted(monkeypatch, specdec.kernels.quantization, "check_quantization", calls)  # what quantize_model would call
    pair = load_pair(paths[0], paths[1], device="cpu", quantization="auto", draft_quantization="auto")
    assert calls == {
        "specdec.kernels.precision.resolve_device": 2,
        "specdec.kernels.precision.resolve_dtype": 2,
        "specdec.kernels.precision.check_quantization": 2,
    }  # once per model, nowhere else
    target_precision, draft_precision = pair.precision_of("target"), pair.precision_of("draft")
    assert (target_precision.name, draft_precision.name) == ("float32 int8", "bfloat16 int4")
    assert (
        type(pair.target.module.lm_head).__name__ == "Int8Linear"
        and type(pair.draft.module.lm_head).__name__ == "Int4Linear"
    )
    assert pair.kernels.startswith(
        "target float32 int8 on cpu (fbgemm int8 x int8, one activation scale per token): int8 weights"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        target_precision.weights = "int4"


def test_an_int4_draft_runs_in_bfloat16_whatever_the_dtype_and_says_why():
    target, draft = resolve_pair_precision("cpu", "float32", "none", "int4")
    assert (target.name, draft.name) == ("float32", "bfloat16 int4")
    assert draft.why == "int4 weights as asked; bfloat16 activations: an int4 draft runs where its kernel is fast"
    assert resolve_pair_precision("cpu", "float32", "none", "int4", draft_model=False)[1] is None
    # one model loaded alone keeps the dtype asked (exact checks)
    alone = resolve_precision("cpu", "float32", "int4", "draft")
    assert alone.name == "float32 int4" and alone.why.endswith("float32 activations as asked")


def test_auto_that_cannot_quantize_a_model_says_so_in_the_precision_it_carries(tmp_path):
    target, draft = tiny_pair("gpt2")  # GPT-2 keeps its weights in Conv1D layers
    paths = [str(save_tiny_model(tmp_path / name, model)) for name, model in (("t", target), ("d", draft))]
    pair = load_pair(paths[0], paths[1], device="cpu", quantization="auto", draft_quantization="auto")
    precision = pair.precision_of("target")
    assert (precision.weights, precision.kernel) == ("none", "float32 GEMM (MKL/oneDNN)")
    assert "int8 asked for by auto, but this gpt2 model keeps most of its weights outside nn.Linear" in precision.why
    assert pair.precision_of("draft").weights == "none" and pair.precision == "float32"


def test_a_pair_built_by_hand_reads_its_precision_off_its_models():
    target, draft = tiny_pair("llama")
    pair = LoadedPair.from_models("t", "d", target, draft, tiny_tokenizer(24))
    assert pair.precision_of("target") == Precision(
        torch.device("cpu"), torch.float32, "none", "float32 GEMM (MKL/oneDNN)", "read off the target as built"
    )
    assert LoadedPair.from_models("t", "prompt-lookup", target, None, tiny_tokenizer(24)).precision_of("draft") is None


@pytest.mark.parametrize(
    "arguments, fragment",
    [
        (("cpu", "auto", "int3"), "unknown quantization 'int3'"),
        (("cpu", "float8", "none"), "unknown dtype 'float8'"),
        (("tpu", "auto", "none"), "unknown device 'tpu'"),
    ],
)
def test_a_bad_choice_is_one_clear_line(arguments, fragment):
    with pytest.raises(SpecdecError, match=fragment) as caught:
        resolve_precision(*arguments)
    assert "\n" not in str(caught.value)
