"""Plotly figures for the Explainer, the Playground and the Compare page's costs, drawn from results `specdec` computed.

Explainer: bars for p, q, min(p, q), the residual and the Monte-Carlo output; the speedup curve.
Playground: where a run's time went (in all and round by round), acceptance by position in a round, a token
tree with its accepted path, and the race of the speculative run against the target alone on one clock.
Compare: what verifying costs on this machine, v(gamma), and the speedup it allows. (The Compare page's benchmark
figures are `specdec.bench.charts`, which `specdec bench` shares.) Nothing is computed here.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from pages.common.trace import RoundRow, TreeView
from specdec.bench.comparison import TimeShare
from specdec.bench.position_acceptance import PositionAcceptance
from specdec.bench.race import DRAFT, OTHER, PASS, Lane, Race
from specdec.reference.explainer import AcceptRejectPicture, SpeedupCurve, VerificationCurve

P_COLOUR, Q_COLOUR, OVERLAP_COLOUR, RESIDUAL_COLOUR = "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"
LAYOUT = dict(margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", yanchor="top", y=-0.2), height=380)


def distributions_figure(picture: AcceptRejectPicture, labels: Sequence[str]) -> go.Figure:
    """p and q side by side, with min(p, q) (what is drafted and accepted) drawn over them."""
    figure = go.Figure()
    figure.add_trace(go.Bar(x=list(labels), y=picture.p, name="p (target)", marker_color=P_COLOUR, opacity=0.55))
    figure.add_trace(go.Bar(x=list(labels), y=picture.q, name="q (draft)", marker_color=Q_COLOUR, opacity=0.55))
    figure.add_trace(
        go.Scatter(
            x=list(labels),
            y=picture.overlap,
            name="min(p, q): drafted and accepted",
            mode="markers",
            marker=dict(symbol="line-ew-open", size=34, color=OVERLAP_COLOUR, line=dict(width=4, color=OVERLAP_COLOUR)),
        )
    )
    figure.update_layout(
        title=f"p, q and min(p, q): alpha = sum(min(p, q)) = {picture.alpha:.3f}",
        barmode="group",
        yaxis_title="probability",
        yaxis_range=[0, 1],
        **LAYOUT,
    )
    return figure


def residual_figure(picture: AcceptRejectPicture, labels: Sequence[str]) -> go.Figure:
    """The residual norm(max(0, p - q)) the target resamples from after a rejection."""
    figure = go.Figure(go.Bar(x=list(labels), y=picture.residual, marker_color=RESIDUAL_COLOUR, name="residual"))
    figure.update_layout(
        title="after a rejection the target samples from norm(max(0, p - q))",
        yaxis_title="probability",
        yaxis_range=[0, 1],
        **LAYOUT,
    )
    return figure


def monte_carlo_figure(
    labels: Sequence[str], target: Sequence[float], measured: Sequence[float], trials: int
) -> go.Figure:
    """How often each token came out of the rule, next to p."""
    figure = go.Figure()
    figure.add_trace(go.Bar(x=list(labels), y=list(target), name="p (target)", marker_color=P_COLOUR, opacity=0.55))
    figure.add_trace(
        go.Bar(
            x=list(labels),
            y=list(measured),
            name=f"output of the rule ({trials:,} trials)",
            marker_color=OVERLAP_COLOUR,
        )
    )
    figure.update_layout(
        title="What speculative sampling outputs vs p", barmode="group", yaxis_title="frequency", **LAYOUT
    )
    return figure


def speedup_curve_figure(curve: SpeedupCurve, chosen_gamma: int) -> go.Figure:
    """Expected speedup vs gamma, the best gamma starred and the chosen one circled."""
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(x=curve.gammas, y=curve.speedups, name="expected speedup", mode="lines+markers", line_color=P_COLOUR)
    )
    figure.add_trace(
        go.Scatter(
            x=[curve.best_gamma],
            y=[curve.best_speedup],
            name=f"best gamma = {curve.best_gamma}",
            mode="markers",
            marker=dict(symbol="star", size=18, color="#e3b505"),
        )
    )
    figure.add_trace(
        go.Scatter(
            x=[chosen_gamma],
            y=[curve.at(chosen_gamma)[1]],
            name=f"your gamma = {chosen_gamma}",
            mode="markers",
            marker=dict(symbol="circle-open", size=18, color=RESIDUAL_COLOUR, line=dict(width=3)),
        )
    )
    figure.add_hline(y=1.0, line=dict(color="grey", dash="dot"), annotation_text="target alone")
    figure.update_layout(
        title=f"speedup = (1 - a^(g+1)) / ((1 - a)(g c + 1)),  a = {curve.alpha:.2f}, c = {curve.c:.2f}",
        xaxis_title="gamma",
        yaxis_title="expected wall-clock speedup",
        **LAYOUT,
    )
    figure.update_xaxes(dtick=1)
    return figure


def time_split_figure(shares: Sequence[TimeShare]) -> go.Figure:
    """One horizontal bar: where the speculative run's wall time went."""
    colours = {"draft": Q_COLOUR, "verify": P_COLOUR, "other": "#999999"}
    figure = go.Figure()
    for share in shares:
        figure.add_trace(
            go.Bar(
                y=["time"],
                x=[share.seconds],
                orientation="h",
                name=f"{share.name} {share.seconds:.2f} s ({share.share:.0%})",
                marker_color=colours.get(share.name),
            )
        )
    figure.update_layout(
        barmode="stack",
        height=170,
        margin=dict(l=10, r=10, t=30, b=10),
        xaxis_title="seconds",
        title="where the speculative run's time went",
        legend=dict(orientation="h", y=-0.6, traceorder="normal"),
        yaxis=dict(showticklabels=False),
    )
    return figure


TREE_COLOURS = {"accepted": OVERLAP_COLOUR, "rejected": RESIDUAL_COLOUR, "not tested": "#bbbbbb"}


def tree_figure(view: TreeView, round_index: int) -> go.Figure:
    """A round's token tree: the root on the left, one column per depth, the accepted path in green."""
    figure = go.Figure()
    root_y = sum(node.y for node in view.nodes if node.parent == -1) / max(
        sum(node.parent == -1 for node in view.nodes), 1
    )
    place = [(node.depth, node.y) for node in view.nodes]
    for node, (x, y) in zip(view.nodes, place):
        parent_x, parent_y = (0, root_y) if node.parent == -1 else place[node.parent]
        figure.add_trace(
            go.Scatter(
                x=[parent_x, x],
                y=[parent_y, y],
                mode="lines",
                hoverinfo="skip",
                showlegend=False,
                line=dict(color=TREE_COLOURS[node.status], width=4 if node.status == "accepted" else 1.5),
            )
        )
    figure.add_trace(
        go.Scatter(
            x=[0],
            y=[root_y],
            mode="markers+text",
            text=[view.root],
            textposition="middle left",
            marker=dict(size=16, color="#444444"),
            name="root: the last token before the round",
            hovertext=["the text so far ends here"],
            hoverinfo="text",
        )
    )
    for status, colour in TREE_COLOURS.items():
        chosen = [node for node in view.nodes if node.status == status]
        if not chosen:
            continue
        figure.add_trace(
            go.Scatter(
                x=[node.depth for node in chosen],
                y=[node.y for node in chosen],
                mode="markers+text",
                name=status,
                text=[node.text for node in chosen],
                textposition="top center",
                marker=dict(size=14, color=colour),
                hovertext=[
                    f"{node.text}: p = {node.p:.3f}, q = {node.q:.3f}"
                    + ("" if node.u is None else f", u = {node.u:.3f}")
                    for node in chosen
                ],
                hoverinfo="text",
            )
        )
    figure.update_layout(
        title=f"round {round_index}: {len(view.nodes)} drafted nodes; the target then added "
        f"{view.added!r} ({view.added_kind})",
        xaxis=dict(title="depth (tokens after the root)", dtick=1),
        yaxis=dict(visible=False, autorange="reversed"),
        **LAYOUT,
    )
    return figure


def round_times_figure(rows: Sequence[RoundRow]) -> go.Figure:
    """Round by round, the draft's time and the target's pass, stacked: where each round's time went."""
    rounds = [row.round_index for row in rows]
    figure = go.Figure()
    figure.add_trace(
        go.Bar(
            x=rounds,
            y=[row.draft_ms for row in rows],
            name="draft steps",
            marker_color=Q_COLOUR,
            customdata=[row.drafted_count for row in rows],
            hovertemplate="round %{x}: %{y:.1f} ms, %{customdata} drafted",
        )
    )
    figure.add_trace(
        go.Bar(
            x=rounds,
            y=[row.verify_ms for row in rows],
            name="target pass",
            marker_color=P_COLOUR,
            customdata=[row.accepted for row in rows],
            hovertemplate="round %{x}: %{y:.1f} ms, %{customdata} accepted",
        )
    )
    figure.update_layout(
        title="Where each round's time went (round 0: the prompt pass)",
        barmode="stack",
        xaxis_title="round",
        yaxis_title="milliseconds",
        **LAYOUT,
    )
    return figure


def position_acceptance_figure(positions: Sequence[PositionAcceptance], alpha: float) -> go.Figure:
    """alpha_1 .. alpha_gamma measured, against the one alpha the formulas assume for every position."""
    shown = [a for a in positions if a.tested]
    figure = go.Figure(
        go.Bar(
            x=[a.position for a in shown],
            y=[a.rate for a in shown],
            name="measured",
            marker_color=OVERLAP_COLOUR,
            text=[f"{a.accepted}/{a.tested}" for a in shown],
            textposition="outside",
            hovertemplate="position %{x}: %{y:.0%} accepted (%{text})",
        )
    )
    if shown:
        figure.add_trace(
            go.Scatter(
                x=[shown[0].position - 0.5, shown[-1].position + 0.5],
                y=[alpha, alpha],
                mode="lines",
                name=f"theory: one alpha for all ({alpha:.0%})",
                line=dict(color="#444", dash="dash"),
            )
        )
    figure.update_layout(
        title="Acceptance by position in a round (accepted / tested)",
        xaxis_title="position of the drafted token",
        yaxis_title="accepted",
        yaxis_range=[0, 1.15],
        yaxis_tickformat=".0%",
        **LAYOUT,
    )
    return figure


RACE_COLOURS = {DRAFT: Q_COLOUR, PASS: P_COLOUR, OTHER: "#bbbbbb"}


def _lane_label(lane: Lane) -> str:
    """The lane's name and what it is drawn from: both are measured, each on its own run's clock."""
    if lane.name == "speculative":
        return f"speculative<br>(measured: {lane.steps} target passes)"
    return f"target alone<br>(measured: its own run, {lane.steps} passes)"


def race_figure(race: Race) -> go.Figure:
    """Both runs on one time axis: the speculative run's rounds (draft, target pass, other), the target alone's tokens
    (one target pass each), and where each finished."""
    figure = go.Figure()
    lanes = (race.target_alone, race.speculative)  # drawn bottom up: the speculative run on top
    for kind, colour in RACE_COLOURS.items():
        segments = [(lane, segment) for lane in lanes for segment in lane.segments if segment.kind == kind]
        if not segments:
            continue
        figure.add_trace(
            go.Bar(
                y=[_lane_label(lane) for lane, _ in segments],
                x=[segment.seconds for _, segment in segments],
                base=[segment.start_s for _, segment in segments],
                orientation="h",
                name=kind,
                marker_color=colour,
                marker_line=dict(color="white", width=0.5),
                customdata=[
                    [_step_name(lane, segment.step), segment.tokens, 1000 * segment.seconds]
                    for lane, segment in segments
                ],
                hovertemplate="%{customdata[0]}: "
                + kind
                + " %{customdata[2]:.1f} ms, %{customdata[1]} tokens out by its end<extra></extra>",
            )
        )
    for lane in lanes:
        figure.add_trace(
            go.Scatter(
                x=[lane.finish_s],
                y=[_lane_label(lane)],
                mode="markers+text",
                showlegend=False,
                marker=dict(symbol="line-ns", size=34, line=dict(width=3, color="#222222")),
                text=[f"  {lane.tokens} tokens, {lane.finish_s:.2f} s"],
                textposition="middle right",
                hovertemplate=f"{lane.name} finished at %{{x:.3f}} s<extra></extra>",
            )
        )
    times = f"target alone {race.target_alone.finish_s:.2f} s / speculative {race.speculative.finish_s:.2f} s"
    verdict = (
        f"wall-clock speedup {race.ratio:.2f}× ({times})"
        if race.same_length
        else f"{times}, but the runs made {race.speculative.tokens} and {race.target_alone.tokens} tokens: compare "
        "tokens per second"
    )
    figure.update_layout(
        title=f"The race, on one clock: {verdict}",
        barmode="overlay",
        xaxis_title="seconds from each run's start",
        xaxis_range=[0, 1.25 * max(lane.finish_s for lane in lanes)],
        **(LAYOUT | dict(height=300)),
    )
    figure.update_yaxes(automargin=True)
    return figure


def _step_name(lane: Lane, step: int) -> str:
    if step < 0:
        return "after the last pass"
    if lane.name == "speculative":
        return "the prompt pass" if step == 0 else f"round {step}"
    return "the prompt pass (token 1)" if step == 0 else f"token {step + 1}"


def race_progress_figure(race: Race) -> go.Figure:
    """Tokens out against time for both runs: the steeper line is the faster one."""
    figure = go.Figure()
    for lane, colour in ((race.speculative, OVERLAP_COLOUR), (race.target_alone, P_COLOUR)):
        times, tokens = lane.progress()
        figure.add_trace(
            go.Scatter(
                x=times,
                y=tokens,
                mode="lines",
                line_shape="hv",
                name=lane.name,
                line_color=colour,
                hovertemplate="%{y} tokens at %{x:.3f} s<extra>" + lane.name + "</extra>",
            )
        )
    figure.update_layout(
        title="Tokens out over time", xaxis_title="seconds from each run's start", yaxis_title="tokens out", **LAYOUT
    )
    figure.update_yaxes(automargin=True)
    return figure


def verification_cost_figure(curve: VerificationCurve, machine: str) -> go.Figure:
    """The measured v(gamma) between its two bounds: 1 (a pass
    costs a step, as on a GPU) and gamma + 1 (no sharing at all)."""
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            x=curve.gammas,
            y=[g + 1 for g in curve.gammas],
            name="gamma + 1 steps: nothing shared",
            mode="lines",
            line=dict(color=RESIDUAL_COLOUR, dash="dot"),
        )
    )
    figure.add_trace(
        go.Scatter(
            x=curve.gammas,
            y=[1.0] * len(curve.gammas),
            name="1 step: bound by reading the weights",
            mode="lines",
            line=dict(color=OVERLAP_COLOUR, dash="dot"),
        )
    )
    figure.add_trace(
        go.Scatter(
            x=curve.gammas,
            y=curve.v,
            name="v(gamma) measured here",
            mode="lines+markers",
            line_color=P_COLOUR,
            hovertemplate="a pass over %{x} + 1 tokens costs %{y:.2f} steps<extra></extra>",
        )
    )
    figure.update_layout(
        title=f"What verifying costs on {machine}",
        xaxis_title="gamma (the pass reads gamma + 1 tokens)",
        yaxis_title="v(gamma), in one-token steps",
        **LAYOUT,
    )
    return figure


def verification_speedup_figure(curve: VerificationCurve) -> go.Figure:
    """The speedup the measured v(gamma) allows: a free draft that is always right, and the pair's draft at alpha."""
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            x=curve.gammas,
            y=curve.ceiling,
            name="a free draft, always right: (gamma + 1) / v(gamma)",
            mode="lines+markers",
            line_color=OVERLAP_COLOUR,
        )
    )
    figure.add_trace(
        go.Scatter(
            x=curve.gammas,
            y=curve.at_alpha,
            name=f"this pair's draft (c = {curve.c:.2f}) at alpha = {curve.alpha:.2f}",
            mode="lines+markers",
            line_color=Q_COLOUR,
        )
    )
    figure.add_hline(y=1.0, line_dash="dash", line_color="grey", annotation_text="the target alone")
    figure.update_layout(
        title=f"The speedup it allows: at most {curve.best_ceiling:.2f}× (gamma = {curve.best_gamma})",
        xaxis_title="gamma",
        yaxis_title="speedup over the target alone",
        **LAYOUT,
    )
    return figure
