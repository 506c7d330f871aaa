"""Gamma schedules and draft-side savings: they change speed, never the output."""

import pytest
import torch
from test_greedy import NEW_TOKENS, PROMPTS, reference_greedy

from specdec import ModelDrafter, PromptLookupDrafter, speculative_generate
from specdec.engine.costs import CostProfile
from specdec.runtime.costs import measure_costs
from specdec.engine.schedule import AdaptiveGamma, FixedGamma
from specdec.engine.stop_rule import ConfidenceStop

COSTS = CostProfile(target_step_s=0.10, draft_step_s=0.03, verify_s={1: 0.11, 4: 0.14, 8: 0.20})


def test_adaptive_gamma_is_exact_and_actually_adapts(pairs):
    target, draft = pairs["llama"]
    chosen = set()
    for prompt in PROMPTS:
        schedule = AdaptiveGamma(COSTS, max_gamma=8)
        original = schedule.next_gamma
        schedule.next_gamma = lambda original=original: chosen.add(original()) or original()
        result = speculative_generate(
            target, draft, torch.tensor(prompt), schedule=schedule, max_new_tokens=NEW_TOKENS, temperature=0
        )
        assert result.tokens == reference_greedy(target, prompt)
    assert len(chosen) > 1  # it did not sit on one gamma


def test_adaptive_gamma_follows_alpha():
    schedule = AdaptiveGamma(COSTS, max_gamma=8)
    gammas = []
    for accepted in [4, 4, 4, 4, 4, 0, 0, 0, 0, 0]:
        schedule.update(drafted=4, accepted=accepted)
        gammas.append(schedule.next_gamma())
    assert gammas[4] > gammas[-1] >= 1
    # alpha estimate counts one tested token per rejection: 0 accepted of 1 tested
    fresh = AdaptiveGamma(COSTS, prior_weight=1e-9)
    fresh.update(drafted=4, accepted=2)
    assert fresh.alpha == pytest.approx(2 / 3)


def test_verify_cost_is_interpolated_between_measured_gammas():
    assert COSTS.v(4) == pytest.approx(1.4)
    assert COSTS.v(6) == pytest.approx(1.7)  # halfway between v(4) = 1.4 and v(8) = 2.0
    assert COSTS.v(10) == pytest.approx(2.0)  # beyond the last measurement: the last value
    assert COSTS.v(0) == 1.0  # nothing drafted: a plain step


def test_fixed_gamma_schedule_equals_plain_gamma(pairs):
    target, draft = pairs["gpt2"]
    a = speculative_generate(target, draft, torch.tensor([2, 3]), gamma=3, max_new_tokens=25, seed=5)
    b = speculative_generate(target, draft, torch.tensor([2, 3]), schedule=FixedGamma(3), max_new_tokens=25, seed=5)
    assert a.tokens == b.tokens


@pytest.mark.parametrize("architecture", ["gpt2", "qwen2"])
def test_restricted_draft_vocabulary_is_exact(pairs, architecture):
    target, draft = pairs[architecture]
    for prompt in PROMPTS:
        drafter = ModelDrafter(draft, vocab_limit=16)
        result = speculative_generate(
            target, drafter, torch.tensor(prompt), gamma=4, max_new_tokens=NEW_TOKENS, temperature=0
        )
        assert result.tokens == reference_greedy(target, prompt)
        assert all(d.token < 16 for r in result.rounds for d in r.drafted)


def test_alpha_estimate_counts_tested_tokens(pairs):
    target, draft = pairs["qwen2"]
    stats = speculative_generate(target, draft, torch.tensor([2, 3, 4, 5]), gamma=6, max_new_tokens=40, seed=0).stats
    assert stats.alpha_estimate == pytest.approx(stats.accepted / (stats.accepted + stats.rejections))
    assert stats.alpha_estimate >= stats.acceptance_rate  # untested drafts only lower the plain rate


def test_measured_costs_are_positive_and_cover_each_gamma(pairs):
    target, draft = pairs["gpt2"]
    profile = measure_costs(target, draft, torch.tensor([2, 3, 4]), gammas=[1, 4], repeats=2)
    assert set(profile.verify_s) == {1, 4}
    assert profile.target_step_s > 0 and profile.draft_step_s > 0 and profile.c > 0 and profile.v(4) > 0
    assert measure_costs(target, None, torch.tensor([2, 3]), gammas=[2], repeats=1).c == 0.0


# --- the stop rule --------------------------------------------------------------------------------


def test_stop_rule_decision_worked_by_hand():
    """c = 0.2, s = 0.05, no calibration data: a_i is the prior sqrt(confidence).

    One token drafted with acceptance a: E_1 = 1 + a, T_1 = 0.2 + 1.05 = 1.25, one more adds a * a
    for 0.25. Go on iff a^2 * 1.25 > (1 + a) * 0.25: a = 0.6 (confidence 0.36) gives 0.45 > 0.40
    (go on), a = 0.5 (confidence 0.25) gives 0.3125 < 0.375 (stop).
    """
    rule = ConfidenceStop(c=0.2, verify_slope=0.05)
    assert rule.worth_another([0.36]) and not rule.worth_another([0.25])
    # two sure tokens then an unsure one: P_3 = 0.9 * 0.9 * 0.3, so the third token ends the round
    assert rule.worth_another([0.81, 0.81]) and not rule.worth_another([0.81, 0.81, 0.09])
    assert not ConfidenceStop(c=0.2, max_gamma=2).worth_another([0.99, 0.99])  # the cap
    # a dearer draft stops sooner: at c = 0.6, a = 0.7 no longer pays (0.49 * 1.65 < 1.7 * 0.65)
    assert ConfidenceStop(c=0.2).worth_another([0.49]) and not ConfidenceStop(c=0.6).worth_another([0.49])


def test_stop_rule_calibrates_confidence_from_what_was_accepted():
    rule = ConfidenceStop(prior_weight=4.0, decay=1.0)
    assert rule.acceptance(0.95) == pytest.approx(0.95**0.5)
    for _ in range(16):  # an over-confident draft: 0.95 tokens rejected at once
        rule.next_gamma()
        rule.keep_drafting(0.95)
        rule.keep_drafting(0.95)
        rule.update(drafted=2, accepted=0)  # the first is rejected, the second never tested
    assert rule.acceptance(0.95) == pytest.approx(4 * 0.95**0.5 / (16 + 4))
    assert rule.tests[9] == 16  # only tested tokens count
    assert rule.acceptance(0.36) == pytest.approx(0.6)  # other bins keep their prior


def test_stop_rule_is_exact_and_drafts_rounds_of_many_lengths(pairs):
    target, draft = pairs["qwen2"]
    lengths = set()
    for prompt in PROMPTS:
        result = speculative_generate(
            target,
            draft,
            torch.tensor(prompt),
            schedule=ConfidenceStop(c=0.1),
            max_new_tokens=NEW_TOKENS,
            temperature=0,
        )
        assert result.tokens == reference_greedy(target, prompt)
        lengths |= {len(round_.drafted) for round_ in result.rounds[1:-1]}
    assert len(lengths) >= 3


def test_the_default_schedule_is_the_stop_rule_for_a_draft_model_and_four_for_lookup(pairs, monkeypatch):
    import specdec.planner.drafting

    target, draft = pairs["llama"]
    chosen = []
    real = specdec.planner.drafting.schedule_for  # the planner's one home for the schedule
    monkeypatch.setattr(
        specdec.planner.drafting, "schedule_for", lambda *args: chosen.append(real(*args)) or chosen[-1]
    )
    speculative_generate(target, draft, torch.tensor([2, 3]), max_new_tokens=8, temperature=0)
    speculative_generate(target, PromptLookupDrafter(), torch.tensor([2, 3]), max_new_tokens=8, temperature=0)
    assert isinstance(chosen[0], ConfidenceStop) and chosen[0].c == pytest.approx(1.0)  # tiny draft = target size
    assert isinstance(chosen[1], FixedGamma) and chosen[1].gamma == 4
