"""Quantized weights: exact against the quantized target as loaded, greedy and sampled, and cached like a converted
copy.

A quantized target is a different target, so every check here compares with that same quantized
object: its own `generate` for greedy, its exact distribution (by enumeration) for sampling. What
makes this possible is that a quantized layer's row for a token does not depend on the other
tokens of the pass; PyTorch's own dynamic quantization fails that (the negative control below).
"""

import copy
import warnings

import pytest
import torch
from distribution_check import SIGNIFICANCE, speculative_fit
from test_distribution import skip_the_residual
from test_greedy import PROMPTS, chains_and_a_tree_equal_greedy, reference_greedy
from tiny_models import tiny_model, tiny_pair
from transformers import DynamicCache

import specdec.engine.rounds
from specdec import SpecdecError, speculative_generate
from specdec.runtime.costs import weight_cost_ratio
from specdec.runtime.pytorch.torch_model import TorchModel
from specdec.engine.sampling import SamplingConfig
from specdec.kernels.quantization import (
    Int4Linear,
    Int8Linear,
    SharedInput,
    check_quantization,
    quantization_of,
    quantize_model,
)

QUANTIZATIONS = ["int8", "int4"]


def quantized(model: torch.nn.Module, quantization: str) -> torch.nn.Module:
    return quantize_model(copy.deepcopy(model), quantization)


@pytest.mark.parametrize("layer_class", [Int8Linear, Int4Linear])
def test_a_tokens_row_does_not_depend_on_the_other_tokens_of_the_pass(layer_class):
    torch.manual_seed(0)
    layer = torch.nn.Linear(64, 48)
    quantized_layer = layer_class.from_linear(layer)
    x = torch.randn(7, 64) * torch.rand(7, 1) * 10  # tokens of very different sizes
    with torch.no_grad():
        together = quantized_layer(x)  # [7, 48]
        alone = torch.cat([quantized_layer(row[None]) for row in x])  # seven passes of one token
        exact = layer(x)
    assert torch.equal(together, alone)
    relative_error = float((together - exact).norm() / exact.norm())
    assert relative_error < (0.02 if layer_class is Int8Linear else 0.1)  # still close to the float layer


def test_negative_control_pytorchs_dynamic_int8_depends_on_the_other_tokens():
    """One activation scale for the whole pass: a token's output moves with its neighbours (why `Int8Linear` exists)."""
    torch.manual_seed(0)
    layer = torch.nn.Sequential(torch.nn.Linear(64, 48))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dynamic = torch.ao.quantization.quantize_dynamic(layer, {torch.nn.Linear}, dtype=torch.qint8)
    x = torch.randn(7, 64) * torch.rand(7, 1) * 10
    assert not torch.equal(dynamic(x), torch.cat([dynamic(row[None]) for row in x]))


@pytest.mark.parametrize("quantization", QUANTIZATIONS)
@pytest.mark.parametrize("architecture", ["llama", "qwen2"])
def test_a_quantized_model_gives_a_token_the_same_logits_in_a_pass_as_alone(architecture, quantization):
    """Linear layers and attention alike: the verification pass and plain decoding see bit-identical logits."""
    model = quantized(tiny_model(architecture, vocab_size=32, hidden_size=64, layers=3), quantization)
    ids = torch.randint(0, 32, (1, 40), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        cache = DynamicCache(config=model.config)
        model(input_ids=ids[:, :30], past_key_values=cache, use_cache=True)
        steps = torch.cat(
            [model(input_ids=ids[:, i : i + 1], past_key_values=cache, use_cache=True).logits[0] for i in range(30, 40)]
        )
        whole = model(input_ids=ids).logits[0, 30:]  # one pass over all 40 tokens
    assert torch.equal(whole, steps)


def each_layer_alone(model: torch.nn.Module) -> torch.nn.Module:
    """The same int8 model with every linear layer in its own fbgemm call (no `SharedInput`)."""
    for module in model.modules():
        if isinstance(module, Int8Linear) and module._shared is not None:
            module._shared = None
            module.pack()
    return model


@pytest.mark.parametrize("architecture", ["llama", "qwen2"])  # qwen2: q, k and v have biases
def test_siblings_computed_in_one_call_give_each_layers_own_bits(architecture):
    """q/k/v and gate/up share one fbgemm call (`SharedInput`): every pass shape the engine makes gives the bits each
    layer alone gives, so the model is the same p, only faster."""
    model = quantized(tiny_model(architecture, vocab_size=32, hidden_size=64, layers=3), "int8")
    shared = {
        name.rpartition(".")[2]
        for name, m in model.named_modules()
        if isinstance(m, Int8Linear) and m._shared is not None
    }
    assert shared == {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"}
    assert len({id(m._shared) for m in model.modules() if isinstance(m, Int8Linear) and m._shared is not None}) == 2 * 3
    alone = each_layer_alone(copy.deepcopy(model))
    ids = torch.randint(0, 32, (1, 40), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        outputs = []
        for each in (model, alone):  # the prompt, one-token steps, a chain of 6, a pass of 18
            cache = DynamicCache(config=each.config)
            passes = [each(input_ids=ids[:, :10], past_key_values=cache, use_cache=True).logits]
            passes += [
                each(input_ids=ids[:, i : i + 1], past_key_values=cache, use_cache=True).logits for i in range(10, 16)
            ]
            passes += [
                each(input_ids=ids[:, 16:22], past_key_values=cache, use_cache=True).logits,
                each(input_ids=ids[:, 22:40], past_key_values=cache, use_cache=True).logits,
            ]
            outputs.append(passes)
    assert all(torch.equal(fused, own) for fused, own in zip(*outputs))


def test_a_shared_call_is_right_in_any_order_and_when_the_input_changes():
    layers = [torch.nn.Linear(32, n) for n in (16, 8, 8)]
    alone = [Int8Linear.from_linear(layer) for layer in layers]
    group = SharedInput([Int8Linear.from_linear(layer, pack=False) for layer in layers])
    q, k, v = group.members
    x, y = torch.randn(3, 32), torch.randn(3, 32)
    assert torch.equal(v(x), alone[2](x)) and torch.equal(q(x), alone[0](x))  # v first: still its own columns
    assert torch.equal(k(y), alone[1](y))  # another input: computed afresh
    y.mul_(2)  # the same tensor, changed in place
    assert torch.equal(k(y), alone[1](y)) and torch.equal(q(y[:2]), alone[0](y[:2]))
    first = q(x)
    first.mul_(0)  # a caller changing its output in place
    # a round ends: nothing kept
    assert torch.equal(k(x), alone[1](x)) and torch.equal(v(x), alone[2](x)) and group._input is None
    assert torch.equal(q(x), alone[0](x))


@pytest.fixture(scope="module")
def quantized_pairs():
    """(architecture, quantization) -> (quantized target, its float target, quantized draft)."""
    pairs = {}
    for architecture in ("llama", "qwen2"):
        target, draft = tiny_pair(architecture, vocab_size=32)
        for quantization in QUANTIZATIONS:
            pairs[architecture, quantization] = (quantized(target, quantization), target, quantized(draft, "int4"))
    return pairs


@pytest.mark.parametrize("quantization", QUANTIZATIONS)
@pytest.mark.parametrize("architecture", ["llama", "qwen2"])
def test_greedy_equals_the_quantized_targets_own_generate(quantized_pairs, architecture, quantization):
    target, float_target, draft = quantized_pairs[architecture, quantization]
    assert quantization_of(target) == quantization and type(target.lm_head).__name__ in ("Int8Linear", "Int4Linear")
    assert chains_and_a_tree_equal_greedy(target, draft) > 0  # the quantized target's own greedy output
    for prompt in PROMPTS:
        expected = reference_greedy(target, prompt)
        own = speculative_generate(
            target, target, torch.tensor(prompt), gamma=4, max_new_tokens=len(expected), temperature=0
        )
        assert own.tokens == expected and own.stats.acceptance_rate == 1.0  # the quantized target drafting for itself
    differs = any(reference_greedy(float_target, prompt) != reference_greedy(target, prompt) for prompt in PROMPTS)
    assert differs or quantization == "int8"  # int4 really is another model here (so the check above has teeth)


@pytest.fixture(scope="module")
def small_quantized_pair():
    """A vocabulary of 8, as in test_distribution: the target's distribution can be enumerated."""
    target, draft = tiny_pair("llama", vocab_size=8, noise=0.4)
    return {quantization: (quantized(target, quantization), quantized(draft, "int4")) for quantization in QUANTIZATIONS}


@pytest.mark.parametrize(
    "quantization, sampling",
    [("int8", SamplingConfig(temperature=1.0)), ("int4", SamplingConfig(temperature=0.7))],
    ids=["int8-t1.0", "int4-t0.7"],
)
@pytest.mark.slow
def test_sampling_matches_the_quantized_targets_distribution(small_quantized_pair, quantization, sampling):
    target, draft = small_quantized_pair[quantization]
    fit, acceptance = speculative_fit(target, lambda: draft, sampling)
    assert fit.p_value > SIGNIFICANCE, fit
    assert 0.05 < acceptance < 0.95  # both accepted and rejected drafts were tested


@pytest.mark.slow
def test_negative_control_a_broken_rule_fails_with_a_quantized_target(small_quantized_pair, monkeypatch):
    """Power: skipping the residual moves the quantized target's distribution by D = 0.123 (statistic 393 with 24
    degrees of freedom at 3,000 runs): against the p = 1e-3 threshold of 51, power above 0.999 with D a third
    smaller."""
    target, draft = small_quantized_pair["int8"]
    monkeypatch.setattr(specdec.engine.rounds, "verify_sampled", skip_the_residual)
    fit, _ = speculative_fit(target, lambda: draft, SamplingConfig(temperature=1.0))
    assert fit.p_value < SIGNIFICANCE, fit


def test_costs_know_the_quantized_kernels():
    target, draft = tiny_pair("llama", vocab_size=32)
    # a pass over many tokens stays cheap
    assert TorchModel(quantized(target, "int8")).verify_slope() == Int8Linear.verify_slope
    assert TorchModel(quantized(target, "int4")).verify_slope() == Int4Linear.verify_slope
    assert weight_cost_ratio(quantized(target, "int8"), quantized(draft, "int8")) == pytest.approx(1.0)
    assert weight_cost_ratio(target, quantized(draft, "int8")) < 0.4  # int8 reads about a quarter of float32


def test_bad_quantization_requests_are_one_clear_line():
    with pytest.raises(SpecdecError, match="unknown quantization 'int3': use one of auto, none, int8, int4"):
        check_quantization("int3", "cpu")
    with pytest.raises(SpecdecError, match="int4 weights run on the CPU only .* not on cuda: use --quantization none"):
        check_quantization("int4", "cuda")
    with pytest.raises(SpecdecError, match="--draft-quantization none"):
        check_quantization("int8", "cuda", role="draft")
    assert check_quantization("auto", "cuda") == "none" and check_quantization("auto", "cpu", "draft") == "int4"
