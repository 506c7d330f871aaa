"""Wall-clock timing that is honest on accelerators.

GPU and MPS kernels run asynchronously: a forward pass "returns" before its work is done, so a
timer read right after it measures the launch, not the work. `Stopwatch` synchronises the device
before every reading.

    watch = Stopwatch(torch.device("cpu"))
    with watch.measure("draft"):
        ...                         # time spent here is added to watch.totals["draft"]
    watch.elapsed()                 # seconds since the stopwatch was made

The loop never times itself: whoever runs it wraps the objects it calls in `Timed` proxies, so that
the target's passes land in one bucket and the drafter's calls in another, from the outside.
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


class Timed:
    """`inner`, with the calls named in `methods` timed into `watch.totals[bucket]`; every other attribute passes
    through.

    >>> watch = Stopwatch(torch.device("cpu"))
    >>> timed = Timed([3, 1, 2], watch, "sort", ("sort",))
    >>> timed.sort(); timed.index(3), "sort" in watch.totals
    (2, True)
    """

    def __init__(self, inner: object, watch: Stopwatch, bucket: str, methods: tuple[str, ...]) -> None:
        self._inner, self._watch, self._bucket, self._methods = inner, watch, bucket, methods

    def __getattr__(self, name: str) -> object:
        value = getattr(self._inner, name)
        if name not in self._methods:
            return value

        def timed(*args: object, **kwargs: object) -> object:
            with self._watch.measure(self._bucket):
                return value(*args, **kwargs)

        return timed
