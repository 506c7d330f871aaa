"""Loading models and tokenizers, devices and dtypes, and the checks that refuse unusable pairs."""

import time

import pytest
import torch

import specdec.kernels.devices
import specdec.zoo.fetch
from specdec import SpecdecError, check_same_tokenizer, load_model, load_tokenizer, resolve_device, resolve_dtype
from specdec.pair.running import encode_prompt
from specdec.pair.loading import load_pair
from tiny_models import save_tiny_model, tiny_model, tiny_pair, tiny_tokenizer


def test_devices():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type in specdec.kernels.devices.available_devices()
    if not torch.cuda.is_available():
        with pytest.raises(SpecdecError, match="not available"):
            resolve_device("cuda")
    with pytest.raises(SpecdecError, match="unknown device"):
        resolve_device("warp-drive")


def test_dtypes():
    assert resolve_dtype("auto", "cpu") == torch.float32
    assert resolve_dtype("bfloat16", "cpu") == torch.bfloat16
    assert resolve_dtype(torch.float16) == torch.float16
    with pytest.raises(SpecdecError, match="unknown dtype"):
        resolve_dtype("float8")


def test_load_a_local_folder_in_the_asked_dtype(tmp_path):
    folder = save_tiny_model(tmp_path / "m", tiny_model("llama"))
    model = load_model(str(folder), device="cpu", dtype="bfloat16")
    assert model.dtype == torch.bfloat16 and not model.training
    from specdec.kernels.packed_linear import PackedLinear, packable

    if packable(torch.nn.Linear(2, 2).to(torch.bfloat16)):  # bfloat16 on a CPU: laid out once for oneDNN
        assert type(model.lm_head) is PackedLinear
    assert type(load_model(str(folder), device="cpu", dtype="float32", role="draft").lm_head) is torch.nn.Linear
    if packable(torch.nn.Linear(2, 2), (torch.float32,)):  # a float32 target: packed, its rows proved at load
        assert type(load_model(str(folder), device="cpu", dtype="float32").lm_head) is PackedLinear
    assert load_tokenizer(str(folder)).decode([2, 3]) == "w2 w3"


def test_missing_paths_fail_clearly(tmp_path):
    with pytest.raises(SpecdecError, match="no model folder"):
        load_model(str(tmp_path / "nothing-here"))
    with pytest.raises(SpecdecError, match="no GGUF file"):
        load_model(str(tmp_path / "model.gguf"))


def test_unreachable_hub_fails_at_once(monkeypatch):
    monkeypatch.setattr(specdec.zoo.fetch, "hub_reachable", lambda: False)
    start = time.perf_counter()
    with pytest.raises(SpecdecError, match="model hub cannot be reached"):
        load_model("some-org/some-model")
    assert time.perf_counter() - start < 10  # not transformers' half-minute of retries


def test_same_tokenizer_passes_and_different_is_refused():
    check_same_tokenizer(tiny_tokenizer(24), tiny_tokenizer(24))
    with pytest.raises(SpecdecError, match="different tokenizers"):
        check_same_tokenizer(tiny_tokenizer(24), tiny_tokenizer(30), "big", "small")


def test_load_pair_with_prompt_lookup(tmp_path):
    target, _ = tiny_pair("gpt2")  # (transformers reads a qwen2 folder's tokenizer as Qwen's own BPE class)
    folder = str(save_tiny_model(tmp_path / "t", target))
    pair = load_pair(folder, "prompt-lookup", device="cpu")
    assert pair.draft is None and pair.plan(pair.spec()).drafting.drafter.name == "prompt-lookup"
    assert pair.eos_token_ids == [1]  # the tokenizer's </s>
    assert encode_prompt(pair.tokenizer, "w2 w3").tolist() == [[2, 3]]
    with pytest.raises(SpecdecError, match="only be the draft"):
        load_pair("prompt-lookup", folder)


def test_load_pair_with_quantized_weights(tmp_path):
    target, draft = tiny_pair("llama", vocab_size=32)
    target_path, draft_path = str(save_tiny_model(tmp_path / "t", target)), str(save_tiny_model(tmp_path / "d", draft))
    pair = load_pair(target_path, draft_path, device="cpu", quantization="int8", draft_quantization="int4")
    assert (pair.quantization, pair.draft_quantization) == ("int8", "int4")
    # an int4 draft runs where its kernel is fast
    assert (pair.precision, pair.draft_precision) == ("float32 int8", "bfloat16 int4")
    assert (
        type(pair.target.module.lm_head).__name__ == "Int8Linear"
        and type(pair.draft.module.lm_head).__name__ == "Int4Linear"
    )
    auto = load_pair(target_path, draft_path, device="cpu", quantization="auto", draft_quantization="auto")
    assert (auto.precision, auto.draft_precision) == ("float32 int8", "bfloat16 int4")
    plain = load_pair(target_path, draft_path, device="cpu")  # the Python API's default: as saved
    assert (plain.precision, plain.draft_precision) == ("float32", "float32")
    with pytest.raises(SpecdecError, match="unknown quantization 'int3'"):
        load_pair(target_path, draft_path, draft_quantization="int3")


def test_quantizing_a_model_it_cannot_handle_is_refused_unless_auto(tmp_path):
    target, draft = tiny_pair("gpt2")  # GPT-2 keeps its weights in Conv1D layers
    target_path, draft_path = str(save_tiny_model(tmp_path / "t", target)), str(save_tiny_model(tmp_path / "d", draft))
    with pytest.raises(
        SpecdecError, match="gpt2 model keeps most of its weights elsewhere .*Conv1D.*use quantization none"
    ):
        load_pair(target_path, draft_path, device="cpu", quantization="int8")
    pair = load_pair(target_path, draft_path, device="cpu", quantization="auto", draft_quantization="auto")
    assert (pair.quantization, pair.draft_quantization) == ("none", "none")  # auto keeps it as it is, and says so
