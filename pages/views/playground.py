"""Playground: run one prompt with speculative decoding and with
the target alone, and see every token; train an EAGLE-3 head."""

from __future__ import annotations

import html
import math

import pandas as pd
import streamlit as st

from pages.common import jobs, offer_downloads, pair_loader, shows_errors
from pages.common.batch import BATCH, BATCH_RUN, MAX_ROWS, BatchRun, batch_work, prompt_lines
from pages.common.figures import (
    position_acceptance_figure,
    race_figure,
    race_progress_figure,
    round_times_figure,
    time_split_figure,
    tree_figure,
)
from pages.common.heads import training_section
from pages.common.models import draw_loading, is_chat_model, stopped_while_loading
from pages.common.playground import RESULT, RUN, UPDATES_PER_SECOND, PlaygroundRun, draw_run, playground_work
from pages.common.replay import replay_step
from pages.common.settings import FASTEST, Settings
from pages.common.sidebar import current_settings
from pages.common.state import keep, remember
from pages.common.tokens_html import legend_html, plain_text_html, tokens_html
from pages.common.trace import count_kinds, round_records
from pages.common.turns import shared_turns
from specdec.bench.comparison import RunComparison
from specdec.bench.position_acceptance import acceptance_by_position
from specdec.bench.prompts import suite
from specdec.bench.race import race
from specdec.planner.drafting import FASTEST_PLAN_FLAG

settings = current_settings()
EXAMPLES = suite()
NOTE = "playground_note"  # a line about how the last job ended (a Stop), shown once
REPLAY = "playground_replay"  # the round the replay shows


def _example_text(index: int) -> str:
    return EXAMPLES[index].messages[-1][1]


def _use_example(index: int) -> None:
    keep("prompt", _example_text(index))


def _prompt_controls(settings: Settings) -> tuple[str, bool, bool, bool]:
    """Example picker, prompt box and options; returns (prompt, chat template?, also the target alone?, stream?)."""
    st.selectbox(
        "Example prompts",
        range(len(EXAMPLES)),
        format_func=lambda i: f"{EXAMPLES[i].category} · {_example_text(i)[:90]}",
        **remember("example", 0, then=_use_example),
    )
    prompt = st.text_area("Prompt", height=110, **remember("prompt", _example_text(0)))
    left, middle, right = st.columns(3)
    chat = left.checkbox(
        "Apply the target's chat template",
        help="wraps the prompt as a user turn (instruct models)",
        **remember(f"chat:{settings.target}", is_chat_model(settings.target)),
    )
    also_plain = middle.checkbox(
        "Also run the target alone",
        help="for the wall-clock speedup and the greedy check",
        **remember("also_plain", True),
    )
    stream = right.checkbox(
        "Show tokens as they are generated",
        **remember("stream", True),
        help=f"redraws the text {UPDATES_PER_SECOND} times a second; that and decoding each token for "
        "display cost both runs a little time (counted as 'other'); untick for the cleanest timings",
    )
    return prompt, chat, also_plain, stream


def _metrics(run: PlaygroundRun) -> None:
    stats = run.speculative.stats
    comparison = RunComparison(stats, run.plain.stats if run.plain else None, run.settings.spec.drafting.gamma)
    columns = st.columns(6)
    alpha, kept = stats.alpha_estimate, stats.acceptance_rate
    columns[0].metric(
        "α: accepted / tested",
        "n/a" if math.isnan(alpha) else f"{alpha:.0%}",
        help=f"accepted / (accepted + rejections) = {stats.accepted} / ({stats.accepted} + {stats.rejections}): "
        "the per-token α of the formulas. Accepted / all drafted is "
        + ("n/a" if math.isnan(kept) else f"{kept:.0%}")
        + ", lower, because drafts after a rejection are never tested.",
    )
    columns[5].metric(
        "Acceptance rate: accepted / drafted",
        "n/a" if math.isnan(kept) else f"{kept:.0%}",
        help=f"{stats.accepted} of {stats.drafted} drafted tokens kept; the others were rejected, or never "
        "tested (after a rejection, or on a tree's branches off the path the target kept)",
    )
    untested = stats.drafted - stats.accepted - stats.rejections
    st.caption(
        f"Drafted {stats.drafted} tokens: {stats.accepted} accepted, {stats.rejections} rejected, {untested} drafted "
        "but unused"
        + (
            " (a tree's other branches: the target walks one path and keeps where it agrees)"
            if any(r.tree for r in run.speculative.rounds) and untested
            else " (after a rejection in their round: never tested)"
            if untested
            else ""
        )
        + "."
    )
    predicted = comparison.predicted_tokens_per_pass
    columns[1].metric(
        "Tokens per target pass",
        f"{stats.tokens_per_target_pass:.2f}",
        help=f"{stats.new_tokens} new tokens / {stats.target_passes} target passes (the prompt pass included). "
        f"Per drafting round: {comparison.tokens_per_round:.2f} measured"
        + ("" if math.isnan(predicted) else f", {predicted:.2f} by theory, (1 - α^(γ+1)) / (1 - α)."),
    )
    speedup = comparison.wall_clock_speedup
    columns[2].metric(
        "Wall-clock speedup",
        "n/a" if math.isnan(speedup) else f"{speedup:.2f}×",
        help="target-alone wall time / speculative wall time; above 1 is a gain",
    )
    columns[3].metric(
        "Speculative tokens/s", f"{stats.tokens_per_second:.1f}", help=f"{stats.wall_time_s:.2f} s in all"
    )
    columns[4].metric(
        "Target-alone tokens/s",
        f"{run.plain.stats.tokens_per_second:.1f}" if run.plain else "n/a",
        help=f"{run.plain.stats.wall_time_s:.2f} s in all" if run.plain else "not run",
    )
    st.plotly_chart(time_split_figure(comparison.time_split()), width="stretch")


def _greedy_check(run: PlaygroundRun) -> None:
    if run.greedy is None:
        return
    show = {"identical": st.success, "rounding": st.warning, "suspect": st.error}[run.greedy.verdict]
    show(f"Greedy check: {run.greedy.message}.")
    target = run.target_precision  # how the target was loaded, as planned: 'float32 int8', 'float32 Q4_K_M'
    if target == "float32":
        return
    st.caption(
        f"The check compares with the target as loaded ({target}). A {target} target is a different target from the "
        "float model it came from: speculative decoding reproduces the model it verifies with, and the speed comes "
        "from these lower precisions. In float32 with no quantization the target is the float model itself, whose "
        "greedy output the test suite holds to transformers' generate token for token."
    )
    st.button(
        "Run again in float32, no quantization",
        icon=":material/rule:",
        on_click=_in_float32,
        key="playground_float32_check",
        help="sets dtype float32 and both weights to none in the sidebar, and runs the same prompt (slower: the "
        "exactness check)",
    )


def _fastest_plan() -> None:
    """The plan the header names as fastest here, one click away:
    the method picker's FASTEST, the same prompt, run at once."""
    keep("method", FASTEST)
    st.session_state["playground_autorun"] = True


def _in_float32() -> None:
    """The one-click exactness check: float32, no quantization, the same prompt, run at once."""
    keep("dtype", "float32")
    keep("quantization", "none")
    keep("draft_quantization", "none")
    st.session_state["playground_autorun"] = True


def _round_table(run: PlaygroundRun) -> None:
    rows = pd.DataFrame(
        [
            {
                "round": row.round_index,
                "drafted (✓ accepted, ✗ rejected, · not tested)": row.drafted,
                "accepted": f"{row.accepted}/{row.drafted_count}" if row.drafted_count else "–",
                "target added": row.added,
                "how": row.added_kind,
                "tokens out": row.emitted,
            }
            for row in run.rounds
        ]
    )
    st.dataframe(rows, hide_index=True, width="stretch")


def _stopped_note(run: PlaygroundRun) -> str | None:
    if run.phase == "speculative":
        return f"Stopped during speculative decoding, after {sum(span.in_output for span in run.spans)} tokens."
    if run.phase == "plain" and run.plain is None:
        return "Stopped during the target-alone run."
    return None


def _keep_run(job: jobs.Job) -> None:
    """The run that ended: finished, or what it had done when its
    Stop was clicked (a load stopped part-way keeps nothing)."""
    stopped = stopped_while_loading(job)
    if stopped:
        st.session_state[NOTE] = (
            f"Stopped loading {stopped} before it finished; nothing half-made was kept. Press Generate to load it "
            "again."
        )
    elif job.stopped:
        if job.progress.get("run") is not None:
            st.session_state[RESULT] = job.progress["run"]
    else:
        st.session_state[RESULT] = job.result


def show_run(run: PlaygroundRun, settings: Settings) -> None:
    """Everything about the last run: coloured text, the target's own text, metrics, checks and rounds."""
    s, d = run.settings, run.settings.decoding
    st.markdown(f"**Plan:** {run.plan}")  # the planner's header: what `specdec run` prints for these settings
    if FASTEST_PLAN_FLAG in run.plan:  # the draft shown at work where another plan is faster here
        st.button(
            "Run the fastest exact plan here",
            icon=":material/speed:",
            on_click=_fastest_plan,
            key="playground_fastest",
            help="sets the drafting method to auto: the fastest exact plan here (as specdec run --method auto), and "
            "runs "
            "the same prompt",
        )
    st.caption(
        f"{s.draft} → {s.target} on {run.device} ({run.precision}) · temperature {d.temperature} · top-k {d.top_k} · "
        f"top-p {d.top_p} · seed {d.seed} · {run.prompt_tokens} prompt tokens"
        + (" · the sidebar has changed since this run" if s != settings else "")
    )
    note = _stopped_note(run)
    if note:
        st.warning(note)
    st.html(legend_html(count_kinds(run.spans)))
    left, right = st.columns(2)
    with left:
        st.markdown("**Speculative decoding** (hover a token for p, q, p/q and u)")
        st.html(tokens_html(run.spans))
    with right:
        st.markdown("**Target alone**")
        if run.plain_text:
            st.html(plain_text_html(run.plain_text))
        elif run.phase == "done":
            st.info("Not run (tick “Also run the target alone”).")
    if run.speculative is not None:
        _metrics(run)
        _greedy_check(run)
        _race(run)
    st.markdown("**Rounds**: what the draft proposed, how much the target accepted, what it added")
    _round_table(run)
    _replay(run)
    _round_pictures(run)
    _tree_picture(run)
    _downloads(run)


def _race(run: PlaygroundRun) -> None:
    """The speculative run and the target alone on one clock, from the two runs' own timelines
    (`specdec.bench.race`)."""
    st.markdown("**The race**: both runs on one clock, round by round and token by token")
    if run.plain is None or not run.plain.timeline or not run.speculative.timeline:
        st.info(
            "No race without the target alone's own run: tick “Also run the target alone” and Generate again. This run "
            "timed only its own passes, which verify several drafted tokens at once (and the first reads the whole "
            "prompt), so none of them is the target's one-token step; a target-alone line drawn from them would be "
            "invented.",
            icon=":material/timer:",
        )
        return
    racing = race(run.speculative, run.plain)
    st.plotly_chart(race_figure(racing), width="stretch", key="playground_race")
    left, right = st.columns([3, 2], vertical_alignment="center")
    left.plotly_chart(race_progress_figure(racing), width="stretch", key="playground_race_progress")
    right.caption(
        "Both lines are measured, each on its own run's stopwatch: the speculative run's target passes (one per "
        "round), and the target alone's own run (“Also run the target alone”), one pass per token. Each round's start "
        "and end are measured; inside it the drafter's time is drawn first and the target's pass next. “other” is "
        "sampling, the accept test, bookkeeping and, when tokens are shown as they are generated, the page's updates."
    )


def _replay(run: PlaygroundRun) -> None:
    """The recorded run, one round at a time: what it drafted, what the target kept and added, the text so far."""
    rows = run.rounds
    if not rows:
        return
    st.markdown("**Replay, round by round**: step through the recorded rounds of the run")
    last = len(rows) - 1
    if st.session_state.get(REPLAY, 0) > last:
        st.session_state[REPLAY] = last  # a shorter run than the one before
    if last > 0:
        back, slider, forward = st.columns([2, 9, 2], vertical_alignment="bottom")
        index = st.session_state.get(REPLAY, 0)
        back.button(
            "Previous",
            icon=":material/chevron_left:",
            key="playground_replay_back",
            on_click=_step_replay,
            args=(-1, last),
            disabled=index == 0,
            width="stretch",
        )
        forward.button(
            "Next",
            icon=":material/chevron_right:",
            key="playground_replay_next",
            on_click=_step_replay,
            args=(1, last),
            disabled=index == last,
            width="stretch",
        )
        slider.slider("Round", 0, last, key=REPLAY, help="0 is the prompt pass")
    step = replay_step(run.spans, rows, st.session_state.get(REPLAY, 0))
    st.html(f'<p class="specdec-replay">{html.escape(step.summary())}</p>')
    drafted, added = st.columns([3, 1])
    with drafted:
        st.caption("Drafted and tested: the accepted prefix, then the refused token (hover for p, q and u)")
        if step.drafted:
            st.html(
                f'<div class="specdec-replay-drafted">{tokens_html(step.drafted, box="specdec-replay-tokens")}</div>'
            )
        else:
            st.caption("nothing drafted this round")
        if step.row.untested:
            st.caption("Never tested (after the refusal): " + " ".join(step.row.untested))
    with added:
        st.caption("The target's own token")
        shown = (
            tokens_html([step.added], box="specdec-replay-tokens")
            if step.added
            else plain_text_html("(none: the text ended)")
        )
        st.html(f'<div class="specdec-replay-added">{shown}</div>')
    st.caption(f"The text after round {step.row.round_index}")
    st.html(f'<div class="specdec-replay-text">{tokens_html(step.text, box="specdec-replay-tokens")}</div>')


def _step_replay(by: int, last: int) -> None:
    st.session_state[REPLAY] = min(max(st.session_state.get(REPLAY, 0) + by, 0), last)


def _round_pictures(run: PlaygroundRun) -> None:
    """Where each round's time went, and acceptance by position against the one alpha of the formulas."""
    left, right = st.columns(2)
    left.plotly_chart(round_times_figure(run.rounds), width="stretch", key="playground_round_times")
    if run.speculative is None:
        return
    positions = acceptance_by_position(run.speculative.rounds)
    if any(position.tested for position in positions):
        right.plotly_chart(
            position_acceptance_figure(positions, run.speculative.stats.alpha_estimate),
            width="stretch",
            key="playground_positions",
        )
    elif any(round_.tree for round_ in run.speculative.rounds):
        right.info("Acceptance by position is drawn for chain drafts; a tree's depth is in its picture below.")


def _downloads(run: PlaygroundRun) -> None:
    """The round table as CSV, and the whole trace (every drafted token with p, q, u) as JSON."""
    left, right, _ = st.columns([1, 1, 3])
    left.download_button(
        "Download rounds (CSV)",
        pd.DataFrame(round_records(run.rounds)).to_csv(index=False),
        file_name="specdec-rounds.csv",
        mime="text/csv",
        icon=":material/download:",
        key="playground_rounds_csv",
    )
    if run.trace_json:
        right.download_button(
            "Download trace (JSON)",
            run.trace_json,
            file_name="specdec-trace.json",
            mime="application/json",
            icon=":material/download:",
            key="playground_trace_json",
        )


def _tree_picture(run: PlaygroundRun) -> None:
    """The token tree of a chosen round (tree runs only)."""
    trees = {row.round_index: row.tree for row in run.rounds if row.tree is not None}
    if not trees:
        return
    st.markdown("**A round's token tree**: which guesses the draft made, and the path the target agreed with")
    richest = max(
        trees,
        key=lambda index: (sum(node.status == "accepted" for node in trees[index].nodes), len(trees[index].nodes)),
    )
    chosen = st.select_slider(
        "Round", list(trees), value=richest, help="starts at the round with the longest accepted path"
    )
    st.plotly_chart(tree_figure(trees[chosen], chosen), width="stretch")


def batch_section(settings: Settings, chat: bool, ready: bool) -> None:
    """Several prompts at once: each row's coloured text and rounds, the batch's throughput, speculative and plain."""
    st.divider()
    st.subheader("A batch: several prompts at once")
    st.caption(
        "Each row keeps its own accepted length: its own cache, positions and end. One target pass verifies every "
        "row's drafts; a draft model's chains are drafted for every row in one pass per step (other drafters may draft "
        "row by row). The batch drafts as the sidebar asks, and says below what it drafted. The gain shrinks as the "
        "batch grows: chapter 9, “Batches”."
    )
    default = "\n".join(_example_text(i).splitlines()[0][:120] for i in range(3))
    text = st.text_area(f"Prompts, one per line (at most {MAX_ROWS})", height=100, **remember("batch_prompts", default))
    if st.button("Run the batch", key="batch_run", disabled=not ready or jobs.running(BATCH_RUN)):
        prompts = prompt_lines(text)
        if not prompts or len(prompts) > MAX_ROWS:
            st.error(f"Write from 1 to {MAX_ROWS} prompts, one per line (got {len(prompts)}).")
        else:
            with shows_errors():
                jobs.start(
                    BATCH_RUN,
                    batch_work(pair_loader(settings), prompts, chat, settings, shared_turns()),
                    label="the batch",
                )
    jobs.watch(BATCH_RUN, draw=_draw_batch, finished=_keep_batch)
    if BATCH in st.session_state:
        show_batch(st.session_state[BATCH], settings)


def _draw_batch(job: jobs.Job) -> None:
    draw_loading(job)
    if job.progress.get("phase") in ("speculative", "plain"):
        if job.progress.get("done"):
            st.caption(job.progress["done"])
        st.markdown(f"**{job.progress['status']}**")


def _keep_batch(job: jobs.Job) -> None:
    if job.stopped:
        st.session_state[NOTE] = "Stopped the batch before it finished; the last batch that ran to the end stays below."
    else:
        st.session_state[BATCH] = job.result


def show_batch(run: BatchRun, settings: Settings) -> None:
    columns = st.columns(3)
    columns[0].metric(
        "Speculative throughput",
        f"{run.speculative_throughput:.1f} tok/s",
        help="all rows' new tokens / the batch's wall time",
    )
    columns[1].metric(
        "Plain throughput", f"{run.plain_throughput:.1f} tok/s", help="the target alone on the same batch"
    )
    columns[2].metric("Gain over plain decoding of the same batch", f"{run.gain:.2f}×")
    # the runs' own words
    st.caption(f"Drafted: {', '.join(dict.fromkeys(result.drafting for result in run.speculative))}")
    if run.settings != settings:
        st.caption("The sidebar has changed since this batch ran.")
    for tab, prompt, trace_, same, plain_text in zip(
        st.tabs([f"Row {i + 1}" for i in range(len(run.prompts))]),
        run.prompts,
        run.traces,
        run.same_tokens,
        run.plain_texts,
    ):
        with tab:
            st.caption(prompt)
            st.html(tokens_html(trace_.spans))
            if run.settings.decoding.sampling.greedy:
                (st.success if same else st.warning)(
                    "Greedy check: this row's tokens are identical to the target alone's."
                    if same
                    else "Greedy check: this row differs from the target alone's."
                )
            st.dataframe(
                pd.DataFrame(
                    [
                        {
                            "round": row.round_index,
                            "drafted (✓ accepted, ✗ rejected, · not tested)": row.drafted,
                            "accepted": f"{row.accepted}/{row.drafted_count}" if row.drafted_count else "–",
                            "target added": row.added,
                            "tokens out": row.emitted,
                        }
                        for row in trace_.rows
                    ]
                ),
                hide_index=True,
                width="stretch",
            )
            with st.expander("Target alone"):
                st.html(plain_text_html(plain_text))


st.title("Playground")
st.caption(
    "The draft q proposes tokens (a chain or a tree, as the run's plan says); the target p checks them all in one "
    "pass, "
    "keeps what its rule accepts and adds one token of its own. Colours show how each token arose."
)
prompt, chat, also_plain, stream = _prompt_controls(settings)
ready = offer_downloads(settings, key="playground_download")
generate = st.button(
    "Generate",
    type="primary",
    disabled=not ready or jobs.running(RUN),
    help="Runs in the background: the page stays yours, and only the run's own Stop ends it.",
)
autorun = st.session_state.pop("playground_autorun", False)
if (generate or autorun) and ready and not jobs.running(RUN):
    with shows_errors():
        jobs.start(
            RUN,
            playground_work(pair_loader(settings), prompt, chat, settings, also_plain, stream, shared_turns()),
            label="the run",
        )
jobs.watch(RUN, draw=draw_run, finished=_keep_run)
if st.session_state.get(NOTE):
    st.warning(st.session_state.pop(NOTE), icon=":material/stop_circle:")

if RESULT in st.session_state:
    show_run(st.session_state[RESULT], settings)
elif not jobs.running(RUN):  # while a run loads or generates, its own messages say what is happening
    st.info("Pick a pair in the sidebar, choose or write a prompt, and press Generate.")
batch_section(settings, chat, ready)
training_section(settings)
