"""Drafts with another tokenizer (`CrossTokenizerDrafter`): the output stays exactly the target's.

The target and the draft read the same four characters through two different byte-pair
tokenizers (tiny_models.TARGET_PIECES / DRAFT_PIECES: 16 and 14 pieces, 8 spelled alike). Checked:
greedy output equals the target's own `generate`; the sampled distribution passes the chi-square
test against enumeration, and fails it with a broken rule (negative control); a draft that is the
target under renumbered ids is accepted every time (the vocabulary match and the re-encoding lose
nothing); the vocabulary match itself, by hand.
"""

import pytest
import torch
from distribution_check import SIGNIFICANCE, speculative_fit
from test_distribution import accept_always
from tiny_models import (DRAFT_MERGES, DRAFT_PIECES, NEAR_MERGES, NEAR_PIECES, TARGET_MERGES, TARGET_PIECES, borrowed_draft,
                         tiny_bpe_tokenizer, tiny_model)

import specdec.speculative
from specdec import CrossTokenizerDrafter, SpecdecError, speculative_generate
from specdec.cross_tokenizer import token_strings, vocabulary_map
from specdec.sampling import SamplingConfig
from test_greedy import reference_greedy

TEXTS = ("abc ab", "c", "ca ab bb a c abc")


@pytest.fixture(scope="module")
def tokenizers():
    return tiny_bpe_tokenizer(TARGET_PIECES, TARGET_MERGES), tiny_bpe_tokenizer(DRAFT_PIECES, DRAFT_MERGES)


@pytest.fixture(scope="module")
def models():
    """(target, draft): unrelated tiny models, one per vocabulary."""
    return tiny_model("llama", len(TARGET_PIECES), seed=1), tiny_model("qwen2", len(DRAFT_PIECES), seed=2)


def test_the_vocabularies_match_on_the_strings_they_share(tokenizers):
    target_tokenizer, draft_tokenizer = tokenizers
    draft_ids, target_ids = vocabulary_map(token_strings(target_tokenizer, 16), token_strings(draft_tokenizer, 14))
    pairs = {DRAFT_PIECES[d]: TARGET_PIECES[t] for d, t in zip(draft_ids.tolist(), target_ids.tolist())}
    assert pairs == {piece: piece for piece in (" ", "c", "b", "a", "</s>", "<s>", "ca", "cc")}


def test_token_strings_keep_the_leading_space_and_drop_partial_characters():
    from transformers import PreTrainedTokenizerFast
    from tokenizers import Tokenizer, decoders, models as tokenizer_models

    pieces = ["▁the", "the", "<0xE2>", "a"]                  # SentencePiece style: "▁" is a space, <0xE2> a lone byte
    backend = Tokenizer(tokenizer_models.BPE(vocab={p: i for i, p in enumerate(pieces)}, merges=[], byte_fallback=True))
    backend.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])       # drops the first token's leading space
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend)
    assert tokenizer.decode([0]) == "the"                   # alone, the space is gone ...
    assert token_strings(tokenizer, 4) == [" the", "the", None, "a"]   # ... after the anchor it is kept


def greedy_check(target, drafter, target_tokenizer) -> set[str]:
    """Greedy output equals the target's `generate` for every text and schedule; returns the token origins seen."""
    origins = set()
    for text in TEXTS:
        prompt = target_tokenizer.encode(text)
        expected = reference_greedy(target, prompt, max_new_tokens=40)
        for gamma in (1, 3, 5, None):
            result = speculative_generate(target, drafter, torch.tensor(prompt), gamma=gamma, max_new_tokens=40, temperature=0)
            assert result.tokens == expected, f"gamma={gamma} text={text!r}"
            origins |= {origin.value for origin in result.origins()}
    return origins


def test_greedy_equals_the_targets_generate_with_an_unrelated_draft(tokenizers, models):
    """8 of 16 target pieces can be proposed, by a draft that knows nothing of the target: rejected, never wrong."""
    target_tokenizer, draft_tokenizer = tokenizers
    target, draft = models
    drafter = CrossTokenizerDrafter(draft, draft_tokenizer, target_tokenizer)
    assert drafter.shared_tokens == 8
    assert "resampled" in greedy_check(target, drafter, target_tokenizer)


def test_greedy_equals_the_targets_generate_with_a_draft_that_splits_words_differently(tokenizers, models):
    """A draft that knows the target (its weights, noised) but lacks the pieces "abc" and "cab": kept and rejected."""
    target_tokenizer, _ = tokenizers
    target, _ = models
    drafter = CrossTokenizerDrafter(borrowed_draft(target, TARGET_PIECES, NEAR_PIECES, noise=0.3),
                                    tiny_bpe_tokenizer(NEAR_PIECES, NEAR_MERGES), target_tokenizer)
    assert drafter.draft_text(torch.tensor(target_tokenizer.encode("abc"))) == [NEAR_PIECES.index(p) for p in ("ab", "c")]
    assert {"accepted", "resampled", "bonus"} <= greedy_check(target, drafter, target_tokenizer)


def test_the_target_under_another_numbering_is_always_accepted():
    """Characters only (every text has one tokenization), ids reversed, weights moved with them: the draft is the
    target, so alpha = 1. (With merges it need not be: a target may emit "cab" "c" where re-encoding gives "c" "abc".)"""
    characters = ["<s>", "</s>", "a", "b", "c", " "]
    target_tokenizer, target = tiny_bpe_tokenizer(characters, []), tiny_model("llama", len(characters), seed=5)
    pieces = list(reversed(characters))
    drafter = CrossTokenizerDrafter(borrowed_draft(target, characters, pieces), tiny_bpe_tokenizer(pieces, []), target_tokenizer)
    assert drafter.shared_tokens == 6
    for text in TEXTS:
        prompt = target_tokenizer.encode(text)
        result = speculative_generate(target, drafter, torch.tensor(prompt), gamma=4, max_new_tokens=40, temperature=0)
        assert result.tokens == reference_greedy(target, prompt, max_new_tokens=40)
        assert result.stats.accepted == result.stats.drafted > 0


@pytest.fixture(scope="module")
def small_models():
    """A target of 16 pieces (every continuation can be enumerated) and a draft of DRAFT_PIECES that shares 8 of them
    and borrows their rows from the target, noised: p and q overlap but differ."""
    target = tiny_model("gpt2", len(TARGET_PIECES), seed=3, sharpness=2.0)
    return target, borrowed_draft(target, TARGET_PIECES, DRAFT_PIECES, noise=0.4)


@pytest.mark.parametrize("sampling", [SamplingConfig(temperature=1.0), SamplingConfig(temperature=0.7, top_k=6)], ids=["t1.0", "t0.7-top_k6"])
def test_sampling_matches_the_target_distribution(tokenizers, small_models, sampling):
    target_tokenizer, draft_tokenizer = tokenizers
    target, draft = small_models
    drafter = CrossTokenizerDrafter(draft, draft_tokenizer, target_tokenizer)
    fit, acceptance = speculative_fit(target, lambda: drafter, sampling, prompt=target_tokenizer.encode("abc a"))
    assert fit.p_value > SIGNIFICANCE, fit
    assert 0.05 < acceptance < 0.9      # both branches of the rule were exercised


def test_negative_control_a_broken_rule_fails(tokenizers, small_models, monkeypatch):
    target_tokenizer, draft_tokenizer = tokenizers
    target, draft = small_models
    drafter = CrossTokenizerDrafter(draft, draft_tokenizer, target_tokenizer)
    monkeypatch.setattr(specdec.speculative, "verify_sampled", accept_always)
    fit, _ = speculative_fit(target, lambda: drafter, SamplingConfig(temperature=1.0), prompt=target_tokenizer.encode("abc a"))
    assert fit.p_value < SIGNIFICANCE, fit


def test_vocabularies_with_nothing_in_common_are_refused_in_one_line(tokenizers, models):
    target_tokenizer, _ = tokenizers
    _, draft = models
    strangers = tiny_bpe_tokenizer(["x", "y", "z", "xy", "yz", "zx", "xx", "yy", "zz", "xz", "yx", "zy", "xyz", "zyx"], [])
    with pytest.raises(SpecdecError, match="share no token"):
        CrossTokenizerDrafter(draft, strangers, target_tokenizer)
