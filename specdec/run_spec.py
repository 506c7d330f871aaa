"""One run, described once: the pair, how each model runs, how it drafts, how it decodes.

Notation: p is the target, q the draft, gamma the drafted tokens per round.

The command line's arguments (`specdec run`), the dashboard's sidebar (and the link that reproduces it)
and the benchmark each build a `RunSpec`; the planner (`specdec.planner`) turns it into a plan, loading
(`specdec.pair.loading.load_spec`) and generating (`specdec.pair.running.generate`) follow that plan, and
nothing re-derives a choice it holds. The plan's header line says what the run does (each model's runtime
and precision, the drafting and why), the same through every door; one range for gamma (1 to `MAX_GAMMA`).

    spec = RunSpec(target="qwen2.5-coder-1.5b", draft="qwen2.5-coder-0.5b",
                   drafting=Drafting(method="tree", options=(("budget", "8"),)),
                   decoding=Decoding(max_new_tokens=64, temperature=0))
    spec.check()                         # refuses a bad gamma, method, option or corpus in one line, before loading

    >>> RunSpec(drafting=Drafting(gamma=65)).check()
    Traceback (most recent call last):
    ...
    specdec.errors.SpecdecError: gamma must be a whole number from 1 to 64, got 65; 4 is a good start
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specdec.engine.inputs import MAX_GAMMA, Decoding, check_round_length
from specdec.errors import SpecdecError
from specdec.registry import CORPUS, DEFAULT_DRAFT, DEFAULT_TARGET, METHODS, needs_of
from specdec.runtimes import choices as runtime_choices

GAMMA_RANGE = (1, MAX_GAMMA)  # every picker of gamma reads this one range


@dataclass(frozen=True)
class ModelChoices:
    """How the models run, as chosen ("auto" anywhere: the fastest exact choice, resolved at load)."""

    device: str = "auto"
    dtype: str = "auto"
    quantization: str = "auto"  # the target's weights: auto, none, int8, int4, w8a8
    draft_quantization: str = "auto"  # the draft's weights
    runtime: str = "auto"  # the target's runtime: auto, or one of `specdec.runtimes.RUNTIMES`
    threads: int | None = None  # llama.cpp's threads (None: the runtime's choice)
    draft_runtime: str = "auto"  # the draft model's runtime: auto (llama.cpp's fastest settings for a GGUF draft
    # on a CPU that shares the target's tokenizer), torch or llama.cpp


# Drafting.method for "the fastest exact plan here", which may draft without the draft model or not at all
FASTEST_PLAN = "auto"


@dataclass(frozen=True)
class Drafting:
    """How a run drafts, as chosen: the method (None: what the draft implies, for a draft model the planner's chain or
    tree with it, even where it does not pay here; `FASTEST_PLAN`: the planner's fastest exact plan, whatever drafts
    it), how many tokens a round (a fixed `gamma`, or an `adaptive` gamma of at most that many, or neither: the
    planner's schedule), the method's options."""

    method: str | None = None  # a registry method's name, None or FASTEST_PLAN
    gamma: int | None = None  # a fixed number of drafted tokens every round
    options: tuple[tuple[str, str], ...] = ()  # the method's options by name, as text (`Method.parse_options`)
    corpus: tuple[str, ...] = ()  # text files a method that reads a corpus drafts from (suffix decoding)
    adaptive: int | None = None  # an adaptive gamma (`AdaptiveGamma`) of at most this many tokens a round

    def option(self, name: str, default: str = "") -> str:
        """One option's text, or `default`."""
        return dict(self.options).get(name, default)


@dataclass(frozen=True)
class RunSpec:
    """A run: the draft and target names, their precision, the drafting, the decoding."""

    target: str = DEFAULT_TARGET
    draft: str = DEFAULT_DRAFT
    models: ModelChoices = field(default_factory=ModelChoices)
    drafting: Drafting = field(default_factory=Drafting)
    decoding: Decoding = field(default_factory=Decoding)

    @property
    def pair_name(self) -> str:
        return f"{self.draft}->{self.target}"

    def check(self) -> RunSpec:
        """Refuse, in one line and before anything loads, what cannot
        run: a bad gamma, runtime, method, option or corpus."""
        if not self.target.strip() or not self.draft.strip():
            raise SpecdecError("give both a draft and a target")
        # 1..64 (the method: below)
        check_round_length("the drafter", False, self.drafting.gamma, self.drafting.adaptive)
        if self.drafting.gamma is not None and self.drafting.adaptive is not None:
            raise SpecdecError("a run drafts a fixed gamma or an adaptive one, not both: drop one")
        for runtime in (self.models.runtime, self.models.draft_runtime):
            if runtime not in runtime_choices():
                raise SpecdecError(f"unknown runtime '{runtime}': choose from {', '.join(runtime_choices())}")
        if self.target in METHODS:
            raise SpecdecError(f"{self.target} can only be the draft: give a model as the target")
        implied, _ = needs_of(self.draft)
        named = None if self.drafting.method == FASTEST_PLAN else self.drafting.method
        name = named or (implied.name if implied is not None else None)
        if named is not None and named not in METHODS:
            raise SpecdecError(
                f"unknown drafting method '{named}': choose from {', '.join(METHODS)}, or {FASTEST_PLAN}"
            )
        if self.drafting.method == FASTEST_PLAN and (self.drafting.gamma, self.drafting.adaptive) != (None, None):
            raise SpecdecError(f"--method {FASTEST_PLAN} leaves the rounds to the planner: drop --gamma")
        method = METHODS.get(name) if name is not None else None
        if implied is not None and method is not None and method is not implied and implied.target_only:
            raise SpecdecError(
                f"{self.draft} drafts without a draft model, and {method.name} needs one: drop the method "
                f"(--method {method.name}, --tree), or give a draft model"
            )
        if method is not None:
            method.parse_options(dict(self.drafting.options))  # a bad option name or value: one line, now
            check_round_length(
                method.name, method.capabilities.sizes_rounds, self.drafting.gamma, self.drafting.adaptive
            )
        elif self.drafting.options:
            raise SpecdecError("options belong to a drafting method: name it (--method) or drop the options")
        if self.drafting.corpus and (method is None or CORPUS not in method.uses):
            readers = [name for name, entry in METHODS.items() if CORPUS in entry.uses]
            raise SpecdecError(
                f"a corpus is for methods that draft from one ({', '.join(readers)}): choose one, or drop the corpus"
            )
        return self
