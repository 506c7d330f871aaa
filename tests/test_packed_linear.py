"""Packed bfloat16 linear layers: the same bits as `nn.Linear`, so the same p and q, greedy and sampled.

`PackedLinear` only moves the reorder of the weight for oneDNN from every call to load time. These
tests hold it to bit equality on every pass shape the engine makes (a prompt pass, one-token steps,
a verification pass, a tree pass with its mask), and then run the engine's two exactness checks
on packed models: greedy against the packed target's own `generate`, sampled against its exact
distribution (the negative control for that check is in test_distribution and test_quantization).
"""

import copy

import pytest
import torch
from distribution_check import SIGNIFICANCE, speculative_fit
from test_greedy import chains_and_a_tree_equal_greedy
from tiny_models import tiny_model, tiny_pair

from specdec.runtime.costs import weight_cost_ratio
from specdec.runtime.pytorch.torch_model import weight_bytes
from specdec.runtime.pytorch.kv_cache import CachedModel
from specdec.engine.sampling import SamplingConfig
from specdec.engine.trees import DraftTree, tree_attention
from specdec.kernels.packed_linear import PackedLinear, pack_linear_layers, packable

pytestmark = pytest.mark.skipif(
    not packable(torch.nn.Linear(2, 2).to(torch.bfloat16)),
    reason="this CPU's oneDNN has no bfloat16 kernels: nothing is packed here",
)


def packed(model: torch.nn.Module) -> torch.nn.Module:
    copied = copy.deepcopy(model).to(torch.bfloat16)
    assert pack_linear_layers(copied) > 0
    return copied


@pytest.mark.parametrize("bias", [True, False])
def test_a_packed_layer_gives_the_same_bits_as_the_layer(bias):
    torch.manual_seed(0)
    layer = torch.nn.Linear(96, 200, bias=bias).to(torch.bfloat16)
    packed_layer = PackedLinear.from_linear(layer)
    with torch.no_grad():
        for shape in ((1, 96), (2, 96), (5, 96), (17, 96), (1, 7, 96)):
            x = torch.randn(shape).to(torch.bfloat16) * 4
            assert torch.equal(packed_layer(x), layer(x)), shape
    assert not packable(torch.nn.Linear(4, 4))  # float32 goes to MKL: nothing to pack


def test_a_packed_model_gives_the_same_logits_on_every_pass_the_engine_makes():
    model = tiny_model("qwen2", vocab_size=48, hidden_size=64, layers=2).to(torch.bfloat16)
    twin = packed(model)
    assert type(twin.lm_head) is PackedLinear and type(twin.model.layers[0].mlp.up_proj) is PackedLinear
    ids = torch.randint(0, 48, (40,), generator=torch.Generator().manual_seed(0))
    plain, fast = CachedModel(model), CachedModel(twin)
    tree = DraftTree(torch.tensor([5, 6, 7, 8]), (-1, -1, 0, 0), None)  # two children of the root, two of the first
    attend, positions = tree_attention(31, tree)
    passes = [dict(tokens=ids[:30], last=30), dict(tokens=ids[30:31]), dict(tokens=ids[31:36], last=5)]
    for feed in passes:
        assert torch.equal(plain.feed(**feed), fast.feed(**feed))
    plain.rollback(31), fast.rollback(31)
    tree_pass = dict(tokens=torch.cat([ids[31:32], tree.tokens]), last=5, attend=attend, positions=positions)
    assert torch.equal(plain.feed(**tree_pass), fast.feed(**tree_pass))
    assert weight_bytes(twin) == weight_bytes(model)  # c is estimated as before


@pytest.fixture(scope="module")
def packed_pair():
    target, draft = tiny_pair("qwen2", vocab_size=32)
    return packed(target), packed(draft)


def test_greedy_equals_the_packed_targets_own_generate(packed_pair):
    target, draft = packed_pair
    assert chains_and_a_tree_equal_greedy(target, draft) > 0
    assert 0 < weight_cost_ratio(target, draft) <= 1


@pytest.mark.slow
def test_sampling_matches_the_packed_targets_distribution():
    target, draft = tiny_pair("llama", vocab_size=8, noise=0.4)
    target, draft = packed(target), packed(draft)
    fit, acceptance = speculative_fit(target, lambda: draft, SamplingConfig(temperature=1.0))
    assert fit.p_value > SIGNIFICANCE, fit
    assert 0.05 < acceptance < 0.95


def test_a_packed_drafts_vocabulary_limit_computes_the_same_first_rows():
    model = tiny_model("llama", vocab_size=48, hidden_size=64).to(torch.bfloat16)
    twin = packed(model)
    ids = torch.tensor([3, 4, 5, 6])
    limited, limited_twin = CachedModel(model, output_rows=20), CachedModel(twin, output_rows=20)
    assert limited_twin.vocab_size == 20 and torch.equal(limited.feed(ids, last=4), limited_twin.feed(ids, last=4))
    assert CachedModel(twin, output_rows=100).vocab_size == 48
