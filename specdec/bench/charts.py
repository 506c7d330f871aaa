"""Plotly figures of a benchmark frame (`specdec.bench.harness`): what the Compare page and the README show.

One colour per pair throughout. Measured values are medians over prompts and repeats; theory
curves (dashed) come from `specdec.reference.theory` fed with the pair's measured alpha, c and v(gamma).

    figures = benchmark_figures(frame)      # {"acceptance": Figure, "tokens_per_pass": ..., ...}
    write_figure(summary_figure(frame), "benchmark.png")   # or .html
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from specdec.errors import SpecdecError, first_line
from specdec.reference.theory import expected_tokens_per_pass, walltime_speedup

COLOURS = qualitative.Plotly


def _colour(pairs: list[str], pair: str) -> str:
    return COLOURS[pairs.index(pair) % len(COLOURS)]


def _fixed(frame: pd.DataFrame, method: str = "speculative") -> pd.DataFrame:
    return frame[(frame["method"] == method) & (frame["schedule"] == "fixed")]


def _per_gamma(rows: pd.DataFrame, column: str) -> pd.Series:
    return rows.groupby("gamma")[column].median().sort_index()


def _span(frame: pd.DataFrame, pair: str) -> list[int]:
    """The x range a level line covers for `pair`: its fixed gammas, or 1..2 when it ran none."""
    gammas = _fixed(frame[frame["pair"] == pair])["gamma"]
    return [1, max(int(gammas.max()) if len(gammas) else 2, 2)]


def _level(figure: go.Figure, frame: pd.DataFrame, pairs: list[str], pair: str, rows: pd.DataFrame, column: str, label: str,
           unit: str = "", emphasis: bool = False) -> None:
    """The median `column` of `rows` as a level line for `pair` (a schedule with no gamma of its own), when there is one."""
    if len(rows) and rows[column].notna().any():
        level = float(rows[column].median())
        figure.add_scatter(x=_span(frame, pair), y=[level, level], name=f"{pair}: {label} ({level:.2f}{unit})", mode="lines",
                           line=dict(color=_colour(pairs, pair), dash="longdash" if emphasis else "dot", width=3 if emphasis else 1))


def _stop_rule_level(figure: go.Figure, frame: pd.DataFrame, pairs: list[str], pair: str, column: str) -> None:
    """The stop rule's median `column`, drawn bold, when the pair ran it."""
    _level(figure, frame, pairs, pair, _schedule(frame, pair, "speculative", "stop"), column, "specdec stop rule", emphasis=True)


def acceptance_figure(frame: pd.DataFrame) -> go.Figure:
    """Acceptance rate (accepted / drafted) and the per-token alpha estimate vs gamma, per pair."""
    figure = go.Figure()
    pairs = sorted(frame["pair"].unique())
    for pair, rows in _fixed(frame).groupby("pair"):
        rate, alpha = _per_gamma(rows, "acceptance_rate"), _per_gamma(rows, "alpha_estimate")
        figure.add_scatter(x=rate.index, y=rate.values, name=f"{pair}: accepted / drafted", mode="lines+markers",
                           line=dict(color=_colour(pairs, pair)))
        figure.add_scatter(x=alpha.index, y=alpha.values, name=f"{pair}: alpha (accepted / tested)", mode="lines",
                           line=dict(color=_colour(pairs, pair), dash="dot"))
    for pair in pairs:
        _stop_rule_level(figure, frame, pairs, pair, "acceptance_rate")
    return figure.update_layout(title="Acceptance vs gamma", xaxis_title="gamma", yaxis_title="acceptance", yaxis_range=[0, 1.05])


def tokens_per_pass_figure(frame: pd.DataFrame) -> go.Figure:
    """Measured tokens per target pass vs gamma, with the theory (1 - a^(g+1)) / (1 - a) from the measured alpha."""
    figure = go.Figure()
    pairs = sorted(frame["pair"].unique())
    for pair, rows in _fixed(frame).groupby("pair"):
        measured = _per_gamma(rows, "tokens_per_target_pass")
        alpha = min(float(rows["alpha_estimate"].median()), 0.999)
        gammas = list(range(1, int(measured.index.max()) + 1))
        figure.add_scatter(x=measured.index, y=measured.values, name=f"{pair}: measured", mode="lines+markers",
                           line=dict(color=_colour(pairs, pair)))
        figure.add_scatter(x=gammas, y=[expected_tokens_per_pass(alpha, g) for g in gammas],
                           name=f"{pair}: theory, alpha={alpha:.2f}", mode="lines", line=dict(color=_colour(pairs, pair), dash="dash"))
    for pair in pairs:
        _stop_rule_level(figure, frame, pairs, pair, "tokens_per_target_pass")
    return figure.update_layout(title="Tokens per target pass vs gamma", xaxis_title="gamma", yaxis_title="tokens per target pass")


def speedup_figure(frame: pd.DataFrame) -> go.Figure:
    """Wall-clock speedup over transformers' generate vs gamma: measured, predicted, and assisted generation."""
    figure = go.Figure()
    pairs = sorted(frame["pair"].unique())
    for pair, rows in _fixed(frame).groupby("pair"):
        colour = _colour(pairs, pair)
        measured = _per_gamma(rows, "speedup")
        figure.add_scatter(x=measured.index, y=measured.values, name=f"{pair}: specdec", mode="lines+markers", line=dict(color=colour))
        alpha = min(float(rows["alpha_estimate"].median()), 0.999)
        c = float(rows["draft_cost_ratio"].median())
        verify = rows.groupby("gamma")["verify_cost"].median().sort_index()
        if c == c:                                   # NaN for another engine's rows: its costs were not measured here
            predicted = [walltime_speedup(alpha, int(g), c, v) for g, v in verify.items()]
            figure.add_scatter(x=verify.index, y=predicted, name=f"{pair}: predicted (alpha={alpha:.2f}, c={c:.2f})", mode="lines",
                               line=dict(color=colour, dash="dash"))
        assisted = _fixed(frame[frame["pair"] == pair], "assisted")
        if len(assisted):
            line = _per_gamma(assisted, "speedup")
            figure.add_scatter(x=line.index, y=line.values, name=f"{pair}: transformers assisted", mode="lines+markers",
                               line=dict(color=colour, dash="dot"), marker=dict(symbol="x"))
    for pair in pairs:                               # levels: schedules with no gamma of their own, and the ceiling
        _stop_rule_level(figure, frame, pairs, pair, "speedup")
        _level(figure, frame, pairs, pair, _transformers_defaults(frame, pair), "speedup", "transformers assisted, its defaults", unit="x")
        _level(figure, frame, pairs, pair, frame[(frame["pair"] == pair) & (frame["method"] == "generate")], "oracle_speedup",
               "oracle bound", unit="x")
    figure.add_hline(y=1.0, line=dict(color="grey", width=1), annotation_text="target alone (generate)")
    return figure.update_layout(title="Wall-clock speedup vs gamma", xaxis_title="gamma", yaxis_title="speedup over generate")


def _schedule(frame: pd.DataFrame, pair: str, method: str, schedule: str) -> pd.DataFrame:
    return frame[(frame["pair"] == pair) & (frame["method"] == method) & (frame["schedule"] == schedule)]


def _transformers_defaults(frame: pd.DataFrame, pair: str) -> pd.DataFrame:
    """transformers' assisted generation as it ships ("assisted-default"); in older CSVs, its dynamic schedule from 20 tokens."""
    shipped = frame[(frame["pair"] == pair) & (frame["method"] == "assisted-default")]
    return shipped if len(shipped) else _schedule(frame, pair, "assisted-dynamic", "adaptive")


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
            figure.add_bar(x=bars.index, y=bars.values, name=f"{pair}: gamma={int(best)}", marker_color=_colour(pairs, pair))
        for schedule, pattern in (("adaptive", "/"), ("stop", "."), ("default", "x")):
            chosen = rows[rows["schedule"] == schedule]
            if len(chosen):
                bars = chosen.groupby("category")["speedup"].median()
                figure.add_bar(x=bars.index, y=bars.values, name=f"{pair}: {schedule}", marker_color=_colour(pairs, pair),
                               marker_pattern_shape=pattern)
        dynamic = _transformers_defaults(frame, pair)
        if len(dynamic):
            bars = dynamic.groupby("category")["speedup"].median()
            figure.add_bar(x=bars.index, y=bars.values, name=f"{pair}: transformers assisted, defaults", marker_color="#999999")
    figure.add_hline(y=1.0, line=dict(color="grey", width=1))
    return figure.update_layout(title="Speedup by prompt category", barmode="group", yaxis_title="speedup over generate")


def concurrency_figure(frame: pd.DataFrame) -> go.Figure:
    """A vLLM server's speedup over its baseline server, and its acceptance rate, vs requests in flight."""
    rows = frame[(frame["engine"] == "vllm-server") & (frame["method"] == "speculative")]
    figure = make_subplots(rows=1, cols=2, subplot_titles=["Speedup over the same server without speculation", "Acceptance rate"])
    pairs = sorted(rows["pair"].unique())
    for pair, levels in rows.groupby("pair"):
        levels = levels.groupby("concurrency")[["speedup", "acceptance_rate"]].median().sort_index()
        for col, column in ((1, "speedup"), (2, "acceptance_rate")):
            figure.add_scatter(x=levels.index, y=levels[column], name=f"{pair}: {column.replace('_', ' ')}", mode="lines+markers",
                               line=dict(color=_colour(pairs, pair)), row=1, col=col)
    figure.add_hline(y=1.0, line=dict(color="grey", width=1), row=1, col=1)
    figure.update_xaxes(title_text="requests in flight", type="log")
    return figure.update_layout(title="A serving engine: the gain vs concurrency")


def has_batches(frame: pd.DataFrame) -> bool:
    """Whether the frame holds our engine's batch rows (`specdec.bench.batches`)."""
    return "batch_size" in frame.columns and bool(((frame["engine"] == "specdec") & frame["batch_size"].notna()).any())


def batch_figure(frame: pd.DataFrame) -> go.Figure:
    """Our engine's throughput (plain and speculative) and the speculative gain vs batch size; a vLLM server's gain
    vs requests in flight beside it when the frame holds one."""
    rows = frame[(frame["engine"] == "specdec") & frame["batch_size"].notna()] if "batch_size" in frame.columns else frame.iloc[:0]
    server = frame[(frame["engine"] == "vllm-server") & (frame["method"] == "speculative")] if "engine" in frame.columns else frame.iloc[:0]
    figure = make_subplots(rows=1, cols=2, subplot_titles=["Throughput: all new tokens / wall time",
                                                           "Speculative gain over plain decoding of the same batch"])
    pairs = sorted(set(rows["pair"]) | set(server["pair"]))
    dashes = ["solid", "dashdot", "longdash", "dot"]
    for pair, measured in rows.groupby("pair"):
        colour = _colour(pairs, pair)
        speculative = sorted(set(measured["variant"]) - {"plain"})
        for variant, part in measured.groupby("variant"):
            dash = "dot" if variant == "plain" else dashes[speculative.index(variant) % len(dashes)]
            line = part.groupby("batch_size")["tokens_per_second"].median().sort_index()
            figure.add_scatter(x=line.index, y=line.values, name=f"{pair}: {variant}", mode="lines+markers",
                               line=dict(color=colour, dash=dash), row=1, col=1)
            if variant != "plain":
                gain = part.groupby("batch_size")["speedup"].median().sort_index()
                figure.add_scatter(x=gain.index, y=gain.values, name=f"{pair}: {variant}, gain vs batch size", mode="lines+markers",
                                   line=dict(color=colour, dash=dash), row=1, col=2)
    for pair, levels in server.groupby("pair"):
        gain = levels.groupby("concurrency")["speedup"].median().sort_index()
        figure.add_scatter(x=gain.index, y=gain.values, name=f"{pair}: vLLM server, requests in flight", mode="lines+markers",
                           line=dict(color=_colour(pairs, pair), dash="dash"), marker=dict(symbol="diamond"), row=1, col=2)
    figure.add_hline(y=1.0, line=dict(color="grey", width=1), row=1, col=2)
    figure.update_xaxes(title_text="batch size (requests in flight for a server)", type="log", dtick=0.30103)
    figure.update_yaxes(title_text="tokens / s", row=1, col=1).update_yaxes(title_text="gain", row=1, col=2)
    return figure.update_layout(title="Batches: what the speculative gain becomes as the batch grows")


def benchmark_figures(frame: pd.DataFrame) -> dict[str, go.Figure]:
    """The charts of a benchmark frame; a vLLM server's rows add the gain vs concurrency; a batch benchmark has its own."""
    if has_batches(frame):                         # a batch benchmark: its own chart (the gamma charts have nothing to show)
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
    parts = {name: figure for name, figure in benchmark_figures(frame).items() if name != "concurrency"}   # the 2x2 of every frame
    canvas = make_subplots(rows=2, cols=2, subplot_titles=[figure.layout.title.text for figure in parts.values()])
    for index, figure in enumerate(parts.values()):
        row, col = divmod(index, 2)
        for trace in figure.data:
            canvas.add_trace(trace.update(showlegend=True), row=row + 1, col=col + 1)
    canvas.update_xaxes(title_text="gamma", row=1, col=1).update_xaxes(title_text="gamma", row=1, col=2)
    canvas.update_xaxes(title_text="gamma", row=2, col=1)
    canvas.add_hline(y=1.0, line=dict(color="grey", width=1), row=2, col=1)
    canvas.add_hline(y=1.0, line=dict(color="grey", width=1), row=2, col=2)
    return canvas.update_layout(height=1050, width=1300, barmode="group",
                                legend=dict(font=dict(size=10), orientation="h", yanchor="top", y=-0.06))


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
        raise SpecdecError(f"could not write {path} ({first_line(error)}): pip install kaleido and set BROWSER_PATH "
                           "to a Chrome or Chromium binary, or write an .html figure instead") from None
