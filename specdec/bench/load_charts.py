"""The figures of the gain under load (`specdec.bench.charts` gathers them): our engine's batches
(`specdec.bench.batches`), throughput and speculative gain vs batch size, and a vLLM server's gain over its baseline
server vs requests in flight.

Colours are the pairs' colours of every chart (`specdec.bench.gamma_charts.pair_colour`).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specdec.bench.gamma_charts import pair_colour


def concurrency_figure(frame: pd.DataFrame) -> go.Figure:
    """A vLLM server's speedup over its baseline server, and its acceptance rate, vs requests in flight."""
    rows = frame[(frame["engine"] == "vllm-server") & (frame["method"] == "speculative")]
    figure = make_subplots(
        rows=1, cols=2, subplot_titles=["Speedup over the same server without speculation", "Acceptance rate"]
    )
    pairs = sorted(rows["pair"].unique())
    for pair, levels in rows.groupby("pair"):
        levels = levels.groupby("concurrency")[["speedup", "acceptance_rate"]].median().sort_index()
        for col, column in ((1, "speedup"), (2, "acceptance_rate")):
            figure.add_scatter(
                x=levels.index,
                y=levels[column],
                name=f"{pair}: {column.replace('_', ' ')}",
                mode="lines+markers",
                line=dict(color=pair_colour(pairs, pair)),
                row=1,
                col=col,
            )
    figure.add_hline(y=1.0, line=dict(color="grey", width=1), row=1, col=1)
    figure.update_xaxes(title_text="requests in flight", type="log")
    return figure.update_layout(title="A serving engine: the gain vs concurrency")


def has_batches(frame: pd.DataFrame) -> bool:
    """Whether the frame holds our engine's batch rows (`specdec.bench.batches`)."""
    return "batch_size" in frame.columns and bool(((frame["engine"] == "specdec") & frame["batch_size"].notna()).any())


def batch_figure(frame: pd.DataFrame) -> go.Figure:
    """Our engine's throughput (plain and speculative) and the speculative gain vs batch size; a vLLM server's gain
    vs requests in flight beside it when the frame holds one."""
    rows = (
        frame[(frame["engine"] == "specdec") & frame["batch_size"].notna()]
        if "batch_size" in frame.columns
        else frame.iloc[:0]
    )
    server = (
        frame[(frame["engine"] == "vllm-server") & (frame["method"] == "speculative")]
        if "engine" in frame.columns
        else frame.iloc[:0]
    )
    figure = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=[
            "Throughput: all new tokens / wall time",
            "Speculative gain over plain decoding of the same batch",
        ],
    )
    pairs = sorted(set(rows["pair"]) | set(server["pair"]))
    for pair, measured in rows.groupby("pair"):
        _batch_lines(figure, pair_colour(pairs, pair), pair, measured)
    for pair, levels in server.groupby("pair"):
        gain = levels.groupby("concurrency")["speedup"].median().sort_index()
        figure.add_scatter(
            x=gain.index,
            y=gain.values,
            name=f"{pair}: vLLM server, requests in flight",
            mode="lines+markers",
            line=dict(color=pair_colour(pairs, pair), dash="dash"),
            marker=dict(symbol="diamond"),
            row=1,
            col=2,
        )
    figure.add_hline(y=1.0, line=dict(color="grey", width=1), row=1, col=2)
    figure.update_xaxes(title_text="batch size (requests in flight for a server)", type="log", dtick=0.30103)
    figure.update_yaxes(title_text="tokens / s", row=1, col=1).update_yaxes(title_text="gain", row=1, col=2)
    return figure.update_layout(title="Batches: what the speculative gain becomes as the batch grows")


def _batch_lines(figure: go.Figure, colour: str, pair: str, measured: pd.DataFrame) -> None:
    """`pair`'s batch rows, one dash per variant (dotted: plain): throughput vs batch size, and each speculative
    variant's gain over plain decoding."""
    dashes = ["solid", "dashdot", "longdash", "dot"]
    speculative = sorted(set(measured["variant"]) - {"plain"})
    for variant, part in measured.groupby("variant"):
        dash = "dot" if variant == "plain" else dashes[speculative.index(variant) % len(dashes)]
        line = part.groupby("batch_size")["tokens_per_second"].median().sort_index()
        figure.add_scatter(
            x=line.index,
            y=line.values,
            name=f"{pair}: {variant}",
            mode="lines+markers",
            line=dict(color=colour, dash=dash),
            row=1,
            col=1,
        )
        if variant != "plain":
            gain = part.groupby("batch_size")["speedup"].median().sort_index()
            figure.add_scatter(
                x=gain.index,
                y=gain.values,
                name=f"{pair}: {variant}, gain vs batch size",
                mode="lines+markers",
                line=dict(color=colour, dash=dash),
                row=1,
                col=2,
            )
