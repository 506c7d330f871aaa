"""Wall-clock timing that is honest on accelerators.

GPU and MPS kernels run asynchronously: a forward pass "returns" before its work is done, so a
timer read right after it measures the launch, not the work. `Stopwatch` synchronises the device
before every reading.

    watch = Stopwatch(torch.device("cpu"))
    with watch.measure("draft"):
        ...                         # time spent here is added to watch.totals["draft"]
    watch.elapsed()                 # seconds since the stopwatch was made
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

import torch


def synchronize(device: torch.device) -> None:
    """Wait until every kernel queued on `device` has finished (a no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


class Stopwatch:
    """Accumulates time per named bucket; the total since creation is `elapsed()`."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.totals: dict[str, float] = defaultdict(float)
        synchronize(device)
        self.started = time.perf_counter()

    @contextmanager
    def measure(self, bucket: str) -> Iterator[None]:
        synchronize(self.device)
        start = time.perf_counter()
        try:
            yield
        finally:
            synchronize(self.device)
            self.totals[bucket] += time.perf_counter() - start

    def elapsed(self) -> float:
        synchronize(self.device)
        return time.perf_counter() - self.started
