"""How many threads a llama.cpp context runs on: every core while that is fastest, one fewer when someone else holds a
core.

A llama.cpp pass splits each layer's work over its threads and waits at a barrier for the slowest. On a quiet
2-core machine two threads beat one (Qwen2.5-Coder-1.5B Q4_K_M's step: 40.8 ms against 62.7, medians); when
another process holds a core, the thread that lost it stalls every barrier: with one `yes` process running, 77.9 ms
on two threads against 65.7 on one, and while a test suite ran beside it, a median 1.3 s on two against 112 ms on
one (`benchmarks/llama-cpp-exactness.md`, AMD EPYC, AVX2, 2 cores). No count is best for both,
so `Threads` times the passes and chooses between every core and one fewer:

    each count keeps the seconds of its last few passes, by size (its rows, up to `SIZES`; longer passes together)
    a pass runs on the count whose recent median at its size is lower (each count is timed at a size first)
    every PROBE_AFTER passes the slower count runs one pass, so its times stay current

How a waiting thread waits is decided where the package starts (`specdec.store.machine.wait_policy_here`). Changing
the count never changes a bit of the output: llama.cpp's exact settings give the same rows on one thread and on
two (`tests/test_llama_cpp_runtime.py` holds them to it), so this decides only how fast.

    governor = Threads(cores=2)
    governor.count_for(rows=1)                  # 2: every core first
    governor.passed(rows=1, seconds=0.062)      # after each pass
"""

from __future__ import annotations

import statistics
from collections import deque

PROBE_AFTER = 128  # passes between two runs of the count not in use (a slow probe costs one pass: 1.3 s at worst here)
WINDOW = 5  # passes each count and size remember
SIZES = 17  # passes of up to this many rows are told apart by size: a 2-row pass is never weighed against a 9-row
# one (lumped together, the count whose last passes were short looked faster, and 2-row passes ran on
# one thread: 150-180 ms against 83-97 on two, the 1.5B on 2 AVX2 cores)


class Threads:
    """The thread count a context's next pass runs on, learned from how long its passes take (module docstring).

    >>> governor = Threads(cores=2)
    >>> # a one-row pass on two threads, then on one (its first probe)
    >>> for seconds in (0.06, 0.09):
    ...     count = governor.count_for(rows=1)
    ...     governor.passed(rows=1, seconds=seconds)
    >>> governor.count_for(rows=1), governor.count_for(rows=4)   # quiet: every core is faster; 4 rows: not timed yet
    (2, 2)
    >>> governor.passed(rows=4, seconds=0.5)
    >>> governor.count_for(rows=4)                          # 4 rows on one thread, timed once before it is weighed
    1
    >>> for _ in range(3):
    ...     count = governor.count_for(rows=1)
    ...     governor.passed(rows=1, seconds=1.3)           # another process took a core: two threads stall
    >>> governor.count_for(rows=1)
    1
    """

    def __init__(self, cores: int, fixed: bool = False) -> None:
        self.counts = sorted({max(1, cores), max(1, cores - 1)}, reverse=True)  # every core, and one fewer
        self.count = self.counts[0]
        self.fixed = fixed or len(self.counts) == 1  # a count asked for is never changed
        self.recent: dict[tuple[int, int], deque] = {}
        self.passes = 0

    def count_for(self, rows: int) -> int:
        """The count a pass over `rows` tokens runs on: one not timed at this size yet, else now and then the slower one
        (so its times stay current), else the one whose recent passes of this size were faster."""
        if self.fixed:
            return self.count
        size = min(rows, SIZES)
        self.passes += 1
        untimed = [count for count in self.counts if (count, size) not in self.recent]
        if untimed:
            self.count = untimed[0]
            return self.count
        medians = {count: statistics.median(self.recent[(count, size)]) for count in self.counts}
        faster = min(medians, key=medians.get)
        self.count = faster if self.passes % PROBE_AFTER else next(count for count in self.counts if count != faster)
        return self.count

    def passed(self, rows: int, seconds: float) -> None:
        """A pass over `rows` tokens took `seconds` on `count` threads (the last `count_for`)."""
        if not self.fixed:
            self.recent.setdefault((self.count, min(rows, SIZES)), deque(maxlen=WINDOW)).append(seconds)
