"""Each model on its own fastest path: the planner's runtime choices (`specdec.planner.models`).

A GGUF draft runs on llama.cpp's fastest settings whatever runs the target (a draft needs no batch invariance), the
target on its exact settings; `draft_runtime` overrides it. The target moves to W8A8 on torch only where this machine
measured both ways and W8A8 is predicted faster; the negative controls keep it on llama.cpp where W8A8 was measured
slower, where its test has not passed here, and where only one way was measured. Tiny GGUF files written here.
"""

from __future__ import annotations

import pytest

import specdec.planner.models as planner_models
import specdec.zoo.kernel_library
from specdec import SpecdecError
from specdec.planner.models import W8A8_TARGET, choose_models, faster_measured_target
from specdec.runtimes import FALLBACK as TORCH
from specdec.runtimes.on_llama_cpp import EXACT_NAME as EXACT
from specdec.runtimes.on_llama_cpp import FASTEST_NAME as FASTEST
from specdec.runtimes.on_llama_cpp import NAME as LLAMA_CPP
from specdec.run_spec import Drafting, ModelChoices, RunSpec
from specdec.runtime.costs import CostProfile, keep_speed, kept_speeds

try:
    from specdec.runtime.llama_cpp import check_runtime
    from specdec.runtime.llama_cpp.tiny_model import write_tiny_quantized_gguf

    usable, refusal = check_runtime()
except (ImportError, SpecdecError) as error:  # pragma: no cover - depends on the environment
    usable, refusal = False, str(error)


@pytest.fixture()
def tiny_files(tmp_path, monkeypatch):
    """A tiny GGUF target and draft that cut text alike (the
    zoo's family check, stood in for: paths have no zoo entry)."""
    monkeypatch.setattr(planner_models, "_one_tokenizer", lambda target, draft: True)
    target = write_tiny_quantized_gguf(tmp_path / "target.gguf", seed=0)
    draft = write_tiny_quantized_gguf(tmp_path / "draft.gguf", seed=1)
    return str(target), str(draft)


@pytest.mark.skipif(not usable, reason=f"the llama.cpp runtime does not run here: {refusal}")
def test_a_gguf_draft_runs_on_llama_cpps_fastest_settings_whatever_runs_the_target(tiny_files):
    target_file, draft_file = tiny_files
    target, draft = choose_models(RunSpec(target_file, draft_file, drafting=Drafting(gamma=3)))
    assert (target.runtime, target.settings, draft.runtime, draft.settings) == (LLAMA_CPP, EXACT, LLAMA_CPP, FASTEST)
    assert "fastest" in draft.precision.kernel and "exact" in target.precision.kernel
    assert "needs no batch invariance" in draft.why

    asked = RunSpec(target_file, draft_file, models=ModelChoices(draft_runtime=TORCH), drafting=Drafting(gamma=3))
    _, on_torch = choose_models(asked)
    assert (on_torch.runtime, on_torch.settings) == (TORCH, "")  # the negative control: asked for torch

    mixed = RunSpec(
        target_file, draft_file, models=ModelChoices(runtime=TORCH, quantization="none"), drafting=Drafting(gamma=3)
    )
    torch_target, fast_draft = choose_models(mixed)
    assert (torch_target.runtime, fast_draft.runtime, fast_draft.settings) == (TORCH, LLAMA_CPP, FASTEST)


def test_a_draft_runtime_that_cannot_be_is_one_line(tmp_path):
    with pytest.raises(SpecdecError, match="unknown runtime 'vulkan'"):
        RunSpec(models=ModelChoices(draft_runtime="vulkan")).check()


def profile(step_s: float, slope: float) -> CostProfile:
    """A target of one-token step `step_s` whose pass over k tokens
    costs 1 + slope * (k - 1) steps, and a draft step of 30 ms."""
    return CostProfile(step_s, 0.030, {k: step_s * (1 + slope * (k - 1)) for k in (1, 2, 4, 8, 16)})


@pytest.fixture()
def kept(tmp_path, monkeypatch):
    """An empty store, and W8A8's test passed here."""
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path))
    monkeypatch.setattr(specdec.zoo.kernel_library, "w8a8_passed_here", lambda: True)
    return RunSpec()


def test_the_target_moves_to_w8a8_only_where_measured_faster(kept):
    spec = kept
    assert faster_measured_target(spec, LLAMA_CPP) is None  # nothing measured: llama.cpp stays
    keep_speed(spec.target, LLAMA_CPP, None, profile(0.067, 0.65))  # exact llama.cpp: 8 rows cost 5.6 steps
    assert faster_measured_target(spec, LLAMA_CPP) is None  # one way measured: llama.cpp stays
    keep_speed(spec.target, W8A8_TARGET, None, profile(0.076, 0.02))  # W8A8: 8 rows cost 1.14 steps
    assert set(kept_speeds(spec.target, None)) == {LLAMA_CPP, W8A8_TARGET}
    why = faster_measured_target(spec, LLAMA_CPP)
    assert why is not None and why.startswith("auto: W8A8 on torch, predicted")


def test_negative_controls_keep_the_target_on_llama_cpp(kept, monkeypatch):
    spec = kept
    keep_speed(spec.target, LLAMA_CPP, None, profile(0.067, 0.65))
    keep_speed(spec.target, W8A8_TARGET, None, profile(0.200, 0.02))  # cheap passes, but a step three times slower
    assert faster_measured_target(spec, LLAMA_CPP) is None
    keep_speed(spec.target, W8A8_TARGET, None, profile(0.076, 0.02))
    assert faster_measured_target(spec, LLAMA_CPP) is not None
    # measured with another thread count
    assert faster_measured_target(RunSpec(models=ModelChoices(threads=1)), LLAMA_CPP) is None
    monkeypatch.setattr(specdec.zoo.kernel_library, "w8a8_passed_here", lambda: False)
    assert faster_measured_target(spec, LLAMA_CPP) is None  # W8A8's test has not passed here
