"""Plotly figures of a benchmark frame (`specdec.bench.harness`): what the Compare page and the README show.

One colour per pair throughout. Measured values are medians over prompts and repeats; theory
curves (dashed) come from `specdec.reference.theory` fed with the pair's measured alpha, c and v(gamma).
The figures vs gamma are drawn in `specdec.bench.gamma_charts`, those of the gain under load (batches, a server's
requests in flight) in `specdec.bench.load_charts`; this module adds speedup per prompt category and gathers them.

    figures = benchmark_figures(frame)      # {"acceptance": Figure, "tokens_per_pass": ..., ...}
    write_figure(summary_figure(frame), "benchmark.png")   # or .html
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specdec.bench.gamma_charts import (
    acceptance_figure,
    pair_colour,
    speedup_figure,
    tokens_per_pass_figure,
    transformers_defaults,
)
from specdec.bench.load_charts import batch_figure, concurrency_figure, has_batches
from specdec.errors import SpecdecError, first_line


def category_figure(frame: pd.DataFrame) -> go.Figure:
    """Median speedup per prompt category for each pair's speculative runs at its best fixed gamma, and adaptive."""
    figure = go.Figure()
    pairs = sorted(frame["pair"].unique())
    speculative = frame[frame["method"] == "speculative"]
    for pair, rows in speculative.groupby("pair"):
        fixed = rows[rows["schedule"] == "fixed"]
        if len(fixed):
            best = fixed.groupby("gamma")["speedup"].median().idxmax()
            bars = fixed[fixed["gamma"] == best].groupby("category")["speedup"].median()
            figure.add_bar(
                x=bars.index, y=bars.values, name=f"{pair}: gamma={int(best)}", marker_color=pair_colour(pairs, pair)
            )
        for schedule, pattern in (("adaptive", "/"), ("stop", "."), ("default", "x")):
            chosen = rows[rows["schedule"] == schedule]
            if len(chosen):
                bars = chosen.groupby("category")["speedup"].median()
                figure.add_bar(
                    x=bars.index,
                    y=bars.values,
                    name=f"{pair}: {schedule}",
                    marker_color=pair_colour(pairs, pair),
                    marker_pattern_shape=pattern,
                )
        dynamic = transformers_defaults(frame, pair)
        if len(dynamic):
            bars = dynamic.groupby("category")["speedup"].median()
            figure.add_bar(
                x=bars.index, y=bars.values, name=f"{pair}: transformers assisted, defaults", marker_color="#999999"
            )
    figure.add_hline(y=1.0, line=dict(color="grey", width=1))
    return figure.update_layout(
        title="Speedup by prompt category", barmode="group", yaxis_title="speedup over generate"
    )


def benchmark_figures(frame: pd.DataFrame) -> dict[str, go.Figure]:
    """The charts of a benchmark frame; a vLLM server's rows add
    the gain vs concurrency; a batch benchmark has its own."""
    if has_batches(frame):  # a batch benchmark: its own chart (the gamma charts have nothing to show)
        return {"batches": batch_figure(frame)}
    figures = {
        "acceptance": acceptance_figure(frame),
        "tokens_per_pass": tokens_per_pass_figure(frame),
        "speedup": speedup_figure(frame),
        "categories": category_figure(frame),
    }
    if "engine" in frame.columns and (frame["engine"] == "vllm-server").any():
        figures["concurrency"] = concurrency_figure(frame)
    return figures


def summary_figure(frame: pd.DataFrame) -> go.Figure:
    """The four figures on one 2x2 canvas, for a single picture (the README's)."""
    # the 2x2 of every frame
    parts = {name: figure for name, figure in benchmark_figures(frame).items() if name != "concurrency"}
    canvas = make_subplots(rows=2, cols=2, subplot_titles=[figure.layout.title.text for figure in parts.values()])
    for index, figure in enumerate(parts.values()):
        row, col = divmod(index, 2)
        for trace in figure.data:
            canvas.add_trace(trace.update(showlegend=True), row=row + 1, col=col + 1)
    canvas.update_xaxes(title_text="gamma", row=1, col=1).update_xaxes(title_text="gamma", row=1, col=2)
    canvas.update_xaxes(title_text="gamma", row=2, col=1)
    canvas.add_hline(y=1.0, line=dict(color="grey", width=1), row=2, col=1)
    canvas.add_hline(y=1.0, line=dict(color="grey", width=1), row=2, col=2)
    return canvas.update_layout(
        height=1050,
        width=1300,
        barmode="group",
        legend=dict(font=dict(size=10), orientation="h", yanchor="top", y=-0.06),
    )


def write_figure(figure: go.Figure, path: str) -> None:
    """Save `figure` as a self-contained .html page or a .png picture (which needs kaleido and a Chromium)."""
    if path.endswith(".html"):
        figure.write_html(path, include_plotlyjs=True)
        return
    if not path.endswith(".png"):
        raise SpecdecError(f"a figure is written as .html or .png, got {path}")
    try:
        figure.write_image(path)
    except Exception as error:  # kaleido missing, or no browser for it to drive
        raise SpecdecError(
            f"could not write {path} ({first_line(error)}): pip install kaleido and set BROWSER_PATH "
            "to a Chrome or Chromium binary, or write an .html figure instead"
        ) from None
