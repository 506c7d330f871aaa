"""KV caches: rolled back to the accepted text after every round, and as good as a fresh full pass.

A drafter subclass inspects both caches at the start of every round (when it is handed the text
accepted so far): the target's cache must hold every token but the last, the draft's a prefix at
most one shorter than that, and the next logits computed from each cache must equal a fresh
forward pass over the whole text.
"""

import copy

import pytest
import torch
from tiny_models import target_cache_as, tiny_model, tiny_pair

from specdec import ModelDrafter, speculative_generate
from specdec.runtime.pytorch.one_row import OneRow
from specdec.runtime.pytorch.kv_cache import CachedModel
from specdec.errors import SpecdecError


def test_feed_rollback_feed_equals_a_full_pass():
    model = tiny_model("llama")
    text = torch.tensor([3, 4, 5, 6, 7, 8, 9])
    cached = CachedModel(model)
    cached.feed(text[:4], last=1)
    cached.feed(torch.tensor([20, 21, 22]), last=3)  # a drafted continuation the target rejects
    cached.rollback(4)
    assert cached.length == 4 and cached.cache.get_seq_length() == 4
    logits = cached.feed(text[4:], last=3)  # [3, V]
    full = model(input_ids=text[None]).logits[0, 4:]  # [3, V]
    assert torch.allclose(logits, full, atol=1e-5)
    assert cached.passes == 3


def test_sliding_window_rollback_past_the_window_equals_a_full_pass():
    """A sliding-window layer drops tokens older than its window; rolling back after the window is full
    must still leave exactly the keys and values a fresh pass would compute (transformers' past recording)."""
    model = tiny_model("gemma3")
    text = torch.arange(2, 22)  # 20 tokens, more than three windows of 6
    cached = CachedModel(model)
    assert cached.sliding
    cached.feed(text[:12], last=1)
    for start in (12, 15, 17):  # reject a drafted continuation, then accept the real one
        cached.feed(torch.tensor([1, 1, 1, 1, 1]), last=5)
        cached.rollback(start)
        logits = cached.feed(text[start : start + 3], last=3)  # [3, V]
        full = model(input_ids=text[None, : start + 3]).logits[0, start:]  # [3, V]
        assert torch.allclose(logits, full, atol=1e-5)
    assert max(layer.keys.shape[-2] for layer in cached.cache.layers if layer.is_sliding) <= 20 - 1


def test_trees_refuse_sliding_window_caches_in_one_line():
    cached = CachedModel(tiny_model("gemma3"))
    cached.feed(torch.arange(2, 12))
    with pytest.raises(SpecdecError, match="sliding-window"):
        cached.keep([0, 1, 2, 3, 5])


def test_rollback_refuses_to_grow():
    cached = CachedModel(tiny_model("gpt2"))
    cached.feed(torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError):
        cached.rollback(5)


class CheckingDrafter(ModelDrafter):
    """Checks both caches against fresh full passes at the start of every round."""

    target_caches: list[OneRow] = []

    def __init__(self, model, target):
        super().__init__(model)
        self.target = target
        self.rounds_checked = 0

    def draft(self, requests):
        (sequence,) = [request.sequence for request in requests.values()]
        target_lm, own = self.target_caches[-1].lm, self.cache.lm
        assert target_lm.length == sequence.numel() - 1  # everything but the last token
        if self.rounds_checked == 0:
            assert own.length == 0  # the draft reads the prompt in its first pass
        else:
            assert sequence.numel() - 2 <= own.length <= sequence.numel() - 1
        for model, cached in ((self.target, target_lm), (self.model.module, own)):
            if cached.length == 0:
                continue
            probe = copy.deepcopy(cached)  # feeding must not disturb the real cache
            from_cache = probe.feed(sequence[cached.length :], last=1)[-1]  # [V]
            fresh = model(input_ids=sequence[None]).logits[0, -1]  # [V]
            assert torch.allclose(from_cache, fresh, atol=1e-5)
        self.rounds_checked += 1
        return super().draft(requests)


class RecordingCache(OneRow):
    def __init__(self, model, rows):
        super().__init__(model, list(rows)[0])
        CheckingDrafter.target_caches.append(self)


@pytest.mark.parametrize("architecture", ["gpt2", "llama", "qwen2", "gemma3"])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_caches_hold_exactly_the_accepted_text_after_every_round(monkeypatch, architecture, temperature):
    target, draft = tiny_pair(architecture)
    target_cache_as(monkeypatch, target, RecordingCache)
    drafter = CheckingDrafter(draft, target)
    result = speculative_generate(
        target, drafter, torch.tensor([2, 3, 4]), gamma=4, max_new_tokens=30, temperature=temperature, seed=0
    )
    assert drafter.rounds_checked == sum(1 for r in result.rounds if r.drafted) > 3
    assert 0 < result.stats.accepted < result.stats.drafted  # both rollbacks and full accepts happened


def test_pass_counts_one_target_pass_per_round_one_draft_pass_per_drafted_token(pairs):
    target, draft = pairs["qwen2"]
    result = speculative_generate(target, draft, torch.tensor([2, 3, 4, 5]), gamma=3, max_new_tokens=50, temperature=0)
    assert result.stats.target_passes == len(result.rounds)  # the prompt pass, then one per round
    assert result.stats.draft_passes == result.stats.drafted  # catching up after a full accept is free
    assert any(r.next_origin.value == "bonus" for r in result.rounds)
