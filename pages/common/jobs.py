"""Long work off the page's thread: a run or a benchmark goes on whatever else is clicked, and only its own Stop ends
it.

Streamlit reruns a page's script on every click, and while a script runs a click anywhere ends it at its next
Streamlit call. So long work does not run in the script. `start` runs it in a thread of its own, with a `Job`
to report through; the page draws the job from a fragment that redraws a few times a second (`watch`), with a
Stop button whose click sets that job's own flag. The work checks the flag whenever it reports (a round, a
tensor, a run) and ends there, keeping what it reported. A click anywhere else reruns the page, which finds
the job still running and draws it again.

    jobs.start(RUN, lambda job: generate(job, ...), label="a run")       # on the Run button
    jobs.watch(RUN, draw=show_progress, finished=keep_result)            # every run of the page

The work never touches Streamlit: what it reports is plain data in `job.progress`, drawn by the page. A
`SpecdecError` it raises is shown once with `st.error` when it ends; any other error is a bug, raised on the page.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import streamlit as st

from specdec.errors import SpecdecError

# Two redraws a second: each redraw costs the browser a re-render that competes with the models for the cores. In the
# real-model browser test on 2 cores, the default run showed 11.3-11.4 tok/s speculative and 6.6 plain at 4 redraws a
# second, 12.8-12.9 and 7.3-7.9 at 2, 12.7-13.9 and 7.7-8.3 at 1 (the app before jobs, with no redraws: 13.4-14.0 and
# 7.4-7.5); at 1 a progress bar visibly stutters.
REDRAWS_PER_SECOND = 2


class Stopped(BaseException):
    """The job's Stop was clicked: raised where the work reports, and caught by the job (not an `Exception`: loaders
    that turn errors into messages must let it through)."""


@dataclass
class Job:
    """One piece of long work in its own thread: what it reports, its stop flag, and how it ended."""

    label: str  # what it is, for the page: "a run", "a benchmark"
    progress: dict = field(default_factory=dict)  # the latest report (replaced whole, never changed in place)
    stop_asked: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    result: object = None
    error: BaseException | None = None
    stopped: bool = False

    def report(self, **values: object) -> None:
        """Merge `values` into the progress the page draws; end the work here if Stop was clicked."""
        self.update(**values)
        if self.stop_asked.is_set():
            raise Stopped

    def update(self, **values: object) -> None:
        """Merge `values` into the progress the page draws, and go on even after a Stop: for work that ends itself when
        `stop_asked` is set, keeping what it made (a training run writes its checkpoint)."""
        self.progress = self.progress | values

    def stop(self) -> None:
        """The Stop button's handler: ask the work to end at its next report."""
        self.stop_asked.set()


def start(key: str, work: Callable[[Job], object], label: str) -> Job:
    """Run `work(job)` in a thread; the job is kept in the session under `key` until `watch` sees it end."""
    job = Job(label)

    def run() -> None:
        try:
            job.result = work(job)
        except Stopped:
            job.stopped = True
        except BaseException as error:  # kept for the page: shown there, or raised there when it is a bug
            job.error = error
        finally:
            job.done.set()

    st.session_state[key] = job
    threading.Thread(target=run, name=f"specdec-{key}", daemon=True).start()
    return job


def running(key: str) -> bool:
    """Whether a job started under `key` has not been collected yet."""
    return key in st.session_state


def watch(key: str, draw: Callable[[Job], None], finished: Callable[[Job], None]) -> None:
    """Draw the job under `key` while it runs (with its Stop button); once it ends, hand it to `finished` and rerun the
    page.

    `finished(job)` keeps what the page shows afterwards (the result, or what was done before a Stop); a
    `SpecdecError` the work raised is shown once after the rerun.
    """
    error = st.session_state.pop(f"{key}:error", None)
    if error:
        st.error(error, icon=":material/error:")
    if key in st.session_state:
        _watched(key, draw, finished)


@st.fragment(run_every=1.0 / REDRAWS_PER_SECOND)
def _watched(key: str, draw: Callable[[Job], None], finished: Callable[[Job], None]) -> None:
    job: Job | None = st.session_state.get(key)
    if job is None:
        return
    if job.done.is_set():
        del st.session_state[key]
        if isinstance(job.error, SpecdecError):
            st.session_state[f"{key}:error"] = str(job.error)
        elif job.error is not None:
            raise job.error
        else:
            finished(job)
        st.rerun()
    draw(job)
    st.button(
        "Stop",
        key=f"{key}:stop",
        on_click=job.stop,
        icon=":material/stop_circle:",
        help=f"Stops {job.label} at its next step; what is done so far stays on the page. Nothing else on the page "
        "stops it.",
    )
