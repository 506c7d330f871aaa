"""The public generate functions: arguments, limits, seeds, and the bookkeeping of results."""

import math

import pytest
import torch

from specdec import PromptLookupDrafter, SpecdecError, TokenOrigin, autoregressive_generate, speculative_generate
from specdec.engine.contract import Capabilities
from specdec.engine.trees import DraftTree


@pytest.mark.parametrize("max_new_tokens", [1, 2, 5, 17])
@pytest.mark.parametrize("gamma", [1, 4, 8])
def test_max_new_tokens_is_exact(pairs, max_new_tokens, gamma):
    target, draft = pairs["gpt2"]
    for temperature in (0.0, 1.0):
        result = speculative_generate(
            target,
            draft,
            torch.tensor([3, 4]),
            gamma=gamma,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            seed=1,
        )
        assert len(result.tokens) == max_new_tokens


def test_same_seed_same_tokens_other_seed_other_tokens(pairs):
    target, draft = pairs["llama"]
    runs = [
        speculative_generate(target, draft, torch.tensor([3, 4]), max_new_tokens=30, seed=seed).tokens
        for seed in (7, 7, 8)
    ]
    assert runs[0] == runs[1] != runs[2]
    plain = [
        autoregressive_generate(target, torch.tensor([3, 4]), max_new_tokens=30, seed=seed).tokens for seed in (7, 7, 8)
    ]
    assert plain[0] == plain[1] != plain[2]


def test_one_and_two_dimensional_prompts_agree(pairs):
    target, draft = pairs["gpt2"]
    flat = speculative_generate(target, draft, torch.tensor([3, 4, 5]), max_new_tokens=10, temperature=0)
    batched = speculative_generate(target, draft, torch.tensor([[3, 4, 5]]), max_new_tokens=10, temperature=0)
    assert flat.tokens == batched.tokens


def test_rounds_account_for_every_token(pairs):
    target, draft = pairs["qwen2"]
    result = speculative_generate(target, draft, torch.tensor([2, 3, 4, 5]), gamma=4, max_new_tokens=40, seed=3)
    assert [token for r in result.rounds for token, _ in r.emitted] == result.tokens
    assert len(result.origins()) == len(result.tokens)
    assert result.rounds[0].next_origin == TokenOrigin.TARGET and not result.rounds[0].drafted
    for round_ in result.rounds[1:]:
        tested = [d for d in round_.drafted if d.accepted is not None]
        assert [d.accepted for d in tested] == [True] * round_.accepted + [False] * (len(tested) - round_.accepted)
        assert all(d.u is not None and 0 <= d.u < 1 for d in tested)
        for d in tested:  # the rule itself: accepted exactly when u < p / q
            assert d.accepted == (d.u * d.q < d.p)
        if round_.next_origin == TokenOrigin.BONUS:
            assert round_.accepted == len(round_.drafted) > 0
    stats = result.stats
    assert stats.drafted == sum(len(r.drafted) for r in result.rounds)
    assert stats.accepted == sum(r.accepted for r in result.rounds)
    assert stats.acceptance_rate == pytest.approx(stats.accepted / stats.drafted)
    assert stats.tokens_per_target_pass == pytest.approx(len(result.tokens) / stats.target_passes)
    assert stats.wall_time_s >= stats.draft_time_s + stats.verify_time_s > 0
    assert stats.to_dict()["acceptance_rate"] == stats.acceptance_rate


def test_greedy_trace_uses_point_masses(pairs):
    target, draft = pairs["gpt2"]
    result = speculative_generate(target, draft, torch.tensor([2, 3]), max_new_tokens=20, temperature=0)
    for round_ in result.rounds[1:]:
        for d in round_.drafted:
            assert d.q == 1.0 and d.u is None and d.p in (0.0, 1.0)


def test_plain_decoding_statistics(pairs):
    target, _ = pairs["gpt2"]
    result = autoregressive_generate(target, torch.tensor([2, 3]), max_new_tokens=12, temperature=0)
    assert result.stats.target_passes == 12 and result.stats.tokens_per_target_pass == 1.0
    assert result.rounds == () and math.isnan(result.stats.acceptance_rate)
    assert result.stats.to_dict()["acceptance_rate"] is None
    assert set(result.origins()) == {TokenOrigin.TARGET}


def test_prompt_lookup_without_matches_falls_back_to_plain_steps(pairs):
    target, _ = pairs["gpt2"]
    result = speculative_generate(target, PromptLookupDrafter(), torch.tensor([2]), max_new_tokens=1, temperature=0)
    assert result.stats.drafted == 0 and len(result.tokens) == 1


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(gamma=0), "gamma"),
        (dict(gamma=65), "gamma"),
        (dict(max_new_tokens=0), "max_new_tokens"),
        (dict(temperature=-1.0), "temperature"),
        (dict(top_p=0.0), "top_p"),
        (dict(top_k=-2), "top_k"),
        (dict(max_new_tokens=300), "context"),
    ],
)
def test_bad_arguments_raise_a_clear_error(pairs, kwargs, message):
    target, draft = pairs["gpt2"]
    with pytest.raises(SpecdecError, match=message):
        speculative_generate(target, draft, torch.tensor([2, 3]), **kwargs)


@pytest.mark.parametrize(
    "prompt", [torch.tensor([], dtype=torch.long), torch.tensor([[[1, 2]]]), "1 2", torch.tensor([0.5])]
)
def test_bad_prompts_raise_a_clear_error(pairs, prompt):
    target, draft = pairs["gpt2"]
    with pytest.raises(SpecdecError):
        speculative_generate(target, draft, prompt)
    with pytest.raises(SpecdecError):
        autoregressive_generate(target, prompt)


def test_a_b_by_t_tensor_is_a_batch_of_b_prompts(pairs):
    target, draft = pairs["gpt2"]
    results = speculative_generate(target, draft, torch.tensor([[2, 3], [4, 5]]), max_new_tokens=4, temperature=0)
    # one result per row (tests/test_batches.py)
    assert len(results) == 2 and all(len(result.tokens) == 4 for result in results)


def test_a_prompt_longer_than_the_context_is_refused(pairs):
    target, draft = pairs["gpt2"]
    with pytest.raises(SpecdecError, match="shorten the prompt"):
        speculative_generate(target, draft, torch.ones(300, dtype=torch.long), max_new_tokens=4)


def test_callbacks_see_every_token_as_it_is_decided(pairs):
    target, draft = pairs["qwen2"]
    seen_rounds, seen_tokens = [], []
    result = speculative_generate(
        target, draft, torch.tensor([2, 3]), max_new_tokens=20, seed=1, on_round=seen_rounds.append
    )
    assert [token for r in seen_rounds for token, _ in r.emitted] == result.tokens
    plain = autoregressive_generate(
        target, torch.tensor([2, 3]), max_new_tokens=20, seed=1, on_token=seen_tokens.append
    )
    assert seen_tokens == plain.tokens


class OracleDrafter:
    """Proposes the target's own greedy continuation (known in advance), so every drafted token is accepted."""

    name, draft_model = "oracle", None
    capabilities = Capabilities()

    def __init__(self, prompt_length: int, continuation: list[int]) -> None:
        self.prompt_length, self.continuation = prompt_length, continuation

    def begin(self, generation):
        pass

    def passes(self, row):
        return 0

    def draft(self, requests):
        return {
            row: DraftTree.chain(
                torch.tensor(self.continuation[r.sequence.numel() - self.prompt_length :][: r.limit], dtype=torch.long)
            )
            for row, r in requests.items()
        }

    def observe(self, verified):
        pass


def test_drafted_tokens_after_an_accepted_end_of_sequence_are_not_counted_as_accepted(pairs):
    target, _ = pairs["qwen2"]
    prompt = torch.tensor([2, 3, 5])
    greedy = autoregressive_generate(target, prompt, max_new_tokens=12, temperature=0).tokens
    eos = greedy[3]  # the 4th new token: drafted in the middle of the first round
    assert eos not in greedy[:3]
    result = speculative_generate(
        target, OracleDrafter(3, greedy), prompt, gamma=6, max_new_tokens=12, temperature=0, eos_token_id=eos
    )
    assert result.tokens == greedy[:4]  # the output stops at the end-of-sequence token
    first_round = result.rounds[1]
    # tokens 2..4 were drafted: 3 of them reached the output
    assert len(first_round.drafted) == 6 and first_round.accepted == 3
    assert [d.accepted for d in first_round.drafted] == [True, True, True, None, None, None]
    assert result.stats.accepted == 3 and result.stats.drafted == 6 and result.stats.rejections == 0


def test_a_chain_without_q_while_sampling_is_fixed_candidates(pairs):
    """q=None is a point mass on each token: the rule keeps x with
    probability p(x) (the oracle's tokens are likely, so often)."""
    target, _ = pairs["gpt2"]
    greedy = autoregressive_generate(target, torch.tensor([3, 4]), max_new_tokens=8, temperature=0).tokens
    result = speculative_generate(
        target, OracleDrafter(2, greedy), torch.tensor([3, 4]), gamma=4, max_new_tokens=8, temperature=1.0, seed=0
    )
    drafted = [token for round_ in result.rounds for token in round_.drafted]
    assert drafted and all(token.q == 1.0 and token.p > 0 for token in drafted)  # q(x) = 1: the test is u < p(x)
