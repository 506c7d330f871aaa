"""The runtimes, as a registry like the drafting methods: each says what it can run here, how it loads, how it reads.

Notation: p is the target, q the draft.

A *runtime* runs a model behind the model contract (`specdec.engine.model`): transformers on torch, GGUF files on
llama.cpp's own kernels. Each is one `Runtime` entry, registered once; the planner (`specdec.planner.models`), loading
(`specdec.pair.loading`), the run spec's check, the command line's choices and the dashboard's sidebar loop over
`RUNTIMES` and never compare a runtime's name. Adding one is a module with its entry and one `register`:

    register(Runtime(
        name="my-runtime", help="what it runs",
        load=lambda request: (MyModel(request.location), request.precision),
        where=lambda precision, settings: f"my-runtime ({precision.device})"))

Then `specdec run --runtime my-runtime` plans, loads and runs on it (`tests/test_runtimes.py` does exactly this).

What an entry says:
- `kind(files, device)`: why these model files on that device are not its kind (a GGUF runtime told of a folder of
  safetensors: "auto" passes over it without a word), cheap; `usable_here()`: why it cannot run on this machine at all
  (llama.cpp's exactness self-test failed here), asked only of a runtime whose kind the models are;
- `load(request)`: the model, and its precision as loaded;
- `where(precision, settings)`: how a plan's header names it ("llama.cpp (exact settings)", "torch (cpu)");
- `own_weights`: whether it runs a file's own weights (then `precision_of` says which, and a dtype or quantization
  asked for rules it out of "auto"); `settings`: the settings a target and a draft run with;
- `auto_rank`: the order "auto" tries the runtimes in; the `FALLBACK` (torch) runs whatever the others refuse.

The choice itself: `choose_runtime` and `choose_draft_runtime` below, which the planner calls before anything loads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from specdec.errors import SpecdecError
from specdec.kernels.precision import Precision

AUTO = "auto"


@dataclass(frozen=True)
class ModelFile:
    """What the planner knows of a model before it loads: its name, where it is, and whether it is one GGUF file."""

    name: str
    location: Path | None
    gguf: bool


@dataclass(frozen=True)
class LoadRequest:
    """What loading one planned model needs: `build_module` builds the torch module (the zoo's conversion) for a runtime
    that runs one; a runtime that maps a file reads `location` instead."""

    name: str
    role: str  # "target" or "draft"
    precision: Precision
    settings: str
    threads: int | None
    location: Path | None
    build_module: Callable[[], torch.nn.Module]


@dataclass(frozen=True)
class Runtime:
    """One runtime (module docstring)."""

    name: str
    help: str
    load: Callable[[LoadRequest], tuple[object, Precision]]
    where: Callable[[Precision, str], str]
    # why they are not its kind
    kind: Callable[[Sequence[ModelFile], torch.device], list[str]] = lambda files, device: []
    # why it cannot run on this machine (a failed self-test), or None
    usable_here: Callable[[], str | None] = lambda: None
    own_weights: bool = False
    precision_of: Callable[[ModelFile, str, str], Precision] | None = None  # (file, why, settings) -> its own weights
    settings: tuple[str, str] = ("", "")  # the settings a target runs with, a draft's
    auto_rank: int = 50
    auto_why: tuple[str, str] = ("auto", "auto")  # why auto chose it, for a target and for a draft
    not_its_kind: str = ""  # "not a GGUF file on a CPU": why auto passed over it for a draft
    drafts_with_other_tokenizers: bool = True  # False: a draft on it must cut text as its target does
    measures_costs: bool = False  # a target on it has c and v(k) timed at load (compute-bound passes)
    read_off: Callable[[object, str], tuple[Precision, str]] | None = None  # (model, why) -> its precision, settings
    short_name: Callable[[Precision], str] = field(default=lambda precision: precision.name)
    # `specdec.load_model` on it: (name, device, dtype, quantization, **options)
    load_for_user: Callable[..., object] | None = None


RUNTIMES: dict[str, Runtime] = {}
FALLBACK = "torch"  # runs whatever the others refuse; registered by `specdec.runtimes.on_torch`


def model_file(name: str) -> ModelFile:
    """What the zoo says of a model before it loads: where it is, and whether it is one GGUF file."""
    from specdec.zoo.fetch import where

    found = where(name)
    return ModelFile(name, Path(found.location) if found.gguf else None, found.gguf)


def register(runtime: Runtime) -> Runtime:
    """Add a runtime to every list; its name must be new and not "auto"."""
    if runtime.name == AUTO or runtime.name in RUNTIMES:
        raise SpecdecError(f"a runtime named '{runtime.name}' is already registered (or reserved): choose another name")
    RUNTIMES[runtime.name] = runtime
    return runtime


def choices() -> tuple[str, ...]:
    """What `--runtime` and the sidebar offer: auto, then every registered runtime.

    >>> import specdec.runtimes                 # the built-in runtimes, registered
    >>> choices()[:3]
    ('auto', 'torch', 'llama.cpp')
    """
    return (AUTO, *RUNTIMES)


def runtime_of(name: str) -> Runtime:
    """The registered runtime called `name`; one line naming the choices for any other."""
    if name not in RUNTIMES:
        raise SpecdecError(f"unknown runtime '{name}': choose from {', '.join(choices())}")
    return RUNTIMES[name]


def candidates() -> list[Runtime]:
    """The runtimes "auto" tries, in order, the fallback last."""
    return sorted(
        (runtime for runtime in RUNTIMES.values() if runtime.name != FALLBACK), key=lambda runtime: runtime.auto_rank
    )


def refusal(runtime: Runtime, files: Sequence[ModelFile], device: torch.device) -> tuple[list[str], bool]:
    """Why `runtime` cannot run these models here (empty: it can), and whether they were of its kind at all."""
    reasons = runtime.kind(files, device)
    if reasons:
        return reasons, False
    why_not = runtime.usable_here()
    return ([why_not] if why_not else []), True


def choose_runtime(
    asked: str, files: Sequence[ModelFile], device: torch.device, precision_choices: Sequence[str]
) -> tuple[str, str]:
    """Which runtime runs these models (the target, and a draft that loads beside it), and why in a few words: the one
    asked for (one line if it cannot run them here), or with "auto" the first candidate that can, where every precision
    was left to auto if it runs a file's own weights; else the fallback."""
    if asked != AUTO:
        reasons, _ = refusal(runtime_of(asked), files, device)
        if reasons:
            raise SpecdecError(
                f"the {asked} runtime cannot run this pair: {'; '.join(reasons)}: use --runtime {FALLBACK}"
            )
        return asked, "asked for"
    asked_precision = any(choice != AUTO for choice in precision_choices)
    passed_over = []
    for runtime in candidates():
        if runtime.own_weights and asked_precision:
            return FALLBACK, "a dtype or weights were asked for"
        reasons, of_its_kind = refusal(runtime, files, device)
        if not reasons:
            return runtime.name, runtime.auto_why[0]
        if of_its_kind:
            passed_over.append(f"{runtime.name} not used, {'; '.join(reasons)}")
    return FALLBACK, f"auto: {'; '.join(passed_over)}" if passed_over else AUTO


def choose_draft_runtime(
    asked: str,
    draft: ModelFile,
    device: torch.device,
    precision_asked: bool,
    one_tokenizer: Callable[[], bool],
    target_runtime: str = FALLBACK,
) -> tuple[str, str]:
    """Where a draft model runs, and why: the one asked for (one line if it cannot), or with "auto" the first candidate
    that runs it here (a draft needs no batch invariance, so a runtime's fastest settings serve it, whatever runs the
    target); else the fallback. The runtime `target_runtime` already passed its check on this machine: it is not asked
    again."""
    if asked != AUTO:
        reasons, _ = refusal(runtime_of(asked), [draft], device)
        if reasons:
            raise SpecdecError(
                f"the {asked} runtime cannot run draft {draft.name}: {'; '.join(reasons)}: "
                f"use --draft-runtime {FALLBACK}"
            )
        return asked, "asked for"
    why = AUTO
    for runtime in candidates():
        if runtime.kind([draft], device):
            why = f"auto: {runtime.not_its_kind}"
        elif runtime.own_weights and precision_asked:
            why = "auto: a dtype or weights were asked for"
        elif not runtime.drafts_with_other_tokenizers and not one_tokenizer():
            why = "auto: its tokenizer is not the target's"
        elif runtime.name != target_runtime and runtime.usable_here():
            why = f"auto: {runtime.name} does not run here"
        else:
            return runtime.name, runtime.auto_why[1]
    return FALLBACK, why
