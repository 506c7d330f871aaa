"""Huge pages for llama.cpp's weights: one address translation per 2 MiB of weights instead of one per 4 KiB.

A one-token step reads every weight once: about a gigabyte for the zoo's 1.5B in Q4_K_M. In the kernel's usual 4 KiB
pages that is a quarter of a million pages a step, each of whose addresses the CPU must translate (its TLB holds a few
thousand); in 2 MiB *transparent huge pages* it is 512 times fewer. Linux backs a region with huge pages where the
process asks for them (`madvise(MADV_HUGEPAGE)`) when the machine's setting
(`/sys/kernel/mm/transparent_hugepage/enabled`) is `madvise`, the usual default; `always` backs every large region
and `never` none. llama.cpp does not ask. The loader can, at the one moment that copies nothing: llama.cpp calls a
progress callback before it reads each tensor, and at the first call its weight buffers are allocated but not yet
touched. The callback finds the large anonymous regions that appeared since the load began (`/proc/self/maps`, before
against now) and advises them, so every page the read then touches is a huge one.

Pages are where bytes live, not what they are: the weights, and so every logit, are the same bits either way.

It is opt-in (`SPECDEC_HUGE_PAGES=1`): on this project's 2-core VMs huge pages cost more at load than a short run
wins back. `python benchmarks/huge_pages.py` measured a step 1.05x as fast, and a load of the 1.5B 10 s after the last
at 2.4 s instead of 1.1 s (the VM hands out fresh memory slowly in huge pages): paid back after about 900 tokens.

    loading = HugePagesOnLoad(ffi)               # before llama_model_load_from_file: notes the regions there now
    params.progress_callback = loading.callback  # None where there is nothing to ask (not Linux, `always`, `never`)

`SPECDEC_HUGE_PAGES=1` asks at every load (`load_gguf(huge_pages=True)` at one).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

HUGE_PAGE = 2 << 20  # bytes: x86-64's transparent huge page
MADV_HUGEPAGE = 14  # <sys/mman.h> on Linux
SMALLEST = 16 << 20  # bytes: llama.cpp's weight buffers are far larger; the interpreter's own regions mostly smaller
SETTING = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def thp_setting(text: str | None = None) -> str:
    """The machine's transparent-huge-page setting: the bracketed word of `SETTING` ("" where there is none).

    >>> thp_setting("always [madvise] never\\n"), thp_setting("")
    ('madvise', '')
    """
    if text is None:
        try:
            text = SETTING.read_text()
        except OSError:
            return ""
    start, end = text.find("["), text.find("]")
    return text[start + 1 : end] if 0 <= start < end else ""


def anonymous_regions(maps: str, smallest: int = SMALLEST) -> set[tuple[int, int]]:
    """The writable anonymous regions of at least `smallest` bytes in a `/proc/PID/maps` text: {(start, end)}.

    >>> anonymous_regions('''7f0000000000-7f0040000000 rw-p 00000000 00:00 0
    ... 7f0040000000-7f0040001000 rw-p 00000000 00:00 0
    ... 7f0050000000-7f0090000000 r--p 00000000 08:01 42    /models/target.gguf
    ... 55d000000000-55d010000000 rw-p 00000000 00:00 0     [heap]''')   # 1 GiB anonymous; 4 KiB; a file; the heap
    {(139637976727552, 139639050469376)}
    """
    found = set()
    for line in maps.splitlines():
        fields = line.split()
        if len(fields) != 5 or not fields[1].startswith("rw"):  # a sixth field names a file or [heap], [stack]
            continue
        start, end = (int(address, 16) for address in fields[0].split("-"))
        if end - start >= smallest:
            found.add((start, end))
    return found


def huge_span(start: int, end: int) -> tuple[int, int]:
    """The whole huge pages inside [start, end): (first, length); length 0 where none fits.

    >>> huge_span(3 << 20, 9 << 20)    # 3 MiB to 9 MiB: the pages at 4 MiB and 6 MiB
    (4194304, 4194304)
    """
    first = -(-start // HUGE_PAGE) * HUGE_PAGE
    return first, max(0, (end - first) // HUGE_PAGE * HUGE_PAGE)


def _maps() -> str:
    try:
        return Path("/proc/self/maps").read_text()
    except OSError:
        return ""


def advise(regions: set[tuple[int, int]]) -> int:
    """Ask for huge pages in each region; the bytes asked for (0 where the kernel refused each)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    asked = 0
    for start, end in regions:
        first, length = huge_span(start, end)
        if length and libc.madvise(ctypes.c_void_p(first), length, MADV_HUGEPAGE) == 0:
            asked += length
    return asked


def wanted() -> bool:
    """Whether loads ask for huge pages: where `SPECDEC_HUGE_PAGES` is 1."""
    return os.environ.get("SPECDEC_HUGE_PAGES", "").strip() == "1"


def status(setting: str | None = None, asked: bool | None = None) -> str:
    """One line for `specdec runtime status`: whether loads ask for huge pages here ("" where the kernel has none).

    >>> print(status("madvise", asked=False))
    huge pages for the weights: off; SPECDEC_HUGE_PAGES=1 asks for them (a faster step, a slower load: docs/hardware.md)
    >>> status("always", asked=False)
    "huge pages for the weights: always (this machine's setting)"
    """
    setting, asked = thp_setting() if setting is None else setting, wanted() if asked is None else asked
    if setting in ("always", "never"):
        return f"huge pages for the weights: {setting} (this machine's setting)"
    if setting != "madvise":
        return ""
    said = "asked for (SPECDEC_HUGE_PAGES=1)" if asked else "off; SPECDEC_HUGE_PAGES=1 asks for them"
    return f"huge pages for the weights: {said} (a faster step, a slower load: docs/hardware.md)"


class HugePagesOnLoad:
    """A `llama_progress_callback` that advises the regions a load made, once, before their first byte is read.

    `callback` is None where asking changes nothing (not Linux, or a setting of `always`, `never` or none) or where
    `ask` is False. `asked`: the bytes advised (after the load)."""

    def __init__(self, ffi, ask: bool = True) -> None:
        self.asked = 0
        self.callback = None
        self._before: set[tuple[int, int]] | None = None
        if ask and thp_setting() == "madvise":
            self._before = anonymous_regions(_maps(), SMALLEST)
            self.callback = ffi.callback("llama_progress_callback", self._progress, onerror=_keep_loading)

    def _progress(self, progress: float, user_data) -> bool:
        if self._before is not None:
            new, self._before = anonymous_regions(_maps(), SMALLEST) - self._before, None
            self.asked = advise(new)
        return True  # go on loading


def _keep_loading(exception, value, traceback) -> bool:
    """A failure to ask is no failure to load: the weights are the same on small pages."""
    return True
