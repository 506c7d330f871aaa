"""The figures vs gamma (`specdec.bench.charts` gathers them): acceptance, tokens per target pass, wall-clock speedup.

One colour per pair throughout (`pair_colour`). Measured values are medians over prompts and repeats of the fixed-gamma
runs; theory curves (dashed) come from `specdec.reference.theory` fed with the pair's measured alpha, c and v(gamma); a
schedule with no gamma of its own (the stop rule, transformers' defaults) and the oracle bound are level lines.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from specdec.reference.theory import expected_tokens_per_pass, walltime_speedup

COLOURS = qualitative.Plotly


def pair_colour(pairs: list[str], pair: str) -> str:
    """The colour `pair` has in every chart: its place among `pairs`."""
    return COLOURS[pairs.index(pair) % len(COLOURS)]


def _fixed(frame: pd.DataFrame, method: str = "speculative") -> pd.DataFrame:
    return frame[(frame["method"] == method) & (frame["schedule"] == "fixed")]


def _per_gamma(rows: pd.DataFrame, column: str) -> pd.Series:
    return rows.groupby("gamma")[column].median().sort_index()


def _span(frame: pd.DataFrame, pair: str) -> list[int]:
    """The x range a level line covers for `pair`: its fixed gammas, or 1..2 when it ran none."""
    gammas = _fixed(frame[frame["pair"] == pair])["gamma"]
    return [1, max(int(gammas.max()) if len(gammas) else 2, 2)]


def _level(
    figure: go.Figure,
    frame: pd.DataFrame,
    pairs: list[str],
    pair: str,
    rows: pd.DataFrame,
    column: str,
    label: str,
    unit: str = "",
    emphasis: bool = False,
) -> None:
    """The median `column` of `rows` as a level line for `pair`
    (a schedule with no gamma of its own), when there is one."""
    if len(rows) and rows[column].notna().any():
        level = float(rows[column].median())
        figure.add_scatter(
            x=_span(frame, pair),
            y=[level, level],
            name=f"{pair}: {label} ({level:.2f}{unit})",
            mode="lines",
            line=dict(
                color=pair_colour(pairs, pair), dash="longdash" if emphasis else "dot", width=3 if emphasis else 1
            ),
        )


def _stop_rule_level(figure: go.Figure, frame: pd.DataFrame, pairs: list[str], pair: str, column: str) -> None:
    """The stop rule's median `column`, drawn bold, when the pair ran it."""
    _level(
        figure,
        frame,
        pairs,
        pair,
        _schedule(frame, pair, "speculative", "stop"),
        column,
        "specdec stop rule",
        emphasis=True,
    )


def acceptance_figure(frame: pd.DataFrame) -> go.Figure:
    """Acceptance rate (accepted / drafted) and the per-token alpha estimate vs gamma, per pair."""
    figure = go.Figure()
    pairs = sorted(frame["pair"].unique())
    for pair, rows in _fixed(frame).groupby("pair"):
        rate, alpha = _per_gamma(rows, "acceptance_rate"), _per_gamma(rows, "alpha_estimate")
        figure.add_scatter(
            x=rate.index,
            y=rate.values,
            name=f"{pair}: accepted / drafted",
            mode="lines+markers",
            line=dict(color=pair_colour(pairs, pair)),
        )
        figure.add_scatter(
            x=alpha.index,
            y=alpha.values,
            name=f"{pair}: alpha (accepted / tested)",
            mode="lines",
            line=dict(color=pair_colour(pairs, pair), dash="dot"),
        )
    for pair in pairs:
        _stop_rule_level(figure, frame, pairs, pair, "acceptance_rate")
    return figure.update_layout(
        title="Acceptance vs gamma", xaxis_title="gamma", yaxis_title="acceptance", yaxis_range=[0, 1.05]
    )


def tokens_per_pass_figure(frame: pd.DataFrame) -> go.Figure:
    """Measured tokens per target pass vs gamma, with the theory (1 - a^(g+1)) / (1 - a) from the measured alpha."""
    figure = go.Figure()
    pairs = sorted(frame["pair"].unique())
    for pair, rows in _fixed(frame).groupby("pair"):
        measured = _per_gamma(rows, "tokens_per_target_pass")
        alpha = min(float(rows["alpha_estimate"].median()), 0.999)
        gammas = list(range(1, int(measured.index.max()) + 1))
        figure.add_scatter(
            x=measured.index,
            y=measured.values,
            name=f"{pair}: measured",
            mode="lines+markers",
            line=dict(color=pair_colour(pairs, pair)),
        )
        figure.add_scatter(
            x=gammas,
            y=[expected_tokens_per_pass(alpha, g) for g in gammas],
            name=f"{pair}: theory, alpha={alpha:.2f}",
            mode="lines",
            line=dict(color=pair_colour(pairs, pair), dash="dash"),
        )
    for pair in pairs:
        _stop_rule_level(figure, frame, pairs, pair, "tokens_per_target_pass")
    return figure.update_layout(
        title="Tokens per target pass vs gamma", xaxis_title="gamma", yaxis_title="tokens per target pass"
    )


def speedup_figure(frame: pd.DataFrame) -> go.Figure:
    """Wall-clock speedup over transformers' generate vs gamma: measured, predicted, and assisted generation."""
    figure = go.Figure()
    pairs = sorted(frame["pair"].unique())
    for pair, rows in _fixed(frame).groupby("pair"):
        _speedup_lines(figure, frame, pairs, pair, rows)
    for pair in pairs:  # levels: schedules with no gamma of their own, and the ceiling
        _speedup_levels(figure, frame, pairs, pair)
    figure.add_hline(y=1.0, line=dict(color="grey", width=1), annotation_text="target alone (generate)")
    return figure.update_layout(
        title="Wall-clock speedup vs gamma", xaxis_title="gamma", yaxis_title="speedup over generate"
    )


def _speedup_lines(figure: go.Figure, frame: pd.DataFrame, pairs: list[str], pair: str, rows: pd.DataFrame) -> None:
    """`pair`'s speedup vs gamma from its fixed-gamma `rows`:
    measured, predicted by theory, and transformers assisted."""
    colour = pair_colour(pairs, pair)
    measured = _per_gamma(rows, "speedup")
    figure.add_scatter(
        x=measured.index, y=measured.values, name=f"{pair}: specdec", mode="lines+markers", line=dict(color=colour)
    )
    alpha = min(float(rows["alpha_estimate"].median()), 0.999)
    c = float(rows["draft_cost_ratio"].median())
    verify = rows.groupby("gamma")["verify_cost"].median().sort_index()
    if c == c:  # NaN for another engine's rows: its costs were not measured here
        predicted = [walltime_speedup(alpha, int(g), c, v) for g, v in verify.items()]
        figure.add_scatter(
            x=verify.index,
            y=predicted,
            name=f"{pair}: predicted (alpha={alpha:.2f}, c={c:.2f})",
            mode="lines",
            line=dict(color=colour, dash="dash"),
        )
    assisted = _fixed(frame[frame["pair"] == pair], "assisted")
    if len(assisted):
        line = _per_gamma(assisted, "speedup")
        figure.add_scatter(
            x=line.index,
            y=line.values,
            name=f"{pair}: transformers assisted",
            mode="lines+markers",
            line=dict(color=colour, dash="dot"),
            marker=dict(symbol="x"),
        )


def _speedup_levels(figure: go.Figure, frame: pd.DataFrame, pairs: list[str], pair: str) -> None:
    """`pair`'s speedup levels: the stop rule, transformers assisted with its defaults, and the oracle bound."""
    _stop_rule_level(figure, frame, pairs, pair, "speedup")
    _level(
        figure,
        frame,
        pairs,
        pair,
        transformers_defaults(frame, pair),
        "speedup",
        "transformers assisted, its defaults",
        unit="x",
    )
    _level(
        figure,
        frame,
        pairs,
        pair,
        frame[(frame["pair"] == pair) & (frame["method"] == "generate")],
        "oracle_speedup",
        "oracle bound",
        unit="x",
    )


def _schedule(frame: pd.DataFrame, pair: str, method: str, schedule: str) -> pd.DataFrame:
    return frame[(frame["pair"] == pair) & (frame["method"] == method) & (frame["schedule"] == schedule)]


def transformers_defaults(frame: pd.DataFrame, pair: str) -> pd.DataFrame:
    """transformers' assisted generation as it ships ("assisted-default");
    in older CSVs, its dynamic schedule from 20 tokens."""
    shipped = frame[(frame["pair"] == pair) & (frame["method"] == "assisted-default")]
    return shipped if len(shipped) else _schedule(frame, pair, "assisted-dynamic", "adaptive")
