"""Gamma schedules and draft-side savings: they change speed, never the output."""

import pytest
import torch

from specdec import ModelDrafter, speculative_generate
from specdec.costs import CostProfile, measure_costs
from specdec.schedule import AdaptiveGamma, FixedGamma
from test_greedy import NEW_TOKENS, PROMPTS, reference_greedy

COSTS = CostProfile(target_step_s=0.10, draft_step_s=0.03, verify_s={1: 0.11, 4: 0.14, 8: 0.20})


def test_adaptive_gamma_is_exact_and_actually_adapts(pairs):
    target, draft = pairs["llama"]
    chosen = set()
    for prompt in PROMPTS:
        schedule = AdaptiveGamma(COSTS, max_gamma=8)
        original = schedule.next_gamma
        schedule.next_gamma = lambda: chosen.add(original()) or original()
        result = speculative_generate(target, draft, torch.tensor(prompt), gamma=schedule, max_new_tokens=NEW_TOKENS, temperature=0)
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
    schedule = AdaptiveGamma(COSTS, max_gamma=10)
    assert schedule._verify_cost(4) == pytest.approx(1.4)
    assert schedule._verify_cost(6) == pytest.approx(1.7)   # halfway between v(4) = 1.4 and v(8) = 2.0
    assert schedule._verify_cost(10) == pytest.approx(2.0)  # beyond the last measurement: the last value


def test_fixed_gamma_schedule_equals_plain_gamma(pairs):
    target, draft = pairs["gpt2"]
    a = speculative_generate(target, draft, torch.tensor([2, 3]), gamma=3, max_new_tokens=25, seed=5)
    b = speculative_generate(target, draft, torch.tensor([2, 3]), gamma=FixedGamma(3), max_new_tokens=25, seed=5)
    assert a.tokens == b.tokens


@pytest.mark.parametrize("architecture", ["gpt2", "qwen2"])
def test_restricted_draft_vocabulary_is_exact(pairs, architecture):
    target, draft = pairs[architecture]
    for prompt in PROMPTS:
        drafter = ModelDrafter(draft, vocab_limit=16)
        result = speculative_generate(target, drafter, torch.tensor(prompt), gamma=4, max_new_tokens=NEW_TOKENS, temperature=0)
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


@pytest.mark.parametrize("architecture", ["gpt2", "llama"])
def test_int8_draft_is_exact_and_leaves_the_original_alone(pairs, architecture):
    from specdec.zoo.quantization import quantize_draft

    target, draft = pairs[architecture]
    before = {name: parameter.clone() for name, parameter in draft.named_parameters()}
    quantized = quantize_draft(draft)
    assert all(torch.equal(parameter, before[name]) for name, parameter in draft.named_parameters())
    accepted = 0
    for prompt in PROMPTS:
        result = speculative_generate(target, quantized, torch.tensor(prompt), gamma=4, max_new_tokens=NEW_TOKENS, temperature=0)
        assert result.tokens == reference_greedy(target, prompt)
        accepted += result.stats.accepted
    assert accepted > 0
