"""Token trees (`specdec.TreeDrafter`): exact greedy output, exact sampled distribution, clean caches.

- greedy output equals the target's `generate` for several budgets, shapes, architectures and
  prompts, with an end-of-sequence token and `max_new_tokens` honoured exactly;
- the sampled distribution equals the target's (chi-square against enumeration, as in
  test_distribution.py) with trees whose side branches really get accepted, and two broken tree
  rules fail the very same test;
- after every round both caches equal a fresh pass over the accepted text;
- a tree with budget 1 is the chain with gamma 1, token for token, greedy and sampled.
"""

import copy
from collections import Counter

import numpy as np
import pytest
import torch
from distribution_check import SAMPLING_IDS, SAMPLINGS, batched_runs, exact_distribution
from test_greedy import PROMPTS, reference_greedy
from tiny_models import target_cache_as, tiny_pair

import specdec.engine.rounds
import specdec.generation.run
from specdec import SpecdecError, TreeDrafter, speculative_generate
from specdec.runtime.pytorch.one_row import OneRow
from specdec.runtime.pytorch.kv_cache import CachedModel
from specdec.engine.sampling import SamplingConfig, sample
from specdec.engine.trees import ROOT, DraftTree, tree_attention
from specdec.engine.verification import Verdict
from specdec.reference.stats import chi_square_test

NEW_TOKENS = 40
SHAPES = [
    dict(budget=1),
    dict(budget=4, width=2, c=0.0, verify_slope=0.0),
    dict(budget=12, depth=4, width=3, c=0.0, verify_slope=0.0),
    dict(c=0.05, verify_slope=0.05),
    dict(),
]  # the last: the defaults


def test_tree_attention_lets_each_node_see_its_ancestors_only():
    tree = DraftTree(torch.tensor([5, 6, 7, 8]), (-1, -1, 0, 2), None)  # root -> 0 -> 2 -> 3, root -> 1
    attend, positions = tree_attention(3, tree)  # 3 tokens of text cached
    assert attend.shape == (5, 8)
    assert attend[:, :4].all()  # the text and the root: everyone
    assert attend[4, 4:].tolist() == [True, False, True, True]  # node 3 sees 0, 2 and itself
    assert attend[2, 4:].tolist() == [False, True, False, False]  # node 1 only itself
    assert positions.tolist() == [3, 4, 4, 5, 6]
    assert not tree.is_chain and DraftTree(torch.tensor([5, 6]), (-1, 0), None).is_chain


def test_a_tree_pass_equals_passes_over_each_branch():
    """The masked pass gives every node the logits of a plain causal
    pass over its own branch (GPT-2: absolute positions too)."""
    for architecture in ("gpt2", "llama", "qwen2"):
        target, _ = tiny_pair(architecture)
        text = torch.tensor([2, 3, 4])
        tree = DraftTree(torch.tensor([5, 6, 7, 8]), (-1, -1, 0, 2), None)
        cached = CachedModel(target)
        cached.feed(text[:-1])
        attend, positions = tree_attention(2, tree)
        logits = cached.feed(torch.cat([text[-1:], tree.tokens]), last=5, attend=attend, positions=positions)  # [5, V]
        for node in range(tree.size):
            branch = torch.cat([text, tree.tokens[tree.path_to(node)]])
            assert torch.allclose(logits[node + 1], target(input_ids=branch[None]).logits[0, -1], atol=1e-5), (
                architecture,
                node,
            )
        cached.keep([0, 1, 2, 3, 5])  # the text, the root, nodes 0 and 2
        after = cached.feed(torch.tensor([9]))[0]
        assert torch.allclose(after, target(input_ids=torch.tensor([[2, 3, 4, 5, 7, 9]])).logits[0, -1], atol=1e-5)


@pytest.mark.parametrize("architecture", ["gpt2", "llama", "qwen2"])
def test_greedy_equals_target_generate_for_every_shape(pairs, architecture):
    target, draft = pairs[architecture]
    side_branches = False
    for prompt in PROMPTS:
        expected = reference_greedy(target, prompt)
        for shape in SHAPES:
            result = speculative_generate(
                target, TreeDrafter(draft, **shape), torch.tensor(prompt), max_new_tokens=NEW_TOKENS, temperature=0
            )
            assert result.tokens == expected, f"{shape} prompt={prompt}"
            assert result.stats.target_passes == len(result.rounds)
            side_branches |= any(r.tree is not None and r.tree.path and r.tree.path[0] != 0 for r in result.rounds)
    assert side_branches  # some round was won by a branch other than the draft's first guess


@pytest.mark.parametrize("architecture", ["gpt2", "llama"])
def test_greedy_stops_at_eos_and_max_new_tokens_like_generate(pairs, architecture):
    target, draft = pairs[architecture]
    prompt = PROMPTS[0]
    free_run = reference_greedy(target, prompt)
    eos = free_run[len(free_run) // 2]
    expected = reference_greedy(target, prompt, eos_token_id=eos)
    for shape in SHAPES:
        result = speculative_generate(
            target,
            TreeDrafter(draft, **shape),
            torch.tensor(prompt),
            max_new_tokens=NEW_TOKENS,
            temperature=0,
            eos_token_id=eos,
        )
        assert result.tokens == expected
        for new_tokens in (1, 2, 7):
            short = speculative_generate(
                target, TreeDrafter(draft, **shape), torch.tensor(prompt), max_new_tokens=new_tokens, temperature=0
            )
            assert short.tokens == free_run[:new_tokens]


class CheckingTreeDrafter(TreeDrafter):
    """Checks both caches against fresh full passes at the start of every round."""

    target_caches: list[OneRow] = []

    def __init__(self, model, target, **shape):
        super().__init__(model, **shape)
        self.target = target
        self.rounds_checked = 0

    def grow(self, row, sequence, max_depth, sampling, generator):
        target_lm, draft_lm = self.target_caches[-1].lm, self.reader.texts[row].rows.lm
        assert target_lm.length == sequence.numel() - 1  # everything but the last token
        assert draft_lm.length <= sequence.numel() - 1
        for model, cached in ((self.target, target_lm), (self.reader.model.module, draft_lm)):
            if cached.length == 0:
                continue
            probe = copy.deepcopy(cached)
            from_cache = probe.feed(sequence[cached.length :], last=1)[-1]  # [V]
            fresh = model(input_ids=sequence[None]).logits[0, -1]  # [V]
            assert torch.allclose(from_cache, fresh, atol=1e-5)
        self.rounds_checked += 1
        return super().grow(row, sequence, max_depth, sampling, generator)


class RecordingCache(OneRow):
    def __init__(self, model, rows):
        super().__init__(model, list(rows)[0])
        CheckingTreeDrafter.target_caches.append(self)


@pytest.mark.parametrize("architecture", ["gpt2", "llama", "qwen2"])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_caches_hold_exactly_the_accepted_text_after_every_round(monkeypatch, architecture, temperature):
    target, draft = tiny_pair(architecture)
    target_cache_as(monkeypatch, target, RecordingCache)
    drafter = CheckingTreeDrafter(draft, target, budget=10, depth=4, width=3, c=0.0, verify_slope=0.0)
    result = speculative_generate(
        target, drafter, torch.tensor([2, 3, 4]), max_new_tokens=30, temperature=temperature, seed=0
    )
    # (a last round with no room drafts nothing)
    assert drafter.rounds_checked == sum(1 for r in result.rounds if r.drafted) > 3
    paths = [r.accepted for r in result.rounds[1:]]
    assert 0 < min(paths) or max(paths) > 1  # some rounds kept a path of several nodes
    # real trees
    assert any(r.tree is not None and len(set(r.tree.parents)) < len(r.tree.parents) for r in result.rounds)


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_budget_one_is_the_chain_with_gamma_one(pairs, temperature):
    target, draft = pairs["llama"]
    for seed in range(3):
        chain = speculative_generate(
            target, draft, torch.tensor([2, 3, 4]), gamma=1, max_new_tokens=30, temperature=temperature, seed=seed
        )
        tree = speculative_generate(
            target,
            TreeDrafter(draft, budget=1),
            torch.tensor([2, 3, 4]),
            max_new_tokens=30,
            temperature=temperature,
            seed=seed,
        )
        assert tree.tokens == chain.tokens
        assert [r.emitted for r in tree.rounds] == [r.emitted for r in chain.rounds]
        assert tree.stats.drafted == chain.stats.drafted and tree.stats.draft_passes == chain.stats.draft_passes


def test_bad_tree_settings_get_one_clear_error(pairs):
    target, draft = pairs["gpt2"]
    with pytest.raises(SpecdecError, match="budget, depth and width"):
        TreeDrafter(draft, budget=0)
    with pytest.raises(SpecdecError, match="must be >= 0"):
        TreeDrafter(draft, c=-1.0)
    with pytest.raises(SpecdecError, match="leave gamma out"):
        speculative_generate(target, TreeDrafter(draft), torch.tensor([2, 3]), gamma=4)
    sliding_target, sliding_draft = tiny_pair("gemma3")
    with pytest.raises(SpecdecError, match="sliding-window layers: draft a chain"):
        speculative_generate(sliding_target, TreeDrafter(sliding_draft), torch.tensor([2, 3]), max_new_tokens=20)


# ---- the sampled distribution ----------------------------------------------------------------

RUNS = 3000
SIGNIFICANCE = 1e-3
PROMPT = [2, 3, 4]
LENGTH = 4  # the prompt pass gives token 1; one tree round (depth 2) gives tokens 2..4
WIDE = dict(budget=6, depth=2, width=3, c=0.0, verify_slope=0.0)  # three guesses at the root, three below them


@pytest.fixture(scope="module")
def small_pair():
    """A vocabulary of 8 so every continuation can be enumerated; draft and target really differ."""
    return tiny_pair("gpt2", vocab_size=8, noise=0.4)


def tree_fit(target, draft, sampling: SamplingConfig, shape=WIDE, runs=RUNS):
    """The chi-square fit of the first round's tokens over `runs` rows of one batch, and how often a side branch won."""
    exact = exact_distribution(target, PROMPT, LENGTH, sampling)
    results = batched_runs(target, TreeDrafter(draft, **shape), sampling, PROMPT, None, runs)
    # not the first guess
    side_wins = sum(r.rounds[1].tree is not None and r.rounds[1].tree.path[:1] not in ((), (0,)) for r in results)
    fit = chi_square_test(Counter(tuple(r.tokens[1:LENGTH]) for r in results), exact)
    return fit, side_wins / runs


@pytest.mark.slow
@pytest.mark.parametrize("sampling", SAMPLINGS, ids=SAMPLING_IDS)
def test_matches_the_target_distribution(small_pair, sampling):
    target, draft = small_pair
    fit, side_wins = tree_fit(target, draft, sampling)
    assert fit.p_value > SIGNIFICANCE, fit
    assert side_wins > 0.05  # the root's second or third guess was accepted in many runs: side branches matter


@pytest.mark.slow
def test_the_default_tree_matches_the_target_distribution(small_pair):
    target, draft = small_pair
    fit, _ = tree_fit(target, draft, SamplingConfig(temperature=1.0), shape=dict(depth=2))
    assert fit.p_value > SIGNIFICANCE, fit


def broken_walk(p, tree, generator, candidates):
    """A tree walk that tests, at each node, the children `candidates` picks, each against the node's own p and q."""
    tokens = tree.tokens.tolist()
    node, path = ROOT, []
    while tree.children(node):
        r, s = p[node + 1], tree.q[node + 1]
        accepted = next(
            (
                c
                for c in candidates(tree.children(node), r)
                if float(torch.rand(1, generator=generator)) * s[tokens[c]] < r[tokens[c]]
            ),
            None,
        )
        if accepted is None:
            residual = (r - s).clamp(min=0)
            return _broken(path, int(sample((residual / residual.sum())[None], generator)), tree)
        path.append(accepted)
        node = accepted
    return _broken(path, int(sample(p[node + 1][None], generator)), tree)


def no_correction_between_siblings(p, tree, generator):
    """BROKEN: test every child in turn against the node's own p and q, as if each were the only one."""
    return broken_walk(p, tree, generator, lambda children, r: children)


def most_probable_child(p, tree, generator):
    """BROKEN: test only the child the target likes best (u < p/q), without any correction for choosing it."""
    return broken_walk(
        p, tree, generator, lambda children, r: [max(children, key=lambda c: float(r[int(tree.tokens[c])]))]
    )


def _broken(path, next_token, tree):
    return Verdict(
        tuple(path), next_token, False, (None,) * tree.size, (None,) * tree.size, (0.0,) * tree.size, (0.0,) * tree.size
    )


@pytest.mark.slow
@pytest.mark.parametrize("broken_rule", [no_correction_between_siblings, most_probable_child])
def test_negative_control_broken_tree_rules_fail(small_pair, monkeypatch, broken_rule):
    """Power: no correction between siblings moves the distribution by D = 0.148, only the most probable child by
    D = 0.064 (statistic 234 with 42 degrees of freedom at 3,000 runs). At RUNS = 3,000 the weaker bug's statistic has
    mean 42 + 3,000 x 0.064 = 234 against the p = 1e-3 threshold of 76: power above 0.999 with D a third smaller."""
    target, draft = small_pair
    monkeypatch.setattr(specdec.engine.rounds, "verify_tree_sampled", broken_rule)
    fit, _ = tree_fit(target, draft, SamplingConfig(temperature=1.0))
    assert fit.p_value < SIGNIFICANCE, fit


# ---- the rule at one node, in the NumPy reference ----------------------------------------------

TOY_CASES = [
    ((0.3, 0.4, 0.3), (0.6, 0.2, 0.2)),
    ((0.1, 0.1, 0.8), (0.45, 0.45, 0.1)),
    ((0.5, 0.25, 0.25, 0.0), (0.1, 0.2, 0.3, 0.4)),
]


def no_correction_rule(p, q, candidates, rng):
    """BROKEN: every guess is tested against p and q themselves,
    the first that passes is emitted, else a residual sample."""
    from specdec.reference.rule import sample_from
    from specdec.reference.theory import residual_distribution

    s = np.asarray(q, dtype=float)
    for index in range(candidates):
        x = sample_from(s, rng)
        if rng.random() * q[x] < p[x]:
            return x, index
        s = s.copy()
        s[x] = 0.0
        s = s / s.sum()
    return sample_from(residual_distribution(p, q), rng), None


@pytest.mark.slow
@pytest.mark.parametrize("p, q", TOY_CASES)
def test_the_reference_multi_candidate_rule_emits_p_and_accepts_as_often_as_theory_says(p, q):
    from specdec.reference.rule import multi_candidate_rule
    from specdec.reference.stats import binomial_standard_error
    from specdec.reference.theory import multi_candidate_acceptance

    p, q = np.array(p), np.array(q)
    rng = np.random.default_rng(7)
    trials = 40_000
    for candidates in (1, 2, 3):
        outcomes = [multi_candidate_rule(p, q, candidates, rng) for _ in range(trials)]
        counts = Counter(token for token, _ in outcomes)
        fit = chi_square_test(
            {(token,): n for token, n in counts.items()}, {(i,): float(v) for i, v in enumerate(p) if v > 0}
        )
        assert fit.p_value > SIGNIFICANCE, (candidates, fit)
        accepted = sum(index is not None for _, index in outcomes) / trials
        expected = multi_candidate_acceptance(p, q, candidates)
        assert abs(accepted - expected) < 5 * binomial_standard_error(expected, trials) + 1e-9
    assert multi_candidate_acceptance(p, q, 2) > multi_candidate_acceptance(p, q, 1)  # a second guess helps


@pytest.mark.slow
def test_negative_control_the_rule_without_correction_is_caught():
    p, q = np.array(TOY_CASES[1][0]), np.array(TOY_CASES[1][1])
    rng = np.random.default_rng(7)
    counts = Counter(no_correction_rule(p, q, 2, rng)[0] for _ in range(40_000))
    fit = chi_square_test({(token,): n for token, n in counts.items()}, {(i,): float(v) for i, v in enumerate(p)})
    assert fit.p_value < SIGNIFICANCE, fit
