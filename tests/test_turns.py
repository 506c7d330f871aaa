"""pages.common.turns: several tabs take turns for heavy work, first come first served, and a Stop leaves the line.

Real threads, as Streamlit runs sessions: each job records when it ran; the line must never run two
at once, must keep arrival order, must start the next job as soon as one ends (not at the next poll),
and must forget a job whose waiting was interrupted.
"""

from __future__ import annotations

import threading
import time

import pytest

from pages.common.turns import Turns


def run_jobs(turns: Turns, count: int, hold_s: float) -> tuple[list[tuple[str, int, float]], dict[int, list[int]]]:
    """Start `count` jobs 50 ms apart; each holds its turn `hold_s`.
    Returns (events, places each was told while waiting)."""
    events, places = [], {job: [] for job in range(count)}
    lock = threading.Lock()

    def job(index: int) -> None:
        with turns.turn(on_wait=lambda ahead, running: places[index].append((ahead, running)), label=f"job {index}"):
            with lock:
                events.append(("start", index, time.monotonic()))
            time.sleep(hold_s)
            with lock:
                events.append(("end", index, time.monotonic()))

    threads = [threading.Thread(target=job, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
        time.sleep(0.05)
    for thread in threads:
        thread.join(timeout=10)
    return events, places


def test_one_at_a_time_in_arrival_order_and_the_next_starts_at_once():
    turns = Turns(poll_s=5.0)  # a long poll: only the hand-over can wake the next job in time
    events, places = run_jobs(turns, 3, hold_s=0.3)
    assert [(kind, index) for kind, index, _ in events] == [
        ("start", 0),
        ("end", 0),
        ("start", 1),
        ("end", 1),
        ("start", 2),
        ("end", 2),
    ]
    handovers = [events[i + 1][2] - events[i][2] for i in (1, 3)]
    assert max(handovers) < 0.2, handovers  # the goal is within a second of the previous run's end
    assert (
        places[0] == []
        and places[1][0] == (1, "job 0")
        and places[2][0] == (2, "job 0")
        and places[2][-1] == (1, "job 1")
    )
    assert turns.waiting == 0


def test_a_job_stopped_while_waiting_leaves_the_line():
    turns = Turns(poll_s=0.02)
    started = threading.Event()
    release = threading.Event()

    def first() -> None:
        with turns.turn(on_wait=lambda ahead, running: None):
            started.set()
            release.wait(5)

    holder = threading.Thread(target=first)
    holder.start()
    started.wait(5)

    class Stop(Exception):
        pass

    def stop_when_told(ahead: int, running: str) -> None:
        raise Stop  # Streamlit's stop request surfaces from the page's next call

    with pytest.raises(Stop):
        with turns.turn(on_wait=stop_when_told):
            pass
    assert turns.waiting == 1  # only the running job is left
    release.set()
    holder.join(5)
    with turns.turn(on_wait=lambda ahead, running: pytest.fail("nobody is ahead")):
        assert turns.waiting == 1


def test_an_error_inside_a_turn_hands_over_too():
    turns = Turns()
    with pytest.raises(ValueError):
        with turns.turn(on_wait=lambda ahead, running: None):
            raise ValueError("a failed load")
    assert turns.waiting == 0
