"""Sampled speculative output has exactly the target's distribution: a statistical test with teeth.

For each setting we run speculative decoding RUNS times with seeds 0..RUNS-1 (so the test is
repeatable), count the three tokens the first speculative round produces (tokens 2..4; token 1
comes from the target's prompt pass), and compare the counts with the exact distribution of the
target alone, computed by enumerating every continuation (`distribution_check.exact_distribution`).

The test is Pearson's chi-square with rare cells pooled (`specdec.reference.stats.chi_square_test`); it
passes when the p-value is above SIGNIFICANCE. A correct engine fails it about once in a thousand
seed ranges. Negative controls swap in deliberately broken accept/reject rules, and the very same
test must FAIL for them: proof that it can tell a correct rule from a wrong one.
"""

import pytest
from distribution_check import SAMPLING_IDS, SAMPLINGS, SIGNIFICANCE, speculative_fit
from tiny_models import tiny_pair

import specdec.engine.rounds
from specdec import ModelDrafter, PromptLookupDrafter
from specdec.engine.sampling import SamplingConfig, sample
from specdec.engine.stop_rule import ConfidenceStop
from specdec.engine.verification import chain_verdict, verify_sampled


pytestmark = pytest.mark.slow  # the statistical tier: run with --all


@pytest.fixture(scope="module")
def small_pair():
    """A vocabulary of 8 so every continuation can be enumerated; draft and target really differ."""
    return tiny_pair("gpt2", vocab_size=8, noise=0.4)


@pytest.mark.parametrize("sampling", SAMPLINGS, ids=SAMPLING_IDS)
def test_matches_the_target_distribution(small_pair, sampling):
    target, draft = small_pair
    fit, acceptance = speculative_fit(target, lambda: draft, sampling)
    assert fit.p_value > SIGNIFICANCE, fit
    assert 0.1 < acceptance < 0.9  # both branches of the rule were exercised often


def test_prompt_lookup_sampling_matches_the_target_distribution(small_pair):
    """A point-mass q: accepted with probability p(x), else resampled from p without x."""
    target, _ = small_pair
    fit, acceptance = speculative_fit(
        target, PromptLookupDrafter, SamplingConfig(temperature=1.0), prompt=[2, 3, 4, 5, 2, 3]
    )
    assert fit.p_value > SIGNIFICANCE, fit
    assert 0.1 < acceptance < 0.9


def test_draft_with_a_restricted_output_layer_matches_the_target_distribution(small_pair):
    """The draft computes only ids 0..4 of 8: q is zero elsewhere, and the output is still exactly p."""
    target, draft = small_pair
    fit, acceptance = speculative_fit(
        target, lambda: ModelDrafter(draft, vocab_limit=5), SamplingConfig(temperature=1.0)
    )
    assert fit.p_value > SIGNIFICANCE, fit
    assert 0.1 < acceptance < 0.9


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_the_stop_rule_keeps_the_target_distribution(small_pair, temperature):
    """How many tokens to draft is decided from the draft's own confidences: the output stays exactly p."""
    target, draft = small_pair
    lengths = []
    fit, acceptance = speculative_fit(
        target,
        lambda: draft,
        SamplingConfig(temperature=temperature),
        gamma_factory=lambda: ConfidenceStop(c=0.2),
        lengths=lengths,
    )
    assert fit.p_value > SIGNIFICANCE, fit
    assert 0.1 < acceptance < 0.9
    assert {1, 2} <= set(lengths)  # the rule really stopped early in some runs and drafted on in others


def test_the_default_schedule_keeps_the_target_distribution(small_pair):
    """gamma=None: the stop rule with c estimated from the weights (here draft = target size, c = 1)."""
    target, draft = small_pair
    fit, _ = speculative_fit(target, lambda: draft, SamplingConfig(temperature=1.0), gamma_factory=lambda: None)
    assert fit.p_value > SIGNIFICANCE, fit


def accept_always(p, q, drafted, generator):
    """BROKEN: keep every drafted token, then add a bonus token from p."""
    k = drafted.shape[0]
    return chain_verdict(k, k, int(sample(p[k][None], generator)), (None,) * k, (0.0,) * k, (0.0,) * k)


def skip_the_residual(p, q, drafted, generator):
    """BROKEN: after a rejection, resample from p instead of norm(max(0, p - q))."""
    verdict = verify_sampled(p, q, drafted, generator)
    if verdict.full_accept:
        return verdict
    replacement = int(sample(p[verdict.accepted][None], generator))
    return chain_verdict(
        verdict.accepted, drafted.shape[0], replacement, verdict.uniforms, verdict.target_probs, verdict.draft_probs
    )


@pytest.mark.parametrize("broken_rule", [accept_always, skip_the_residual])
def test_negative_control_broken_rules_fail(small_pair, monkeypatch, broken_rule):
    """The same test with the rule broken must fail.

    Power: accepting always moves the distribution by D = sum (p_broken - p)^2 / p = 3.70, skipping the residual by
    D = 0.078 (statistic 275 with 42 degrees of freedom at 3,000 runs). Over RUNS = 3,000 runs the statistic's mean
    under the weaker bug is 42 + 3,000 x 0.078 = 276 against the p = 1e-3 threshold of 76: even with D a third smaller
    the test fails with probability above 0.999 (`distribution_check.power`; checked by tests/test_power.py).
    """
    target, draft = small_pair
    monkeypatch.setattr(specdec.engine.rounds, "verify_sampled", broken_rule)
    fit, _ = speculative_fit(target, lambda: draft, SamplingConfig(temperature=1.0))
    assert fit.p_value < SIGNIFICANCE, fit
