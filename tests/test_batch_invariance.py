"""Every torch target path proves which passes give one-token steps' bits, and every pass is cut into those sizes.

The self-test (`specdec.kernels.batch_invariance`) and the cut (`specdec.runtime.pytorch.cut`) are checked on a tiny
model whose every layer is exact by construction (each row multiplied alone, attention row by row in float64) and
whose output layer can be made to switch kernels past a row count, as oneDNN's and MKL's do. Then:

- the self-test finds exactly the switch (k* = the last size before it), and 17 where nothing switches;
- greedy speculative output with the cut equals the target's own greedy output token for token, and with a broken
  cut (a piece one row longer than k*) it does not (the negative control);
- sampled output with the cut has the target's law (chi-square), and with the broken cut it fails the same test;
- the cut pass gives the uncut pass's logits and hidden states (causal, a tree, ragged texts in a batch);
- the verdict is kept per machine and path, read back without a test, and two writers at once lose nothing;
- a target whose k* is 1 is refused in one line before anything is drafted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest
import torch
from torch import nn

from collections import Counter

from distribution_check import LENGTH, SIGNIFICANCE, batched_runs, exact_distribution
from specdec import autoregressive_generate, speculative_generate
from specdec.engine.sampling import SamplingConfig
from specdec.reference.stats import chi_square_test
from specdec.kernels import batch_invariance
from specdec.kernels.batch_invariance import RowsVerdict, check_target, passing_paths, self_test
from specdec.runtime.pytorch.cut import pieces
from specdec.runtime.pytorch.torch_model import TorchModel
from specdec.store import read_json, update_json
from tiny_models import tiny_model


class RowByRow(nn.Module):
    """y = x W^T + b with each output summed on its own (no matrix kernel): its rows do not depend on the pass.

    With `switch_after` = k, a pass of more than k tokens per text takes "another kernel": the output is tilted by up
    to `shift` (a kernel switch made large enough that a wrong cut shows in the output law)."""

    def __init__(self, layer: nn.Linear, switch_after: int | None = None, shift: float = 0.0) -> None:
        super().__init__()
        self.weight, self.bias = layer.weight, layer.bias
        self.in_features, self.out_features = layer.in_features, layer.out_features
        self.switch_after, self.shift = switch_after, shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., M, K] -> [..., M, N]
        y = (x[..., None, :] * self.weight).sum(-1)  # [..., M, N]: each output one short sum of its own row
        if self.bias is not None:
            y = y + self.bias
        if self.switch_after is not None and x.dim() >= 2 and x.shape[-2] > self.switch_after:
            y = y + self.shift * torch.linspace(-1, 1, self.out_features)  # tilted toward high ids
        return y


def exact_by_construction(model: nn.Module, switch_after: int | None = None, shift: float = 3.0) -> nn.Module:
    """`model` with every linear layer `RowByRow`, the output layer switching past `switch_after` tokens, and attention
    computed per query row in float64."""
    head = model.get_output_embeddings()
    for name, layer in [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Linear)]:
        parent, _, child = name.rpartition(".")
        switch = switch_after if layer is head else None
        setattr(model.get_submodule(parent) if parent else model, child, RowByRow(layer, switch, shift))
    model.set_attn_implementation(ROW_ATTENTION)
    return model


def row_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Attention one query row at a time in float64: no row depends on the pass (query [B, H, M, D])."""
    from specdec.kernels.invariant_attention import invariant_attention

    new, length = query.shape[2], key.shape[2]
    outputs = []
    for i in range(new):
        if attention_mask is None:  # causal: row i sees the text and the new tokens up to itself
            seen = length - new + i + 1
            outputs.append(
                invariant_attention(
                    module, query[:, :, i : i + 1], key[:, :, :seen], value[:, :, :seen], None, scaling
                )[0]
            )
        else:
            outputs.append(
                invariant_attention(
                    module, query[:, :, i : i + 1], key, value, attention_mask[:, :, i : i + 1], scaling
                )[0]
            )
    return torch.cat(outputs, dim=1), None


ROW_ATTENTION = "specdec_test_row_attention"
from transformers import AttentionInterface  # noqa: E402

AttentionInterface.register(ROW_ATTENTION, row_attention)


def tiny_target(switch_after: int | None = None, seed: int = 0, vocab_size: int = 24) -> nn.Module:
    return exact_by_construction(tiny_model("llama", vocab_size=vocab_size, seed=seed), switch_after)


@pytest.mark.parametrize("switch_after, k_star", [(None, 17), (4, 4), (1, 1)])
def test_the_self_test_finds_where_the_kernel_switches(switch_after, k_star):
    verdict = self_test(tiny_target(switch_after))
    assert verdict.k_star == k_star, verdict
    assert verdict.sizes == tuple(range(2, k_star + 1))
    if switch_after is not None:
        assert f"over {switch_after + 1} rows" in verdict.why


def test_a_plain_float_model_is_not_taken_on_trust():
    """transformers' own attention in float32 gives a 2-token pass other bits than two steps (here, in the last bits):
    the self-test says so instead of assuming the rows are equal."""
    verdict = self_test(tiny_model("llama", vocab_size=24))
    assert verdict.k_star < 17 and "other bits" in verdict.why


def cut_target(module: nn.Module, sizes: tuple[int, ...]) -> TorchModel:
    return TorchModel(module, cut=sizes)


@pytest.fixture(scope="module")
def switching_pair():
    target = tiny_target(switch_after=4, seed=0)
    draft = tiny_model("llama", vocab_size=24, seed=0)  # the target's own weights before the switch: drafts agree
    return target, draft


def test_greedy_with_the_cut_equals_the_targets_own_and_a_broken_cut_does_not(switching_pair):
    target, draft = switching_pair
    prompt = torch.tensor([1, 2, 3, 4])
    alone = autoregressive_generate(
        cut_target(target, tuple(range(2, 5))), prompt, max_new_tokens=40, temperature=0
    ).tokens
    exact = speculative_generate(
        cut_target(target, tuple(range(2, 5))), draft, prompt, gamma=8, max_new_tokens=40, temperature=0
    )
    assert exact.tokens == alone
    assert exact.stats.accepted > 8  # rounds longer than k* were verified, in pieces
    broken = speculative_generate(
        cut_target(target, tuple(range(2, 6))), draft, prompt, gamma=8, max_new_tokens=40, temperature=0
    )
    assert broken.tokens != alone  # a piece of 5 rows took the other kernel


@pytest.mark.slow
def test_sampled_output_has_the_targets_law_with_the_cut_and_not_with_a_broken_one():
    module = tiny_target(switch_after=2, seed=0, vocab_size=8)
    prompt = [2, 3]  # its pass of 2 takes the usual kernel; a round verifies 3 drafts (the last 3 tokens of 4)
    plain = exact_by_construction(tiny_model("llama", vocab_size=8, seed=0))  # the law: the same target, no switch
    draft = tiny_model("llama", vocab_size=8, seed=1)
    sampling = SamplingConfig(temperature=1.0)
    law = exact_distribution(plain, prompt, LENGTH, sampling)

    def fit(sizes):
        results = batched_runs(cut_target(module, sizes), draft, sampling, prompt=prompt, gamma=3)
        return chi_square_test(Counter(tuple(result.tokens[1:LENGTH]) for result in results), law)

    assert fit((2,)).p_value > SIGNIFICANCE  # pieces of 2 and 1
    broken = fit((2, 3))  # one piece of 3, one row longer than k* = 2: it took the other kernel
    assert broken.p_value < SIGNIFICANCE, broken  # the negative control


def test_a_cut_pass_gives_the_whole_passes_rows():
    module = tiny_target()
    whole, cut = TorchModel(module), TorchModel(module, cut=(2, 3))
    text = torch.arange(1, 20) % 23
    for model in (whole, cut):
        model.cache = model.rows([0])
        model.cache.feed([text[:5]])
    a, ha = whole.cache.feed([text[5:12]], last=7, hidden=True)
    b, hb = cut.cache.feed([text[5:12]], last=7, hidden=True)
    assert torch.equal(a, b) and all(torch.equal(x, y) for x, y in zip(ha, hb))
    # a tree of 6 nodes (two branches) after a rollback
    for model in (whole, cut):
        model.cache.rollback(0, 5)
    attend = torch.cat(
        [
            torch.ones(6, 5, dtype=torch.bool),
            torch.tensor(
                [
                    [1, 0, 0, 0, 0, 0],
                    [1, 1, 0, 0, 0, 0],
                    [1, 1, 1, 0, 0, 0],
                    [0, 0, 0, 1, 0, 0],
                    [0, 0, 0, 1, 1, 0],
                    [0, 0, 0, 1, 1, 1],
                ],
                dtype=torch.bool,
            ),
        ],
        dim=1,
    )
    offsets = torch.tensor([0, 1, 2, 0, 1, 2])
    a, _ = whole.cache.feed([text[12:18]], last=6, attend=[attend], offsets=[offsets])
    b, _ = cut.cache.feed([text[12:18]], last=6, attend=[attend], offsets=[offsets])
    assert torch.equal(a, b)


def test_ragged_texts_in_a_batch_are_cut_alike():
    module = tiny_target()
    whole, cut = TorchModel(module).rows([0, 1]), TorchModel(module, cut=(2,)).rows([0, 1])
    prompts = [torch.tensor([1, 2, 3]), torch.tensor([4, 5])]
    whole.feed(prompts)
    cut.feed(prompts)
    new = [torch.tensor([6, 7, 8, 9, 10]), torch.tensor([11, 12])]
    a, _ = whole.feed(new, last=5)
    b, _ = cut.feed(new, last=5)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1, -2:], b[1, -2:])


def test_pieces_use_only_checked_sizes():
    assert pieces(17, (2, 3, 4)) == [4, 4, 4, 4, 1]
    assert pieces(7, ()) == [1] * 7  # k* = 1: one-token steps


def test_the_verdict_is_kept_and_read_back_without_a_test(tmp_path, monkeypatch):
    runs = []
    real = batch_invariance.self_test
    monkeypatch.setattr(batch_invariance, "self_test", lambda module: runs.append(1) or real(module))
    path = tmp_path / "self-test.json"
    first = check_target(tiny_target(switch_after=4), path)
    second = check_target(tiny_target(switch_after=4), path)
    assert runs == [1] and first.k_star == second.k_star == 4
    kept = read_json(path)["verdicts"]
    facts = json.loads(next(iter(kept)))
    assert {"cpu", "flags", "torch", "transformers", "threads", "dtype", "weights", "attention"} <= set(facts)
    assert passing_paths(path) == ["--dtype float32 --quantization none (k* = 4)"]


def _write_many(path, prefix, count):
    for i in range(count):
        update_json(path, lambda kept, i=i: kept.__setitem__(f"{prefix}{i}", i))


WRITER = """
import sys
from specdec.store.kept import update_json
for i in range(25):
    update_json(sys.argv[1], lambda kept, i=i: kept.__setitem__(sys.argv[2] + str(i), i))
"""


def test_two_writers_at_once_lose_nothing(tmp_path):
    """Two processes (which import the store alone: no torch) and two threads write 25 entries each at once."""
    path = tmp_path / "kept.json"
    workers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), p]) for p in "ab"]
    threads = [threading.Thread(target=_write_many, args=(path, t, 25)) for t in "cd"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(worker.wait(timeout=60) == 0 for worker in workers)
    assert len(read_json(path)) == 100


def test_a_target_with_no_exact_pass_runs_plain_and_says_so_in_one_line():
    from types import SimpleNamespace

    from specdec.pair.loading import one_token_passes

    planned = SimpleNamespace(precision=SimpleNamespace(name="bfloat16"))
    module = tiny_target(switch_after=1)
    model = TorchModel(module, cut=(), rows_check="a pass of 2 tokens gives row 0 other bits")
    note = one_token_passes("qwen2.5-coder-1.5b", planned, model)
    assert "\n" not in note and "runs plain" in note
    assert one_token_passes("x", planned, TorchModel(tiny_target(), cut=(2, 3))) is None  # k* = 3: speculates
    prompt = torch.tensor([1, 2, 3, 4])  # and its output is the target's own: every pass one token
    alone = autoregressive_generate(model, prompt, max_new_tokens=20, temperature=0).tokens
    draft = tiny_model("llama", vocab_size=24, seed=0)
    assert speculative_generate(model, draft, prompt, gamma=6, max_new_tokens=20, temperature=0).tokens == alone


def test_a_verdict_names_its_sizes():
    assert RowsVerdict(5, 2, "").sizes == (2, 3, 4, 5)


def test_a_model_the_self_test_cannot_view_runs_plain_and_says_why():
    class NoLayers(nn.Module):  # no decoder layers to keep: the view cannot be made
        base_model = property(lambda self: nn.Module())

    verdict = self_test(NoLayers())
    assert verdict.k_star == 1 and verdict.sizes == () and "cannot run on this NoLayers" in verdict.why
