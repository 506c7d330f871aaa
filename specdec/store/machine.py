"""This machine, in the few facts that decide which kernels run and how fast: what kept verdicts and timings are keyed
by.

    cpu_facts()      {"cpu": "AMD EPYC ...", "flags": ["avx2", "fma", ...]} from /proc/cpuinfo (empty where there
                     is none)

A verdict (the W8A8 gate's, llama.cpp's self-test) or a timing (measured costs) kept in the store holds for the
machine these name; another CPU, or the same with other SIMD extensions, is asked again.
"""

from __future__ import annotations

import platform
from pathlib import Path

FLAGS = (
    "sse3",
    "ssse3",
    "avx",
    "avx2",
    "f16c",
    "fma",
    "bmi2",
    "avx512f",
    "avx512_vnni",
    "avx512_bf16",
    "amx_tile",
    "amx_int8",
)


def cpu_facts(wanted: tuple[str, ...] = FLAGS) -> dict[str, object]:
    """The CPU's model name and which of the `wanted` SIMD flags it has, from /proc/cpuinfo.

    >>> sorted(cpu_facts())
    ['cpu', 'flags']
    """
    flags, model = set(), platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return {"cpu": model, "flags": [flag for flag in wanted if flag in flags]}


# ---------------------------------------------------------------- how busy the machine is


def cpu_sample() -> tuple[float, float, float] | None:
    """(seconds every core spent working, seconds this process spent working, wall seconds) now, from /proc/stat and
    `os.times`; None where /proc/stat cannot be read. Two samples give what other processes did between them
    (`others_busy`)."""
    import os
    import time

    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(value) for value in fields[:8])
    own = os.times()
    return (
        (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK"),
        own.user + own.system,
        time.monotonic(),
    )


def others_busy(before: tuple[float, float, float] | None, after: tuple[float, float, float] | None) -> float | None:
    """Cores' worth of work done by other processes between two `cpu_sample`s: 1.0 is one core kept busy all along.

    >>> others_busy((100.0, 5.0, 0.0), (101.5, 5.9, 1.0))       # 1.5 core-seconds in 1 s, 0.9 of them this process's
    0.6
    >>> others_busy(None, (1.0, 1.0, 1.0)) is None
    True
    """
    if before is None or after is None or after[2] <= before[2]:
        return None
    return round(max(0.0, (after[0] - before[0]) - (after[1] - before[1])) / (after[2] - before[2]), 3)


BUSY_FROM = 0.5  # cores' worth of other work from which a machine counts as busy (timings flagged, threads passive)


def busy_now(seconds: float = 0.05) -> float | None:
    """Cores' worth of work other processes do over the next
    `seconds` (this process sleeps meanwhile); None where unknown."""
    import time

    before = cpu_sample()
    time.sleep(seconds)
    return others_busy(before, cpu_sample())


# libgomp's GOMP_SPINCOUNT on a quiet machine: spins about 0.07 s after the last operation, then sleeps
SPIN_THEN_SLEEP = "3000000"


def wait_policy_here(busy: float | None) -> dict[str, str]:
    """How OpenMP threads should wait between parallel regions on a machine with `busy` cores of other work, as the
    environment libgomp reads: spinning a long while (`SPIN_THEN_SLEEP` turns) where it is quiet, sleeping at once
    (PASSIVE) beside other work, which spinning threads fight for the cores.

    Plain decoding of the zoo's 1.5B on llama.cpp, 2 AVX2 cores (benchmarks/thread_wait.py, guide/measurements/avx2/
    thread-wait.csv and thread-wait-spin.csv): quiet, PASSIVE 9.1-11.0 tokens/s, libgomp's default spin 12.4-14.1,
    3,000,000 turns 16.5-16.6, ACTIVE 14.6-17.0; one core busy, PASSIVE 9.1-9.2, 3,000,000 turns 6.4-7.0, ACTIVE
    4.8-6.2. ACTIVE is never chosen: its idle threads spin for ever (a whole core while a dashboard waits for a click);
    3,000,000 turns stop spinning 0.07 s after the last operation.

    >>> wait_policy_here(0.0), wait_policy_here(1.0), wait_policy_here(None)
    ({'GOMP_SPINCOUNT': '3000000'}, {'OMP_WAIT_POLICY': 'PASSIVE'}, {'OMP_WAIT_POLICY': 'PASSIVE'})
    """
    return (
        {"GOMP_SPINCOUNT": SPIN_THEN_SLEEP} if busy is not None and busy < BUSY_FROM else {"OMP_WAIT_POLICY": "PASSIVE"}
    )


def wait_policy_in_force() -> str:
    """How this process's OpenMP threads wait, in words: what kept timings are keyed by.

    >>> import os
    >>> policy, spin = os.environ.get("OMP_WAIT_POLICY") or "default", os.environ.get("GOMP_SPINCOUNT") or "default"
    >>> wait_policy_in_force() == f"{policy}, spin {spin}"
    True
    """
    import os

    return f"{os.environ.get('OMP_WAIT_POLICY') or 'default'}, spin {os.environ.get('GOMP_SPINCOUNT') or 'default'}"
