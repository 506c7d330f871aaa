"""The self-test's model: a tiny quantized GGUF (qwen2 architecture), written here, never downloaded.

The self-test (`specdec.runtime.llama_cpp.self_test`) proves llama.cpp exact on each machine with it, so it ships with
the package; the tests use it too, and write their float GGUF files with the same header (`write_header`).

The zoo's models are Q4_K_M files: most weights Q4_K, some (V, the FFN's down projection, the output layer)
Q6_K. A self-test that is to prove llama.cpp's kernels batch-invariant must run those kernels, so the tiny
model is quantized the same way. Its blocks are written directly as random bytes (a Q4_K block is a float16
scale, a float16 minimum, 12 bytes of 6-bit sub-scales and 128 bytes of 4-bit values; any bytes are a valid
block), with the scales set so that weights stay near +-0.5: random weights, llama.cpp's real kernels.

Made to fail where the kernels differ (the self-test's negative control, `specdec.runtime.llama_cpp.self_test`):

- rows of several blocks: a row of K values is K / 256 blocks, and one block alone is a single integer dot
  product that every kernel sums the same way; hidden size 768 and FFN 1536 give 3 and 6 blocks a row;
- attention scores of order one: with query and key weights as large as the others', flash attention off
  passed every check (measured; most likely each softmax was nearly one-hot, and a sum of one term has no
  order); `SCORE_SCALE` shrinks them, and then it fails;
- sizes that repacking takes: every matrix has a multiple of 8 rows (vocabulary 512, one KV head of 128).

Measured here with llama.cpp's defaults and with each exact setting undone alone: repacked weights break
passes of 4+ tokens, flash attention off 6+, a ubatch of 512 8+, a float16 V cache (2 threads) the pass
after 300 tokens; the exact settings pass everything at 1 and 2 threads.

    >>> from pathlib import Path; import tempfile
    >>> path = write_tiny_quantized_gguf(Path(tempfile.mkdtemp()) / "tiny.gguf")
    >>> path.stat().st_size > 1_000_000
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

HIDDEN, LAYERS, HEADS, KV_HEADS, FFN, CONTEXT = 768, 2, 6, 1, 1536, 2048
Q4_K_BYTES, Q6_K_BYTES, BLOCK = 144, 210, 256  # bytes of one K-quant block of 256 weights
SCORE_SCALE = 0.1  # attn_q, attn_k: a softmax far from one-hot


def byte_tokens() -> list[str]:
    """GPT-2's byte-level alphabet: each of the 256 bytes as the printable character byte-level BPE writes for it."""
    printable = (
        list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    )
    extra = [b for b in range(256) if b not in printable]
    mapping = {b: chr(b) for b in printable} | {b: chr(256 + i) for i, b in enumerate(extra)}
    return [mapping[b] for b in range(256)]


def _half(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float16).view(np.uint8).reshape(values.shape[0], values.shape[1], 2)


def q4_k(rng: np.random.Generator, rows: int, columns: int, scale: float = 1.0) -> np.ndarray:
    """Random Q4_K blocks for a [rows, columns] matrix, as bytes
    [rows, columns / 256 * 144] (weights up to about 0.5 x scale)."""
    blocks = columns // BLOCK
    out = rng.integers(0, 256, (rows, blocks, Q4_K_BYTES), dtype=np.uint8)
    out[:, :, 0:2] = _half(rng.uniform(2e-4, 6e-4, (rows, blocks)) * scale)  # d
    out[:, :, 2:4] = _half(rng.uniform(1e-4, 4e-4, (rows, blocks)) * scale)  # dmin
    return out.reshape(rows, blocks * Q4_K_BYTES)


def q6_k(rng: np.random.Generator, rows: int, columns: int) -> np.ndarray:
    """Random Q6_K blocks for a [rows, columns] matrix, as bytes [rows, columns / 256 * 210]."""
    blocks = columns // BLOCK
    out = rng.integers(0, 256, (rows, blocks, Q6_K_BYTES), dtype=np.uint8)
    out[:, :, 192:208] = rng.integers(-64, 64, (rows, blocks, 16), dtype=np.int8).view(np.uint8)  # sub-scales
    out[:, :, 208:210] = _half(rng.uniform(5e-5, 1.5e-4, (rows, blocks)))  # d
    return out.reshape(rows, blocks * Q6_K_BYTES)


@dataclass(frozen=True)
class Shape:
    """A tiny qwen2 model's sizes."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    context: int
    rope_base: float = 10000.0


def write_header(writer: gguf.GGUFWriter, tokens: list[str], merges: list[str], shape: Shape, file_type=None) -> None:
    """A qwen2 model's metadata and its byte-level BPE tokenizer (the last two tokens control tokens: BOS, then EOS):
    what llama.cpp and transformers both read from a GGUF file. The tests' float GGUF files are written with it too."""
    vocab = len(tokens)
    writer.add_context_length(shape.context)
    writer.add_embedding_length(shape.hidden)
    writer.add_block_count(shape.layers)
    writer.add_feed_forward_length(shape.ffn)
    writer.add_head_count(shape.heads)
    writer.add_head_count_kv(shape.kv_heads)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_freq_base(shape.rope_base)
    if file_type is not None:
        writer.add_file_type(file_type)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types([1] * (vocab - 2) + [3, 3])  # 1 normal, 3 control
    writer.add_token_scores([0.0] * vocab)  # transformers needs scores even for BPE
    writer.add_token_merges(merges)
    writer.add_eos_token_id(vocab - 1)
    writer.add_bos_token_id(vocab - 2)


def write_tiny_quantized_gguf(path: Path, seed: int = 0, layers: int = LAYERS, output_noise: float = 0.0) -> Path:
    """Write a tiny random qwen2 model, Q4_K/Q6_K like a Q4_K_M file, with a byte-level vocabulary of 512 tokens.

    `output_noise`: the share of the output layer's quantized bytes drawn afresh (from another stream): the same seed
    with a little noise is a draft that agrees with the model often, not always (what a distribution test needs)."""
    rng = np.random.default_rng(seed)
    tokens = byte_tokens() + [f"Ġw{i}" for i in range(254)] + ["<|endoftext|>", "<|im_end|>"]
    vocab = len(tokens)  # 512: a multiple of 8, as repacking wants
    writer = gguf.GGUFWriter(str(path), "qwen2")
    write_header(
        writer,
        tokens,
        ["Ġ w"],
        Shape(HIDDEN, layers, HEADS, KV_HEADS, FFN, CONTEXT, 1000000.0),
        gguf.LlamaFileType.MOSTLY_Q4_K_M,
    )

    def quantized(name: str, rows: int, columns: int, kind: str = "q4_k", scale: float = 1.0) -> None:
        data = q4_k(rng, rows, columns, scale) if kind == "q4_k" else q6_k(rng, rows, columns)
        if name == "output.weight" and output_noise > 0:
            noise = np.random.default_rng(seed + 1000)
            blocks = data.reshape(rows, -1, Q6_K_BYTES)  # only the 6-bit values, not the scales
            redrawn = noise.random(blocks[:, :, :192].shape) < output_noise
            blocks[:, :, :192][redrawn] = noise.integers(0, 256, int(redrawn.sum()), dtype=np.uint8)
        qtype = gguf.GGMLQuantizationType.Q4_K if kind == "q4_k" else gguf.GGMLQuantizationType.Q6_K
        writer.add_tensor(name, data, raw_dtype=qtype)

    def plain(name: str, *shape: int, scale: float = 0.1) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    kv = KV_HEADS * (HIDDEN // HEADS)
    quantized("token_embd.weight", vocab, HIDDEN)
    for layer in range(layers):
        block = f"blk.{layer}"
        writer.add_tensor(f"{block}.attn_norm.weight", np.ones(HIDDEN, dtype=np.float32))
        quantized(f"{block}.attn_q.weight", HIDDEN, HIDDEN, scale=SCORE_SCALE)
        plain(f"{block}.attn_q.bias", HIDDEN)
        quantized(f"{block}.attn_k.weight", kv, HIDDEN, scale=SCORE_SCALE)
        plain(f"{block}.attn_k.bias", kv)
        quantized(f"{block}.attn_v.weight", kv, HIDDEN, "q6_k")
        plain(f"{block}.attn_v.bias", kv)
        quantized(f"{block}.attn_output.weight", HIDDEN, HIDDEN)
        writer.add_tensor(f"{block}.ffn_norm.weight", np.ones(HIDDEN, dtype=np.float32))
        quantized(f"{block}.ffn_gate.weight", FFN, HIDDEN)
        quantized(f"{block}.ffn_up.weight", FFN, HIDDEN)
        quantized(f"{block}.ffn_down.weight", HIDDEN, FFN, "q6_k")
    writer.add_tensor("output_norm.weight", np.ones(HIDDEN, dtype=np.float32))
    quantized("output.weight", vocab, HIDDEN, "q6_k")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
