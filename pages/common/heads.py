"""Trained EAGLE-3 heads in the dashboard: a head beside the draft models, and training one for the chosen target.

    head_pair_label(name)           # the sidebar's pair picker: 'EAGLE-3 head (trained) → target · cached'
    head_caption(settings)          # the sidebar, under the picker: how to get a head when the target has none
    # the Playground: minutes, Train, a bar with the time left, Stop (the checkpoint stays)
    training_section(settings)

A head is the draft `eagle` of `specdec.registry` (its resource HEAD): the one `specdec heads train` (or this page)
saved for the target in the cache (`specdec.heads.files.trained_head`). Training is
`specdec.head_training.train_for_target`, run as a job (`pages.common.jobs`) so the page stays usable: it waits its turn
like any heavy work (`pages.common.turns`), reports every step (a `specdec.store.Progress`: loss, agreement, time left),
and its Stop asks the run to end after the current step, which then writes its checkpoint (a head, AdamW's state, the
steps so far); Train again goes on from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from pages.common import jobs
from pages.common.models import forget_head_pairs
from pages.common.settings import CUSTOM, Settings, drafts_with
from pages.common.state import keep, remember
from pages.common.turns import Turns, shared_turns, waiting_note
from specdec.head_training import HeadRun, train_for_target
from specdec.heads.files import trained_head
from specdec.registry import HEAD, RESOURCES, pairs
from specdec.zoo import status
from specdec.zoo.catalog import PairEntry

TRAINING = "job:head_training"
TRAINED = "heads_trained"  # the last training run, as `Trained`
NOTE = "heads_note"  # how a run stopped before it trained, shown once
LABEL = "EAGLE-3 head (trained)"
MINUTES_RANGE = (0.0, 24 * 60.0)


def head_draft() -> str:
    """The draft name that means "the head trained for this target" ('eagle'), as the registry's resource says."""
    return RESOURCES[HEAD].draft_name


@st.cache_data(ttl=60, show_spinner=False)
def _target_availability(target: str) -> str:
    """'cached', 'needs download (N MB)' ... for the target alone (a head's pair loads no other model)."""
    return status.pair_availability(PairEntry(head_draft(), target, ""))


def head_pair_label(name: str) -> str:
    """'EAGLE-3 head (trained) → target · cached', for the pair picker."""
    target = name.removeprefix(f"{head_draft()}->")
    return f"{LABEL} → {target} · {_target_availability(target)}"


def head_caption(settings: Settings) -> None:
    """Under the pair picker: where the target's head is, or how to train one."""
    target = settings.target
    if not target or drafts_with(settings.draft, HEAD):
        return
    if trained_head(target) is None:
        st.caption(
            f"No EAGLE-3 head is trained for {target} yet: train one at the foot of the Playground, or run "
            f"`specdec heads train --target {target} --minutes 30`."
        )
    elif settings.pair != CUSTOM and f"{head_draft()}->{target}" in pairs():
        st.caption(f"An EAGLE-3 head is trained for {target}: pick “{LABEL} → {target}” above.")
    else:
        st.caption(f"An EAGLE-3 head is trained for {target}: give `{head_draft()}` as the draft to run it.")


@dataclass(frozen=True)
class Trained:
    """What a training run left: where its head is, how far it got, and whether its Stop ended it."""

    target: str
    folder: Path
    step: int  # the step the checkpoint reached (earlier runs' steps included)
    tokens: int  # tokens read by this run
    loss: float
    accuracy: float
    minutes: float  # this run's training time
    resumed_from: int
    stopped: bool

    @classmethod
    def of(cls, target: str, run: HeadRun, stopped: bool) -> Trained:
        last, done = run.history[-1], run.history[-1].numbers
        return cls(
            target,
            run.folder,
            done["step"],
            done["tokens"],
            done["loss"],
            done["accuracy"],
            last.elapsed_s / 60,
            run.resumed_from,
            stopped,
        )


def training_work(settings: Settings, minutes: float, resume: bool, turns: Turns):
    """The job of one training run for `settings`' target: its turn, the target, ShareGPT, then step after step."""
    target = settings.target

    def work(job: jobs.Job) -> Trained:
        with turns.turn(
            on_wait=lambda ahead, running: job.report(waiting=(ahead, running)), label="training an EAGLE-3 head"
        ):
            job.report(waiting=None, status=f"Loading {target} …")
            run = train_for_target(
                target,
                minutes=minutes,
                resume=resume,
                device=settings.device,
                quantization=settings.quantization,
                progress=lambda report: job.update(training=report),
                stop=job.stop_asked.is_set,
                # a Stop before training ends it here
                say=lambda message: job.report(status=message),
            )
            return Trained.of(target, run, stopped=job.stop_asked.is_set())

    return work


def _draw_training(job: jobs.Job) -> None:
    """A running training: its place in line, what it is doing, and a bar of the time spent with the time left."""
    if job.progress.get("waiting"):
        waiting_note(st.empty(), "training")(*job.progress["waiting"])
        return
    report = job.progress.get("training")
    if report is None:
        st.markdown(f"**{job.progress.get('status', 'Starting …')}**")
        return
    left = report.seconds_left
    st.progress(
        0.0 if left is None else min(report.elapsed_s / max(report.elapsed_s + left, 1e-9), 1.0), text=report.describe()
    )
    if job.stop_asked.is_set():
        st.caption("Stopping after this step: its checkpoint is written, then the run ends.")


def _keep_training(job: jobs.Job) -> None:
    if job.stopped:  # Stop while it waited, loaded or read the data: nothing was trained
        st.session_state[NOTE] = "Stopped before the first training step: nothing was written."
        return
    st.session_state[TRAINED] = job.result
    forget_head_pairs(job.result.target)  # a pair in memory with the old head: the next run reads the new one


def _show_trained(trained: Trained) -> None:
    went_on = f", going on from step {trained.resumed_from}" if trained.resumed_from else ""
    how = "Stopped" if trained.stopped else "Trained"
    st.success(
        f"{how} at step {trained.step}{went_on}: {trained.minutes:.1f} min, {trained.tokens:,} tokens, last loss "
        f"{trained.loss:.3f}, top-1 agreement {trained.accuracy:.0%}. The checkpoint is in {trained.folder}.",
        icon=":material/model_training:",
    )
    pair = f"{head_draft()}->{trained.target}"
    if pair in pairs():
        st.button(
            f"Use it: {LABEL} → {trained.target}",
            key="heads_use",
            on_click=keep,
            args=("pair", pair),
            help="picks the head in the sidebar; then Generate",
        )
    else:
        st.caption(
            f"Run it with a custom pair: draft `{head_draft()}`, target `{trained.target}` (or `specdec run --target "
            f"{trained.target} --draft {head_draft()}`)."
        )


def training_section(settings: Settings) -> None:
    """Train a head for the sidebar's target: minutes, Train, the run's progress and Stop, and what it left."""
    target = settings.target
    with st.expander(
        f"Train an EAGLE-3 head for {target or 'the target'}",
        expanded=jobs.running(TRAINING) or TRAINED in st.session_state,
    ):
        st.caption(
            "A head is one decoder layer that reads the target's own hidden states and drafts a tree of guesses; it is "
            "trained on ShareGPT conversations (a 27 MB download, once). On a 2-core CPU a step takes about 25 s for a "
            "1.5B target. A checkpoint is written every 5 minutes and when the run ends or is stopped; training again "
            "goes on from it."
        )
        if not target:
            st.info("Give a target model in the sidebar first.")
            return
        left, middle, right = st.columns([1, 1, 1], vertical_alignment="bottom")
        minutes = left.number_input("Minutes to train", *MINUTES_RANGE, step=5.0, **remember("head_minutes", 30.0))
        resume = middle.checkbox(
            "Go on from its checkpoint",
            **remember("head_resume", True),
            help="off: start a fresh head (the checkpoint in the folder is replaced)",
        )
        if right.button("Train", icon=":material/model_training:", key="heads_train", disabled=jobs.running(TRAINING)):
            if not minutes > 0:
                st.error(f"Train for more than 0 minutes (got {minutes:g}).", icon=":material/error:")
            else:
                jobs.start(
                    TRAINING,
                    training_work(settings, float(minutes), bool(resume), shared_turns()),
                    label="the training",
                )
        jobs.watch(TRAINING, draw=_draw_training, finished=_keep_training)
        if st.session_state.get(NOTE):
            st.warning(st.session_state.pop(NOTE), icon=":material/stop_circle:")
        if TRAINED in st.session_state:
            _show_trained(st.session_state[TRAINED])
