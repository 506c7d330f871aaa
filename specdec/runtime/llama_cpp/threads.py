"""How many threads a llama.cpp context runs on: every core while that is fastest, one fewer when someone else holds a core.

A llama.cpp pass splits each layer's work over its threads and waits at a barrier for the slowest. On a quiet
2-core machine two threads beat one (Qwen2.5-Coder-1.5B Q4_K_M's step: 40.8 ms against 62.7, medians); when
another process holds a core, the thread that lost it stalls every barrier: with one `yes` process running, 77.9 ms
on two threads against 65.7 on one, and while a test suite ran beside it, a median 1.3 s on two against 112 ms on
one (`benchmarks/llama-cpp-exactness.md`, AMD EPYC, AVX2, 2 cores). No count is best for both,
so `Threads` times the passes and chooses between every core and one fewer:

    each count keeps the seconds of its last few passes, by size (one row, or several)
    the next pass runs on the count whose recent median is lower
    every PROBE_AFTER passes the other count runs one pass, so its times stay current

The wait itself sleeps instead of spinning (OMP_WAIT_POLICY=PASSIVE, set where the package starts). Changing
the count never changes a bit of the output: llama.cpp's exact settings give the same rows on one thread and on
two (`tests/test_llama_cpp_runtime.py` holds them to it), so this decides only how fast.

    governor = Threads(cores=2)
    governor.count                              # 2: every core first
    governor.passed(rows=1, seconds=0.062)      # after each pass; then `governor.count` is the next pass's
"""

from __future__ import annotations

import statistics
from collections import deque

PROBE_AFTER = 128     # passes between two runs of the count not in use (a slow probe costs one pass: 1.3 s at worst here)
WINDOW = 5            # passes each count and size remember


class Threads:
    """The thread count a context's next pass runs on, learned from how long its passes take (module docstring).

    >>> governor = Threads(cores=2)
    >>> for seconds in (0.06, 0.09, 0.06, 0.09):          # two threads, then one (its first probe), ...
    ...     governor.passed(rows=1, seconds=seconds)
    >>> governor.count                                     # quiet: every core is faster
    2
    >>> for _ in range(3):
    ...     governor.passed(rows=1, seconds=1.3)           # another process took a core: two threads stall
    >>> governor.count
    1
    """

    def __init__(self, cores: int, fixed: bool = False) -> None:
        self.counts = sorted({max(1, cores), max(1, cores - 1)}, reverse=True)   # every core, and one fewer
        self.count = self.counts[0]
        self.fixed = fixed or len(self.counts) == 1                              # a count asked for is never changed
        self.recent: dict[tuple[int, bool], deque] = {}
        self.passes = 0

    def passed(self, rows: int, seconds: float) -> None:
        """A pass over `rows` tokens took `seconds` on `count` threads: choose the next pass's count."""
        if self.fixed:
            return
        several = rows > 1
        self.recent.setdefault((self.count, several), deque(maxlen=WINDOW)).append(seconds)
        self.passes += 1
        other = next(count for count in self.counts if count != self.count)
        if (other, several) not in self.recent or self.passes % PROBE_AFTER == 0:
            self.count = other                                                   # time the other count too
            return
        medians = {count: statistics.median(self.recent[(count, several)]) for count in self.counts}
        self.count = min(medians, key=medians.get)
