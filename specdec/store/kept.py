"""A JSON file of kept verdicts or measurements, changed by several processes and threads at once without a loss.

Reading a JSON file, changing it and writing it back loses a change when two jobs do it at once: both read the
old file, and the second write drops the first job's entry. `update_json` holds an exclusive lock on a file beside
it (`NAME.lock`, `fcntl.flock`: it serialises processes; a lock per path in this process serialises threads) for the
whole read-change-write, and writes the new text beside the file and renames it into place (`write_text`), so a
reader never sees half a file and a crash leaves the old one.

    update_json(path, lambda kept: kept.setdefault("verdicts", {}).update({key: verdict}))
    read_json(path)                          # {} for a missing or unreadable file

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "kept.json"
>>> update_json(path, lambda kept: kept.update(a=1))
>>> update_json(path, lambda kept: kept.setdefault("b", 2))
2
>>> read_json(path)
{'a': 1, 'b': 2}
"""

from __future__ import annotations

import fcntl
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from specdec.store.folders import write_text

Result = TypeVar("Result")
_THREAD_LOCKS: dict[str, threading.Lock] = {}
_GUARD = threading.Lock()


def read_json(path: str | Path) -> dict:
    """The kept object, or {} when the file is missing or is not a JSON object."""
    try:
        kept = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) else {}


def update_json(path: str | Path, change: Callable[[dict], Result]) -> Result:
    """`change(kept)` on the kept object under an exclusive lock, the result written whole; returns what it returned."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _GUARD:
        thread_lock = _THREAD_LOCKS.setdefault(str(path.resolve()), threading.Lock())
    with thread_lock, open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            kept = read_json(path)
            result = change(kept)
            write_text(path, json.dumps(kept, indent=2, sort_keys=True))
            return result
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
