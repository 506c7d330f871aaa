"""Progress of the long steps of loading a model: reading a GGUF checkpoint, quantizing, saving a copy.

A first load of a zoo model can take minutes on a CPU (transformers matches the GGUF tensor names
to the model's and dequantizes every tensor, then `specdec` may quantize every linear layer and
save a converted copy). Whoever started the load (the dashboard, the CLI) passes a callback and
gets a `LoadStep` after every module, tensor, layer or megabyte written:

    with reporting(lambda step: print(step.describe())):
        load_model("qwen2.5-coder-1.5b", quantization="int8")
    # qwen2.5-coder-1.5b: dequantizing GGUF tensors 17/338, about 60 s left
    # ...

The loading code calls `report(model, stage, done, total)`; with no callback installed that does
nothing. A GGUF load is followed from inside transformers (`gguf_tensors_reported`): the name
matching, one call per module of the model (its cost grows with the square of the number of layers:
4 s of SmolLM2-135M's 18 s first load here, 30 layers, before any tensor is read), and the tensors,
counted by wrapping the progress bar transformers draws over them (its terminal bar stays).
A callback may raise (the dashboard's Stop does): the load then ends there, and nothing half-written
is left behind, since converted copies are written to a temporary folder and renamed at the end.

One load at a time per process reports through the global callback (the dashboard runs one at a time).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from specdec.zoo import time_left

TOKENIZERS = "reading the tokenizers"   # `pairing.load_pair`: from GGUF files on a first load, about 10 s each
GGUF_READ = "reading the GGUF file"     # its metadata, twice: for the config, then before the tensors (seconds each)
GGUF_NAMES = "matching GGUF tensor names"
GGUF_TENSORS = "dequantizing GGUF tensors"


@dataclass(frozen=True)
class LoadStep:
    """How far one stage of a model's load has come."""

    model: str
    stage: str              # "dequantizing GGUF tensors", "quantizing linear layers to int8", ...
    done: int
    total: int              # 0 when unknown
    elapsed_s: float        # since this stage started
    unit: str = ""          # "" counts things (tensors, layers); "bytes" is shown in MB
    share: float | None = None   # the share of the stage's work done, when its things differ in size (GGUF tensors: by weights)

    @property
    def fraction(self) -> float:
        if self.share is not None:
            return min(1.0, self.share)
        return min(1.0, self.done / self.total) if self.total else 0.0

    @property
    def seconds_left(self) -> float | None:
        """The time left if the rest goes at the pace so far (of the work, when `share` says it); None before there is a pace.

        >>> LoadStep("m", "s", 10, 40, 5.0).seconds_left
        15.0
        >>> LoadStep("m", "s", 1, 300, 5.0, share=0.25).seconds_left     # one tensor, but a quarter of the weights
        15.0
        """
        if self.share is not None:
            return time_left.seconds_left(self.share, 1.0, self.elapsed_s)
        return time_left.seconds_left(self.done, self.total, self.elapsed_s)

    def describe(self) -> str:
        """One line for a progress bar; "finishing" once every unit is done (the stage may still wrap up).

        >>> LoadStep("qwen", "dequantizing GGUF tensors", 17, 338, 3.2).describe()
        'qwen: dequantizing GGUF tensors 17/338, about 60 s left'
        >>> LoadStep("qwen", "saving a converted copy", 1_500_000_000, 6_000_000_000, 5.0, "bytes").describe()
        'qwen: saving a converted copy 1,500/6,000 MB, about 15 s left'
        >>> LoadStep("qwen", "dequantizing GGUF tensors", 338, 338, 20.0).describe()
        'qwen: dequantizing GGUF tensors 338/338, finishing'
        """
        counts = ""
        if self.total and self.unit == "bytes":
            counts = f" {self.done / 1e6:,.0f}/{self.total / 1e6:,.0f} MB"
        elif self.total:
            counts = f" {self.done}/{self.total}"
        ending = ", finishing" if self.total and self.done >= self.total else time_left.about(self.seconds_left)
        return f"{self.model}: {self.stage}{counts}{ending}"


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


def report(model: str, stage: str, done: int, total: int, unit: str = "", share: float | None = None) -> None:
    """Tell the installed callback (if any) that `done` of `total` units of `stage` are finished ("bytes" or things),
    `share` of its work when the units differ in size."""
    if _callback is None:
        return
    now = time.perf_counter()
    started = _started.setdefault((model, stage), now)
    _callback(LoadStep(model, stage, done, total, now - started, unit, share))


def layers_reported(model: str, quantization: str) -> Callable[[int, int], None]:
    """The `on_layer(done, total)` callback for quantizing `model`'s layers (`specdec.kernels.quantization`): a `report` each."""
    stage = f"quantizing linear layers to {quantization}"
    return lambda done, total: report(model, stage, done, total)


@contextmanager
def gguf_tensors_reported(model: str) -> Iterator[None]:
    """While loading `model` from a GGUF file, report each module whose names transformers matches and each tensor it dequantizes.

    Three names in `transformers.modeling_gguf_pytorch_utils` are wrapped for the block, so each step
    also reaches `report`: `load_gguf_checkpoint`, which reads the file's metadata for the config and
    again before the tensors (`GGUF_READ`, 8 s each for Qwen2.5-Coder-1.5B here: its tokenizer is in
    there), `get_gguf_hf_weights_map`, which calls itself once per module of the model (`GGUF_NAMES`),
    and `tqdm`, which it iterates the tensors through (`GGUF_TENSORS`). Nothing changes when no
    callback is installed, and a name a transformers version lacks is left alone.
    """
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    original_bar = getattr(gguf_utils, "tqdm", None)
    original_match = getattr(gguf_utils, "get_gguf_hf_weights_map", None)
    original_read = getattr(gguf_utils, "load_gguf_checkpoint", None)
    if _callback is None or original_bar is None:
        yield
        return

    def reading(*args, **kwargs):                     # the config's read: half of the reading before the names
        if kwargs.get("return_tensors", False):
            return original_read(*args, **kwargs)
        report(model, GGUF_READ, 0, 2)
        result = original_read(*args, **kwargs)
        report(model, GGUF_READ, 1, 2)
        return result

    def counted(iterable: Iterable, *args, **kwargs):
        total = len(iterable) if hasattr(iterable, "__len__") else 0
        sizes = [getattr(tensor, "n_elements", None) for tensor in iterable] if total else []
        weights = sum(sizes) if sizes and None not in sizes else 0   # the pace goes by weights: the first tensor (the
        read = 0                                                     # embeddings) can take as long as a hundred others
        report(model, GGUF_TENSORS, 0, total, share=0.0 if weights else None)
        for done, item in enumerate(original_bar(iterable, *args, **kwargs), start=1):
            yield item
            read += sizes[done - 1] if weights else 0
            report(model, GGUF_TENSORS, done, total, share=read / weights if weights else None)

    matched = {"depth": 0, "done": 0, "total": 0}

    def matching(hf_model, *args, **kwargs):
        if matched["depth"] == 0:                     # the outer call, on the whole model: count the calls to come
            report(model, GGUF_READ, 2, 2)                # (the file's second read is over)
            matched.update(done=0, total=_module_tree_size(hf_model))
            report(model, GGUF_NAMES, 0, matched["total"])
        matched["depth"] += 1
        try:
            names = original_match(hf_model, *args, **kwargs)
        finally:
            matched["depth"] -= 1
        matched["done"] += 1
        report(model, GGUF_NAMES, matched["done"], matched["total"])
        return names

    gguf_utils.tqdm = counted
    if original_match is not None:
        gguf_utils.get_gguf_hf_weights_map = matching
    if original_read is not None:
        gguf_utils.load_gguf_checkpoint = reading
    try:
        yield
    finally:
        gguf_utils.tqdm = original_bar
        if original_match is not None:
            gguf_utils.get_gguf_hf_weights_map = original_match
        if original_read is not None:
            gguf_utils.load_gguf_checkpoint = original_read


def _module_tree_size(module) -> int:
    """How many modules `module`'s tree of named children holds, itself included: one name-matching call each.

    >>> import torch
    >>> _module_tree_size(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Sequential(torch.nn.ReLU())))
    4
    """
    return 1 + sum(_module_tree_size(child) for _, child in module.named_children())
