"""The drafter contract (`specdec.engine.contract`): a method written here, in a test file, plugs in and is exact.

`BigramDrafter` below is the whole of a drafting method in under 40 lines: after every target pass it
remembers, for each token the pass read, the target's own top choice after it, and it drafts by following
those choices from the last token, as a chain of fixed candidates. The engine is not touched; greedy
output equals `generate` and the sampled distribution equals the target's, by the same chi-square test
as every drafter (with a broken rule as negative control). The contract's other promises are checked
too: rows a drafter adds to the pass change no p, and a bad proposal, a q of the wrong shape, something
that is not a drafter or a gamma for a drafter that sizes its own rounds gets one clear error.
"""

import pytest
import torch
from distribution_check import RUNS, SIGNIFICANCE, speculative_fit
from test_greedy import PROMPTS, reference_greedy

import specdec.engine.rounds
from specdec import SpecdecError, speculative_generate
from specdec.engine.contract import Capabilities, DraftRequest, Generation, Verified
from specdec.runtime.pytorch.kv_cache import CachedModel
from specdec.engine.sampling import SamplingConfig
from specdec.engine.trees import DraftTree, ExtraRows, chain_parents, pass_attention


class BigramDrafter:
    """Drafts by following the target's own top choice after each token, learned from every pass it observes."""

    name, draft_model = "bigram", None
    capabilities = Capabilities(sizes_rounds=True, drafts="bigram chain")

    def __init__(self, length: int = 4) -> None:
        self.length, self.after = length, {}

    def begin(self, generation: Generation) -> None:
        self.after = {}  # one table for every text: what the target picked after each token

    def draft(self, requests: dict[int, DraftRequest]) -> dict[int, DraftTree]:
        return {row: self.follow(int(request.sequence[-1]), request.limit) for row, request in requests.items()}

    def follow(self, token: int, limit: int) -> DraftTree:
        chain = []
        while token in self.after and len(chain) < min(self.length, limit):
            token = self.after[token]
            chain.append(token)
        return DraftTree.chain(torch.tensor(chain, dtype=torch.long))  # q None: fixed candidates, point masses

    def observe(self, verified: dict[int, Verified]) -> None:
        for seen in verified.values():
            rows = seen.rows[-seen.logits.shape[0] :].tolist()  # the tokens those logits follow
            for token, best in zip(rows, seen.logits.argmax(dim=-1).tolist()):
                self.after[token] = best


def test_a_drafter_written_in_a_test_file_is_exact_greedy(pairs):
    for architecture in ("gpt2", "llama", "qwen2"):
        target, _ = pairs[architecture]
        accepted = 0
        for prompt in PROMPTS:
            result = speculative_generate(
                target, BigramDrafter(), torch.tensor(prompt), max_new_tokens=40, temperature=0
            )
            assert result.tokens == reference_greedy(target, prompt), (architecture, prompt)
            accepted += result.stats.accepted
        assert accepted > 10  # it really drafted, and the target took some of it


@pytest.mark.slow
@pytest.mark.parametrize(
    "sampling", [SamplingConfig(temperature=1.0), SamplingConfig(temperature=0.7, top_k=4)], ids=["t1.0", "t0.7_top_k4"]
)
def test_a_drafter_written_in_a_test_file_keeps_the_target_distribution(sampling):
    from tiny_models import tiny_pair

    target, _ = tiny_pair("gpt2", vocab_size=8, noise=0.4)
    fit, acceptance = speculative_fit(
        target, BigramDrafter, sampling, prompt=[2, 3, 4, 2, 3], gamma_factory=lambda: None, runs=RUNS
    )
    assert fit.p_value > SIGNIFICANCE, fit
    assert 0.05 < acceptance < 0.95


def test_extra_rows_change_no_p_and_come_back_with_their_own_logits(pairs):
    """A pass with rows of the drafter's own gives the proposal's rows the logits of a pass without them."""
    target, _ = pairs["qwen2"]
    text = torch.tensor([2, 3, 4])
    tree = DraftTree(torch.tensor([5, 6, 7]), (-1, -1, 0), None)
    extra = ExtraRows(
        torch.tensor([9, 10]),
        torch.tensor([1, 2]),
        # a chain 9 10 after the root
        torch.tensor([[1, 0, 0, 0, 1, 0], [1, 0, 0, 0, 1, 1]], dtype=torch.bool),
    )
    logits = {}
    for with_extra in (False, True):
        cached = CachedModel(target)
        cached.feed(text[:-1])
        attend, positions = pass_attention(2, tree.parents, extra if with_extra else None)
        rows = torch.cat([text[-1:], tree.tokens] + ([extra.tokens] if with_extra else []))
        logits[with_extra] = cached.feed(rows, last=rows.numel(), attend=attend, positions=positions)
    assert torch.allclose(logits[True][:4], logits[False], atol=1e-5)
    alone = target(input_ids=torch.tensor([[2, 3, 4, 9, 10]])).logits[0, -2:]  # the extra chain, read causally
    assert torch.allclose(logits[True][4:], alone, atol=1e-5)


class TooDeep(BigramDrafter):
    def draft(self, requests):
        return {
            row: DraftTree(torch.tensor([1] * (r.limit + 1)), chain_parents(r.limit + 1), None)
            for row, r in requests.items()
        }


class WrongQ(BigramDrafter):
    def draft(self, requests):
        # q over 3 ids, not the vocabulary
        return {row: DraftTree.chain(torch.tensor([1]), torch.ones(1, 3) / 3) for row in requests}


def test_bad_proposals_and_gammas_get_one_clear_error(pairs):
    target, _ = pairs["gpt2"]
    with pytest.raises(SpecdecError, match="sizes its own rounds"):
        speculative_generate(target, BigramDrafter(), torch.tensor([2, 3]), gamma=3, max_new_tokens=5)
    with pytest.raises(SpecdecError, match="at most .* were asked for"):
        speculative_generate(target, TooDeep(), torch.tensor([2, 3]), max_new_tokens=5, temperature=0)
    with pytest.raises(SpecdecError, match="draft must be a transformers causal LM or a drafter"):
        speculative_generate(target, object(), torch.tensor([2, 3]), max_new_tokens=5)
    with pytest.raises(SpecdecError, match=r"q of shape \(1, 3\); the rule needs q of shape \[1..2, 24\]"):
        speculative_generate(target, WrongQ(), torch.tensor([2, 3]), max_new_tokens=5, temperature=1.0)


def broken_point_mass_rule(p, q, drafted, generator):
    """BROKEN: fixed candidates kept with probability p(x), but a rejected x stays in what is sampled next."""
    from specdec.engine.sampling import sample
    from specdec.engine.verification import chain_verdict

    k = drafted.numel()
    uniforms = torch.rand(k, generator=generator)
    p_drafted = p[torch.arange(k), drafted]
    kept = next((i for i in range(k) if not uniforms[i] < p_drafted[i]), k)
    next_token = int(sample(p[kept][None], generator))  # after a rejection: p itself, x not taken out
    return chain_verdict(kept, k, next_token, tuple(uniforms.tolist()), tuple(p_drafted.tolist()), (1.0,) * k)


@pytest.mark.slow
def test_negative_control_the_same_test_catches_a_broken_point_mass_rule(monkeypatch):
    """Power: leaving a rejected candidate in the draw moves the distribution by D = 0.338 (statistic 540 with 32
    degrees of freedom at 1,500 runs); at RUNS = 3,000, far past the p = 1e-3 threshold of 62."""
    from tiny_models import tiny_pair

    target, _ = tiny_pair("gpt2", vocab_size=8, noise=0.4)
    monkeypatch.setattr(specdec.engine.rounds, "verify_sampled", broken_point_mass_rule)
    fit, _ = speculative_fit(
        target,
        BigramDrafter,
        SamplingConfig(temperature=1.0),
        prompt=[2, 3, 4, 2, 3],
        gamma_factory=lambda: None,
        runs=RUNS,
    )
    assert fit.p_value < SIGNIFICANCE, fit


class OutOfVocabulary(BigramDrafter):
    """Proposes `bad` (an id outside [0, V)) as its first guess."""

    def __init__(self, bad: int) -> None:
        super().__init__()
        self.bad = bad

    def follow(self, token, limit):
        return DraftTree.chain(torch.tensor([self.bad]))


@pytest.mark.parametrize("bad", [-1, 24, 99])
def test_a_drafted_id_outside_the_vocabulary_is_one_error_in_every_rule(pairs, bad):
    """vLLM's `test_raises_when_vocab_oob`, asked of our rules: -1 would wrap to the last id and could be emitted."""
    from specdec.engine.tree_verification import verify_tree_greedy, verify_tree_sampled
    from specdec.engine.verification import verify_greedy, verify_sampled

    vocab = 24
    p, logits, drafted = torch.full((2, vocab), 1 / vocab), torch.zeros(2, vocab), torch.tensor([bad])
    tree = DraftTree(torch.tensor([3, bad]), (-1, -1), None)
    for rule in (
        lambda: verify_greedy(logits, drafted),
        lambda: verify_sampled(p, None, drafted, None),
        lambda: verify_sampled(p, p[:1], drafted, None),
        lambda: verify_tree_greedy(torch.zeros(3, vocab), tree),
        lambda: verify_tree_sampled(torch.full((3, vocab), 1 / vocab), tree, None),
    ):
        with pytest.raises(
            SpecdecError, match=f"drafted token id {bad}, outside the target's vocabulary \\[0, {vocab}\\)"
        ):
            rule()
    target, _ = pairs["llama"]
    for temperature in (0.0, 1.0):  # a custom drafter's proposal: the error names it
        with pytest.raises(SpecdecError, match=f"bigram drafted token id {bad}"):
            speculative_generate(
                target, OutOfVocabulary(bad), torch.tensor([2, 3]), max_new_tokens=4, temperature=temperature
            )


def test_token_ids_are_taken_as_lists_or_tensors_alike(pairs):
    from specdec import autoregressive_generate, train_head
    from specdec.runtime.costs import measure_costs

    target, draft = pairs["llama"]
    as_tensor = speculative_generate(target, draft, torch.tensor([[2, 3, 4]]), max_new_tokens=6, temperature=0)
    assert speculative_generate(target, draft, [2, 3, 4], max_new_tokens=6, temperature=0).tokens == as_tensor.tokens
    assert autoregressive_generate(target, [2, 3, 4], max_new_tokens=6, temperature=0).tokens == as_tensor.tokens
    assert measure_costs(target, draft, [2, 3, 4], gammas=[1], repeats=1).c > 0
    assert train_head(target, [[2, 3, 4, 5, 6, 7], torch.tensor([7, 6, 5, 4])], steps=1) is not None
    with pytest.raises(SpecdecError, match="must be token ids"):
        speculative_generate(target, draft, "2 3 4", max_new_tokens=6)
