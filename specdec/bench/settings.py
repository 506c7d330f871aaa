"""What a benchmark runs (`specdec.bench.harness` runs it): the settings a person chose, methods x gammas x prompts x
temperatures x repeats (`BenchSettings`), and one planned run of them (`Run`).

Methods are named as `specdec.bench.methods` names them ("all": every drafting family side by side, Spec-Bench style);
gammas are labels (`specdec.bench.gammas`): whole numbers, "default", "stop", "tree" or "tree-N", and "adaptive".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from specdec.bench.gammas import DEFAULT, STOP, check_gammas, is_schedule, tree_budget
from specdec.bench.methods import BASELINE, bench_methods, families
from specdec.bench.prompts import BenchPrompt
from specdec.engine.inputs import Decoding
from specdec.errors import SpecdecError

ALL = "all"


@dataclass(frozen=True)
class BenchSettings:
    """What to run. Every combination of methods x gammas x prompts x temperatures x repeats runs once."""

    methods: tuple[str, ...] = ("speculative", "generate")
    gammas: tuple[int | str, ...] = (4,)  # whole numbers, "stop" and/or "adaptive"
    categories: tuple[str, ...] | None = None  # None: all of `specdec.bench.prompts.CATEGORIES`
    prompts_per_category: int | None = None  # None: every prompt of a category
    decoding: Decoding = field(default_factory=lambda: Decoding(max_new_tokens=128, temperature=0.0, seed=0))
    temperatures: tuple[float, ...] | None = None  # a sweep of temperatures; None: the decoding's own
    repeats: int = 1  # repeat r runs with seed decoding.seed + r
    warmup_runs: int = 1
    draft_vocab_limit: int | None = None  # see ModelDrafter(vocab_limit=...)
    max_adaptive_gamma: int = 12

    def __post_init__(self) -> None:
        if ALL in self.methods:
            object.__setattr__(
                self,
                "methods",
                tuple(
                    dict.fromkeys(
                        method for name in self.methods for method in (families() if name == ALL else (name,))
                    )
                ),
            )
        unknown = [method for method in self.methods if method not in bench_methods()]
        if unknown:
            raise SpecdecError(f"unknown methods {unknown}: choose from {', '.join(bench_methods())}, or {ALL}")
        check_gammas(self.gammas)
        if self.draft_vocab_limit is not None and any(tree_budget(gamma) is not None for gamma in self.gammas):
            raise SpecdecError(
                "a tree drafter reads the whole output layer: drop the draft vocabulary limit or the tree gammas"
            )
        if self.repeats < 1 or self.warmup_runs < 0:
            raise SpecdecError("repeats must be >= 1 and warmup_runs >= 0")
        if self.temperatures is not None and (any(t < 0 for t in self.temperatures) or not self.temperatures):
            raise SpecdecError(f"temperatures must be >= 0, got {list(self.temperatures)}")

    @classmethod
    def chosen(cls, methods: Sequence[str], gammas: Sequence[int | str] = (), **choices) -> BenchSettings:
        """The benchmark a person chose, built one way for `specdec bench` and the dashboard's Compare page: the methods
        as named (ALL: the pair's draft and every family side by side), the gamma labels given, else the default's:
        DEFAULT where every family runs (each drafts as it would by default, the pair's draft model too), else the stop
        rule. `choices` are the other fields (categories, prompts_per_category, decoding, temperatures, repeats, ...).

        >>> BenchSettings.chosen(["speculative"]).gammas, BenchSettings.chosen(["speculative", ALL]).gammas
        (('stop',), ('default',))
        """
        default = (DEFAULT,) if ALL in methods else (STOP,)
        return cls(methods=tuple(methods), gammas=tuple(gammas) or default, **choices)

    @property
    def temperature_sweep(self) -> tuple[float, ...]:
        """The temperatures every variant runs at."""
        return self.temperatures or (self.decoding.temperature,)

    def decoding_for(self, run: Run) -> Decoding:
        """The decoding of one run: its temperature, and the first seed plus its repeat."""
        return replace(self.decoding, temperature=run.temperature, seed=(self.decoding.seed or 0) + run.repeat)

    @property
    def all_methods(self) -> tuple[str, ...]:
        """The chosen methods with the baseline first (added when missing)."""
        return (BASELINE,) + tuple(method for method in self.methods if method != BASELINE)

    @property
    def fixed_gammas(self) -> list[int]:
        return [gamma for gamma in self.gammas if not is_schedule(gamma)]

    def gammas_for(self, method: str) -> tuple[int | str | None, ...]:
        """The gamma labels `method` runs with (None for methods without one)."""
        return bench_methods()[method].gammas(tuple(self.gammas))


@dataclass(frozen=True)
class Run:
    """One planned run: a method, its gamma (None for methods without one), a prompt, a temperature, a repeat."""

    method: str
    gamma: int | str | None
    prompt: BenchPrompt
    temperature: float
    repeat: int
