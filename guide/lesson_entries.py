"""The kinds of entry in `lesson_numbers.py`, and how an entry turns into the text its chapter must contain.

    entry_text(Computed("01-math.md", r"$\\alpha = <<.2f>>$", lambda: 0.7))   # '$\\alpha = 0.70$'

Helpers that read numbers out of saved runs (`stats`, `report_line`) and out of the CLI
(`cli_output`) live here too, so the registry itself is only data.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MEASUREMENTS = Path(__file__).resolve().parent / "measurements"


@dataclass(frozen=True)
class Computed:
    chapter: str
    text: str
    value: Callable[[], object]


@dataclass(frozen=True)
class Measured:
    chapter: str
    text: str
    command: str
    source: str
    value: Callable[[str], object]


@dataclass(frozen=True)
class Reported:
    chapter: str
    text: str
    source: str


@dataclass(frozen=True)
class Output:
    chapter: str
    command: str
    produce: Callable[[], str]


PLACEHOLDER = re.compile(r"<<([^<>]*)>>")


def render(template: str, values: object) -> str:
    """Fill each <<format>> of `template` with the next value: render("a <<.2f>>", 0.5) == "a 0.50"."""
    items = iter(values if isinstance(values, tuple) else (values,))
    rendered = PLACEHOLDER.sub(lambda match: format(next(items), match.group(1)), template)
    leftover = list(items)
    if leftover:
        raise ValueError(f"{template!r} has fewer placeholders than values; left over: {leftover}")
    return rendered


def entry_text(entry: Computed | Measured | Reported) -> str:
    """The exact text an entry expects in its chapter, with today's values filled in."""
    if isinstance(entry, Computed):
        return render(entry.text, entry.value())
    if isinstance(entry, Measured):
        return render(entry.text, entry.value((MEASUREMENTS / entry.source).read_text(encoding="utf-8")))
    return entry.text


def vector(values, digits: int = 2) -> str:
    """(0.3, 0.4) -> '0.30, 0.40': how the lessons write a distribution."""
    return ", ".join(f"{float(v):.{digits}f}" for v in values)


def stats(saved: str, key: str, baseline: bool = False) -> float:
    """A field of `specdec run --json` output: stats of the speculative run, or of the target alone."""
    report = json.loads(saved)
    return (report["compare"]["target_alone_stats"] if baseline else report["stats"])[key]


def report_line(saved: str, pattern: str) -> float:
    """A number from `specdec run`'s text report, found by a regular expression with one group."""
    match = re.search(pattern, saved)
    if not match:
        raise ValueError(f"no match for {pattern!r} in the saved report")
    return float(match.group(1))


def tree_against_chain(saved: str) -> dict[str, float]:
    """From a saved `specdec bench` CSV with fixed gammas and 'tree': the tree against the best fixed chain.

    The best chain is the fixed gamma with the highest median speedup; everything is a median over
    the prompts, `paired` the median of the per-prompt ratios tree / best chain; "<category>_tree",
    "<category>_chain" and "<category>_stop" are one category's median speedups.
    """
    import io

    import pandas as pd

    frame = pd.read_csv(io.StringIO(saved))
    runs = frame[frame["method"] == "speculative"]
    fixed = runs[runs["schedule"] == "fixed"]
    best = fixed.groupby("gamma")["speedup"].median().idxmax()
    chain, tree = fixed[fixed["gamma"] == best], runs[runs["schedule"] == "tree"]
    ratio = tree.set_index("prompt_id")["speedup"] / chain.set_index("prompt_id")["speedup"]
    return {"gamma": int(best), "tree_tpp": tree["tokens_per_target_pass"].median(), "chain_tpp": chain["tokens_per_target_pass"].median(),
            "tree": tree["speedup"].median(), "chain": chain["speedup"].median(),
            "ratio": tree["speedup"].median() / chain["speedup"].median(), "paired": ratio.median(),
            "nodes": tree["mean_gamma"].median(), "c": runs["draft_cost_ratio"].median(),
            **{f"{category}_tree": group[group["schedule"] == "tree"]["speedup"].median() for category, group in runs.groupby("category")},
            **{f"{category}_chain": group[(group["schedule"] == "fixed") & (group["gamma"] == best)]["speedup"].median()
               for category, group in runs.groupby("category")},
            **{f"{category}_stop": group[group["schedule"] == "stop"]["speedup"].median() for category, group in runs.groupby("category")}}


def cli_output(*argv: str) -> str:
    """What `specdec <argv>` prints, run in this process."""
    from specdec.cli import main

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        main(list(argv))
    return f"$ specdec {' '.join(argv)}\n{buffer.getvalue()}".rstrip("\n")
