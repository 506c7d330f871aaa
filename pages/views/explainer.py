"""Explainer: edit p and q at one position and watch the
accept/reject rule, alpha, the residual and the speedup formula."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages.common.figures import distributions_figure, monte_carlo_figure, residual_figure, speedup_curve_figure
from pages.common.lessons import guide_folder
from pages.common.state import keep, remember
from specdec.reference.chain_round import BONUS, expected_tokens_terms, nth_round, rounds_summary, tokens_written
from specdec.reference.explainer import GUIDED_PRESETS, accept_reject_picture, speedup_curve
from specdec.reference.theory import expected_tokens_per_pass, total_variation
from specdec.reference.toy import STANDARD_ERRORS, LosslessnessCheck, run_losslessness_check

CONTEXT = "The capital of France is"
TOKENS = ("Paris", "a", "the", "Lyon", "located")
DEFAULT_P = (0.55, 0.15, 0.10, 0.05, 0.15)  # the target: fairly sure of Paris
DEFAULT_Q = (0.30, 0.30, 0.20, 0.15, 0.05)  # the draft: hedges


def _weights(column, role: str, defaults: tuple[float, ...]) -> list[float]:
    column.markdown(f"**{role}**")
    return [
        column.slider(f"{role[0]}({token})", 0.0, 1.0, step=0.01, **remember(f"explainer_{role[0]}_{token}", default))
        for token, default in zip(TOKENS, defaults)
    ]


st.title("Explainer: one position, one drafted token")
st.markdown(
    f"The next token after *“{CONTEXT} …”*. Drag the sliders: they are weights, normalised to sum to 1. "
    "The draft proposes x ~ q; the target accepts it when u < p(x)/q(x) with u ~ U[0, 1); "
    "otherwise it draws a replacement from the residual norm(max(0, p − q))."
)
left, right = st.columns(2)
p_weights = _weights(left, "p: the target", DEFAULT_P)
q_weights = _weights(right, "q: the draft", DEFAULT_Q)
if sum(p_weights) == 0 or sum(q_weights) == 0:
    st.error("Give at least one token a weight above zero in both p and q.")
    st.stop()
picture = accept_reject_picture(p_weights, q_weights)

columns = st.columns(2)
columns[0].metric("α = Σ min(p, q)", f"{picture.alpha:.3f}", help="the chance a token drafted from q is accepted")
columns[1].metric(
    "Rejection chance 1 − α = ½ Σ |p − q|",
    f"{total_variation(picture.p, picture.q):.3f}",
    help="the total variation distance between p and q: the less they differ, the more is accepted",
)
left, right = st.columns(2)
left.plotly_chart(distributions_figure(picture, TOKENS), width="stretch", key="explainer_distributions")
right.plotly_chart(residual_figure(picture, TOKENS), width="stretch", key="explainer_residual")
st.dataframe(
    pd.DataFrame(
        {
            "token": TOKENS,
            "p": picture.p,
            "q": picture.q,
            "min(p, q)": picture.overlap,
            "accept once drafted: min(1, p/q)": picture.accept_probability,
            "residual": picture.residual,
        }
    ).round(3),
    hide_index=True,
    width="stretch",
)


@st.cache_data(max_entries=64, show_spinner=False)
def losslessness_check(p: tuple[float, ...], q: tuple[float, ...], trials: int, seed: int) -> LosslessnessCheck:
    """The rule run `trials` times at one position
    (`specdec.reference.toy`), computed once per p, q, trials and seed."""
    return run_losslessness_check(p, q, trials, seed)


@st.fragment
def monte_carlo(p: tuple[float, ...], q: tuple[float, ...]) -> None:
    """Run the rule many times: a fragment, so its own controls rerun only it; cached, so other sliders cost nothing."""
    st.subheader("Monte-Carlo: run the rule many times")
    left, right = st.columns([1, 3])
    trials = left.select_slider("trials", [1_000, 10_000, 100_000, 200_000], **remember("explainer_trials", 100_000))
    seed = left.number_input("seed", 0, 2**31 - 1, step=1, **remember("explainer_seed", 0))
    check = losslessness_check(p, q, int(trials), int(seed))
    left.metric("α measured", f"{check.alpha_measured:.3f}", help=f"theory: {check.alpha_predicted:.3f}")
    left.metric(
        "largest |frequency − p|", f"{check.max_error:.4f}", help=f"{check.max_standard_errors:.1f} standard errors"
    )
    if check.passed:
        left.success(f"The output matches p: every token within {STANDARD_ERRORS:.0f} standard errors, whatever q is.")
    else:
        left.error(
            f"The output does not match p: the worst token is {check.max_standard_errors:.1f} standard errors off."
        )
    right.plotly_chart(
        monte_carlo_figure(TOKENS, check.target, check.measured, check.trials),
        width="stretch",
        key="explainer_monte_carlo",
    )


@st.fragment
def speedup_calculator(alpha_now: float) -> None:
    """The speedup formula for chosen alpha, c and gamma: a fragment, so its sliders rerun only it."""
    st.subheader("Speedup calculator")
    st.markdown(
        "With α the chance a tested draft is kept, γ drafted tokens per round and a draft that costs c of a target "
        "pass, one round "
        "yields (1 − α^(γ+1)) / (1 − α) tokens on average and costs γc + 1 target passes."
    )
    left, right = st.columns([1, 3])
    alpha = left.slider(
        "α: chance a tested draft is kept", 0.0, 1.0, step=0.01, **remember("explainer_alpha", round(alpha_now, 2))
    )
    c = left.slider("c: draft cost / target cost", 0.0, 1.0, step=0.01, **remember("explainer_c", 0.3))
    gamma = left.slider("γ: drafted tokens per round", 1, 16, **remember("explainer_gamma", 4))
    curve = speedup_curve(alpha, c, max_gamma=16)
    tokens_per_pass, speedup = curve.at(gamma)
    left.metric("tokens per target pass", f"{tokens_per_pass:.2f}")
    left.metric("expected speedup", f"{speedup:.2f}×")
    left.metric("best γ", f"{curve.best_gamma}", help=f"{curve.best_speedup:.2f}× at best")
    if not curve.pays_off:
        left.warning("α ≤ c: no γ beats the target alone. The draft must agree more often than it costs.")
    right.plotly_chart(speedup_curve_figure(curve, gamma), width="stretch", key="explainer_speedup")


def _new_round(p: tuple[float, ...], q: tuple[float, ...], gamma: int, seed: int) -> None:
    """Draw the next round of this seed's stream; the steps are revealed one click at a time."""
    played = st.session_state.setdefault("explainer_rounds", [])
    st.session_state["explainer_round"] = nth_round(p, q, gamma, seed, len(played))
    st.session_state["explainer_round_step"] = 0


def _next_step() -> None:
    """Reveal one more step; a round shown to its last token joins the rounds played."""
    played = st.session_state["explainer_round"]
    step = st.session_state["explainer_round_step"] = min(
        st.session_state["explainer_round_step"] + 1, len(played.steps) + 1
    )
    if step == len(played.steps) + 1:
        st.session_state["explainer_rounds"].append(played)


def _another_round(p: tuple[float, ...], q: tuple[float, ...], gamma: int, seed: int, forget: bool) -> None:
    """New round (the current one counts even if not stepped to
    its end) or, with `forget`, the seed's first round again."""
    if forget:
        st.session_state["explainer_rounds"] = []
    elif st.session_state["explainer_round_step"] <= len(st.session_state["explainer_round"].steps):
        st.session_state["explainer_rounds"].append(st.session_state["explainer_round"])
    _new_round(p, q, gamma, seed)


@st.fragment
def chain_round_stepper(p: tuple[float, ...], q: tuple[float, ...], alpha: float) -> None:
    """A chain round you step through: each draft's test, the first rejection, the residual or the bonus token.

    The buttons act in callbacks, before the fragment redraws, so each button is drawn for the state it changes to.
    """
    st.subheader("A chain round, step by step")
    st.markdown(
        "The same p and q at every position. Each step draws x ~ q and u ~ U[0, 1) and keeps x when "
        "u < p(x)/q(x); the first rejection ends the round with a token from the residual, and a round "
        "that keeps all γ drafts ends with a bonus token from p."
    )
    left, right = st.columns([1, 3])
    gamma = left.slider("γ: drafted tokens", 1, 8, **remember("explainer_round_gamma", 4))
    seed = int(left.number_input("round seed", 0, 2**31 - 1, step=1, **remember("explainer_round_seed", 0)))
    setting = (p, q, gamma, seed)
    if st.session_state.get("explainer_round_setting") != setting:  # new p, q, gamma or seed: start over
        st.session_state["explainer_round_setting"] = setting
        st.session_state["explainer_rounds"] = []
        _new_round(p, q, gamma, seed)
    played = st.session_state["explainer_round"]
    step = st.session_state["explainer_round_step"]
    total_steps = len(played.steps) + 1  # the drafts tested, then the last token
    buttons = left.columns(2)
    buttons[0].button("Next step", disabled=step >= total_steps, key="explainer_round_next", on_click=_next_step)
    buttons[1].button("New round", key="explainer_round_new", on_click=_another_round, args=(*setting, False))
    left.button(
        "Start over",
        key="explainer_round_reset",
        on_click=_another_round,
        args=(*setting, True),
        help="forget the rounds played and replay this seed from its first round",
    )
    lines = []
    for index, tested in enumerate(played.steps[:step]):
        verdict = "**kept**" if tested.accepted else "**rejected**: the round ends here"
        lines.append(
            f"{index + 1}. drafted **{TOKENS[tested.token]}**: p = {tested.p:.3f}, q = {tested.q:.3f}, "
            f"u = {tested.u:.3f} {'<' if tested.accepted else '≥'} p/q = {tested.ratio:.3f} → {verdict}"
        )
    if step == total_steps:
        source = (
            "bonus token from p (all γ kept)"
            if played.last_kind == BONUS
            else "drawn from the residual norm(max(0, p − q))"
        )
        lines.append(
            f"Last token: **{TOKENS[played.last_token]}**, {source}. The round wrote "
            f"{len(played.emitted)} token(s): {' '.join(TOKENS[t] for t in played.emitted)}."
        )
    right.markdown("\n".join(lines) if lines else "Press **Next step** to draw the first drafted token.")
    right.caption(
        f"round {len(st.session_state['explainer_rounds']) + (step < total_steps)}, step {step} of {total_steps}"
    )

    terms = expected_tokens_terms(alpha, gamma)
    reached = tokens_written(played, step)
    st.markdown(
        "**Where E[tokens per round] comes from.** The round writes its (k+1)-th token only if its first k drafts "
        "were all kept, which has chance α^k; one term in bold for each token this round has written so far:"
    )
    st.markdown(
        " + ".join(f"**α^{k} = {term:.3f}**" if k < reached else f"α^{k} = {term:.3f}" for k, term in enumerate(terms))
        + f" = **{expected_tokens_per_pass(alpha, gamma):.3f}** = (1 − α^(γ+1)) / (1 − α)"
    )
    count, mean, expected = rounds_summary(st.session_state["explainer_rounds"], p, q)
    if count:
        st.caption(
            f"Rounds played: {count}, {mean:.2f} tokens per round on average; the formula expects {expected:.3f}."
        )


def guided_questions() -> None:
    """Presets of the calculator with a question each; the answer, from theory's formulas, on request."""
    st.subheader("Guided questions")
    labels = {preset.question: preset for preset in GUIDED_PRESETS}
    question = st.selectbox(
        "Pick a question", list(labels), **remember("explainer_question", GUIDED_PRESETS[0].question)
    )
    preset = labels[question]

    def apply() -> None:
        keep("explainer_alpha", preset.alpha)
        keep("explainer_c", preset.c)
        keep("explainer_gamma", preset.gamma)

    st.button(
        f"Set the calculator: α = {preset.alpha:.2f}, c = {preset.c:.2f}, γ = {preset.gamma}",
        on_click=apply,
        key="explainer_question_apply",
    )
    with st.expander("Show the answer"):
        st.markdown(preset.answer())


monte_carlo(tuple(picture.p), tuple(picture.q))
chain_round_stepper(tuple(picture.p), tuple(picture.q), picture.alpha)
guided_questions()
speedup_calculator(picture.alpha)

explainer_html = guide_folder() / "explainer.html"
if explainer_html.is_file():
    st.subheader("The guide's interactive explainer")
    st.iframe(explainer_html, height=900)
