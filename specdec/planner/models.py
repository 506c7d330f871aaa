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
from specdec.engine.contract import DraftCosts
from specdec.kernels.precision import AUTO, Precision, gguf_precision, resolve_pair_precision, resolve_precision
from specdec.registry import DRAFT_MODEL, needs_of
from specdec.run_spec import RunSpec
from specdec.zoo.fetch import where
from specdec.zoo.gguf_files import gguf_file_type
from specdec.zoo.kernel_library import refuse_w8a8_by_cpu
from specdec.zoo.loading import same_tokenizer_files

TORCH, LLAMA_CPP = "torch", "llama.cpp"
EXACT = "exact"                              # llama.cpp's settings for a target (`specdec.runtime.llama_cpp.settings.EXACT`)
FASTEST = "fastest"                          # ... for a draft, which needs no batch invariance (`settings.FASTEST`)
W8A8_TARGET = "torch w8a8"                   # the other exact way a GGUF target runs on a CPU: W8A8 weights on torch


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
    device = precisions[0].device
    if device.type == "cpu" and "w8a8" in (choices.quantization, choices.draft_quantization if with_draft else None):
        refuse_w8a8_by_cpu()                 # before where(): a CPU that can never run it says so, not "fetch the model first"
    # a draft that is no GGUF file keeps the pair on torch, as before drafts could run elsewhere than their target
    together = [spec.draft] if with_draft and not where(spec.draft).gguf else []
    runtime, why = choose_runtime(choices.runtime, [spec.target] + together, device, (choices.dtype, choices.quantization))
    target_precision = precisions[0]
    if runtime == LLAMA_CPP and choices.runtime == AUTO:
        faster = faster_measured_target(spec)
        if faster is not None:
            runtime, why = TORCH, faster
            target_precision = resolve_precision(device, choices.dtype, "w8a8", "target")
    if runtime == LLAMA_CPP:
        target_precision = gguf_precision(gguf_file_type(where(spec.target).location), f"the GGUF file's own weights on llama.cpp ({why})")
    target = ModelPlan("target", spec.target, runtime, target_precision, EXACT if runtime == LLAMA_CPP else "", why)
    if not with_draft:
        return target, None
    draft_runtime, draft_why = choose_draft_runtime(spec, device, runtime)
    draft_precision = precisions[1]
    if draft_runtime == LLAMA_CPP:
        draft_precision = gguf_precision(gguf_file_type(where(spec.draft).location), f"the GGUF file's own weights on llama.cpp "
                                         f"({draft_why})", FASTEST)
    return target, ModelPlan("draft", spec.draft, draft_runtime, draft_precision, FASTEST if draft_runtime == LLAMA_CPP else "",
                             draft_why)


def choose_draft_runtime(spec: RunSpec, device: torch.device, target_runtime: str) -> tuple[str, str]:
    """Where the draft model runs, and why: llama.cpp's fastest settings for a GGUF draft on a CPU that cuts text as the target
    does (a draft needs no batch invariance: `specdec.runtime.llama_cpp.settings`), whatever runs the target; else torch."""
    choices = spec.models
    if choices.draft_runtime == TORCH:
        return TORCH, "asked for"
    gguf = where(spec.draft).gguf
    if choices.draft_runtime == AUTO:
        if not gguf or device.type != "cpu":
            return TORCH, "auto: not a GGUF file on a CPU"
        if AUTO != choices.draft_quantization or choices.dtype != AUTO:
            return TORCH, "auto: a dtype or weights were asked for"
        if not _one_tokenizer(spec.target, spec.draft):
            return TORCH, "auto: its tokenizer is not the target's"
    elif not gguf or device.type != "cpu":
        raise SpecdecError(f"the llama.cpp runtime runs GGUF files on the CPU, and draft {spec.draft} is "
                           f"{'not a GGUF file' if not gguf else 'to run on ' + device.type}: use --draft-runtime torch")
    if target_runtime != LLAMA_CPP:                         # the target's choice did not check the library yet
        from specdec.runtime.llama_cpp import check_runtime

        try:
            usable, refusal = check_runtime()
        except SpecdecError as error:
            usable, refusal = False, str(error)
        if not usable:
            if choices.draft_runtime == LLAMA_CPP:
                raise SpecdecError(f"the llama.cpp runtime cannot run here ({refusal}): use --draft-runtime torch")
            return TORCH, "auto: llama.cpp does not run here"
    return LLAMA_CPP, "asked for" if choices.draft_runtime == LLAMA_CPP else "auto: its fastest kernels, a draft needs no batch invariance"


def _one_tokenizer(target: str, draft: str) -> bool:
    """Whether the zoo says (one family) or the converted copies show (the same files) that two models cut text alike."""
    entries = [where(name).entry for name in (target, draft)]
    return (None not in entries and entries[0].family == entries[1].family) or same_tokenizer_files(target, draft)


def faster_measured_target(spec: RunSpec) -> str | None:
    """Why the target runs as W8A8 on torch instead of on llama.cpp, where this machine measured both (`specdec.runtime.costs.
    kept_speeds`), W8A8 still passes its test here, and it is predicted faster; None where llama.cpp stays (the prior: it loads
    in seconds, W8A8 converts the weights first)."""
    from specdec.planner.drafting import ASSUMED_ALPHA, best_chain
    from specdec.runtime.costs import draft_costs, kept_speeds
    from specdec.zoo.kernel_library import w8a8_passed_here

    kept = kept_speeds(spec.target, spec.models.threads)
    if LLAMA_CPP not in kept or W8A8_TARGET not in kept or not w8a8_passed_here():
        return None
    rates = {option: predicted_rate(draft_costs(profile, 0.05), profile.target_step_s, ASSUMED_ALPHA, best_chain)
             for option, profile in kept.items() if option in (LLAMA_CPP, W8A8_TARGET)}
    if rates[W8A8_TARGET] <= rates[LLAMA_CPP]:
        return None
    return (f"auto: W8A8 on torch, predicted {rates[W8A8_TARGET]:.1f} tok/s against llama.cpp's {rates[LLAMA_CPP]:.1f} "
            f"(both measured here, a draft agreeing {ASSUMED_ALPHA:.0%} of the time)")


def predicted_rate(costs: DraftCosts, step_s: float, alpha: float, best_chain) -> float:
    """Tokens a second a target of one-token step `step_s` is predicted to give: its best chain at `alpha`, or plain steps.

    >>> from specdec.planner.drafting import best_chain
    >>> round(predicted_rate(DraftCosts(0.5, 0.05, (1.0, 1.05, 1.1, 1.2, 1.3)), 0.1, 0.9, best_chain), 1)
    12.9
    """
    return max(1.0, best_chain(costs, alpha, max_gamma=max(1, len(costs.verify) - 1))[1]) / step_s


def choose_runtime(runtime: str, names: Sequence[str], device: torch.device, precision_choices: Sequence[str]) -> tuple[str, str]:
    """Which runtime loads these models (the target, and a draft that is no GGUF file), and why in a few words: llama.cpp where
    asked, or (auto) for GGUF files on a CPU
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
