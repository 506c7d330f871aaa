"""The one exception type a user of `specdec` is meant to read.

A `SpecdecError` carries a message that says what was wrong and what to do about it, in one
line. The command line prints it and exits with code 2; the dashboard shows it with `st.error`.
Anything else that escapes is a bug in `specdec`, not a user mistake.
"""


class SpecdecError(ValueError):
    """Bad input or an unusable environment, explained in one actionable line.

    >>> raise SpecdecError("gamma must be between 1 and 64, got 0: pass --gamma 4")
    Traceback (most recent call last):
    ...
    specdec.errors.SpecdecError: gamma must be between 1 and 64, got 0: pass --gamma 4
    """


def first_line(error: BaseException) -> str:
    """The first line of an exception's message (its type name when it has none), for one-line reports.

    >>> first_line(OSError("no such file\\nmore detail"))
    'no such file'
    """
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
