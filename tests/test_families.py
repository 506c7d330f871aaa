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
from distribution_check import FAST_RUNS, SIGNIFICANCE, speculative_fit
from test_greedy import PROMPTS, reference_greedy
from tiny_models import tiny_model

import specdec.generation.speculative
from specdec import (
    LayerSkipDrafter,
    LookaheadDrafter,
    SpecdecError,
    SuffixDrafter,
    TokenRecyclingDrafter,
    speculative_generate,
)
from specdec.drafting.layer_skip import least_influential_layers, skip_layers
from specdec.engine.kv_cache import CachedModel
from specdec.engine.sampling import SamplingConfig
from specdec.engine.tree_verification import verify_tree_sampled
from test_drafter_contract import broken_point_mass_rule

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
        result = speculative_generate(target, FAMILIES[family](target), torch.tensor(prompt), max_new_tokens=NEW_TOKENS, temperature=0)
        assert result.tokens == expected, (family, architecture, prompt)
        assert result.stats.target_passes == len(result.rounds)
        accepted, drafted = accepted + result.stats.accepted, drafted + result.stats.drafted
    assert accepted >= 10 and drafted > 0, (accepted, drafted)       # it proposed, and the target took a real share


@pytest.mark.parametrize("family", FAMILIES)
def test_a_repetitive_text_is_drafted_and_accepted(deep_targets, family):
    """The target's greedy text from a repetitive prompt repeats itself: each method must draft much of it."""
    target = deep_targets["llama"]
    result = speculative_generate(target, FAMILIES[family](target), torch.tensor(REPETITIVE), max_new_tokens=60, temperature=0)
    assert result.tokens == reference_greedy(target, REPETITIVE, max_new_tokens=60)
    assert result.stats.accepted >= 20, result.stats                       # a third of the text came from accepted drafts
    assert result.stats.tokens_per_target_pass > 1.4


@pytest.mark.parametrize("family", FAMILIES)
def test_eos_and_max_new_tokens_like_generate(deep_targets, family):
    target = deep_targets["gpt2"]
    prompt = REPETITIVE
    free_run = reference_greedy(target, prompt)
    eos = free_run[len(free_run) // 2]
    expected = reference_greedy(target, prompt, eos_token_id=eos)
    assert speculative_generate(target, FAMILIES[family](target), torch.tensor(prompt), max_new_tokens=NEW_TOKENS, temperature=0,
                                eos_token_id=eos).tokens == expected
    for new_tokens in (1, 2, 7):
        short = speculative_generate(target, FAMILIES[family](target), torch.tensor(prompt), max_new_tokens=new_tokens, temperature=0)
        assert short.tokens == free_run[:new_tokens]


# --- the sampled distribution ---------------------------------------------------------------------------

SAMPLED = [SamplingConfig(temperature=1.0, top_k=6), SamplingConfig(temperature=0.7, top_p=0.9)]


@pytest.fixture(scope="module")
def small_target():
    """A vocabulary of 8 so every continuation can be enumerated; three layers so that one can be skipped."""
    return tiny_model("gpt2", vocab_size=8, layers=3, seed=0)


@pytest.fixture(scope="module")
def echo_prompt(small_target):
    """A prompt that ends with the target's own greedy text, so lookups and the table find what the target is likely to say."""
    return [2, 3, 4] + reference_greedy(small_target, [2, 3, 4], max_new_tokens=8)


# With 8 tokens Token Recycling's 8 candidates would put every token on the tree: 3 keep some off it, and 4
# nodes keep the tree small enough that accepted nodes are not rare among the drafted ones.
SAMPLED_FAMILIES = {name: make for name, make in FAMILIES.items() if name != "suffix-chain"} | {
    "recycling": lambda target: TokenRecyclingDrafter(candidates=3, budget=4)}


@pytest.mark.parametrize("sampling", SAMPLED, ids=["t1.0_top_k6", "t0.7_top_p0.9"])
@pytest.mark.parametrize("family", SAMPLED_FAMILIES)
def test_sampled_distribution_is_the_targets(small_target, echo_prompt, family, sampling):
    fit, acceptance = speculative_fit(small_target, lambda: SAMPLED_FAMILIES[family](small_target), sampling, prompt=echo_prompt,
                                      gamma_factory=lambda: None, runs=FAST_RUNS)
    assert fit.p_value > SIGNIFICANCE, (family, fit)
    assert 0.05 < acceptance < 0.95, acceptance          # both outcomes of the rule came up often


def wrong_row_rule(p, tree, generator):
    """BROKEN: each candidate is tested against the target's p at its own row (after it) instead of its parent's."""
    shifted = p.clone()
    rows = torch.tensor(tree.parents) + 1
    for node in range(tree.size):
        shifted[rows[node]] = p[node + 1]
    return verify_tree_sampled(shifted, tree, generator)


@pytest.mark.parametrize("family, broken_rule", [("recycling", wrong_row_rule), ("lookahead", broken_point_mass_rule),
                                                 ("suffix", broken_point_mass_rule)])
def test_negative_control_broken_rules_fail(small_target, echo_prompt, monkeypatch, family, broken_rule):
    """The same test, with the tree rule broken: candidates tested against the wrong row, or rejected ones left in the draw."""
    monkeypatch.setattr(specdec.generation.speculative, "verify_tree_sampled", broken_rule)
    fit, _ = speculative_fit(small_target, lambda: SAMPLED_FAMILIES[family](small_target), SamplingConfig(temperature=1.0),
                             prompt=echo_prompt, gamma_factory=lambda: None, runs=FAST_RUNS)
    assert fit.p_value < SIGNIFICANCE, (family, fit)


def test_negative_control_layer_skip_with_a_broken_chain_rule(small_target, monkeypatch):
    """Layer skipping drafts a chain with its real q: the chain rule's negative control (skip the residual) must fail
    (with the full 3000 runs: this bug moves less mass than the point-mass ones, and 1500 runs left it at p = 0.009)."""
    from test_distribution import skip_the_residual

    monkeypatch.setattr(specdec.generation.speculative, "verify_sampled", skip_the_residual)
    fit, _ = speculative_fit(small_target, lambda: FAMILIES["layer-skip"](small_target), SamplingConfig(temperature=1.0),
                             prompt=[2, 3, 4, 2, 3], gamma_factory=lambda: None)
    assert fit.p_value < SIGNIFICANCE, fit


# --- caches ---------------------------------------------------------------------------------------------


class RecordingCachedModel(CachedModel):
    made: list[CachedModel] = []

    def __init__(self, model, *args, **kwargs):
        super().__init__(model, *args, **kwargs)
        RecordingCachedModel.made.append(self)


def _check_cache(cached: CachedModel, model, sequence: torch.Tensor) -> None:
    """The cache plus the tokens it lacks gives the logits of a fresh pass over the whole text."""
    probe = copy.deepcopy(cached)
    from_cache = probe.feed(sequence[cached.length:], keep=1)[-1]
    fresh = model(input_ids=sequence[None]).logits[0, -1]
    assert torch.allclose(from_cache, fresh, atol=1e-5)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize("family", FAMILIES)
def test_caches_equal_a_fresh_pass_after_every_round(deep_targets, monkeypatch, family, temperature):
    target = deep_targets["qwen2"]
    monkeypatch.setattr(specdec.generation.speculative, "CachedModel", RecordingCachedModel)
    drafter = FAMILIES[family](target)
    checked = []
    real_draft = drafter.draft

    def checking_draft(request):
        target_lm = RecordingCachedModel.made[-1]
        assert target_lm.length == request.sequence.numel() - 1            # every token of the text but the last
        _check_cache(target_lm, target, request.sequence)
        own = getattr(drafter, "inner", None)
        if own is not None and own.cached.length:                         # layer skipping's own cache, against its own model
            _check_cache(own.cached, skip_layers(target, drafter.skipped), request.sequence)
        checked.append(True)
        return real_draft(request)

    drafter.draft = checking_draft
    result = speculative_generate(target, drafter, torch.tensor(REPETITIVE), max_new_tokens=30, temperature=temperature, seed=0)
    assert len(result.rounds) - 2 <= len(checked) <= len(result.rounds) - 1 and len(checked) > 3   # every round (a last one may have no room)
    assert result.stats.accepted > 0


# --- the pieces -----------------------------------------------------------------------------------------


def test_recycling_keeps_its_table_across_texts_and_resets(deep_targets):
    target = deep_targets["llama"]
    drafter = TokenRecyclingDrafter()
    first = speculative_generate(target, drafter, torch.tensor(REPETITIVE), max_new_tokens=30, temperature=0)
    again = speculative_generate(target, drafter, torch.tensor(REPETITIVE), max_new_tokens=30, temperature=0)
    assert again.tokens == first.tokens and again.stats.target_passes < first.stats.target_passes   # a warm table drafts more
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
    read = speculative_generate(target, SuffixDrafter(corpus=[prompt + expected]), torch.tensor(prompt), max_new_tokens=NEW_TOKENS,
                                temperature=0)
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


def test_the_catalog_names_the_same_methods_the_engine_makes(small_target):
    """The sidebar, the CLI and the bench read the catalog's lists; the engine's registry is the truth they must match."""
    from specdec.drafting import TARGET_ONLY, by_name
    from specdec.zoo.catalog import OWN_ROUNDS_DRAFTS, TARGET_ONLY_DRAFTS, needs_draft_model

    assert set(TARGET_ONLY_DRAFTS) == set(TARGET_ONLY)
    sizes_own_rounds = {name for name in TARGET_ONLY if by_name(name, small_target).capabilities.sizes_rounds}
    assert sizes_own_rounds == set(OWN_ROUNDS_DRAFTS)
    assert not any(needs_draft_model(name) for name in TARGET_ONLY) and needs_draft_model("qwen2.5-coder-0.5b")
    with pytest.raises(SpecdecError, match="unknown drafting method"):
        by_name("medusa", small_target)
