"""Progress of the long steps of loading a model: dequantizing a GGUF checkpoint, quantizing, saving a copy.

A first load of a zoo model can take minutes on a CPU (transformers dequantizes every GGUF tensor,
then `specdec` may quantize every linear layer and save a converted copy). Whoever started the load
(the dashboard, the CLI) passes a callback and gets a `LoadStep` after every tensor or layer:

    with reporting(lambda step: print(step.describe())):
        load_model("qwen2.5-coder-1.5b", quantization="int8")
    # qwen2.5-coder-1.5b: dequantizing GGUF tensors 17/338, about 60 s left
    # ...

The loading code calls `report(model, stage, done, total)`; with no callback installed that does
nothing. GGUF tensors are counted by wrapping the progress bar transformers draws over them
(`gguf_tensors_reported`): its terminal bar stays, and each tensor also becomes a `LoadStep`.
A callback may raise (the dashboard's Stop does): the load then ends there, and nothing half-written
is left behind, since converted copies are written to a temporary folder and renamed at the end.

One load at a time per process reports through the global callback (the dashboard runs one at a time).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class LoadStep:
    """How far one stage of a model's load has come."""

    model: str
    stage: str              # "dequantizing GGUF tensors", "quantizing linear layers to int8", ...
    done: int
    total: int              # 0 when unknown
    elapsed_s: float        # since this stage started

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0

    @property
    def seconds_left(self) -> float | None:
        """The time left if the rest goes at the pace so far; None before there is a pace to go by.

        >>> LoadStep("m", "s", 10, 40, 5.0).seconds_left
        15.0
        """
        if not self.total or self.done <= 0:
            return None
        return self.elapsed_s / self.done * (self.total - self.done)

    def describe(self) -> str:
        """One line for a progress bar.

        >>> LoadStep("qwen", "dequantizing GGUF tensors", 17, 338, 3.2).describe()
        'qwen: dequantizing GGUF tensors 17/338, about 60 s left'
        """
        counts = f" {self.done}/{self.total}" if self.total else ""
        left = self.seconds_left
        return f"{self.model}: {self.stage}{counts}" + ("" if left is None else f", about {left:.0f} s left")


_callback: Callable[[LoadStep], None] | None = None
_started: dict[tuple[str, str], float] = {}


@contextmanager
def reporting(callback: Callable[[LoadStep], None] | None) -> Iterator[None]:
    """Send every `report` inside the block to `callback` (None: keep whatever was installed)."""
    global _callback
    if callback is None:
        yield
        return
    previous, _callback = _callback, callback
    try:
        yield
    finally:
        _callback = previous
        _started.clear()


def report(model: str, stage: str, done: int, total: int) -> None:
    """Tell the installed callback (if any) that `done` of `total` units of `stage` are finished."""
    if _callback is None:
        return
    now = time.perf_counter()
    started = _started.setdefault((model, stage), now)
    _callback(LoadStep(model, stage, done, total, now - started))


@contextmanager
def gguf_tensors_reported(model: str) -> Iterator[None]:
    """While loading `model` from a GGUF file, report each tensor transformers dequantizes.

    transformers iterates over the tensors through `tqdm` in `transformers.modeling_gguf_pytorch_utils`;
    that name is wrapped for the block so each step also reaches `report`. Nothing changes when no
    callback is installed, or when a transformers version names it otherwise.
    """
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    original = getattr(gguf_utils, "tqdm", None)
    if _callback is None or original is None:
        yield
        return

    def counted(iterable: Iterable, *args, **kwargs):
        total = len(iterable) if hasattr(iterable, "__len__") else 0
        report(model, "dequantizing GGUF tensors", 0, total)
        for done, item in enumerate(original(iterable, *args, **kwargs), start=1):
            yield item
            report(model, "dequantizing GGUF tensors", done, total)

    gguf_utils.tqdm = counted
    try:
        yield
    finally:
        gguf_utils.tqdm = original
