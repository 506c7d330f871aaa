"""The drafting families that need only the target: Token Recycling, lookahead, suffix decoding, layer skipping.

For each drafter, against the trusted references:
- greedy output equals the target's own `generate` (several prompts, three architectures), with an
  end-of-sequence token and `max_new_tokens` honoured exactly;
- on a repetitive prompt the drafter really proposes and the target really accepts (asserted);
- the sampled distribution equals the target's (chi-square against enumeration, as in
  test_distribution.py) at two temperatures with top-k or top-p, and a broken rule fails the same test
  (fixed candidates that are tested against the wrong row; a skipped residual);
- after every round the target's cache equals a fresh pass over the text (and layer skipping's own
  cache a fresh pass of the skipped model).
"""

import copy

import pytest
import torch
from distribution_check import RUNS, SIGNIFICANCE, speculative_fit
from test_drafter_contract import broken_point_mass_rule as broken_point_mass_chain_rule
from test_greedy import PROMPTS, reference_greedy
from tiny_models import target_cache_as, tiny_model

import specdec.engine.rounds
import specdec.generation.run
from specdec import (
    LayerSkipDrafter,
    LookaheadDrafter,
    SpecdecError,
    SuffixDrafter,
    TokenRecyclingDrafter,
    speculative_generate,
)
from specdec.drafting.layer_skip import least_influential_layers, skip_layers
from specdec.runtime.pytorch.one_row import OneRow
from specdec.runtime.pytorch.kv_cache import CachedModel
from specdec.engine.sampling import SamplingConfig
from specdec.engine.tree_verification import _verdict, verify_tree_sampled
from specdec.engine.verification import verify_sampled

REPETITIVE = [7, 8, 9, 10, 11, 7, 8, 9, 10, 11, 7, 8, 9]
NEW_TOKENS = 40

# name -> a fresh drafter for a target (layer skipping needs a target of more than two layers to skip any)
FAMILIES = {
    "recycling": lambda target: TokenRecyclingDrafter(),
    "lookahead": lambda target: LookaheadDrafter(),
    "suffix": lambda target: SuffixDrafter(),
    "suffix-chain": lambda target: SuffixDrafter(tree=False),
    "layer-skip": lambda target: LayerSkipDrafter(target, fraction=0.34),
}


@pytest.fixture(scope="module")
def deep_targets():
    """Four-layer tiny targets (two of them skippable), per architecture."""
    return {architecture: tiny_model(architecture, layers=4, seed=3) for architecture in ("gpt2", "llama", "qwen2")}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("architecture", ["gpt2", "llama", "qwen2"])
def test_greedy_equals_target_generate(deep_targets, family, architecture):
    target = deep_targets[architecture]
    accepted = drafted = 0
    for prompt in (*PROMPTS, REPETITIVE):
        expected = reference_greedy(target, prompt)
        result = speculative_generate(
            target, FAMILIES[family](target), torch.tensor(prompt), max_new_tokens=NEW_TOKENS, temperature=0
        )
        assert result.tokens == expected, (family, architecture, prompt)
        assert result.stats.target_passes == len(result.rounds)
        accepted, drafted = accepted + result.stats.accepted, drafted + result.stats.drafted
    assert accepted >= 10 and drafted > 0, (accepted, drafted)  # it proposed, and the target took a real share


@pytest.mark.parametrize("family", FAMILIES)
def test_a_repetitive_text_is_drafted_and_accepted(deep_targets, family):
    """The target's greedy text from a repetitive prompt repeats itself: each method must draft much of it."""
    target = deep_targets["llama"]
    result = speculative_generate(
        target, FAMILIES[family](target), torch.tensor(REPETITIVE), max_new_tokens=60, temperature=0
    )
    assert result.tokens == reference_greedy(target, REPETITIVE, max_new_tokens=60)
    assert result.stats.accepted >= 20, result.stats  # a third of the text came from accepted drafts
    assert result.stats.tokens_per_target_pass > 1.4


@pytest.mark.parametrize("family", FAMILIES)
def test_eos_and_max_new_tokens_like_generate(deep_targets, family):
    target = deep_targets["gpt2"]
    prompt = REPETITIVE
    free_run = reference_greedy(target, prompt)
    eos = free_run[len(free_run) // 2]
    expected = reference_greedy(target, prompt, eos_token_id=eos)
    assert (
        speculative_generate(
            target,
            FAMILIES[family](target),
            torch.tensor(prompt),
            max_new_tokens=NEW_TOKENS,
            temperature=0,
            eos_token_id=eos,
        ).tokens
        == expected
    )
    for new_tokens in (1, 2, 7):
        short = speculative_generate(
            target, FAMILIES[family](target), torch.tensor(prompt), max_new_tokens=new_tokens, temperature=0
        )
        assert short.tokens == free_run[:new_tokens]


# --- the sampled distribution ---------------------------------------------------------------------------

SAMPLED = [SamplingConfig(temperature=1.0, top_k=6), SamplingConfig(temperature=0.7, top_p=0.9)]


@pytest.fixture(scope="module")
def small_target():
    """A vocabulary of 8 so every continuation can be enumerated; three layers so that one can be skipped."""
    return tiny_model("gpt2", vocab_size=8, layers=3, seed=0)


@pytest.fixture(scope="module")
def echo_prompt(small_target):
    """A prompt that ends with the target's own greedy text, so
    lookups and the table find what the target is likely to say."""
    return [2, 3, 4] + reference_greedy(small_target, [2, 3, 4], max_new_tokens=8)


# With 8 tokens Token Recycling's 8 candidates would put every token on the tree: 3 keep some off it, and 4
# nodes keep the tree small enough that accepted nodes are not rare among the drafted ones.
SAMPLED_FAMILIES = {name: make for name, make in FAMILIES.items() if name != "suffix-chain"} | {
    "recycling": lambda target: TokenRecyclingDrafter(candidates=3, budget=4)
}


@pytest.mark.slow
@pytest.mark.parametrize("sampling", SAMPLED, ids=["t1.0_top_k6", "t0.7_top_p0.9"])
@pytest.mark.parametrize("family", SAMPLED_FAMILIES)
def test_sampled_distribution_is_the_targets(small_target, echo_prompt, family, sampling):
    fit, acceptance = speculative_fit(
        small_target,
        lambda: SAMPLED_FAMILIES[family](small_target),
        sampling,
        prompt=echo_prompt,
        gamma_factory=lambda: None,
        runs=RUNS,
    )
    assert fit.p_value > SIGNIFICANCE, (family, fit)
    # both outcomes came up often: 2% of some 6,000 drafted nodes is over 100
    assert 0.02 < acceptance < 0.95, acceptance


def wrong_row_rule(p, tree, generator):
    """BROKEN: each candidate is tested against the target's p at its own row (after it) instead of its parent's."""
    shifted = p.clone()
    rows = torch.tensor(tree.parents) + 1
    for node in range(tree.size):
        shifted[rows[node]] = p[node + 1]
    return verify_tree_sampled(shifted, tree, generator)


def wrong_row_chain_rule(p, q, drafted, generator):
    """BROKEN, the same for a chain of candidates (a tree of width one): token i tested against p after it."""
    return verify_sampled(torch.cat([p[1:], p[-1:]]), q, drafted, generator)


def broken_point_mass_rule(p, tree, generator):
    """BROKEN: fixed candidates kept with probability p(x), but a rejected x stays in what is sampled next."""
    from specdec.engine.sampling import sample

    tokens, path, node = tree.tokens.tolist(), [], -1
    tested, uniforms = [None] * tree.size, [None] * tree.size
    while True:
        children = tree.children(node)
        accepted = None
        for child in children:
            uniforms[child] = float(torch.rand(1, generator=generator))
            tested[child] = uniforms[child] < float(p[node + 1, tokens[child]])
            if tested[child]:
                accepted = child
                break
        if accepted is None:
            return _verdict(path, int(sample(p[node + 1][None], generator)), not children, tested, uniforms, p, tree)
        path.append(accepted)
        node = accepted


BROKEN = {
    "wrong row": (wrong_row_rule, wrong_row_chain_rule),
    "point mass": (broken_point_mass_rule, broken_point_mass_chain_rule),
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "family, broken", [("recycling", "wrong row"), ("lookahead", "point mass"), ("suffix", "point mass")]
)
def test_negative_control_broken_rules_fail(small_target, echo_prompt, monkeypatch, family, broken):
    """The same test, with the rule broken (for trees, and for the chains a round may propose): candidates tested
    against the wrong row, or rejected ones left in the draw.

    Power: the wrong row moves the distribution by D = 14.2; a rejected candidate left in the draw by D = 0.081 for
    lookahead and 0.102 for suffix decoding (statistics 154 and 184 with 32 degrees of freedom at 1,500 runs). At RUNS =
    3,000 the weakest has mean 32 + 3,000 x 0.081 = 275 against the p = 1e-3 threshold of 62: power above 0.999 with D
    a third smaller (at 1,500 runs it was 0.995)."""
    tree_rule, chain_rule = BROKEN[broken]
    monkeypatch.setattr(specdec.engine.rounds, "verify_tree_sampled", tree_rule)
    monkeypatch.setattr(specdec.engine.rounds, "verify_sampled", chain_rule)
    fit, _ = speculative_fit(
        small_target,
        lambda: SAMPLED_FAMILIES[family](small_target),
        SamplingConfig(temperature=1.0),
        prompt=echo_prompt,
        gamma_factory=lambda: None,
        runs=RUNS,
    )
    assert fit.p_value < SIGNIFICANCE, (family, fit)


@pytest.mark.slow
def test_negative_control_layer_skip_with_a_broken_chain_rule(small_target, monkeypatch):
    """Layer skipping drafts a chain with its real q: the chain rule's negative control (skip the residual) must fail.

    Power: D = 0.081 (statistic 298 with 55 degrees of freedom at 3,000 runs); at 3,000 runs the mean is 298 against the
    p = 1e-3 threshold of 93: power above 0.999 with D a third smaller."""
    from test_distribution import skip_the_residual

    monkeypatch.setattr(specdec.engine.rounds, "verify_sampled", skip_the_residual)
    fit, _ = speculative_fit(
        small_target,
        lambda: FAMILIES["layer-skip"](small_target),
        SamplingConfig(temperature=1.0),
        prompt=[2, 3, 4, 2, 3],
        gamma_factory=lambda: None,
    )
    assert fit.p_value < SIGNIFICANCE, fit


# --- caches ---------------------------------------------------------------------------------------------


class RecordingCache(OneRow):
    """The target's cache of one text, remembered so a test can hold it to a fresh pass."""

    made: list[OneRow] = []

    def __init__(self, model, rows):
        super().__init__(model, list(rows)[0])
        RecordingCache.made.append(self)


def _check_cache(cached: CachedModel, model, sequence: torch.Tensor) -> None:
    """The cache plus the tokens it lacks gives the logits of a fresh pass over the whole text."""
    probe = copy.deepcopy(cached)
    from_cache = probe.feed(sequence[cached.length :], last=1)[-1]
    fresh = model(input_ids=sequence[None]).logits[0, -1]
    assert torch.allclose(from_cache, fresh, atol=1e-5)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize("family", FAMILIES)
def test_caches_equal_a_fresh_pass_after_every_round(deep_targets, monkeypatch, family, temperature):
    target = deep_targets["qwen2"]
    target_cache_as(monkeypatch, target, RecordingCache)
    drafter = FAMILIES[family](target)
    checked = []
    real_draft = drafter.draft

    def checking_draft(requests):
        (request,) = requests.values()
        target_lm = RecordingCache.made[-1].lm
        assert target_lm.length == request.sequence.numel() - 1  # every token of the text but the last
        _check_cache(target_lm, target, request.sequence)
        own = getattr(drafter, "texts", {}).get(0)
        inner = getattr(own, "inner", None)
        if inner is not None and inner.cache.length(0):  # layer skipping's own cache, against its own model
            _check_cache(inner.cache.lm, skip_layers(target, own.skipped), request.sequence)
        checked.append(True)
        return real_draft(requests)

    drafter.draft = checking_draft
    result = speculative_generate(
        target, drafter, torch.tensor(REPETITIVE), max_new_tokens=30, temperature=temperature, seed=0
    )
    # every round (a last one may have no room)
    assert len(result.rounds) - 2 <= len(checked) <= len(result.rounds) - 1 and len(checked) > 3
    assert result.stats.accepted > 0


# --- the pieces -----------------------------------------------------------------------------------------


def test_recycling_keeps_its_table_across_texts_and_resets(deep_targets):
    target = deep_targets["llama"]
    drafter = TokenRecyclingDrafter()
    first = speculative_generate(target, drafter, torch.tensor(REPETITIVE), max_new_tokens=30, temperature=0)
    again = speculative_generate(target, drafter, torch.tensor(REPETITIVE), max_new_tokens=30, temperature=0)
    # a warm table drafts more
    assert again.tokens == first.tokens and again.stats.target_passes < first.stats.target_passes
    drafter.reset()
    assert drafter.table is None


def test_suffix_drafter_learns_from_earlier_outputs_and_a_corpus(deep_targets):
    target = deep_targets["llama"]
    prompt = [2, 3, 4, 5]
    expected = reference_greedy(target, prompt)
    cold = speculative_generate(target, SuffixDrafter(), torch.tensor(prompt), max_new_tokens=NEW_TOKENS, temperature=0)
    session = SuffixDrafter()
    speculative_generate(target, session, torch.tensor(prompt), max_new_tokens=NEW_TOKENS, temperature=0)
    warm = speculative_generate(target, session, torch.tensor(prompt), max_new_tokens=NEW_TOKENS, temperature=0)
    read = speculative_generate(
        target,
        SuffixDrafter(corpus=[prompt + expected]),
        torch.tensor(prompt),
        max_new_tokens=NEW_TOKENS,
        temperature=0,
    )
    assert cold.tokens == warm.tokens == read.tokens == expected
    assert warm.stats.target_passes < cold.stats.target_passes and read.stats.target_passes < cold.stats.target_passes


def test_layer_skip_view_shares_weights_and_the_rule_picks_quiet_layers():
    target = tiny_model("llama", layers=6, seed=1)
    view = skip_layers(target, [2, 3])
    assert len(view.model.layers) == 4 and len(target.model.layers) == 6
    assert view.model.layers[2] is target.model.layers[4] and view.lm_head is target.lm_head
    with torch.no_grad():
        out = target(input_ids=torch.tensor([[2, 3, 4, 5]]), output_hidden_states=True)
    chosen = least_influential_layers([state[0] for state in out.hidden_states], 2)
    assert len(chosen) == 2 and 0 not in chosen and 5 not in chosen
    with pytest.raises(SpecdecError, match="the first and the last"):
        LayerSkipDrafter(target, skip=[0, 2])
    other = tiny_model("llama", layers=6, seed=2)
    with pytest.raises(SpecdecError, match="drafts for the target it was made with"):
        speculative_generate(other, LayerSkipDrafter(target), torch.tensor([2, 3]), max_new_tokens=4)


def test_the_registry_makes_what_it_lists_and_the_catalogs_pairs_name_it(small_target):
    """One list of methods (`specdec.registry`): each target-only one makes a drafter of its class that declares its
    class's capabilities; the catalogue's pairs draft with a zoo model or a listed method; other names are refused."""
    from specdec.registry import METHODS, TARGET, named_or_implied_method, pairs, target_only
    from specdec.runtime import as_model
    from specdec.zoo.catalog import MODELS

    for name in target_only():
        method = METHODS[name]
        drafter = method.make({TARGET: as_model(small_target)}, method.options())
        assert isinstance(drafter, method.drafter)
        assert drafter.capabilities.sizes_rounds == method.capabilities.sizes_rounds
    assert {pair.draft for pair in pairs().values()} <= set(MODELS) | set(target_only()) | {"eagle"}
    with pytest.raises(SpecdecError, match="unknown drafting method"):
        named_or_implied_method("prompt-lookup", {TARGET: as_model(small_target)}, "medusa")
