"""Drafts with another tokenizer (`CrossTokenizerDrafter`): the output stays exactly the target's.

The target and the draft read the same four characters through two different byte-pair
tokenizers (tiny_models.TARGET_PIECES / DRAFT_PIECES: 16 and 14 pieces, 8 spelled alike). Checked:
greedy output equals the target's own `generate`; the sampled distribution passes the chi-square
test against enumeration, and fails it with a broken rule (negative control); a draft that is the
target under renumbered ids is accepted every time (decoding, re-encoding and the cache's reuse
lose nothing); drafted text is cut into the target's tokens, not the draft's.
"""

import pytest
import torch
from distribution_check import SIGNIFICANCE, speculative_fit
from test_distribution import accept_always, skip_the_residual
from test_greedy import reference_greedy
from tiny_models import (
    DRAFT_MERGES,
    DRAFT_PIECES,
    NEAR_MERGES,
    NEAR_PIECES,
    TARGET_MERGES,
    TARGET_PIECES,
    borrowed_draft,
    tiny_bpe_tokenizer,
    tiny_model,
)

import specdec.engine.rounds
from specdec import CrossTokenizerDrafter, SpecdecError, speculative_generate
from specdec.drafting.cross_tokenizer import whole_character_tokens
from specdec.engine.contract import DraftCosts, DraftRequest, Generation
from specdec.engine.sampling import SamplingConfig

TEXTS = ("abc ab", "c", "ca ab bb a c abc")


@pytest.fixture(scope="module")
def tokenizers():
    return tiny_bpe_tokenizer(TARGET_PIECES, TARGET_MERGES), tiny_bpe_tokenizer(DRAFT_PIECES, DRAFT_MERGES)


@pytest.fixture(scope="module")
def models():
    """(target, draft): unrelated tiny models, one per vocabulary."""
    return tiny_model("llama", len(TARGET_PIECES), seed=1), tiny_model("qwen2", len(DRAFT_PIECES), seed=2)


def test_drafted_text_is_proposed_in_the_targets_tokens(tokenizers, models):
    """The draft writes "ca" "bc" "aa" (its pieces); the target is offered "cab" "ca", its own cut of "cabcaa".

    After "ca" "bc" the text "cabc" is only two target tokens ("c" "abc"), and the last could still
    grow, so with gamma 2 the draft goes on; "cabcaa" is "cab" "ca" "a", and the first two are proposed."""
    target_tokenizer, draft_tokenizer = tokenizers
    target, draft = models

    script = [DRAFT_PIECES.index(piece) for piece in ("ca", "bc", "aa", "aa", "aa")]  # the draft's choices, fixed

    def propose(sampling, generator=None):
        drafter = CrossTokenizerDrafter(draft, draft_tokenizer, target_tokenizer)
        drafter.begin(Generation({0: torch.tensor([2])}, target, len(TARGET_PIECES), 8, sampling, DraftCosts(0.0, 0.0)))
        steps = iter(script)
        drafter.cache.feed = lambda tokens, last=1: (
            torch.nn.functional.one_hot(torch.tensor([[next(steps)]]), 14).float() * 9,
            None,
        )
        return drafter.draft({0: DraftRequest(torch.tensor([2]), 2, sampling, generator)})[0]

    draft_ = propose(SamplingConfig(temperature=0))
    assert [TARGET_PIECES[t] for t in draft_.tokens.tolist()] == ["cab", "ca"] and draft_.is_chain
    sampled = propose(SamplingConfig(temperature=1.0), torch.Generator().manual_seed(0))
    assert sampled.q is None and draft_.q is None  # fixed candidates: point masses, greedy or sampled


def test_only_whole_characters_are_drawn():
    from tokenizers import Tokenizer, decoders
    from tokenizers import models as tokenizer_models
    from transformers import PreTrainedTokenizerFast

    pieces = ["▁the", "<0xE2>", "a", "<0x82>"]  # SentencePiece style: <0xE2> and <0x82> are lone bytes
    backend = Tokenizer(tokenizer_models.BPE(vocab={p: i for i, p in enumerate(pieces)}, merges=[], byte_fallback=True))
    backend.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend)
    assert whole_character_tokens(tokenizer, 4).tolist() == [True, False, True, False]


def greedy_check(target, drafter, target_tokenizer) -> set[str]:
    """Greedy output equals the target's `generate` for every text and schedule; returns the token origins seen."""
    origins = set()
    for text in TEXTS:
        prompt = target_tokenizer.encode(text)
        expected = reference_greedy(target, prompt, max_new_tokens=40)
        for gamma in (1, 3, 5, None):
            result = speculative_generate(
                target, drafter, torch.tensor(prompt), gamma=gamma, max_new_tokens=40, temperature=0
            )
            assert result.tokens == expected, f"gamma={gamma} text={text!r}"
            origins |= {origin.value for origin in result.origins()}
    return origins


def test_greedy_equals_the_targets_generate_with_an_unrelated_draft(tokenizers, models):
    """A draft that knows nothing of the target: rejected, never wrong."""
    target_tokenizer, draft_tokenizer = tokenizers
    target, draft = models
    drafter = CrossTokenizerDrafter(draft, draft_tokenizer, target_tokenizer)
    assert "resampled" in greedy_check(target, drafter, target_tokenizer)


def test_greedy_equals_the_targets_generate_with_a_draft_that_splits_words_differently(tokenizers, models):
    """A draft that knows the target (its weights, noised) but lacks the pieces "abc" and "cab": kept and rejected."""
    target_tokenizer, _ = tokenizers
    target, _ = models
    drafter = CrossTokenizerDrafter(
        borrowed_draft(target, TARGET_PIECES, NEAR_PIECES, noise=0.3),
        tiny_bpe_tokenizer(NEAR_PIECES, NEAR_MERGES),
        target_tokenizer,
    )
    assert drafter.draft_text(torch.tensor(target_tokenizer.encode("abc"))) == [
        NEAR_PIECES.index(p) for p in ("ab", "c")
    ]
    assert {"accepted", "resampled", "bonus"} <= greedy_check(target, drafter, target_tokenizer)


def test_a_sliding_window_draft_with_another_tokenizer(tokenizers, models):
    """A tiny Gemma 3 (window 6) drafts with its own tokenizer: its cache is rolled back and re-read past its window."""
    target_tokenizer, draft_tokenizer = tokenizers
    target, _ = models
    drafter = CrossTokenizerDrafter(tiny_model("gemma3", len(DRAFT_PIECES), seed=2), draft_tokenizer, target_tokenizer)
    assert drafter.model.traits.sliding_window
    greedy_check(target, drafter, target_tokenizer)


def test_the_target_under_another_numbering_is_always_accepted():
    """Characters only (every text has one tokenization), ids reversed, weights moved with them: the draft is the
    target, so alpha = 1. (With merges it need not be: a target may emit "cab" "c" where re-encoding gives "c"
    "abc".)"""
    characters = ["<s>", "</s>", "a", "b", "c", " "]
    target_tokenizer, target = tiny_bpe_tokenizer(characters, []), tiny_model("llama", len(characters), seed=5)
    pieces = list(reversed(characters))
    drafter = CrossTokenizerDrafter(
        borrowed_draft(target, characters, pieces), tiny_bpe_tokenizer(pieces, []), target_tokenizer
    )
    for text in TEXTS:
        prompt = target_tokenizer.encode(text)
        result = speculative_generate(target, drafter, torch.tensor(prompt), gamma=4, max_new_tokens=40, temperature=0)
        assert result.tokens == reference_greedy(target, prompt, max_new_tokens=40)
        assert result.stats.accepted == result.stats.drafted > 0


@pytest.fixture(scope="module")
def small_models():
    """A target of 16 pieces (every continuation can be enumerated) and a draft of DRAFT_PIECES that shares 8 of them
    and borrows their rows from the target, noised: p and q overlap but differ."""
    target = tiny_model("gpt2", len(TARGET_PIECES), seed=3, sharpness=4.0)
    return target, borrowed_draft(target, TARGET_PIECES, DRAFT_PIECES, noise=0.4)


# the point-mass draft here is poor (7% accepted): its broken rule moves little mass (docstring below)
CROSS_RUNS = 12_000


@pytest.mark.slow
@pytest.mark.parametrize(
    "sampling", [SamplingConfig(temperature=1.0), SamplingConfig(temperature=0.7, top_k=6)], ids=["t1.0", "t0.7-top_k6"]
)
def test_sampling_matches_the_target_distribution(tokenizers, small_models, sampling):
    target_tokenizer, draft_tokenizer = tokenizers
    target, draft = small_models
    drafter = CrossTokenizerDrafter(draft, draft_tokenizer, target_tokenizer)
    fit, acceptance = speculative_fit(
        target, lambda: drafter, sampling, prompt=target_tokenizer.encode("abc a"), runs=CROSS_RUNS
    )
    assert fit.p_value > SIGNIFICANCE, fit
    assert 0.03 < acceptance < 0.9  # both branches of the rule were exercised (3000 runs: hundreds of accepted tokens)


@pytest.mark.slow
@pytest.mark.parametrize("broken_rule", [accept_always, skip_the_residual])
def test_negative_control_broken_rules_fail(tokenizers, small_models, monkeypatch, broken_rule):
    """Keeping every proposal, or resampling from p itself after a rejection (x keeps its share): the same test fails.

    Power: a proposal here is accepted 7% of the time, so x is mostly a token p thinks unlikely, and leaving it in the
    draw after a rejection moves little mass: D = sum (p_broken - p)^2 / p = 0.0186 (statistic 93.9 with 38 degrees of
    freedom at 3,000 runs; accepting always: D = 9.78). At CROSS_RUNS = 12,000 the statistic's mean under the broken
    rule, 38 + 12,000 x 0.0186 = 261, is far past the p = 1e-3 threshold (71); even with D a third smaller the test
    fails with probability above 0.999 (`distribution_check.power`). At 3,000 runs that chance was only 0.62. Accepting
    always needs far fewer runs: at 2,000 its statistic's mean is 38 + 2,000 x 9.78 = 19,598, against the same threshold
    of 71.
    """
    target_tokenizer, draft_tokenizer = tokenizers
    target, draft = small_models
    drafter = CrossTokenizerDrafter(draft, draft_tokenizer, target_tokenizer)
    monkeypatch.setattr(specdec.engine.rounds, "verify_sampled", broken_rule)
    fit, _ = speculative_fit(
        target,
        lambda: drafter,
        SamplingConfig(temperature=1.0),
        prompt=target_tokenizer.encode("abc a"),
        runs=CROSS_RUNS if broken_rule is skip_the_residual else 2_000,
    )
    assert fit.p_value < SIGNIFICANCE, fit


def test_a_draft_with_no_whole_character_token_is_refused_in_one_line(tokenizers, models):
    from tokenizers import Tokenizer, decoders
    from tokenizers import models as tokenizer_models
    from transformers import PreTrainedTokenizerFast

    target_tokenizer, _ = tokenizers
    _, draft = models
    backend = Tokenizer(
        tokenizer_models.BPE(
            vocab={f"<0x{b:02X}>": i for i, b in enumerate(range(0xE0, 0xEE))}, merges=[], byte_fallback=True
        )
    )
    backend.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse()])
    with pytest.raises(SpecdecError, match="cannot propose anything"):
        CrossTokenizerDrafter(draft, PreTrainedTokenizerFast(tokenizer_object=backend), target_tokenizer)
