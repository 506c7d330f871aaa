"""The planner's first stage: which runtime runs each model, at which precision, and why, decided before anything loads.

Notation: p is the target, q the draft.

A run spec says what a person chose (`specdec.run_spec.ModelChoices`), and "auto" anywhere means "the
fastest exact choice here". This module makes those choices concrete, once, for the target and (when the
draft name asks for one) the draft model: a `ModelPlan` each. Loading (`specdec.pair.loading`) follows
them; nothing else resolves "auto".

    target, draft = choose_models(RunSpec())          # the zoo's GGUF pair on a CPU
    target.describe()   # 'Q4_K_M on llama.cpp (exact settings)'

The runtime: the registry's (`specdec.runtimes.choose_runtime`), which loops over the registered runtimes:
the one asked for, or with "auto" the first that runs the models here (llama.cpp for GGUF files on a CPU where
every precision is left to auto and this machine's exactness self-test passed), else torch, whose precision
`specdec.kernels.precision` resolves (int8 target and int4 draft on a CPU). A target on llama.cpp runs with
the exact settings (every row of a pass equals a one-token step, bit for bit: `specdec.runtime.llama_cpp.settings`),
a draft with llama.cpp's fastest.

Not handled here: how a run drafts (`specdec.planner.plan`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


from specdec.engine.contract import DraftCosts
from specdec.kernels.precision import AUTO, Precision, resolve_pair_precision, resolve_precision
from specdec.registry import DRAFT_MODEL, needs_of
from specdec.run_spec import RunSpec
from specdec.runtimes import FALLBACK, RUNTIMES, ModelFile, choose_draft_runtime, choose_runtime, model_file
from specdec.zoo.fetch import where
from specdec.zoo.kernel_library import refuse_w8a8_by_cpu
from specdec.zoo.loading import same_tokenizer_files

W8A8_TARGET = "torch w8a8"  # the other exact way a GGUF target runs on a CPU: W8A8 weights on torch


@dataclass(frozen=True)
class ModelPlan:
    """How one model of a run is loaded: its name, role, runtime and precision, and why that runtime, in words."""

    role: str  # "target" or "draft"
    name: str
    runtime: str  # a name of `specdec.runtimes.RUNTIMES`
    precision: Precision  # device, dtype, weights ("Q4_K_M" for a GGUF file on llama.cpp), kernel, why
    settings: str  # the runtime's settings for this role ("exact", "fastest" on llama.cpp; "" on torch)
    why: str  # why this runtime: 'auto: GGUF files on a CPU, exact here', 'asked for'

    def describe(self) -> str:
        """'Q4_K_M on llama.cpp (exact settings)', 'float32 int8 on torch (cpu)': what every door prints of a model."""
        runtime = RUNTIMES[self.runtime]
        return f"{runtime.short_name(self.precision)} on {runtime.where(self.precision, self.settings)}"

    @property
    def key(self) -> tuple[str, ...]:
        """What a loaded model is kept under: equal plans share one load."""
        return self.role, self.name, self.runtime, self.precision.name, str(self.precision.device), self.settings


def choose_models(spec: RunSpec) -> tuple[ModelPlan, ModelPlan | None]:
    """The target's plan and the draft model's (None when the draft name asks for no draft model: prompt lookup, a
    head).

    One `SpecdecError` line for a choice that cannot be: a bad precision, a runtime asked for what it cannot run.
    """
    spec.check()
    choices = spec.models
    with_draft = DRAFT_MODEL in needs_of(spec.draft)[1]
    precisions = resolve_pair_precision(
        choices.device, choices.dtype, choices.quantization, choices.draft_quantization, with_draft
    )
    device = precisions[0].device
    if device.type == "cpu" and "w8a8" in (choices.quantization, choices.draft_quantization if with_draft else None):
        refuse_w8a8_by_cpu()  # before where(): a CPU that can never run it says so, not "fetch the model first"
    target_file = model_file(spec.target)
    draft_file = model_file(spec.draft) if with_draft else None
    # a draft that is no GGUF file keeps the pair on one runtime, as before drafts could run elsewhere than their target
    together = [draft_file] if draft_file is not None and not draft_file.gguf else []
    runtime, why = choose_runtime(
        choices.runtime, [target_file, *together], device, (choices.dtype, choices.quantization)
    )
    target_precision = precisions[0]
    if RUNTIMES[runtime].measures_costs and choices.runtime == AUTO:
        faster = faster_measured_target(spec, runtime)
        if faster is not None:
            runtime, why = FALLBACK, faster
            target_precision = resolve_precision(device, choices.dtype, "w8a8", "target")
    target = _planned("target", target_file, runtime, target_precision, why)
    if draft_file is None:
        return target, None
    draft_runtime, draft_why = choose_draft_runtime(
        choices.draft_runtime,
        draft_file,
        device,
        AUTO != choices.draft_quantization or choices.dtype != AUTO,
        lambda: _one_tokenizer(spec.target, spec.draft),
        target_runtime=runtime,
    )
    draft_precision = precisions[1]
    assert draft_precision is not None  # resolved for a draft model: with_draft above
    return target, _planned("draft", draft_file, draft_runtime, draft_precision, draft_why)


def _planned(role: str, file: ModelFile, runtime_name: str, precision: Precision, why: str) -> ModelPlan:
    """A model's plan on its runtime: the runtime's settings for
    the role, and a file's own weights where it runs those."""
    runtime = RUNTIMES[runtime_name]
    settings = runtime.settings[role == "draft"]
    if runtime.own_weights and runtime.precision_of is not None:
        precision = runtime.precision_of(file, why, settings)
    return ModelPlan(role, file.name, runtime_name, precision, settings, why)


def _one_tokenizer(target: str, draft: str) -> bool:
    """Whether the zoo says (one family) or the converted copies
    show (the same files) that two models cut text alike."""
    entries = [where(name).entry for name in (target, draft)]
    first, second = entries
    return (first is not None and second is not None and first.family == second.family) or same_tokenizer_files(
        target, draft
    )


def faster_measured_target(spec: RunSpec, runtime: str) -> str | None:
    """Why the target runs as W8A8 on torch instead of on llama.cpp, where this machine measured both
    (`specdec.runtime.costs. kept_speeds`), W8A8 still passes its test here, and it is predicted faster; None where
    llama.cpp stays (the prior: it loads in seconds, W8A8 converts the weights first)."""
    from specdec.planner.drafting import ASSUMED_ALPHA
    from specdec.planner.pricing import best_chain
    from specdec.runtime.costs import draft_costs, kept_speeds
    from specdec.zoo.kernel_library import w8a8_passed_here

    kept = kept_speeds(spec.target, spec.models.threads)
    if runtime not in kept or W8A8_TARGET not in kept or not w8a8_passed_here():
        return None
    rates = {
        option: predicted_rate(draft_costs(profile, 0.05), profile.target_step_s, ASSUMED_ALPHA, best_chain)
        for option, profile in kept.items()
        if option in (runtime, W8A8_TARGET)
    }
    if rates[W8A8_TARGET] <= rates[runtime]:
        return None
    return (
        f"auto: W8A8 on torch, predicted {rates[W8A8_TARGET]:.1f} tok/s against {runtime}'s {rates[runtime]:.1f} "
        f"(both measured here, a draft agreeing {ASSUMED_ALPHA:.0%} of the time)"
    )


def predicted_rate(
    costs: DraftCosts, step_s: float, alpha: float, best_chain: Callable[..., tuple[int, float]]
) -> float:
    """Tokens a second a target of one-token step `step_s` is predicted to give: its best chain at `alpha`, or plain
    steps.

    >>> from specdec.planner.pricing import best_chain
    >>> round(predicted_rate(DraftCosts(0.5, 0.05, (1.0, 1.05, 1.1, 1.2, 1.3)), 0.1, 0.9, best_chain), 1)
    12.9
    """
    return float(max(1.0, best_chain(costs, alpha, max_gamma=max(1, len(costs.verify) - 1))[1])) / step_s
