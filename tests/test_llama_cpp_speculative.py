"""Speculative decoding on the llama.cpp runtime, held to that runtime's own plain decoding: tiny GGUF files written
here.

The target's own greedy output on llama.cpp is its own one-token decoding (`autoregressive_generate` on the same
model): a draft model's chains (the draft on the exact settings or on llama.cpp's fastest, as the planner runs it), its
token trees, a ragged batch of three texts, prompt lookup and Token Recycling
must give it token for token. Sampled output must have the target's exact distribution on llama.cpp: the first
round's tokens over 3,000 runs against the distribution enumerated from llama.cpp's own logits (top-k 3 keeps
the enumeration small), with two broken rules as negative controls that must fail the same test. A drafter that
reads the target's hidden states or layers is refused in one line that names the runtime serving it, and the
command line refuses a corrupt GGUF in one line with exit code 2.
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from distribution_check import LLAMA_RUNS, SIGNIFICANCE
from test_distribution import accept_always, skip_the_residual

import specdec.engine.inputs
import specdec.engine.rounds
from specdec import SpecdecError, autoregressive_generate, speculative_generate
from specdec.drafting.prompt_lookup import PromptLookupDrafter
from specdec.drafting.token_recycling import TokenRecyclingDrafter
from specdec.drafting.tree_drafter import TreeDrafter
from specdec.engine.sampling import SamplingConfig, probabilities
from specdec.reference.stats import chi_square_test

try:
    from specdec.runtime.llama_cpp.library import library_path

    library_path()
except (ImportError, SpecdecError) as error:  # pragma: no cover - depends on the environment
    pytest.skip(f"the llama.cpp runtime is not installed here: {error}", allow_module_level=True)

from specdec.runtime.llama_cpp.model import load_gguf
from specdec.runtime.llama_cpp.settings import FASTEST
from specdec.runtime.llama_cpp.tiny_model import write_tiny_quantized_gguf

PROMPTS = [[5, 9, 300, 7, 5, 9], [200, 201, 202, 203], [17, 18, 19, 17, 18, 19, 17, 18, 19, 20, 21]]
NEW = 24
NOISE = 0.01  # the draft: the target with 1% of its output layer's 6-bit values drawn afresh (about half accepted)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A tiny quantized target and three drafts: the target with a noisy output layer (it agrees often, not always), the
    same draft on llama.cpp's fastest settings (as the planner runs a draft: not batch-invariant, which a draft need not
    be), and the target's own file (it always agrees)."""
    folder = tmp_path_factory.mktemp("gguf")
    target = load_gguf(write_tiny_quantized_gguf(folder / "target.gguf", seed=0), threads=1, context=256)
    other = load_gguf(
        write_tiny_quantized_gguf(folder / "draft.gguf", seed=0, output_noise=NOISE), threads=1, context=256
    )
    fast = load_gguf(folder / "draft.gguf", threads=1, context=256, settings=FASTEST)
    same = load_gguf(folder / "target.gguf", threads=1, context=256)
    yield target, other, same, fast
    for model in (target, other, same, fast):
        model.close()


def plain(target, prompt, **options):
    return autoregressive_generate(target, torch.tensor(prompt), max_new_tokens=NEW, temperature=0, **options).tokens


def test_greedy_chains_trees_and_model_free_drafts_give_the_targets_own_tokens(models):
    target, other, same, fast = models
    for prompt in PROMPTS:
        expected = plain(target, prompt)
        for draft, gamma in ((other, 1), (other, 4), (same, 3), (same, None), (other, None), (fast, 4), (fast, None)):
            result = speculative_generate(
                target, draft, torch.tensor(prompt), gamma=gamma, max_new_tokens=NEW, temperature=0
            )
            assert result.tokens == expected, (prompt, draft.path.name, gamma)
        accepted = speculative_generate(target, same, torch.tensor(prompt), gamma=4, max_new_tokens=NEW, temperature=0)
        assert accepted.stats.accepted == accepted.stats.drafted > 0  # the target's own file drafts: always accepted
        for drafter in (
            TreeDrafter(other, budget=8),
            TreeDrafter(fast, budget=8),
            TreeDrafter(same, budget=6, width=2),
            PromptLookupDrafter(),
            TokenRecyclingDrafter(),
        ):
            assert (
                speculative_generate(target, drafter, torch.tensor(prompt), max_new_tokens=NEW, temperature=0).tokens
                == expected
            )
    stop = plain(target, PROMPTS[0])[NEW // 2]
    assert speculative_generate(
        target, same, torch.tensor(PROMPTS[0]), max_new_tokens=NEW, temperature=0, eos_token_id=stop
    ).tokens == plain(target, PROMPTS[0], eos_token_id=stop)


def test_a_ragged_batch_gives_each_row_its_own_greedy_tokens(models):
    target, other, same, fast = models
    expected = [plain(target, prompt) for prompt in PROMPTS]
    for draft in (other, same, fast, PromptLookupDrafter()):
        results = speculative_generate(
            target, draft, [torch.tensor(prompt) for prompt in PROMPTS], gamma=3, max_new_tokens=NEW, temperature=0
        )
        assert [result.tokens for result in results] == expected
    assert [r.tokens for r in autoregressive_generate(target, PROMPTS, max_new_tokens=NEW, temperature=0)] == expected


def test_drafters_that_read_the_targets_insides_are_refused_in_one_line(models):
    from transformers import PreTrainedTokenizerFast

    from specdec.engine.contract import Capabilities
    from specdec.pair.resources import LoadedPair
    from specdec.pair.running import generate_speculative
    from specdec.run_spec import Drafting

    target = models[0]

    class HiddenReader(PromptLookupDrafter):
        name, capabilities = "hidden-reader", Capabilities(hidden_states=True)

    with pytest.raises(
        SpecdecError,
        match="hidden-reader reads the target's hidden states, which the llama.cpp runtime does not give: "
        "run it on the torch runtime",
    ):
        speculative_generate(target, HiddenReader(), torch.tensor(PROMPTS[0]), max_new_tokens=4, temperature=0)
    pair = LoadedPair.from_models(
        "tiny", "layer-skip", target, None, PreTrainedTokenizerFast(tokenizer_object=_byte_tokenizer())
    )
    built = LoadedPair.from_models(
        "tiny", "tiny-draft", target, models[3], PreTrainedTokenizerFast(tokenizer_object=_byte_tokenizer())
    )
    assert [planned.settings for planned in built.models] == ["exact", "fastest"]  # each read off as it runs
    for method in ("layer-skip", "eagle"):  # through the registry, as the CLI and the dashboard
        with pytest.raises(SpecdecError, match="llama.cpp runtime does not .*: run it on the torch runtime"):
            generate_speculative(
                pair, torch.tensor([PROMPTS[0]]), specdec.engine.inputs.Decoding(4, 0.0), Drafting(method)
            )


def _byte_tokenizer():
    from tokenizers import Tokenizer, models as tokenizer_models

    return Tokenizer(tokenizer_models.WordLevel({"a": 0, "b": 1}, unk_token="a"))


# --- the sampled distribution ------------------------------------------------------------------------------------

SAMPLING = SamplingConfig(temperature=1.0, top_k=3)
PROMPT, LENGTH, RUNS, BATCH = [17, 18, 19, 17, 18], 4, LLAMA_RUNS, 125


def llama_exact_distribution(
    target, prompt: list[int], length: int, sampling: SamplingConfig
) -> dict[tuple[int, ...], float]:
    """P(t_2..t_length | prompt) under the warped target, enumerated with llama.cpp's own logits (t_1 summed out)."""
    joint = {(): 1.0}
    for _ in range(length):
        prefixes = list(joint)
        rows = target.rows(range(len(prefixes)))
        logits, _ = rows.feed([torch.tensor(prompt + list(prefix)) for prefix in prefixes], last=1)  # [B, 1, V]
        next_probs = probabilities(logits[:, -1], sampling).tolist()
        joint = {
            prefix + (token,): joint[prefix] * row[token]
            for prefix, row in zip(prefixes, next_probs)
            for token, chance in enumerate(row)
            if chance > 0
        }
    marginal: dict[tuple[int, ...], float] = Counter()
    for sequence, chance in joint.items():
        marginal[sequence[1:]] += chance
    return dict(marginal)


def sampled_fit(target, draft):
    """The first round's tokens over RUNS runs (rows of batched
    calls, each its own random stream) against the exact law."""
    exact = llama_exact_distribution(target, PROMPT, LENGTH, SAMPLING)
    counts, drafted, accepted = Counter(), 0, 0
    for start in range(0, RUNS, BATCH):
        results = speculative_generate(
            target,
            draft,
            [torch.tensor(PROMPT)] * BATCH,
            gamma=3,
            max_new_tokens=LENGTH,
            temperature=SAMPLING.temperature,
            top_k=SAMPLING.top_k,
            seed=start,
        )
        counts.update(tuple(result.tokens[1:LENGTH]) for result in results)
        drafted += sum(result.stats.drafted for result in results)
        accepted += sum(result.stats.accepted for result in results)
    return chi_square_test(counts, exact), accepted / drafted


@pytest.mark.slow
@pytest.mark.parametrize("draft_settings", ["exact", "fastest"])
def test_sampled_output_has_the_targets_distribution_on_llama_cpp(models, draft_settings):
    """The draft on either settings: the rule divides by the q the
    drafted token was sampled from, whatever kernel made it."""
    target, other, _, fast = models
    fit, acceptance = sampled_fit(target, other if draft_settings == "exact" else fast)
    assert fit.p_value > SIGNIFICANCE, fit
    assert 0.05 < acceptance < 0.95  # both branches of the rule ran


@pytest.mark.slow
@pytest.mark.parametrize("broken_rule", [accept_always, skip_the_residual])
def test_negative_control_broken_rules_fail_on_llama_cpp(models, monkeypatch, broken_rule):
    """The same test with the rule broken must fail. Power: accepting always emits sequences the target never does (the
    statistic is infinite); skipping the residual moved D = 0.28 (statistic 458.5 with 38 degrees of freedom at 1,500
    runs), so at 1,000 runs the broken rule's mean statistic is 38 + 280 = 318 against the p = 1e-3 threshold of 71:
    with D a third smaller it fails with probability above 0.999 (`distribution_check.power`, and `tests/test_power.py`
    checks it)."""
    target, _, _, fast = models
    monkeypatch.setattr(specdec.engine.rounds, "verify_sampled", broken_rule)
    fit, _ = sampled_fit(target, fast)
    assert fit.p_value < SIGNIFICANCE, fit


def test_the_command_line_refuses_a_corrupt_gguf_in_one_line(tmp_path, capsys):
    from specdec.cli import main

    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    code = main(
        ["run", "--target", str(bad), "--draft", "prompt-lookup", "--runtime", "llama.cpp", "--prompt", "hello"]
    )
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("specdec: error")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err and "broken.gguf" in lines[0], err
