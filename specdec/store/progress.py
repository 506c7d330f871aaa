"""Progress of long jobs (a fetch, a first load, a save, a training run): one type, with the time left at the pace so
far.

    report = Reporter("qwen", print)                      # whoever started the job passes the callback
    report("dequantizing GGUF tensors", 17, 338)          # -> Progress(what="qwen", stage=..., done=17, total=338, ...)

    >>> Progress("qwen", "dequantizing GGUF tensors", 17, 338, elapsed_s=3.2).describe()
    'qwen: dequantizing GGUF tensors 17/338, about 60 s left'

The time left: if `done` of `total` units took `elapsed_s` seconds, the rest takes as long per unit,

    seconds left = elapsed_s / done * (total - done)

    >>> seconds_left(done=300, total=1_200, elapsed_s=6.0)     # a quarter in 6 s: three quarters to go
    18.0

so count units whose cost is even (bytes rather than tensors of very different sizes; or say the `share`
of the work done). A job may also have a limit (a training run's minutes): the time left is then the
sooner of the two. Nothing is smoothed, and nothing is guessed before the first unit is done.

A callback may raise (the dashboard's Stop does): the job then ends at that report. Reporters read the
clock only when someone listens. `check_run_length` is the one check of a run's minutes and steps.
Nothing here draws: the CLI and the dashboard draw the bar from `fraction` and `describe()`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from specdec.errors import SpecdecError


def seconds_left(done: float, total: float, elapsed_s: float) -> float | None:
    """The seconds left if the rest goes at the pace so far; None before there is a pace (or a total) to go by.

    >>> seconds_left(10, 40, 5.0)
    15.0
    >>> seconds_left(0, 40, 5.0) is None, seconds_left(40, 40, 5.0)
    (True, 0.0)
    """
    if total <= 0 or done <= 0:
        return None
    return max(0.0, elapsed_s / done * (total - done))


def about(seconds: float | None) -> str:
    """The end of a progress line: seconds under a minute and a half, minutes above; '' without an estimate.

    >>> about(14.6), about(590.0), about(None)
    (', about 15 s left', ', about 10 min left', '')
    """
    if seconds is None:
        return ""
    return f", about {seconds:.0f} s left" if seconds < 90 else f", about {round(seconds / 60)} min left"


@dataclass(frozen=True)
class Progress:
    """How far one stage of a long job has come: what it is about, the stage, units done of the total, time spent.

    The line (`describe`) is the stage's name and its counts, or a sentence (`message`) and its counts after a comma:

    >>> Progress("qwen", "saving a converted copy", 1_500_000_000, 6_000_000_000, 5.0, unit="bytes").describe()
    'qwen: saving a converted copy 1,500/6,000 MB, about 15 s left'
    >>> Progress("qwen", "download", 100_000_000, 500_000_000, 10.0, "bytes",
    ...     message="downloading part 3 of 6").describe()
    'qwen: downloading part 3 of 6, 100 / 500 MB, about 40 s left'
    >>> Progress("qwen", "dequantizing GGUF tensors", 338, 338, 20.0).describe()     # every unit done: it wraps up
    'qwen: dequantizing GGUF tensors 338/338, finishing'
    >>> Progress("qwen", "verify", message="checking size and SHA-256", moving=False).describe()
    'qwen: checking size and SHA-256'
    >>> Progress("step 12", "training", elapsed_s=10.0, message="loss 2.000", limit_s=600.0).describe()
    'step 12: loss 2.000, about 10 min left'
    """

    what: str  # the model, the data set, "step 12" of a training run
    stage: str  # "download", "dequantizing GGUF tensors", "training", ...
    done: float = 0  # units finished
    total: float = 0  # units in all; 0 when unknown
    elapsed_s: float = 0.0  # since the stage (or, for a fetch, the job) began
    unit: str = ""  # "" counts things; "bytes" are shown in MB
    share: float | None = None  # the share of the work done, when units differ in size (GGUF tensors: by weights)
    message: str = ""  # a sentence for the line instead of the stage's name
    limit_s: float | None = None  # the job ends by then at the latest (a training run's minutes)
    moving: bool = True  # False: a stage with nothing left to time ("verify", "cached", "done")
    numbers: Mapping[str, float] = field(default_factory=dict)  # what the job measured ({"loss": 2.0, "step": 12, ...})

    @property
    def fraction(self) -> float:
        """The share done, for a bar: by `share`, else by units, else by the time limit; 0 when nothing tells."""
        if self.share is not None:
            return min(1.0, self.share)
        if self.total:
            return min(1.0, self.done / self.total)
        return min(1.0, self.elapsed_s / self.limit_s) if self.limit_s else 0.0

    @property
    def seconds_left(self) -> float | None:
        """The time left at the pace so far (of the work, when `share` says it), or by the limit, whichever is sooner.

        >>> Progress("m", "s", 10, 40, 5.0).seconds_left, Progress("m", "s", 1, 300, 5.0, share=0.25).seconds_left
        (15.0, 15.0)
        >>> Progress("m", "s", 10, 40, 5.0, limit_s=8.0).seconds_left          # the limit comes first
        3.0
        """
        if not self.moving:
            return None
        by_pace = (
            seconds_left(self.share, 1.0, self.elapsed_s)
            if self.share is not None
            else seconds_left(self.done, self.total, self.elapsed_s)
        )
        by_limit = None if self.limit_s is None else max(0.0, self.limit_s - self.elapsed_s)
        known = [value for value in (by_pace, by_limit) if value is not None]
        return min(known) if known else None

    def describe(self) -> str:
        """One line for a progress bar (the class docstring shows each kind)."""
        words = (
            f"{self.message}{self._counts(', ', ' / ')}" if self.message else f"{self.stage}{self._counts(' ', '/')}"
        )
        finishing = self.moving and self.total and self.done >= self.total
        return f"{self.what}: {words}{', finishing' if finishing else about(self.seconds_left)}"

    def _counts(self, before: str, slash: str) -> str:
        if not self.moving or not self.total:
            return ""
        if self.unit == "bytes":
            return f"{before}{self.done / 1e6:,.0f}{slash}{self.total / 1e6:,.0f} MB"
        return f"{before}{self.done:,.0f}{slash}{self.total:,.0f}"


class Reporter:
    """Sends the stages of one job about one thing (a model, a data set) to `callback` as `Progress`.

    Each stage is timed from its first report; with `one_clock`, every stage from the reporter's start (a fetch,
    whose downloads and writes share one pace). With no callback, reporting does nothing.

    >>> seen = []
    >>> report = Reporter("qwen", seen.append)
    >>> report("loading the saved int8 copy")
    >>> count = report.counter("quantizing linear layers to int8")
    >>> count(1, 2); count(2, 2)                     # what `apply_quantization(..., on_layer=count)` calls
    >>> [step.describe().split(",")[0] for step in seen]
    ['qwen: loading the saved int8 copy', 'qwen: quantizing linear layers to int8 1/2', 'qwen: quantizing linear layers
    to int8 2/2']
    """

    def __init__(
        self, what: str, callback: Callable[[Progress], None] | None = None, *, one_clock: bool = False
    ) -> None:
        self.what, self.callback = what, callback
        self._started: dict[str | None, float] = {None: time.perf_counter()} if one_clock and callback else {}
        self._one_clock = one_clock

    @property
    def listening(self) -> bool:
        return self.callback is not None

    def __call__(self, stage: str, done: float = 0, total: float = 0, **details) -> None:
        """Report `done` of `total` units of `stage` (the other `Progress` fields by name)."""
        if self.callback is None:
            return
        now = time.perf_counter()
        started = self._started.setdefault(None if self._one_clock else stage, now)
        self.callback(Progress(self.what, stage, done, total, now - started, **details))

    def counter(self, stage: str, total: float = 0, unit: str = "") -> Count:
        """A `Count` of `stage`: for code that calls back `on_units(done, total)` as it goes."""
        return Count(self, stage, total, unit)


class Count:
    """One stage's units as they are done, reported through a `Reporter`: never backwards, never past the total.

    It is called as `count(done)` or `count(done, total)`, the signature of `on_layer` (`apply_quantization`) and
    `on_bytes` (`write_safetensors`); the total given first is kept.
    """

    def __init__(self, report: Reporter, stage: str, total: float = 0, unit: str = "") -> None:
        self.report, self.stage, self.total, self.unit, self.done = report, stage, total, unit, 0

    def __call__(self, done: float, total: float | None = None) -> None:
        self.total = self.total or total or 0
        self.done = max(done, self.done) if not self.total else min(max(done, self.done), self.total)
        self.report(self.stage, self.done, self.total, unit=self.unit)


def check_run_length(minutes: float | None, steps: int | None, names: tuple[str, str] = ("minutes", "steps")) -> None:
    """Refuse, in one line, a run with no length or a length that is no length; `names` are how the caller spells them.

    >>> check_run_length(30, None)
    >>> check_run_length(None, None)
    Traceback (most recent call last):
    specdec.errors.SpecdecError: say how long to train: steps=N or minutes=M
    >>> check_run_length(0, None, ("--minutes", "--steps"))
    Traceback (most recent call last):
    specdec.errors.SpecdecError: --minutes must be more than 0, got 0: a run needs minutes > 0 or steps >= 1
    """
    minutes_name, steps_name = names
    if minutes is None and steps is None:
        raise SpecdecError(f"say how long to train: {steps_name}=N or {minutes_name}=M")
    if minutes is not None and not minutes > 0:
        raise SpecdecError(
            f"{minutes_name} must be more than 0, got {minutes:g}: a run needs minutes > 0 or steps >= 1"
        )
    if steps is not None and steps < 1:
        raise SpecdecError(f"{steps_name} must be at least 1, got {steps}: a run needs minutes > 0 or steps >= 1")
