"""One manifest for every folder the store keeps: each file's size and SHA-256, and stamps so that an unchanged file is
not hashed again.

    write_manifest(work, known={"model.safetensors": sha256}, model="qwen")   # last, in the folder being built
    problem = check_folder(folder)        # None, or 'model.safetensors does not match its checksum'

The manifest, `specdec-manifest.json`, is written once, when the folder is made:

    {"model": "qwen", ..., "files": {"model.safetensors": {"bytes": 3087467520, "sha256": "9f2c..."}, ...}}

(the caller's own fields beside `files`). Hashing 6 GB takes seconds, and a head or a converted copy is
checked at every load, so a second file, `specdec-verified.json`, keeps each file's [size, mtime] as of
the last time its SHA-256 matched: a file whose size and mtime are still those is not hashed again.

A stamp is trusted only if the file's mtime is older than the stamps file itself. File systems keep
mtimes in ticks of a few milliseconds, so a file changed in the very tick it was stamped would keep its
stamp; such a file is hashed (git calls this "racily clean"). After writing stamps we wait out that tick
(milliseconds), so what was just written or checked is trusted next time. A file changed in place or
truncated is therefore caught at its next check; one changed on purpose with its size and mtime put
back is not (nor is that the danger here: a full disk, a crash, a copy cut short).

Not handled: who may write the folder, and what to do about a mismatch (the callers say: a converted
copy is made again, a head is refused in one line).
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from specdec.store.folders import write_text

MANIFEST = "specdec-manifest.json"
VERIFIED = "specdec-verified.json"  # {file: [size, mtime_ns]} as of the last time its SHA-256 matched
CHUNK_BYTES = 8 * 1024 * 1024


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file, read 8 MB at a time (the only place the store hashes a file)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def write_manifest(folder: Path, known: dict[str, str] | None = None, files: list[str] | None = None, **fields) -> dict:
    """Record `files` of `folder` (every file under it but these two, by default) with their sizes and SHA-256s, and
    `fields`.

    `known` gives SHA-256s computed while writing (a file in it is not read again). Stamps are written too: the
    files were just hashed. Returns the manifest.
    """
    known = known or {}
    names = (
        files
        if files is not None
        else sorted(
            path.relative_to(folder).as_posix()
            for path in folder.rglob("*")
            if path.is_file() and path.name not in (MANIFEST, VERIFIED)
        )
    )
    recorded = {
        name: {"bytes": (folder / name).stat().st_size, "sha256": known.get(name) or file_sha256(folder / name)}
        for name in names
    }
    manifest = {**fields, "files": recorded}
    write_text(folder / MANIFEST, json.dumps(manifest, indent=2))
    _write_stamps(folder, {name: _stamp(folder / name) for name in recorded})
    return manifest


def read_manifest(folder: Path) -> dict | None:
    """The folder's manifest, or None when it has none or it cannot be read."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and isinstance(manifest.get("files"), dict) else None


def check_folder(folder: Path, manifest: dict | None = None) -> str | None:
    """None when every file the manifest lists is there with its size and SHA-256, else what is wrong (one line).

    Only files whose stamps cannot be trusted are hashed (module docstring); the stamps are brought up to date.
    """
    manifest = manifest or read_manifest(folder)
    if manifest is None:
        return f"{MANIFEST} is missing or damaged"
    stamps, trusted = _read_stamps(folder)
    current, hashed = {}, False
    for name, recorded in manifest["files"].items():
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        current[name] = _stamp(path)
        if current[name][0] != recorded["bytes"]:
            return f"{name} has {current[name][0]:,} bytes, not the {recorded['bytes']:,} recorded"
        if stamps.get(name) == current[name] and current[name][1] < trusted:
            continue
        hashed = True
        if file_sha256(path) != recorded["sha256"]:
            return f"{name} does not match its checksum"
    if hashed or current != stamps:
        try:
            _write_stamps(folder, current)
        except OSError:  # a folder we may not write: it is checked again next time
            pass
    return None


def _stamp(path: Path) -> list[int]:
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns]


def _read_stamps(folder: Path) -> tuple[dict, int]:
    """The stamps and the time they were written (the stamps file's mtime); ({}, 0) when there are none."""
    try:
        return json.loads((folder / VERIFIED).read_text()), (folder / VERIFIED).stat().st_mtime_ns
    except (OSError, ValueError):
        return {}, 0


def _write_stamps(folder: Path, stamps: dict[str, list[int]], patience_s: float = 2.0) -> None:
    """Write the stamps, then wait until the file system's clock
    has moved past every stamped mtime (a tick, usually)."""
    newest = max((mtime for _, mtime in stamps.values()), default=0)
    deadline = time.monotonic() + patience_s
    while True:
        write_text(folder / VERIFIED, json.dumps(stamps))
        if (folder / VERIFIED).stat().st_mtime_ns > newest or time.monotonic() > deadline:
            return
        time.sleep(0.005)
