"""The command line's argument types: what each option's text must look like, and the one-line error when it does not.

>>> probabilities("0.3,0.4,0.3"), positive_int("4"), names("a, b,"), gamma("auto")
((0.3, 0.4, 0.3), 4, ('a', 'b'), None)
"""

from __future__ import annotations

import argparse


def probabilities(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated probabilities like 0.3,0.4,0.3, got '{text}'"
        ) from None
    if len(values) < 2 or any(v < 0 for v in values) or abs(sum(values) - 1.0) > 1e-6:
        raise argparse.ArgumentTypeError(f"expected at least two non-negative probabilities summing to 1, got '{text}'")
    return values


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


def names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(part) for part in names(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got '{text}'") from None


def counts(text: str) -> tuple[int, ...]:
    return tuple(positive_int(part) for part in names(text))


def gammas(text: str) -> tuple[int | str, ...]:
    from specdec.bench.gammas import parse_gammas
    from specdec.errors import SpecdecError

    try:
        return parse_gammas(text)
    except SpecdecError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def gamma(text: str) -> int | None:
    """A whole number, or 'auto' (None): the stop rule decides token by token."""
    if text == "auto":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number or 'auto', got '{text}'") from None


def listed(names) -> str:
    return ", ".join(names)


def fields(method) -> list[str]:
    """A method's option names, for help."""
    import dataclasses

    return [item.name for item in dataclasses.fields(method.options)]
