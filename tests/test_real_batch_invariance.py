"""Opt-in: every torch target path of the real 1.5B proves k* > 1 here and its greedy speculative output, drafted by the
0.5B on llama.cpp and verified in cut passes, is its own plain greedy output (set SPECDEC_REAL_MODELS=1).

    SPECDEC_REAL_MODELS=1 python -m pytest -n 0 tests/test_real_batch_invariance.py -v

`benchmarks/batch_invariance.py` runs the same on chapter 8's four prompt categories at 128 tokens and times it.
"""

import pytest
from real_models import OPT_IN, fetch_zoo

pytestmark = OPT_IN

PATHS = [("float32", "none"), ("bfloat16", "none"), ("float32", "int8"), ("bfloat16", "int4")]


@pytest.mark.parametrize("dtype, quantization", PATHS, ids=[f"{d}-{q}" for d, q in PATHS])
def test_each_torch_target_path_is_exact_in_cut_passes(dtype, quantization):
    from specdec.engine.inputs import Decoding
    from specdec.pair.loading import load_pair
    from specdec.pair.running import encode_prompt, generate_plain, generate_speculative

    fetch_zoo("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
    pair = load_pair(
        "qwen2.5-coder-1.5b",
        "qwen2.5-coder-0.5b",
        device="cpu",
        dtype=dtype,
        quantization=quantization,
        runtime="torch",
        draft_runtime="llama.cpp",
    )
    assert pair.target.k_star > 1, pair.target.rows_check
    ids = encode_prompt(pair.tokenizer, "Write a Python function that checks whether a number is prime.", chat=True)
    decoding = Decoding(temperature=0.0, max_new_tokens=64)
    fast = generate_speculative(pair, ids, decoding)
    assert fast.tokens == generate_plain(pair, ids, decoding).tokens
    assert fast.stats.tokens_per_target_pass > 2  # it speculated: several tokens verified a pass
