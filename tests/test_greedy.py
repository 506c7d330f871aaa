"""Greedy speculative decoding equals the target's own greedy decoding, token for token.

The trusted reference is transformers' `model.generate(do_sample=False)` on the target alone, in
float32. Checked for gamma 1..8, several prompts, three architectures, with and without an
end-of-sequence token, with the prompt-lookup drafter, and with draft and target of different
vocabulary sizes.
"""

import pytest
import torch
from tiny_models import tiny_pair

from specdec import PromptLookupDrafter, autoregressive_generate, speculative_generate
from specdec.engine.stop_rule import ConfidenceStop

PROMPTS = ([2, 3, 4, 5], [9], [7, 8, 7, 8, 7, 8, 11, 12, 13, 7, 8])
NEW_TOKENS = 40


def reference_greedy(model, prompt, eos_token_id=None, max_new_tokens=NEW_TOKENS):
    ids = torch.tensor([prompt])
    output = model.generate(
        ids,
        do_sample=False,
        max_new_tokens=max_new_tokens,
        eos_token_id=eos_token_id,
        pad_token_id=0,
        attention_mask=torch.ones_like(ids),
    )
    return output[0, len(prompt) :].tolist()


def chains_and_a_tree_equal_greedy(target, draft) -> int:
    """Assert that chains of gamma 1 and 3, the stop rule and a token tree give `target`'s own greedy output for every
    one of `PROMPTS` (a quantized or packed target: the target as loaded); return how many drafted tokens were
    accepted."""
    from specdec import TreeDrafter

    accepted = 0
    for prompt in PROMPTS:
        expected = reference_greedy(target, prompt)
        for gamma in (1, 3, None):
            result = speculative_generate(
                target, draft, torch.tensor(prompt), gamma=gamma, max_new_tokens=len(expected), temperature=0
            )
            assert result.tokens == expected, (prompt, gamma)
            accepted += result.stats.accepted
        tree = speculative_generate(
            target,
            TreeDrafter(draft, budget=6, width=2),
            torch.tensor(prompt),
            max_new_tokens=len(expected),
            temperature=0,
        )
        assert tree.tokens == expected, prompt
    return accepted


@pytest.mark.parametrize("architecture", ["gpt2", "llama", "qwen2"])
def test_equals_target_generate_for_every_gamma_and_the_stop_rule(pairs, architecture):
    """Fixed gammas 1..8, the default (the stop rule) and two explicit stop rules: the stop rule changes how
    many tokens each round drafts, never which tokens come out."""
    target, draft = pairs[architecture]
    outcomes, drafted_lengths = set(), set()
    for prompt in PROMPTS:
        expected = reference_greedy(target, prompt)
        assert (
            autoregressive_generate(target, torch.tensor(prompt), max_new_tokens=NEW_TOKENS, temperature=0).tokens
            == expected
        )
        for gamma in (*range(1, 9), None, ConfidenceStop(c=0.05), ConfidenceStop(c=0.3, max_gamma=6)):
            length = {"schedule": gamma} if isinstance(gamma, ConfidenceStop) else {"gamma": gamma}
            result = speculative_generate(
                target, draft, torch.tensor([prompt]), **length, max_new_tokens=NEW_TOKENS, temperature=0
            )
            assert result.tokens == expected, f"gamma={gamma} prompt={prompt}"
            if isinstance(gamma, int):
                outcomes |= {origin.value for origin in result.origins()}
            else:
                drafted_lengths |= {len(round_.drafted) for round_ in result.rounds[1:]}
    # the comparison is only meaningful if drafts were both accepted and rejected
    assert {"accepted", "resampled", "bonus"} <= outcomes
    assert len(drafted_lengths) >= 3  # rounds of several lengths: the stop rule did decide


def test_sliding_window_model_equals_target_generate_well_past_the_window():
    """Gemma 3's local layers see 6 tokens; 60 new tokens roll both caches back many times past the window."""
    target, noisy_draft = tiny_pair("gemma3")
    for draft in (target, noisy_draft):
        outcomes = set()
        for prompt in PROMPTS:
            expected = reference_greedy(target, prompt, max_new_tokens=60)
            for gamma in (1, 3, 5, None):
                result = speculative_generate(
                    target, draft, torch.tensor(prompt), gamma=gamma, max_new_tokens=60, temperature=0
                )
                assert result.tokens == expected, f"gamma={gamma} prompt={prompt} draft==target: {draft is target}"
                outcomes |= {origin.value for origin in result.origins()}
        # the noisy draft is rejected, the target itself never
        assert ("resampled" in outcomes) == (draft is not target)


@pytest.mark.parametrize("architecture", ["gpt2", "llama"])
def test_stops_at_eos_like_generate(pairs, architecture):
    target, draft = pairs[architecture]
    prompt = PROMPTS[0]
    free_run = reference_greedy(target, prompt)
    eos = free_run[len(free_run) // 2]  # a token the target really produces mid-way
    expected = reference_greedy(target, prompt, eos_token_id=eos)
    assert expected[-1] == eos and len(expected) < NEW_TOKENS
    for gamma in (1, 3, 6):
        result = speculative_generate(
            target, draft, torch.tensor(prompt), gamma=gamma, max_new_tokens=NEW_TOKENS, temperature=0, eos_token_id=eos
        )
        assert result.tokens == expected
    plain = autoregressive_generate(
        target, torch.tensor(prompt), max_new_tokens=NEW_TOKENS, temperature=0, eos_token_id=[eos, 999]
    )
    assert plain.tokens == expected


@pytest.mark.parametrize("architecture", ["gpt2", "qwen2"])
def test_prompt_lookup_drafter_is_exact(pairs, architecture):
    target, _ = pairs[architecture]
    for prompt in PROMPTS:
        expected = reference_greedy(target, prompt)
        for gamma in (1, 4, 8):
            result = speculative_generate(
                target,
                PromptLookupDrafter(),
                torch.tensor(prompt),
                gamma=gamma,
                max_new_tokens=NEW_TOKENS,
                temperature=0,
            )
            assert result.tokens == expected
            assert result.stats.draft_passes == 0


@pytest.mark.parametrize("target_rows, draft_rows", [(28, 24), (24, 28)])
def test_different_embedding_sizes_share_the_id_range(target_rows, draft_rows):
    """Like Qwen2.5 0.5B (151936 rows) with 1.5B (152064 rows): one tokenizer, different row counts."""
    target, draft = tiny_pair("qwen2", vocab_size=target_rows, draft_vocab_size=draft_rows)
    for prompt in PROMPTS:
        expected = reference_greedy(target, prompt)
        result = speculative_generate(
            target, draft, torch.tensor(prompt), gamma=4, max_new_tokens=NEW_TOKENS, temperature=0
        )
        assert result.tokens == expected
        assert result.stats.accepted > 0
