"""A tiny GGUF checkpoint (qwen2 architecture, byte-level BPE tokenizer) written with gguf.GGUFWriter.

It goes through the very loader real zoo models use: transformers reads GGUF metadata, rebuilds the
config and the tokenizer, and loads the tensors. Nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

from specdec.runtime.llama_cpp.tiny_model import Shape, write_header

HIDDEN, LAYERS, HEADS, KV_HEADS, FFN, CONTEXT = 32, 2, 4, 2, 64, 128
# A byte-level BPE vocabulary: the letters a-h, spaces as 'Ġ', a few merges, and two special tokens.
LETTERS = list("abcdefgh")
TOKENS = LETTERS + ["Ġ" + letter for letter in LETTERS] + ["Ġ", "ab", "cd", "Ġab", "<|endoftext|>", "<|im_end|>"]
MERGES = ["a b", "c d", "Ġ ab"]


def write_tiny_gguf(path: Path, seed: int = 0, layers: int = LAYERS) -> Path:
    """Write a tiny random qwen2-architecture model with its tokenizer to `path` and return it (`layers` deep)."""
    rng = np.random.default_rng(seed)
    vocab = len(TOKENS)
    writer = gguf.GGUFWriter(str(path), "qwen2")
    write_header(writer, TOKENS, MERGES, Shape(HIDDEN, layers, HEADS, KV_HEADS, FFN, CONTEXT))  # the product's header

    def tensor(name: str, *shape: int, scale: float = 0.2) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    head_dim = HIDDEN // HEADS
    tensor("token_embd.weight", vocab, HIDDEN)
    for layer in range(layers):
        block = f"blk.{layer}"
        writer.add_tensor(f"{block}.attn_norm.weight", np.ones(HIDDEN, dtype=np.float32))
        tensor(f"{block}.attn_q.weight", HIDDEN, HIDDEN)
        tensor(f"{block}.attn_q.bias", HIDDEN)
        tensor(f"{block}.attn_k.weight", KV_HEADS * head_dim, HIDDEN)
        tensor(f"{block}.attn_k.bias", KV_HEADS * head_dim)
        tensor(f"{block}.attn_v.weight", KV_HEADS * head_dim, HIDDEN)
        tensor(f"{block}.attn_v.bias", KV_HEADS * head_dim)
        tensor(f"{block}.attn_output.weight", HIDDEN, HIDDEN)
        writer.add_tensor(f"{block}.ffn_norm.weight", np.ones(HIDDEN, dtype=np.float32))
        tensor(f"{block}.ffn_gate.weight", FFN, HIDDEN)
        tensor(f"{block}.ffn_up.weight", FFN, HIDDEN)
        tensor(f"{block}.ffn_down.weight", HIDDEN, FFN)
    writer.add_tensor("output_norm.weight", np.ones(HIDDEN, dtype=np.float32))
    tensor("output.weight", vocab, HIDDEN, scale=1.0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
