"""Loading a pair as the planner says: each model on its runtime and precision, the tokenizers, what the method needs.

Notation: p is the target, q the draft, c a draft step's cost over a target step, v(k) a verification pass
over k drafted tokens in target steps.

    spec = RunSpec(target="qwen2.5-coder-1.5b", draft="qwen2.5-coder-0.5b")
    pair = load_spec(spec)          # checked first, planned (`specdec.planner.choose_models`), then loaded
    pair.models[0].describe()       # 'Q4_K_M on llama.cpp (exact settings)'

`load_pair(target, draft, ...)` is the same with the run spec's fields as arguments; `load_model` loads one
model on either runtime, for your own code. Where the target runs on llama.cpp, verification is
compute-bound on a CPU with few cores, so c and v(k) are timed at load once per machine and kept
(`specdec.runtime.costs.measured_costs`); the planner prices rounds with them.

Not handled here: what a run drafts (`specdec.planner`), generating (`specdec.pair.running`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from specdec.drafting.cross_tokenizer import whole_character_tokens
from specdec.engine.costs import CostProfile
from specdec.engine.inputs import Decoding
from specdec.engine.model import Model
from specdec.errors import SpecdecError
from specdec.pair.measuring import cost_key, keep_load_time, load_key
from specdec.pair.resources import LoadedPair
from specdec.planner import ModelPlan, choose_models
from specdec.planner.models import W8A8_TARGET
from specdec.registry import (
    CORPUS,
    DRAFT_MODEL,
    DRAFT_TOKENIZER,
    METHODS,
    RESOURCES,
    TARGET,
    TOKENIZER,
    WHOLE,
    Resources,
    corpus_files,
    needs_of,
)
from specdec.run_spec import Drafting, ModelChoices, RunSpec
from specdec.runtime.costs import keep_speed, measured_costs
from specdec.runtimes import FALLBACK, RUNTIMES, LoadRequest, choose_runtime, model_file, runtime_of
from specdec.store import Progress, Reporter
from specdec.zoo.gguf_files import parsed_once
from specdec.zoo.kernel_library import require_w8a8
from specdec.zoo.loading import TOKENIZERS, load_tokenizer, same_tokenizer, same_tokenizer_files
from specdec.zoo.loading import load_model as load_torch_model


def load_spec(
    spec: RunSpec, progress: Callable[[str], None] | None = None, steps: Callable[[Progress], None] | None = None
) -> LoadedPair:
    """The pair a run spec names, each model as the planner chose (checked first: a bad choice costs no load).

    `progress` gets a line per model; `steps` a `specdec.store.Progress` per tokenizer read, GGUF tensor dequantized and
    layer quantized, for a progress bar with the time left.
    """
    models = choose_models(spec)
    say = progress or (lambda message: None)
    _, needs = needs_of(spec.draft)
    _check_before_loading(spec, models, needs, say)
    texts = corpus_files(spec.drafting.corpus)
    seconds: dict[str, float] = {}
    with parsed_once():  # each GGUF header parsed once for the tokenizers and both models
        resources = _tokenizers(spec, models[1] is not None, seconds, steps)
        loaded = []
        for planned in models:
            if planned is not None:
                model, planned = _load_planned(planned, spec.models.threads, say, steps, seconds)
                resources[TARGET if planned.role == "target" else DRAFT_MODEL] = model
            loaded.append(planned)
        models = (loaded[0], loaded[1])
    _method_resources(spec, needs, resources, say, seconds)
    if texts:
        resources[CORPUS] = [resources[TOKENIZER](text).input_ids for text in texts]
    costs, key = _target_costs(spec, models, resources, say, seconds)
    keep_load_time(load_key(spec.pair_name, models), seconds)
    return LoadedPair(spec.target, spec.draft, resources, models, seconds, costs=costs, cost_key=key)


def one_token_passes(name: str, planned: ModelPlan, model: Model) -> str | None:
    """One line when the target's self-test found no pass longer than one token exact here (k* = 1), else None.

    Such a target runs plain: every pass is cut into one-token steps (`specdec.runtime.pytorch.cut`), so the output is
    still the target's own, and no drafted token can be checked for less than a step. The line names the paths whose
    longer passes passed here."""
    if getattr(model, "k_star", None) != 1:
        return None
    from specdec.kernels.batch_invariance import passing_paths

    passed = passing_paths()
    where = f"paths that passed here: {', '.join(passed)}" if passed else "try --quantization int8, --runtime llama.cpp"
    return (
        f"{name} in {planned.precision.name} on torch verifies one token a pass on this machine ({model.rows_check}),"
        f" so it runs plain, exactly, and speculation cannot pay: {where}"
    )


def _check_before_loading(
    spec: RunSpec, models: Sequence[ModelPlan | None], needs: Sequence[str], say: Callable[[str], None]
) -> None:
    """What can be refused before anything loads: a W8A8 kernel
    that fails this machine's test, a missing resource (a head)."""
    if any(planned is not None and planned.precision.weights == "w8a8" for planned in models):
        require_w8a8(say)  # before anything is read: its kernel must pass this machine's test
    for need in needs:
        if need in RESOURCES and RESOURCES[need].check is not None:
            RESOURCES[need].check(spec.draft, spec.target)  # a missing head: refused before anything loads


def _method_resources(
    spec: RunSpec, needs: Sequence[str], resources: Resources, say: Callable[[str], None], seconds: dict[str, float]
) -> None:
    """Into `resources`, what the method needs beyond the models (`specdec.registry.RESOURCES`: a head, ...), and for a
    draft with its own tokenizer the draft tokens that are whole characters; the seconds each took into `seconds`."""
    if DRAFT_TOKENIZER in resources:
        say(f"{spec.draft} has its own tokenizer: its drafted text will be re-encoded for {spec.target}")
        start = time.perf_counter()
        draft_tokenizer, rows = resources[DRAFT_TOKENIZER], resources[DRAFT_MODEL].vocab_size
        resources[WHOLE] = whole_character_tokens(draft_tokenizer, min(rows, len(draft_tokenizer)))
        seconds[WHOLE] = time.perf_counter() - start
    for need in needs:
        if need in RESOURCES:
            say(f"Loading the {need} for {spec.target} …")
            start = time.perf_counter()
            resources[need] = RESOURCES[need].load(
                spec.draft, spec.target, resources[TARGET], spec.models.draft_quantization
            )
            seconds[need] = time.perf_counter() - start


def _target_costs(
    spec: RunSpec,
    models: tuple[ModelPlan, ModelPlan | None],
    resources: Resources,
    say: Callable[[str], None],
    seconds: dict[str, float],
) -> tuple[CostProfile | None, dict[str, object] | None]:
    """c and v(k) measured on this machine, and what they are kept under, for a target whose costs are measured at load
    (`target_option`); (None, None) for any other."""
    option = target_option(models[0])
    if option is None:
        return None, None
    start = time.perf_counter()  # verification is compute-bound there: time c and v(k), once per machine
    key = cost_key(resources, models[0].runtime) | (
        {} if RUNTIMES[models[0].runtime].measures_costs else {"precision": option}
    )
    costs = measured_costs(
        resources[TARGET],
        resources.get(DRAFT_MODEL),
        key,
        timing=lambda: say("Timing a draft step and the verification passes (kept for next time) …"),
    )
    keep_speed(spec.target, option, spec.models.threads, costs)  # what the planner weighs the target's runtimes by
    seconds["costs"] = time.perf_counter() - start
    return costs, key


def target_option(planned: ModelPlan) -> str | None:
    """How a CPU target runs whose costs are measured at load (`W8A8_TARGET`, or a runtime that measures them:
    llama.cpp), None for any other: verification is compute-bound on a CPU with few cores, so what a pass over k tokens
    costs decides the drafting."""
    if RUNTIMES[planned.runtime].measures_costs:
        return planned.runtime
    if planned.precision.weights == "w8a8" and planned.precision.device.type == "cpu":
        return W8A8_TARGET
    return None


def _tokenizers(
    spec: RunSpec, with_draft: bool, seconds: dict[str, float], steps: Callable[[Progress], None] | None
) -> Resources:
    """The target's tokenizer, and the draft's own where it cuts text differently (seconds each from a GGUF file on a
    first load: a stage of its own)."""
    start = time.perf_counter()
    names = [spec.target] + ([spec.draft] if with_draft and not same_tokenizer_files(spec.target, spec.draft) else [])
    report, tokenizers = Reporter(spec.target, steps), []
    for done, name in enumerate(names):
        report(TOKENIZERS, done, len(names))
        tokenizers.append(load_tokenizer(name))
    report(TOKENIZERS, len(names), len(names))
    resources: Resources = {TOKENIZER: tokenizers[0]}
    if len(tokenizers) > 1 and not same_tokenizer(tokenizers[0], tokenizers[1]):
        resources[DRAFT_TOKENIZER] = tokenizers[1]
    seconds["tokenizers"] = time.perf_counter() - start
    return resources


def _load_planned(
    planned: ModelPlan,
    threads: int | None,
    say: Callable[[str], None],
    steps: Callable[[Progress], None] | None,
    seconds: dict[str, float],
) -> tuple[Model, ModelPlan]:
    """One model, on the runtime and at the precision its plan says; and the plan as loaded ("auto" weights that a model
    cannot take leave it as it is, and its plan then says so)."""
    say(f"Loading {planned.role} {planned.name} …")
    start = time.perf_counter()
    request = LoadRequest(
        planned.name,
        planned.role,
        planned.precision,
        planned.settings,
        threads,
        model_file(planned.name).location,
        lambda: load_torch_model(planned.name, precision=planned.precision, role=planned.role, progress=steps),
    )
    model, precision = RUNTIMES[planned.runtime].load(request)
    planned = replace(planned, precision=precision)
    seconds[planned.role] = time.perf_counter() - start
    note = one_token_passes(planned.name, planned, model) if planned.role == "target" else None
    say(  # before the draft loads, before any token: a target that verifies one token a pass says so here
        f"Loaded {planned.role} {planned.name} in {seconds[planned.role]:.1f} s ({planned.runtime}: {planned.why})"
        + (f"; {note}" if note else "")
    )
    return model, planned


def load_pair(
    target_name: str,
    draft_name: str,
    device: str = "auto",
    dtype: str = "auto",
    progress: Callable[[str], None] | None = None,
    draft_quantization: str = "none",
    quantization: str = "none",
    steps: Callable[[Progress], None] | None = None,
    corpus: Sequence[str] = (),
    runtime: str = "auto",
    threads: int | None = None,
    draft_runtime: str = "auto",
) -> LoadedPair:
    """`load_spec` of the run spec these arguments describe (`specdec.run_spec.ModelChoices`): the target, its tokenizer
    and what the draft name asks for (`specdec.registry.needs_of`). `quantization` is the target's weights,
    `draft_quantization` the draft's: "none", "int8", "int4" (CPU only), "w8a8", or "auto" (the planner's choice). The
    draft's precision changes c, never the output; the target's changes the target itself, and exactness then holds
    against that target as loaded. `runtime` is the target's, `draft_runtime` the draft model's (auto: llama.cpp's
    fastest settings for a GGUF draft on a CPU)."""
    if target_name in METHODS:
        raise SpecdecError(f"{target_name} can only be the draft: give a model as the target")
    choices = ModelChoices(device, dtype, quantization, draft_quantization, runtime, threads, draft_runtime)
    spec = RunSpec(target_name, draft_name, choices, Drafting(corpus=tuple(corpus)), Decoding())
    return load_spec(spec, progress, steps)


def load_model(
    name_or_path: str,
    device: str = "auto",
    dtype: str = "auto",
    quantization: str = "none",
    runtime: str = FALLBACK,
    threads: int | None = None,
    **options,
) -> object:
    """A causal LM from a zoo name, hub id, folder or .gguf file: on torch (default) a transformers model in eval mode
    (`specdec.zoo.loading.load_model`, which takes `options`); on another runtime of `specdec.runtimes`
    (`runtime="llama.cpp"`: the GGUF file mapped into llama.cpp's own kernels with the exact settings) a model behind
    `specdec.engine.model` that the generate functions take alike.

        target = specdec.load_model("qwen2.5-coder-1.5b", runtime="llama.cpp")
        speculative_generate(target, specdec.PromptLookupDrafter(), input_ids, temperature=0)
    """
    entry = runtime_of(runtime)
    if entry.load_for_user is not None:
        return entry.load_for_user(name_or_path, device, dtype, quantization, **options)
    if entry.own_weights and ((device, dtype, quantization) != ("auto", "auto", "none") or options):
        raise SpecdecError(
            f"the {runtime} runtime runs a model file's own weights: drop device, dtype and quantization"
        )
    import torch

    file = model_file(name_or_path)
    choose_runtime(runtime, [file], torch.device("cpu"), ())  # one line if it cannot run this model here
    settings = entry.settings[0]
    precision = entry.precision_of(file, "asked for", settings) if entry.precision_of is not None else None
    request = LoadRequest(
        name_or_path,
        "target",
        precision,
        settings,
        threads,
        file.location,
        lambda: load_torch_model(name_or_path, device, dtype, quantization, **options),
    )
    return entry.load(request)[0]
