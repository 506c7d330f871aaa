"""One Playground run: speculative decoding, then the target alone, streamed to the page as they generate.

    run_playground(pair, input_ids, settings, also_plain=True, stream=True)
    st.session_state[RESULT]                    # a `PlaygroundRun`, complete or stopped part-way

The engine calls back after every round (`on_round`) and, for plain decoding, every token
(`on_token`); the callbacks grow a `pages.common.trace.TraceBuilder` and, at most `UPDATES_PER_SECOND`
times a second, save the run so far in the session and redraw the text. A Stop click surfaces as
an exception from that redraw, which ends the generation; the saved part stays on the page.

Streaming costs the runs a little time (decoding each token for display, a few redraws a second),
counted in their "other" time; turn it off for the cleanest timings.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace

import streamlit as st
import torch

from pages.common.settings import Settings
from pages.common.tokens_html import plain_text_html, tokens_html
from pages.common.trace import RoundRow, TokenSpan, TraceBuilder, trace, trace_json
from specdec import pairing
from specdec.bench.comparison import GreedyCheck, greedy_check_of_pair
from specdec.engine.results import GenerationResult
from specdec.pairing import LoadedPair
from specdec.zoo import time_left

RESULT = "playground_run"
UPDATES_PER_SECOND = 4


@dataclass(frozen=True)
class PlaygroundRun:
    """What a run produced so far, with the settings it ran with."""

    settings: Settings
    device: str
    precision: str                            # how each model ran: "target float32 int8, draft bfloat16 int4"
    prompt_tokens: int
    phase: str                                # "speculative" or "plain" while running (or stopped), then "done"
    spans: tuple[TokenSpan, ...] = ()         # speculative output, rejected drafts included
    rounds: tuple[RoundRow, ...] = ()
    speculative: GenerationResult | None = None   # set once the speculative phase finished
    plain_text: str = ""
    plain: GenerationResult | None = None         # set once the target-alone phase finished
    greedy: GreedyCheck | None = None             # greedy runs with the target alone: are the tokens identical?
    trace_json: str = ""                          # the speculative run's full trace, for download


class _Throttle:
    """True at most `per_second` times a second."""

    def __init__(self, per_second: float) -> None:
        self.interval, self.last = 1.0 / per_second, time.monotonic()

    def due(self) -> bool:
        now = time.monotonic()
        if now - self.last < self.interval:
            return False
        self.last = now
        return True


def _decoder(pair: LoadedPair):
    return lambda ids: pair.tokenizer.decode(ids, skip_special_tokens=False)


class _TokenBar:
    """A progress bar of the tokens generated so far, with the time left at the pace since the first redraw
    (the prompt pass before it would make the first estimates too long)."""

    def __init__(self, total: int) -> None:
        self.total, self.first = total, None          # (tokens, time) at the first redraw
        self.bar = st.progress(0.0, text=f"0/{total} tokens")

    def show(self, done: int) -> None:
        now = time.monotonic()
        self.first = self.first or (done, now)
        left = time_left.about(time_left.seconds_left(done - self.first[0], self.total - self.first[0], now - self.first[1]))
        self.bar.progress(min(done / self.total, 1.0), text=f"{done}/{self.total} tokens{left}")

    def finish(self, done: int) -> None:
        self.bar.progress(1.0, text=f"{done} tokens, done")      # fewer than asked for when the text ended


def _speculative_phase(pair: LoadedPair, input_ids: torch.Tensor, run: PlaygroundRun, stream: bool, slot) -> PlaygroundRun:
    builder, throttle = TraceBuilder(_decoder(pair)), _Throttle(UPDATES_PER_SECOND)
    bar = _TokenBar(run.settings.decoding.max_new_tokens) if stream else None

    def on_round(round_) -> None:
        builder.add_round(round_)
        if throttle.due():
            st.session_state[RESULT] = replace(run, spans=tuple(builder.spans), rounds=tuple(builder.rows))
            slot.html(tokens_html(builder.spans))
            bar.show(sum(span.in_output for span in builder.spans))

    result = pairing.generate_speculative(pair, input_ids, run.settings.decoding, gamma=run.settings.schedule,
                                          on_round=on_round if stream else None, tree=run.settings.tree_settings)
    if bar is not None:
        bar.finish(result.stats.new_tokens)
    finished = builder if stream else trace(result, _decoder(pair))
    s, d = run.settings, run.settings.decoding
    about = {"draft": s.draft, "target": s.target, "device": run.device, "precision": run.precision, "drafting": result.drafting,
             "temperature": d.temperature, "top_k": d.top_k, "top_p": d.top_p, "seed": d.seed, "max_new_tokens": d.max_new_tokens,
             "prompt_tokens": run.prompt_tokens}
    return replace(run, spans=tuple(finished.spans), rounds=tuple(finished.rows), speculative=result,
                   trace_json=json.dumps(trace_json(result, _decoder(pair), about), indent=1))


def _plain_phase(pair: LoadedPair, input_ids: torch.Tensor, run: PlaygroundRun, stream: bool, slot) -> PlaygroundRun:
    builder, throttle = TraceBuilder(_decoder(pair)), _Throttle(UPDATES_PER_SECOND)
    bar, done = (_TokenBar(run.settings.decoding.max_new_tokens) if stream else None), [0]

    def on_token(token: int) -> None:
        builder.add_token(token)
        done[0] += 1
        if throttle.due():
            text = "".join(span.text for span in builder.spans)
            st.session_state[RESULT] = replace(run, plain_text=text)
            slot.html(plain_text_html(text))
            bar.show(done[0])

    result = pairing.generate_plain(pair, input_ids, run.settings.decoding, on_token=on_token if stream else None)
    if bar is not None:
        bar.finish(result.stats.new_tokens)
    run = replace(run, plain_text=_decoder(pair)(result.tokens), plain=result)
    if run.settings.decoding.sampling.greedy:
        run = replace(run, greedy=greedy_check_of_pair(pair, input_ids, run.speculative.tokens, result.tokens))
    return run


def run_playground(pair: LoadedPair, input_ids: torch.Tensor, settings: Settings, also_plain: bool, stream: bool) -> None:
    """Both phases, each with a status box, the text streamed below them; results land in `st.session_state[RESULT]`."""
    statuses, live = st.container(), st.empty()
    with live.container():
        left, right = st.columns(2)
        speculative_slot, plain_slot = left.empty(), right.empty()
    described = pair.precisions + (f", draft tokenizer: {pair.tokenizer_note}" if pair.cross_tokenizer else "")
    run = PlaygroundRun(settings, str(pair.device), described, int(input_ids.shape[-1]), phase="speculative")
    drafts = "while another token is worth it" if settings.stop_rule else f"{settings.gamma} tokens per round"
    if settings.tree:
        drafts = f"a tree of up to {settings.tree_budget} tokens per round"
    if settings.own_rounds:
        drafts = "as many tokens as its own rule says"
    with statuses.status(f"Speculative decoding: {settings.draft} drafts {drafts}, "
                         f"{settings.target} verifies them in one pass …", expanded=True) as status:   # open: its bar shows
        run = _speculative_phase(pair, input_ids, run, stream, speculative_slot)
        run = replace(run, phase="plain" if also_plain else "done")
        st.session_state[RESULT] = run
        stats = run.speculative.stats
        status.update(label=f"Speculative decoding: {stats.new_tokens} tokens in {stats.wall_time_s:.2f} s",
                      state="complete", expanded=False)
    if also_plain:
        speculative_slot.html(tokens_html(run.spans))
        with statuses.status(f"Plain decoding: {settings.target} alone, one pass per token …", expanded=True) as status:
            run = replace(_plain_phase(pair, input_ids, run, stream, plain_slot), phase="done")
            st.session_state[RESULT] = run
            stats = run.plain.stats
            status.update(label=f"Plain decoding: {stats.new_tokens} tokens in {stats.wall_time_s:.2f} s",
                          state="complete", expanded=False)
    live.empty()
