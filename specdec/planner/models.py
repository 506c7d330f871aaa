"""The planner's first stage: which runtime runs each model, at which precision, and why, decided before anything loads.

Notation: p is the target, q the draft.

A run spec says what a person chose (`specdec.run_spec.ModelChoices`), and "auto" anywhere means "the
fastest exact choice here". This module makes those choices concrete, once, for the target and (when the
draft name asks for one) the draft model: a `ModelPlan` each. Loading (`specdec.pair.loading`) follows
them; nothing else resolves "auto".

    target, draft = choose_models(RunSpec())          # the zoo's GGUF pair on a CPU
    target.describe()   # 'Q4_K_M on llama.cpp (exact settings)'

The runtime (`choose_runtime`): llama.cpp where it was asked for, or, with "auto", where every model is a
GGUF file on a CPU, every precision is left to auto, and this machine's exactness self-test passed; else
torch, whose precision `specdec.kernels.precision` resolves (int8 target and int4 draft on a CPU). On
llama.cpp both run with the exact settings (every row of a pass equals a one-token step, bit for bit:
`specdec.runtime.llama_cpp.settings`).

Not handled here: how a run drafts (`specdec.planner.plan`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from specdec.errors import SpecdecError
from specdec.kernels.precision import AUTO, Precision, gguf_precision, resolve_pair_precision
from specdec.registry import DRAFT_MODEL, needs_of
from specdec.run_spec import RunSpec
from specdec.zoo.fetch import where
from specdec.zoo.gguf_files import gguf_file_type

TORCH, LLAMA_CPP = "torch", "llama.cpp"
EXACT = "exact"                              # llama.cpp's settings for both models (`specdec.runtime.llama_cpp.settings`)


@dataclass(frozen=True)
class ModelPlan:
    """How one model of a run is loaded: its name, role, runtime and precision, and why that runtime, in words."""

    role: str                   # "target" or "draft"
    name: str
    runtime: str                # TORCH or LLAMA_CPP
    precision: Precision        # device, dtype, weights ("Q4_K_M" for a GGUF file on llama.cpp), kernel, why
    settings: str               # llama.cpp's EXACT; "" on torch
    why: str                    # why this runtime: 'auto: GGUF files on a CPU, exact here', 'asked for'

    def describe(self) -> str:
        """'Q4_K_M on llama.cpp (exact settings)', 'float32 int8 on torch (cpu)': what every door prints of a model."""
        where_ = f"llama.cpp ({self.settings} settings)" if self.runtime == LLAMA_CPP else f"torch ({self.precision.device})"
        return f"{self.precision.name.removeprefix('float32 ') if self.runtime == LLAMA_CPP else self.precision.name} on {where_}"

    @property
    def key(self) -> tuple[str, ...]:
        """What a loaded model is kept under: equal plans share one load."""
        return self.role, self.name, self.runtime, self.precision.name, str(self.precision.device), self.settings


def choose_models(spec: RunSpec) -> tuple[ModelPlan, ModelPlan | None]:
    """The target's plan and the draft model's (None when the draft name asks for no draft model: prompt lookup, a head).

    One `SpecdecError` line for a choice that cannot be: a bad precision, llama.cpp asked for what it cannot run.
    """
    spec.check()
    choices = spec.models
    with_draft = DRAFT_MODEL in needs_of(spec.draft)[1]
    precisions = resolve_pair_precision(choices.device, choices.dtype, choices.quantization, choices.draft_quantization, with_draft)
    names = [spec.target] + ([spec.draft] if with_draft else [])
    runtime, why = choose_runtime(choices.runtime, names, precisions[0].device,
                                  (choices.dtype, choices.quantization, choices.draft_quantization))
    plans = []
    for role, name, precision in zip(("target", "draft"), names, precisions):
        if runtime == LLAMA_CPP:
            settings = EXACT
            precision = gguf_precision(gguf_file_type(where(name).location), f"the GGUF file's own weights on llama.cpp ({why})")
        else:
            settings = ""
        plans.append(ModelPlan(role, name, runtime, precision, settings, why))
    return plans[0], (plans[1] if with_draft else None)


def choose_runtime(runtime: str, names: Sequence[str], device: torch.device, precision_choices: Sequence[str]) -> tuple[str, str]:
    """Which runtime loads these models, and why in a few words: llama.cpp where asked, or (auto) for GGUF files on a CPU
    with every precision left to auto and this machine's exactness self-test passed; else torch (one line when asked for what
    cannot be: not a GGUF file, another device, a self-test that failed here)."""
    if runtime == TORCH:
        return TORCH, "asked for"
    gguf = all(where(name).gguf for name in names)
    reasons = [] if gguf else [f"{next(name for name in names if not where(name).gguf)} is not a GGUF file"]
    if device.type != "cpu":
        reasons.append(f"the models run on {device.type} (llama.cpp runs here on the CPU)")
    if runtime == AUTO and any(choice != AUTO for choice in precision_choices):
        return TORCH, "a dtype or weights were asked for"
    if not reasons:
        from specdec.runtime.llama_cpp import check_runtime

        try:
            usable, refusal = check_runtime()
        except SpecdecError as error:                        # the library is not installed, or does not load here
            usable, refusal = False, str(error)
        if usable:
            return LLAMA_CPP, "asked for" if runtime == LLAMA_CPP else "auto: GGUF files on a CPU, exact here"
        reasons.append(f"its exactness self-test failed here ({refusal})")
    if runtime == LLAMA_CPP:
        raise SpecdecError(f"the llama.cpp runtime cannot run this pair: {'; '.join(reasons)}: use --runtime torch")
    return TORCH, f"auto: llama.cpp not used, {'; '.join(reasons)}" if gguf and device.type == "cpu" else "auto"
