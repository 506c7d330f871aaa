"""This machine, in the few facts that decide which kernels run and how fast: what kept verdicts and timings are keyed by.

    cpu_facts()      {"cpu": "AMD EPYC ...", "flags": ["avx2", "fma", ...]} from /proc/cpuinfo (empty where there is none)

A verdict (the W8A8 gate's, llama.cpp's self-test) or a timing (measured costs) kept in the store holds for the
machine these name; another CPU, or the same with other SIMD extensions, is asked again.
"""

from __future__ import annotations

import platform
from pathlib import Path

FLAGS = ("sse3", "ssse3", "avx", "avx2", "f16c", "fma", "bmi2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8")


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
