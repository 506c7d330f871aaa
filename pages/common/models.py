"""Models for the dashboard: what is cached, fetching with a progress bar, and loading a pair once.

    with shows_errors():
        if offer_downloads(settings):              # a button and a progress bar when weights are missing
            pair = load_pair(settings)            # cached across reruns, pages and sessions

A loaded pair lives in `st.cache_resource` keyed by (target, draft, device, dtype, target and draft quantization) with room for
one entry: choosing another pair frees the previous one once the new one has loaded (so a pair
that fails to load leaves the previous one usable). Every failure a person can act on arrives as
a `SpecdecError` and is shown with `st.error`; the page goes on.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st
import torch

from pages.common.settings import Settings
from specdec.errors import SpecdecError
from specdec.zoo import pairing, status
from specdec.zoo.catalog import MODELS, PAIRS, PROMPT_LOOKUP, ModelEntry, resolve_model
from specdec.zoo.devices import dtype_name
from specdec.zoo.fetch import FetchProgress
from specdec.zoo.pairing import LoadedPair

_loaded_key: tuple[str, ...] | None = None  # (target, draft, device, dtype, quantization, draft quantization) in the cache


@contextmanager
def shows_errors() -> Iterator[None]:
    """Show a `SpecdecError` (or running out of memory) as `st.error` and carry on with the page."""
    try:
        yield
    except SpecdecError as error:
        st.error(str(error), icon=":material/error:")
    except (MemoryError, torch.OutOfMemoryError):
        _forget_loaded_pair()
        st.error("Not enough memory for this pair with these settings: pick a smaller pair, dtype bfloat16, "
                 "or fewer new tokens, then try again.", icon=":material/error:")


@st.cache_data(ttl=60, show_spinner=False)
def pair_availability_labels() -> dict[str, str]:
    """Each curated pair's state: 'cached', 'needs download (N MB)' or 'needs a model hub (~N MB)'."""
    return {name: status.pair_availability(pair) for name, pair in PAIRS.items()}


def missing_models(settings: Settings) -> list[ModelEntry]:
    """The zoo models of the chosen pair that are not on this machine yet (custom paths and hub ids are not checked)."""
    entries = [resolve_model(name) for name in dict.fromkeys((settings.draft, settings.target)) if name != PROMPT_LOOKUP]
    return [entry for entry in entries if entry is not None and not status.model_status(entry).cached]


def _download_size(entry: ModelEntry) -> str:
    return status.model_status(entry).availability.removeprefix("needs ")


def offer_downloads(settings: Settings, key: str) -> bool:
    """True when the pair's models are all here; otherwise offer to fetch them (with progress) and return False."""
    missing = missing_models(settings)
    if not missing:
        return True
    st.info("This pair needs its models first: " + ", ".join(f"**{e.name}** ({_download_size(e)})" for e in missing))
    if st.button(f"Download {' and '.join(e.name for e in missing)}", key=key):
        with shows_errors():
            fetch_models([entry.name for entry in missing])
            return True
    return False


def fetch_models(names: list[str]) -> None:
    """Fetch zoo models one after another, drawing a progress bar for each."""
    for name in names:
        bar = st.progress(0.0, text=f"{name}: starting")

        def report(update: FetchProgress, bar=bar) -> None:
            done = f"{update.done_bytes / 1e6:,.0f} / {update.total_bytes / 1e6:,.0f} MB" if update.total_bytes else ""
            bar.progress(update.fraction, text=f"{update.model}: {update.message} {done}")

        status.fetch(name, progress=report)
        bar.progress(1.0, text=f"{name}: ready")
    pair_availability_labels.clear()


@st.cache_resource(max_entries=1, show_spinner=False)
def _load_pair(target: str, draft: str, device: str, dtype: str, quantization: str, draft_quantization: str, _say=None) -> LoadedPair:
    return pairing.load_pair(target, draft, device, dtype, progress=_say, quantization=quantization, draft_quantization=draft_quantization)


def _forget_loaded_pair() -> None:
    global _loaded_key
    _load_pair.clear()
    _loaded_key = None
    gc.collect()


def resolved_precision(settings: Settings) -> tuple[str, str, str, str]:
    """('cpu', 'float32', 'int8', 'int4') and the like: 'auto' made concrete, so equal choices share one cache entry."""
    device, dtype, quantization, draft_quantization, _ = pairing.resolve_precision(
        settings.device, settings.dtype, settings.quantization, settings.draft_quantization, settings.draft)
    return str(device), dtype_name(dtype), quantization, draft_quantization


def load_pair(settings: Settings) -> LoadedPair:
    """The pair `settings` names, loaded once and then served from the cache (a status box while loading)."""
    global _loaded_key
    if not settings.target or not settings.draft:
        raise SpecdecError("give both a draft and a target model for a custom pair (the draft may be prompt-lookup)")
    device, dtype, quantization, draft_quantization = resolved_precision(settings)
    key = (settings.target, settings.draft, device, dtype, quantization, draft_quantization)
    if key == _loaded_key:
        return _load_pair(*key)
    with st.status(f"Loading {settings.draft} → {settings.target} on {device} …") as box:
        pair = _load_pair(*key, _say=lambda message: box.update(label=message))
        seconds = sum(pair.load_seconds.values())
        box.update(label=f"Loaded {settings.draft} → {settings.target} on {device}: {pair.precisions} ({seconds:.1f} s)",
                   state="complete", expanded=False)
    _loaded_key = key
    return pair


def is_chat_model(name: str) -> bool:
    """Whether the catalogue says `name` is an instruct model with a chat template (False for unknown names)."""
    entry = MODELS.get(name)
    return bool(entry and entry.chat)
