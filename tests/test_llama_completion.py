"""Plain decoding on the llama.cpp runtime against `llama-completion`'s own greedy output, token for token (opt-in).

specdec defines plain decoding as llama.cpp does: one prompt pass in ubatches of 512 on the exact settings' kernels
(repacked weights, flash attention, a float16 K and bfloat16 V cache), then one-token steps. So greedy decoding
through specdec should print what `llama-completion` prints when both run the same library source built for the same
CPU, with those settings as flags. This test checks that on tiny Q4_K_M-like files written here (never downloaded),
for prompts of many lengths, one of them longer than a ubatch.

It needs a `llama-completion` built from the source specdec's library comes from (`specdec runtime status` names the
library; `specdec runtime build` unpacks its source), so it runs only when one is named:

    SPECDEC_LLAMA_COMPLETION=/path/to/llama-completion python -m pytest tests/test_llama_completion.py

A `llama-completion` from another version, or built for other instruction sets than the library (the pinned wheel's
AVX2 code against an AVX-512 build), runs other kernels and may differ: that is the point of naming the source.

The comparison is of bytes: `llama-completion` prints each token's bytes, the tiny vocabulary is GPT-2's 256 bytes plus
254 words " w0" ... " w253", and the prompts avoid the letter w, so both sides read the prompt as the same byte ids.
"""

from __future__ import annotations

import os
import subprocess
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
import torch

TOOL = os.environ.get("SPECDEC_LLAMA_COMPLETION")
if not TOOL:
    pytest.skip(
        "opt-in: SPECDEC_LLAMA_COMPLETION names a llama-completion built from the library's source",
        allow_module_level=True,
    )

from specdec import autoregressive_generate  # noqa: E402
from specdec.runtime.llama_cpp.model import load_gguf  # noqa: E402
from specdec.runtime.llama_cpp.tiny_model import write_tiny_quantized_gguf  # noqa: E402

CONTEXT, NEW_TOKENS = 1024, 24
# llama-completion prints through an asynchronous logger that may drop the last few bytes at exit (seen: 2-6), so
# both sides run SPARE tokens past the NEW_TOKENS compared, llama-completion twice as many.
SPARE = 8
# The exact settings as llama-completion's flags: greedy, 2 threads, flash attention, K f16 / V bf16, ubatch 512.
FLAGS = [
    "--temp",
    "0",
    "--top-k",
    "1",
    "-t",
    "2",
    "-fa",
    "on",
    "-ctk",
    "f16",
    "-ctv",
    "bf16",
    "-ub",
    "512",
    "-b",
    "512",
    "--ignore-eos",
    "-no-cnv",
    "--no-display-prompt",
    "--no-warmup",
    "--special",
    "-c",
    str(CONTEXT),
]


def token_bytes(ids: list[int]) -> bytes:
    """The bytes llama-completion prints for the tiny vocabulary's tokens (`--special` prints control tokens' names; the
    byte 0 ends a C string, so it prints nothing)."""
    names = {0: b"", 510: b"<|endoftext|>", 511: b"<|im_end|>"}
    return b"".join(names.get(i, bytes([i]) if i < 256 else f" w{i - 256}".encode()) for i in ids)


def prompts() -> list[bytes]:
    """Printable ASCII without 'w' (no merge applies: one byte,
    one token), lengths 1 to 700 (past one ubatch of 512)."""
    rng = np.random.default_rng(7)
    alphabet = np.array([c for c in range(32, 127) if c != ord("w")], dtype=np.uint8)
    return [bytes(alphabet[rng.integers(0, len(alphabet), n)]) for n in (1, 2, 5, 9, 17, 64, 200, 511, 513, 700)]


def differences(model, path: Path) -> tuple[list, set]:
    """Greedy decoding of each prompt through `model` and through llama-completion reading `path`: the prompts whose
    first NEW_TOKENS tokens differ (length, ours, theirs), and the outputs seen."""
    differing, outputs = [], set()
    for prompt in prompts():
        ours = autoregressive_generate(
            model, torch.tensor(list(prompt)), max_new_tokens=NEW_TOKENS + SPARE, temperature=0, eos_token_id=None
        ).tokens
        done = subprocess.run(
            [TOOL, "-m", str(path), "-p", prompt.decode("ascii"), "-n", str(NEW_TOKENS + 2 * SPARE), *FLAGS],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
        checked, theirs = len(token_bytes(ours[:NEW_TOKENS])), done.stdout
        assert len(theirs) >= checked, (
            f"llama-completion printed {len(theirs)} bytes, fewer than the {checked} compared"
        )
        agreed = len(os.path.commonprefix([token_bytes(ours), theirs]))
        outputs.add(theirs[:checked])
        if agreed < checked:  # the first NEW_TOKENS tokens, each followed by agreeing bytes
            differing.append((len(prompt), token_bytes(ours[:NEW_TOKENS]), theirs[:checked]))
    return differing, outputs


@pytest.mark.parametrize("seed", [4, 5])
def test_plain_decoding_prints_what_llama_completion_prints(seed, tmp_path):
    path = write_tiny_quantized_gguf(tmp_path / "tiny.gguf", seed=seed)
    with closing(load_gguf(path, threads=2, context=CONTEXT)) as model:
        differing, outputs = differences(model, path)
    assert not differing, f"plain decoding differs from llama-completion for these prompt lengths: {differing}"
    assert len(outputs) > 1, "every prompt gave the same output: the check would not see a different prompt pass"


def test_negative_control_a_model_one_percent_apart_is_told_apart(tmp_path):
    """specdec reads a copy whose output layer has 1% of its 6-bit values drawn afresh, llama-completion the original:
    the comparison must see it (a check that passed here would pass whatever the two sides computed)."""
    path = write_tiny_quantized_gguf(tmp_path / "tiny.gguf", seed=4)
    other = write_tiny_quantized_gguf(tmp_path / "other.gguf", seed=4, output_noise=0.01)
    with closing(load_gguf(other, threads=2, context=CONTEXT)) as model:
        differing, _ = differences(model, path)
    assert differing, "a model 1% apart printed what llama-completion printed on every prompt"
