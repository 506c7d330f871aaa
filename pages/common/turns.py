"""Several browser tabs, one CPU: heavy work (a load, a generation, a benchmark, a download) takes turns.

Every session of the app runs in its own thread of one server process. Two generations at once on
a 2-core CPU would each run at half speed and both timings would be wrong, and two loads of a pair
would hold two copies in memory. So heavy work waits for its turn, first come first served:

    with shared_turns().turn(on_wait=waiting_note(slot, "run"), label="a run in another tab"):
        run_playground(...)                   # one at a time across all tabs; models stay shared

While waiting, `on_wait(ahead, running)` is called a few times a second (`ahead` counts the jobs
before this one, `running` is the label of the one running), which is also where a Stop click lands:
the waiting job leaves the line and nobody else is held up. When a job ends, however it ends, the
next one is woken at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import streamlit as st


class Turns:
    """A first-come-first-served line for one job at a time.

    >>> turns = Turns()
    >>> with turns.turn(on_wait=print, label="a run"):     # nobody ahead: runs at once, on_wait is never called
    ...     turns.waiting
    1
    >>> turns.waiting
    0
    """

    def __init__(self, poll_s: float = 0.25) -> None:
        self.poll_s = poll_s
        self._changed = threading.Condition()
        self._line: list[int] = []  # tickets, the job running first
        self._labels: dict[int, str] = {}  # what each ticket's job is, for the others' waiting note
        self._next_ticket = 0

    @property
    def waiting(self) -> int:
        """Jobs in the line, the running one included."""
        with self._changed:
            return len(self._line)

    @contextmanager
    def turn(self, on_wait: Callable[[int, str], None], label: str = "another job") -> Iterator[None]:
        """Wait for this job's turn (calling `on_wait(jobs ahead,
        the running job's label)`), run the block, then hand over."""
        with self._changed:
            ticket = self._next_ticket
            self._next_ticket += 1
            self._line.append(ticket)
            self._labels[ticket] = label
        try:
            while True:
                with self._changed:
                    ahead = self._line.index(ticket)
                    if ahead == 0:
                        break
                    running = self._labels[self._line[0]]
                on_wait(ahead, running)  # may raise: a Stop leaves the line
                with self._changed:
                    if self._line.index(ticket) > 0:
                        self._changed.wait(timeout=self.poll_s)  # woken at once when the line moves
            yield
        finally:
            with self._changed:
                self._line.remove(ticket)
                del self._labels[ticket]
                self._changed.notify_all()


@st.cache_resource(show_spinner=False)
def shared_turns() -> Turns:
    """The one line every session of this server shares."""
    return Turns()


def waiting_note(slot, what: str) -> Callable[[int, str], None]:
    """An `on_wait` that tells the user where their job stands, in `slot` (an `st.empty()`)."""

    def show(ahead: int, running: str) -> None:
        jobs = "1 job" if ahead == 1 else f"{ahead} jobs"
        slot.info(
            f"Waiting for {running}: {jobs} ahead of your {what}. It starts as soon as they finish; "
            "Stop leaves the line.",
            icon=":material/hourglass_top:",
        )

    return show
