"""Writing into the local store whole or not at all: a file, or a whole folder, and where the store is.

    write_text(cache_dir() / "kernels" / "w8a8-verdict.json", text)      # beside its name, fsync, one rename
    with new_folder(cache_dir() / "heads" / "qwen") as work:             # an empty temporary sibling to fill
        (work / "config.json").write_text("{}")                          # ... then it replaces the old folder whole

A file is written under a temporary name beside its final one (same file system), flushed to disk
(`os.fsync`) and renamed into place: `os.replace` is atomic, so a reader sees the old file or the new
one. A folder cannot be swapped in one rename when one is already there, so `new_folder` takes three
steps, each a rename or a delete:

    1. the old folder is renamed aside, to `.NAME.old`      (it is whole there)
    2. the new folder, complete and flushed, is renamed to NAME
    3. the old folder is deleted

A crash between 1 and 2 leaves no NAME but a whole `.NAME.old`; `settle(NAME)` (called by every
writer and by the readers of heads and converted copies) renames it back. A crash after 2 leaves the
new folder and a `.NAME.old` that `settle` deletes. So whoever looks finds the old folder or the new
one, never a mix. A crash while the block fills the temporary folder leaves only that
`.NAME.new-*` folder (not cleaned up here: another process may be filling it).

The store is `$SPECDEC_CACHE`, by default `~/.cache/specdec`: models/, heads/, datasets/, kernels/.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

Result = TypeVar("Result")


def cache_dir() -> Path:
    """`$SPECDEC_CACHE`, or `~/.cache/specdec`."""
    return Path(os.environ.get("SPECDEC_CACHE") or Path.home() / ".cache" / "specdec").expanduser()


def write_file(path: str | Path, write: Callable[[Path], Result]) -> Result:
    """Make `path` whole or not at all: `write(temporary)` fills a file beside it, which is flushed and renamed into
    place.

    Returns what `write` returned (a checksum, say). If `write` raises, the old file (if any) is untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(handle)
    temporary = Path(name)
    try:
        result = write(temporary)
        _flush(temporary)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; what the store keeps may be shared
        os.replace(temporary, path)
        _flush(path.parent)
    finally:
        temporary.unlink(missing_ok=True)
    return result


def write_text(path: str | Path, text: str) -> Path:
    """`write_file` for a text."""
    write_file(path, lambda temporary: temporary.write_text(text))
    return Path(path)


def _aside(final: Path) -> Path:
    return final.parent / f".{final.name}.old"


def settle(final: str | Path) -> Path:
    """Finish what a crash between `new_folder`'s renames left:
    put a whole old folder back, or delete it once replaced."""
    final = Path(final)
    aside = _aside(final)
    if aside.exists():
        if final.exists():
            shutil.rmtree(aside, ignore_errors=True)  # crashed after step 2: the new folder is in place
        else:
            os.rename(aside, final)  # crashed between steps 1 and 2: the old folder, whole
    return final


@contextmanager
def new_folder(final: str | Path) -> Iterator[Path]:
    """Build a folder whole: the block fills an empty temporary sibling, which then replaces `final` (module docstring).

    If the block raises, `final` is left as it was and the temporary folder is deleted.
    """
    final = settle(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{final.name}.new-", dir=final.parent))
    try:
        yield work
        for path in work.rglob("*"):
            _flush(path)
        os.chmod(work, 0o755)  # mkdtemp makes it private
        _flush(work)
        _replace_folder(work, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _replace_folder(work: Path, final: Path) -> None:
    aside = _aside(final)
    if final.exists():
        os.rename(final, aside)  # 1. the old folder aside
    os.rename(work, final)  # 2. the new one in place
    _flush(final.parent)
    shutil.rmtree(aside, ignore_errors=True)  # 3. the old one goes


def _flush(path: Path) -> None:
    """Ask the operating system to put `path` (a file, or a folder's list of names) on the disk now."""
    if path.is_symlink():
        return
    try:
        handle = os.open(path, os.O_RDONLY)
    except OSError:  # a folder some systems do not open: nothing to flush
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)
