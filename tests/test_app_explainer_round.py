"""The Explainer page's chain round and guided questions: what it shows is what specdec.reference computes."""

from __future__ import annotations

from app_testing import no_errors, open_app

from specdec.reference.chain_round import nth_round
from specdec.reference.explainer import GUIDED_PRESETS, accept_reject_picture
from specdec.reference.theory import expected_tokens_per_pass

DEFAULT_P = (0.55, 0.15, 0.10, 0.05, 0.15)
DEFAULT_Q = (0.30, 0.30, 0.20, 0.15, 0.05)
TOKENS = ("Paris", "a", "the", "Lyon", "located")


def markdown_text(app) -> str:
    return "\n".join(markdown.value for markdown in app.markdown)


def test_stepping_through_a_round_shows_each_test_then_the_last_token():
    app = open_app("pages/views/explainer.py")
    no_errors(app)
    picture = accept_reject_picture(DEFAULT_P, DEFAULT_Q)
    expected = nth_round(tuple(picture.p), tuple(picture.q), 4, 0, 0)  # gamma 4, seed 0, the first round
    assert "Press **Next step**" in markdown_text(app)
    for shown in range(1, len(expected.steps) + 1):
        app.button(key="explainer_round_next").click().run()
        tested = expected.steps[shown - 1]
        line = (
            f"{shown}. drafted **{TOKENS[tested.token]}**: p = {tested.p:.3f}, q = {tested.q:.3f}, u = {tested.u:.3f}"
        )
        assert line in markdown_text(app)
        assert ("**kept**" in markdown_text(app).split(line)[1].split("\n")[0]) == tested.accepted
    app.button(key="explainer_round_next").click().run()
    text = markdown_text(app)
    assert f"Last token: **{TOKENS[expected.last_token]}**" in text
    assert ("bonus token from p (all γ kept)" in text) == (expected.last_kind == "bonus") == (expected.kept == 4)
    assert f"The round wrote {len(expected.emitted)} token(s)" in text
    assert f"**{expected_tokens_per_pass(picture.alpha, 4):.3f}** = (1 − α^(γ+1)) / (1 − α)" in text
    assert text.count("**α^") == len(expected.emitted)  # one bold term per token written
    assert any("Rounds played: 1" in caption.value for caption in app.caption)
    assert app.button(key="explainer_round_next").disabled  # the round is over: nothing left to step
    app.button(key="explainer_round_new").click().run()
    assert "Press **Next step**" in markdown_text(app)
    second = nth_round(tuple(picture.p), tuple(picture.q), 4, 0, 1)  # the next round of the same seed
    app.button(key="explainer_round_next").click().run()
    assert f"1. drafted **{TOKENS[second.steps[0].token]}**: p = {second.steps[0].p:.3f}" in markdown_text(app)
    app.button(key="explainer_round_reset").click().run()  # start over: the seed's first round again
    assert not any("Rounds played" in caption.value for caption in app.caption)
    app.button(key="explainer_round_next").click().run()
    assert (
        f"1. drafted **{TOKENS[expected.steps[0].token]}**: p = {expected.steps[0].p:.3f}, q = "
        f"{expected.steps[0].q:.3f}, "
        f"u = {expected.steps[0].u:.3f}" in markdown_text(app)
    )
    no_errors(app)


def test_a_guided_question_sets_the_calculator_and_answers_from_theory():
    app = open_app("pages/views/explainer.py")
    preset = GUIDED_PRESETS[3]  # c = 0.5: a costly draft
    app.selectbox(key="widget:explainer_question").set_value(preset.question).run()
    app.button(key="explainer_question_apply").click().run()
    no_errors(app)
    assert app.slider(key="widget:explainer_c").value == preset.c
    assert app.slider(key="widget:explainer_alpha").value == preset.alpha
    assert preset.answer() in markdown_text(app)
    assert "gamma = 1 with 1.133x" in preset.answer()  # a hand check of the costly draft's best gamma
