"""The time left in a long job (a fetch, a load, a save): the pace so far, carried forward.

If `done` of `total` units took `elapsed_s` seconds, the rest takes as long per unit:

    seconds left = elapsed_s / done * (total - done)

    >>> seconds_left(done=300, total=1_200, elapsed_s=6.0)     # a quarter in 6 s: three quarters to go
    18.0
    >>> about(18.0)
    ', about 18 s left'

The units are whatever the caller counts (bytes, tensors, layers); the estimate is only as good as
the assumption that every unit costs the same, so count units whose cost is even (bytes rather
than tensors of very different sizes). It does not smooth the pace or guess before the first unit
is done: with nothing done there is no pace to go by, and the answer is None.
"""

from __future__ import annotations


def seconds_left(done: float, total: float, elapsed_s: float) -> float | None:
    """The seconds left if the rest goes at the pace so far; None before there is a pace (or a total) to go by.

    >>> seconds_left(10, 40, 5.0)
    15.0
    >>> seconds_left(0, 40, 5.0) is None, seconds_left(40, 40, 5.0)
    (True, 0.0)
    """
    if total <= 0 or done <= 0:
        return None
    return max(0.0, elapsed_s / done * (total - done))


def about(seconds: float | None) -> str:
    """The end of a progress line: ', about 15 s left', or '' when there is no estimate yet.

    >>> about(14.6), about(None)
    (', about 15 s left', '')
    """
    return "" if seconds is None else f", about {seconds:.0f} s left"
