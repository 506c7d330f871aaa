"""Models for the dashboard: what is cached, fetching with a progress bar, and loading a pair once.

    with shows_errors():
        if offer_downloads(settings):              # a button and a progress bar when weights are missing
            pair = load_pair(settings)            # cached across reruns, pages and sessions

A loaded pair lives in a dict held by `st.cache_resource` (shared by every session), keyed by (target,
draft, device, dtype, target and draft quantization), with room for one entry: choosing another pair
frees the previous one once the new one has loaded (so a pair that fails to load leaves the previous
one usable). A first load (GGUF name matching and dequantization, quantization, saving a converted
copy) shows a progress bar with the time left; Stop ends it at the next redraw, nothing half-made is
kept, and the next run of the page says so once (`stopped_load`). Home warms the default pair up in the
background (`warm_up`). Every failure a person can act on arrives as a `SpecdecError` and is shown
with `st.error`; the page goes on.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st
import torch

from pages.common.settings import Settings
from pages.common.turns import shared_turns, waiting_note
from specdec import pairing
from specdec.errors import SpecdecError
from specdec.generation.methods import is_target_only
from specdec.kernels.devices import dtype_name
from specdec.kernels.precision import resolve_pair_precision
from specdec.pairing import LoadedPair
from specdec.zoo import converted, status
from specdec.zoo.catalog import MODELS, PAIRS, ModelEntry, resolve_model
from specdec.zoo.fetch import FetchProgress
from specdec.zoo.load_progress import LoadStep


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
    entries = [resolve_model(name) for name in dict.fromkeys((settings.draft, settings.target)) if not is_target_only(name)]
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
    """Fetch zoo models one after another, drawing a progress bar for each (after other tabs' heavy jobs)."""
    waiting = st.empty()
    with shared_turns().turn(waiting_note(waiting, "download"), label="a download"):
        waiting.empty()
        _fetch_each(names)


def _fetch_each(names: list[str]) -> None:
    for name in names:
        bar = st.progress(0.0, text=f"{name}: starting")

        def report(update: FetchProgress, bar=bar) -> None:
            bar.progress(update.fraction, text=update.describe())     # "qwen: downloading part 3 of 6, 100 / 500 MB, about 40 s left"

        status.fetch(name, progress=report)
        bar.progress(1.0, text=f"{name}: ready")
    pair_availability_labels.clear()


@st.cache_resource(show_spinner=False)
def _loaded_pairs() -> dict[tuple[str, ...], LoadedPair]:
    """The pair in memory, shared by every session, keyed by (target, draft, device, dtype, quantizations); one at most.

    A plain dict held by `st.cache_resource`, not a cached loading function: the load draws a progress
    bar on the page, which a cached function may not do (Streamlit would have to replay it).
    """
    return {}


def _forget_loaded_pair() -> None:
    _loaded_pairs().clear()
    gc.collect()


def resolved_precision(settings: Settings) -> tuple[str, str, str, str]:
    """('cpu', 'float32', 'int8', 'int4') and the like: 'auto' made concrete, so equal choices share one cache entry."""
    target, draft = resolve_pair_precision(settings.device, settings.dtype, settings.quantization, settings.draft_quantization,
                                           not is_target_only(settings.draft))
    return str(target.device), dtype_name(target.dtype), target.weights, "none" if draft is None else draft.weights


LOADING = "loading_pair"   # in the session while a load runs: "draft → target"; left there when a Stop ends the script


def load_pair(settings: Settings) -> LoadedPair:
    """The pair `settings` names, loaded once and then served from the cache (a status box while loading)."""
    if not settings.target or not settings.draft:
        raise SpecdecError("give both a draft and a target model for a custom pair (the draft may be prompt-lookup, recycling, "
                           "lookahead, suffix or layer-skip)")
    key = _key(settings)
    loaded = _loaded_pairs()
    if key in loaded:
        return loaded[key]
    target, draft, device, dtype, quantization, draft_quantization = key
    st.session_state[LOADING] = f"{draft} → {target}"
    try:
        with st.status(f"Loading {draft} → {target} on {device} …", expanded=True) as box:   # open: its bar is the news
            bar = st.empty()

            def next_model(message: str) -> None:    # a new model: its label, and no bar left over from the last one
                box.update(label=message, expanded=True)
                bar.empty()

            pair = pairing.load_pair(target, draft, device, dtype, progress=next_model,
                                     quantization=quantization, draft_quantization=draft_quantization, steps=_progress_bar(bar))
            bar.empty()
            st.caption(f"Kernels: {pair.kernels}")       # how each model runs, and why (`specdec.kernels.precision`)
            seconds = sum(pair.load_seconds.values())
            box.update(label=f"Loaded {settings.draft} → {settings.target} on {device}: {pair.precisions} ({seconds:.1f} s)",
                       state="complete", expanded=False)
    except Exception:                 # a failure is shown where it happened; Streamlit's stop is a BaseException, not caught here
        st.session_state.pop(LOADING, None)
        raise
    st.session_state.pop(LOADING, None)
    loaded.clear()                    # the previous pair goes once the new one is here (a failed load keeps it)
    gc.collect()
    loaded[key] = pair
    return pair


def stopped_load() -> str | None:
    """The pair ("draft → target") whose load a Stop (or any click) ended part-way in this session, said once; else None.

    Streamlit ends a running script at its next page call when the user clicks; a load ended so never
    reaches the line that clears its mark, and the page's next run finds it here.
    """
    return st.session_state.pop(LOADING, None)


def _key(settings: Settings) -> tuple[str, ...]:
    """(target, draft, device, dtype, quantization, draft quantization), 'auto' made concrete: the loaded pair's name."""
    device, dtype, quantization, draft_quantization = resolved_precision(settings)
    return settings.target, settings.draft, device, dtype, quantization, draft_quantization


def is_loaded(settings: Settings) -> bool:
    """Whether the pair `settings` names is in memory already (a run starts at once)."""
    return _key(settings) in _loaded_pairs()


def ready_on_disk(settings: Settings) -> bool:
    """Whether every model of the pair has its converted copy for these precisions (a load takes seconds, not minutes)."""
    target, draft = resolve_pair_precision(settings.device, settings.dtype, settings.quantization, settings.draft_quantization,
                                           not is_target_only(settings.draft))
    wanted = [(settings.target, target.dtype, target.weights)]
    if draft is not None:
        wanted.append((settings.draft, draft.dtype, draft.weights))
    for name, torch_dtype, weights in wanted:
        entry = resolve_model(name)
        if entry is None or converted.find_converted(entry, torch_dtype, weights) is None:
            return False
    return True


_warming = threading.Lock()


def warm_up(settings: Settings) -> bool:
    """Load `settings`' pair in a background thread, if nothing is loaded yet and its converted copies are on disk.

    The Home page calls this so that the first click finds the pair in memory: a load from converted
    copies takes seconds (mostly packing int8 weights), a newcomer's reading of the page about as long.
    It takes its turn like any heavy job, so a click during the warm-up waits for it with a note on the
    page instead of loading the pair twice. A first conversion is never started here: that one shows
    its progress on the page. Returns True while a warm-up is under way (started now or before).
    """
    if _warming.locked():
        return True
    if _loaded_pairs() or not settings.target or not settings.draft:
        return False
    try:
        ready = ready_on_disk(settings)
    except Exception:                 # an unknown model or device: the click will say what is wrong
        ready = False
    if not ready or not _warming.acquire(blocking=False):
        return False
    key, loaded, turns = _key(settings), _loaded_pairs(), shared_turns()
    target, draft, device, dtype, quantization, draft_quantization = key

    def load() -> None:
        try:
            with turns.turn(on_wait=lambda ahead, running: None, label="the default pair, loading in the background"):
                if not loaded:
                    loaded[key] = pairing.load_pair(target, draft, device, dtype, quantization=quantization,
                                                    draft_quantization=draft_quantization)
        except Exception as error:    # the click will load it again and show the error where it can be read
            logging.getLogger(__name__).warning("warming up %s -> %s failed: %s", draft, target, error)
        finally:
            _warming.release()

    threading.Thread(target=load, name="specdec-warm-up", daemon=True).start()
    return True


def _progress_bar(slot, per_second: float = 5.0):
    """A callback drawing `LoadStep`s in `slot` as a progress bar (at most `per_second` redraws, and every stage's end).

    Each redraw is also where a Stop click lands: Streamlit ends the script there, and the load with it.
    """
    last = [0.0]

    def draw(step: LoadStep) -> None:
        now = time.monotonic()
        if step.total and step.done < step.total and now - last[0] < 1.0 / per_second:
            return
        last[0] = now
        if step.total:
            slot.progress(step.fraction, text=step.describe())
        else:
            slot.progress(0.0, text=step.describe())

    return draw


def is_chat_model(name: str) -> bool:
    """Whether the catalogue says `name` is an instruct model with a chat template (False for unknown names)."""
    entry = MODELS.get(name)
    return bool(entry and entry.chat)
