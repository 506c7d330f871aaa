"""Stopping a long step without losing what it has done so far.

Streamlit stops a running script (the Stop button in the toolbar) or restarts it (any click,
such as this app's own Stop buttons) by raising an exception from the next `st.*` call the
script makes. Inside a long benchmark that call is the progress bar's update, so the exception
would unwind through the benchmark and take its finished rows with it.

`StopRequest` catches that exception at the progress update, tells the benchmark to stop (its
`should_stop` hook), lets it return the rows so far, and raises the exception again once they
are saved:

    stop = StopRequest()
    frame = run_benchmark(pairs, settings, progress=lambda *a: stop.guard(lambda: bar.progress(...)),
                          should_stop=stop.should_stop)
    st.session_state["rows"] = frame        # saved before any other st.* call
    stop.resume()                           # Streamlit now stops or reruns as asked
"""

from __future__ import annotations

from collections.abc import Callable

from streamlit.runtime.scriptrunner import RerunException, StopException


class StopRequest:
    """Remembers that Streamlit asked to stop or rerun while a long step was running."""

    def __init__(self) -> None:
        self.pending: RerunException | StopException | None = None

    def guard(self, update: Callable[[], object]) -> None:
        """Run a Streamlit update (a progress bar, say); if it carries a stop or rerun request, remember it."""
        if self.pending is not None:
            return
        try:
            update()
        except (RerunException, StopException) as request:
            self.pending = request

    def should_stop(self) -> bool:
        return self.pending is not None

    def resume(self) -> None:
        """Hand the remembered request back to Streamlit (call it after saving the results)."""
        if self.pending is not None:
            raise self.pending
