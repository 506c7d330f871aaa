"""Spec-Bench on your own machine: every drafting family side by side, next to Spec-Bench's published numbers.

Spec-Bench (Xia et al. 2024) runs speculative methods on one machine with one baseline, over six
categories of prompts; its leaderboard is the yardstick the course quotes. `specdec bench --methods all`
(or the Compare page's "every family") runs this project's families on the built-in suite, which has the
same six categories plus code, and these functions lay the rows out the leaderboard's way:

    families_table(frame)                   # per method: speedup per category and overall, tokens per pass, c,
                                            # and Spec-Bench's overall speedup and tokens per step beside them
    families_by_category(frame, "tokens_per_target_pass")
    families_figures(frame)                 # speedup per category (Spec-Bench's as diamonds), tokens per pass, c
    families_figure(frame)                  # the three on one canvas

Spec-Bench's numbers are copied from one revision of its leaderboard, `Leaderboard.md` at commit `REVISION`
(fd2c1cd, "Leaderboard updated", 2025-04-22), "Leaderboard on A100": a single A100 80 GB, PyTorch 2.5.1, greedy,
FP16, batch size 1. `A100_VICUNA_7B` holds that table's Vicuna-7B-v1.3 rows whole, `EAGLE3_VICUNA_13B` the one
EAGLE-3 row (on Vicuna-13B-v1.3 only); every Spec-Bench number the course, the Compare page and the tests quote
is read from these, so the figures cannot disagree between chapters. `PUBLISHED` puts a row beside each of our
families: suffix decoding sits beside REST, the retrieval method it grew from; layer skipping beside nothing
(SWIFT reports 1.3-1.6x in its own paper); the EAGLE-3 head beside EAGLE-3 (its row says Vicuna-13B), with
Spec-Bench's EAGLE-2 and EAGLE, on Vicuna-7B, beside it as earlier versions of the family (`EARLIER`). Ours
differ by design: a 1.5B target on 2 CPU cores, where a verification pass over many tokens is not free (v(gamma)
grows) and a draft model's step is dear (c about 0.3), so the model-free methods (c about 0) gain ground.

Nothing here runs a model.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specdec.bench.gamma_charts import COLOURS
from specdec.registry import METHODS

REVISION = "fd2c1cd7d2201ef71db4c5f4e455008f017967bf"  # hemingkx/Spec-Bench, "Leaderboard updated", 2025-04-22
LEADERBOARD = f"https://github.com/hemingkx/Spec-Bench/blob/{REVISION}/Leaderboard.md"
SETTING = f"Spec-Bench leaderboard at commit {REVISION[:7]}, A100 80 GB, Vicuna-7B-v1.3, greedy, FP16, batch 1"

# our prompt categories -> the leaderboard's columns (code has no column there)
CATEGORIES = {
    "chat": "Multi-turn Conversation",
    "translation": "Translation",
    "summarization": "Summarization",
    "qa": "Question Answering",
    "math": "Mathematical Reasoning",
    "rag": "Retrieval-aug. Generation",
}


@dataclass(frozen=True)
class Published:
    """One leaderboard row: speedup per category (our names), mean accepted tokens per step, overall speedup."""

    row: str  # the leaderboard's name for it
    speedup: dict[str, float]  # empty: the overall speedup only
    mean_accepted: float
    overall: float
    model: str = "Vicuna-7B-v1.3"  # the leaderboard's target for this row

    @property
    def label(self) -> str:
        """The row's name, with its target when it is not the setting's Vicuna-7B.

        >>> EARLIER["eagle"][0].label, PUBLISHED["eagle"].label
        ('EAGLE-2', 'EAGLE-3, Vicuna-13B-v1.3')
        """
        return self.row if self.model == "Vicuna-7B-v1.3" else f"{self.row}, {self.model}"


_ORDER = ("chat", "translation", "summarization", "qa", "math", "rag")

# The A100 table of `LEADERBOARD` for Vicuna-7B-v1.3, every row as the revision `REVISION` lists it (best first), in its
# column order (chat, translation, summarization, qa, math, rag), then mean accepted tokens per step and overall
# speedup.
A100_VICUNA_7B: dict[str, Published] = {
    row.row: row
    for row in (
        Published("SAMD[EAGLE2]", dict(zip(_ORDER, (3.30, 2.01, 3.19, 2.36, 2.96, 2.52))), 4.58, 2.73),
        Published("EAGLE-2", dict(zip(_ORDER, (2.84, 1.88, 2.34, 2.15, 2.79, 2.13))), 4.34, 2.36),
        Published("Recycling", dict(zip(_ORDER, (2.37, 2.02, 2.27, 2.08, 2.53, 2.02))), 2.73, 2.22),
        Published("EAGLE", dict(zip(_ORDER, (2.45, 1.77, 2.08, 1.93, 2.44, 1.87))), 3.58, 2.10),
        Published("Hydra", dict(zip(_ORDER, (2.43, 1.89, 1.83, 1.97, 2.45, 1.80))), 3.26, 2.07),
        Published("Medusa", dict(zip(_ORDER, (1.97, 1.65, 1.57, 1.65, 1.94, 1.49))), 2.31, 1.71),
        Published("PLD", dict(zip(_ORDER, (1.60, 1.06, 2.66, 1.19, 1.62, 1.86))), 1.75, 1.66),
        Published("SpS", dict(zip(_ORDER, (1.66, 1.13, 1.71, 1.50, 1.47, 1.66))), 2.28, 1.52),
        Published("REST", dict(zip(_ORDER, (1.63, 1.31, 1.36, 1.66, 1.21, 1.73))), 1.82, 1.48),
        Published("Lookahead", dict(zip(_ORDER, (1.47, 1.14, 1.36, 1.25, 1.57, 1.22))), 1.64, 1.34),
    )
}
# EAGLE-3 has a row on the same revision's A100 table for Vicuna-13B-v1.3 only.
EAGLE3_VICUNA_13B = Published(
    "EAGLE-3", dict(zip(_ORDER, (3.48, 2.36, 3.14, 2.94, 3.42, 2.78))), 5.71, 3.02, model="Vicuna-13B-v1.3"
)

# Our family -> the leaderboard row beside it: the pair's draft model is SpS; each method of the registry names its own
# row (`Method.spec_bench`).
_ROWS = A100_VICUNA_7B | {EAGLE3_VICUNA_13B.row: EAGLE3_VICUNA_13B}
PUBLISHED: dict[str, Published] = {"speculative": A100_VICUNA_7B["SpS"]} | {
    name: _ROWS[method.spec_bench] for name, method in METHODS.items() if method.spec_bench
}

# Earlier versions of a family on the same leaderboard, listed beside it (A100, Vicuna-7B-v1.3).
_EARLIER_ROWS = {EAGLE3_VICUNA_13B.row: (A100_VICUNA_7B["EAGLE-2"], A100_VICUNA_7B["EAGLE"])}
EARLIER: dict[str, tuple[Published, ...]] = {
    name: _EARLIER_ROWS[method.spec_bench] for name, method in METHODS.items() if method.spec_bench in _EARLIER_ROWS
}


def _earlier(method: str) -> str | None:
    """Spec-Bench's earlier rows of a family in a few words, or None.

    >>> _earlier("eagle"), _earlier("recycling")
    ('EAGLE-2 2.36x (4.34 tokens/step); EAGLE 2.10x (3.58 tokens/step)', None)
    """
    rows = EARLIER.get(method, ())
    return "; ".join(f"{row.label} {row.overall:.2f}x ({row.mean_accepted:.2f} tokens/step)" for row in rows) or None


def _family_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The speculative rows of every family: the pair's draft model
    at its default schedule, the target-only methods, a head."""
    from specdec.bench.methods import families

    model = frame[(frame["method"] == "speculative") & frame["schedule"].isin(["default", "stop"])]
    if model["schedule"].eq("default").any():
        model = model[model["schedule"] == "default"]
    return pd.concat([model, frame[frame["method"].isin(families()[1:])]], ignore_index=True)


def families_by_category(frame: pd.DataFrame, measure: str = "speedup") -> pd.DataFrame:
    """Median `measure` per family (rows) and prompt category (columns), with an 'all' column over every prompt."""
    rows = _family_rows(frame)
    if rows.empty:
        return pd.DataFrame()
    table = rows.pivot_table(index="method", columns="category", values=measure, aggfunc="median")
    table["all"] = rows.groupby("method")[measure].median()
    return table.reset_index().rename_axis(columns=None)


def families_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per family: median speedup per category and over all prompts, tokens per target pass and c, and Spec-Bench's own.

    `spec_bench_row` names the leaderboard row beside it ('REST' beside suffix decoding; its target when not Vicuna-7B);
    NaN where it has none. `spec_bench_earlier`, only when a family that has them ran: Spec-Bench's earlier versions of
    it.
    """
    speedups = families_by_category(frame, "speedup")
    if speedups.empty:
        return speedups
    rows = _family_rows(frame)
    extra = (
        rows.groupby("method")
        .agg(
            tokens_per_target_pass=("tokens_per_target_pass", "median"),
            c=("draft_cost_ratio", "median"),
            runs=("prompt_id", "count"),
        )
        .reset_index()
    )
    table = speedups.rename(columns={"all": "speedup"}).merge(extra, on="method")
    table["spec_bench_row"] = table["method"].map(
        lambda method: PUBLISHED[method].label if method in PUBLISHED else None
    )
    table["spec_bench_speedup"] = table["method"].map(
        lambda method: PUBLISHED[method].overall if method in PUBLISHED else None
    )
    table["spec_bench_tokens_per_step"] = table["method"].map(
        lambda method: PUBLISHED[method].mean_accepted if method in PUBLISHED else None
    )
    if table["method"].isin(list(EARLIER)).any():
        table["spec_bench_earlier"] = table["method"].map(_earlier)
    return table.sort_values("speedup", ascending=False).reset_index(drop=True)


_SYMBOLS = ("diamond-open", "circle-open", "square-open")  # a family's own Spec-Bench row, then its earlier versions


def _bars(frame: pd.DataFrame, measure: str, title: str, axis: str, published: bool = False) -> go.Figure:
    figure = go.Figure()
    table = families_by_category(frame, measure)
    if table.empty:
        return figure.update_layout(title=title)
    categories = [column for column in table.columns if column not in ("method", "all")]
    for index, row in table.reset_index(drop=True).iterrows():
        colour = COLOURS[index % len(COLOURS)]
        figure.add_bar(
            x=categories + ["all"],
            y=[row[c] for c in categories] + [row["all"]],
            name=row["method"],
            marker_color=colour,
        )
        known = (
            (PUBLISHED[row["method"]], *EARLIER.get(row["method"], ()))
            if published and row["method"] in PUBLISHED
            else ()
        )
        for symbol, published_row in zip(_SYMBOLS, known):
            shown = [c for c in categories if c in published_row.speedup]
            figure.add_scatter(
                x=shown + ["all"],
                y=[published_row.speedup[c] for c in shown] + [published_row.overall],
                mode="markers",
                name=f"{row['method']}: Spec-Bench ({published_row.label})",
                marker=dict(symbol=symbol, size=11, color=colour),
            )
    figure.add_hline(y=1.0, line=dict(color="grey", width=1))
    return figure.update_layout(title=title, barmode="group", yaxis_title=axis)


def families_figures(frame: pd.DataFrame) -> dict[str, go.Figure]:
    """Speedup per category (Spec-Bench's numbers as open diamonds, earlier versions as circles and squares), tokens per
    target pass per category, and c per family."""
    figures = {
        "family_speedup": _bars(
            frame,
            "speedup",
            f"Speedup by category, here and on Spec-Bench ({SETTING})",
            "speedup over generate",
            published=True,
        ),
        "family_tokens": _bars(
            frame, "tokens_per_target_pass", "Tokens per target pass by category", "tokens per target pass"
        ),
    }
    costs = families_by_category(frame, "draft_cost_ratio")
    figure = go.Figure()
    if not costs.empty:
        figure.add_bar(
            x=costs["method"], y=costs["all"], marker_color=[COLOURS[i % len(COLOURS)] for i in range(len(costs))]
        )
    figures["family_cost"] = figure.update_layout(
        title="c: a draft step's cost over a target step (measured)", yaxis_title="c"
    )
    return figures


def families_figure(frame: pd.DataFrame) -> go.Figure:
    """The three families' charts on one canvas, for a single picture (`specdec bench --figure`)."""
    parts = families_figures(frame)
    canvas = make_subplots(rows=3, cols=1, subplot_titles=[figure.layout.title.text for figure in parts.values()])
    for row, figure in enumerate(parts.values(), start=1):
        for trace in figure.data:
            canvas.add_trace(trace.update(showlegend=row == 1), row=row, col=1)
    for row in (1, 2):
        canvas.add_hline(y=1.0, line=dict(color="grey", width=1), row=row, col=1)
    return canvas.update_layout(height=1400, width=1200, barmode="group", legend=dict(font=dict(size=10)))
