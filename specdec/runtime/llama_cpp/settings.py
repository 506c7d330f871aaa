"""The settings that make llama.cpp exact for speculative decoding, in one place, each with the measurement behind it.

Speculative decoding is lossless only if the target's verification pass gives every drafted token the logits
its own one-token step would give it: a pass over k tokens must equal, row for row and bit for bit, k passes
over one (batch invariance). llama.cpp's CPU kernels are deterministic, but with its defaults they are not
batch-invariant: a kernel is chosen by the number of rows in a pass, and two kernels add in different
orders. Measured on the zoo's Qwen2.5-Coder 1.5B Q4_K_M (AMD EPYC, AVX2, NOTES.md fifth round): rows of a
k-token pass differed from one-token steps by up to 0.6 in the logits, the argmax changed at k = 4 and 6,
and a greedy speculative loop left plain greedy decoding at tokens 3, 30 and 102 of three prompts.

The causes, one setting each (`EXACT`):

- **at most 3 tokens per ubatch** (`n_ubatch = 3`), with llama.cpp's **repacked weights kept**: llama.cpp repacks
  Q4_K/Q6_K (and Q4_0, Q8_0) weights at load into interleaved blocks for its AVX2 kernels, whose GEMM takes over
  from 4 rows of activations (prompt fed one token a pass: rows differ from k = 4 on, both models), and the plain
  quantized mat-mul switches to llamafile's tinyBLAS at 8 rows (k = 8 on, both models). Below 4 rows every pass
  runs the repacked one-to-three-row kernel, whose rows equal one-row passes; a longer pass is cut into ubatches
  of 3, which change no row's bits. Measured on the 1.5B, 2 threads, alternated in one process: 37.9 ms a step
  against 50.2 with repacking off and ubatches of 6 (the first exact setting found), every row of k = 2 .. 17
  passes and 6 tokens after 300 bit-equal either way; the 0.5B 39.4 against 41.0 ms on one thread (its Q5_0/Q8_0
  matrices are not repacked). A ubatch of 4 fails the self-test (`LLAMA_DEFAULTS`' neighbour, the control).
  The price is a verification pass cut finer: a 17-token pass costs 16.8 steps against 14.7 (but 637 against
  740 ms), so the gain is in steps, which is what a CPU with few cores mostly runs.
- **flash attention on** (`flash_attn_type = ENABLED`): without it, attention is two mat-muls whose kernel
  changes with the query rows (rows differ from k = 2 on the 1.5B, k = 3 on the 0.5B). The CPU
  flash-attention kernel computes each query row on its own, in cell order.
- **the V cache in bfloat16, K in float16** (`type_v = BF16`): found here. At 256 cells or more (n_kv pads to
  512) a one-token pass takes a split-KV flash-attention path that cuts the cells among the threads and
  merges the partial sums, while a pass of 2+ tokens gives each query row to one thread: with 2 threads, rows
  of a 6-token pass after 300 tokens of text differed from one-token steps by up to 0.79 in the logits on the
  1.5B and 0.43 on the 0.5B, though every short pass was exact (identical at 1 thread). That path is taken
  only when K and V have the same type (F16 or F32, and an F32 cache is cast to F16 before attention), so V
  in bfloat16 turns it off: every row then equal at 1 and 2 threads, at 300 and 700 tokens. K keeps llama.cpp's
  default F16 (the query is rounded to K's type for the dot products); V values lose 3 mantissa bits but are summed
  in float32 instead of the default's float16.

**The prompt pass runs on the fastest kernels** (`prompt_ubatch = 512`): a text's first pass, over its prompt, fills
the KV cache with values no later pass recomputes, and its last row gives the first new token. Speculative and plain
decoding both start with that very pass (each text alone, in ubatches of 512), so their caches hold the same bits
whatever kernel made them; only the passes after it must equal one-token steps. Batch invariance is a property of the
passes that follow the prompt, not of the prompt pass: "plain decoding" here means the prompt pass, then one-token
steps, which is also what `llama-completion` runs. Measured on the zoo's 1.5B (Intel Xeon, AVX-512, 2 threads, the
pinned wheel): a 64-token prompt in 0.84 s against 2.10 s in ubatches of 3. The context is made with ubatches of 512
and `Context.decode` cuts every later pass into ubatches of `ubatch` itself (one `llama_decode` each).

The rest says what a speculative pass needs:

- `kv_unified = true`: one cell buffer for every sequence, so a token can be seen from several sequences
  (a token tree, `specdec.runtime.llama_cpp.views`); without it each sequence has its own buffer.
- `n_seq_max`: the texts (rows) + the temporary sequence ids of a pass's tree tokens + one for dropped cells.
- `n_outputs_max_per_seq = 0` (= every output of a ubatch): the default of this generation is 1; it caps
  outputs per sequence for llama.cpp's backend samplers, which this runtime does not use (it reads logits),
  raised so that no cap can ever apply to a verification pass's rows.
- `n_batch`: the longest pass handed to one `llama_decode` (longer causal passes are cut by the caller).
- `n_ctx`: cells for every text's tokens plus the cells dropped tokens hold until the cache is repacked.
- `n_threads` and `n_threads_batch` both: llama.cpp runs one-token passes on the first and longer ones on the
  second; left apart, a verification pass would run on another thread count than the steps.

What exactness costs, with this build (xllamacpp 2026.10.11549): with repacking off (the first exact settings)
the 1.5B's step took 104 ms against 84 with llama.cpp's defaults on one thread (alternated in one process), all
of it from the repacked weights; keeping them and cutting passes into ubatches of 3 wins that back (above).
The 0.5B: its hidden size, 896, is no multiple of 256, so 413 of its 485 MB of weights are Q5_0 and Q8_0; only
its few Q4_K and Q6_K matrices are repacked, enough to break exactness from k = 4, not enough to show in a step.

`LLAMA_DEFAULTS` is llama.cpp's own choice of the same knobs: the self-test's negative control, and a draft's settings
(`FASTEST`): a draft needs no batch invariance.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

GGML_TYPE_F16, GGML_TYPE_BF16 = 1, 30
FLASH_ATTENTION_AUTO, FLASH_ATTENTION_ENABLED = -1, 1


@dataclass(frozen=True)
class Settings:
    """The knobs that decide which kernels run (module docstring): `EXACT` is what this runtime uses."""

    repacked_weights: bool = True  # model parameter use_extra_bufts: faster steps (module docstring)
    flash_attention: int = FLASH_ATTENTION_ENABLED
    ubatch: int = 3  # tokens per ubatch: the repacked GEMM takes over at 4, tinyBLAS at 8
    prompt_ubatch: int = 512  # tokens per ubatch of a text's prompt pass: the fastest kernels (below)
    key_type: int = GGML_TYPE_F16
    value_type: int = GGML_TYPE_BF16  # not F16: no split-KV path for one-token passes

    def key(self) -> dict[str, object]:
        """What a self-test's verdict depends on, as JSON-ready values."""
        return asdict(self)


EXACT = Settings()
LLAMA_DEFAULTS = Settings(
    repacked_weights=True,
    flash_attention=FLASH_ATTENTION_AUTO,
    ubatch=512,
    key_type=GGML_TYPE_F16,
    value_type=GGML_TYPE_F16,
)
# A draft's settings: llama.cpp's own, its fastest kernels at every row count. A draft never needs batch invariance:
# only the target's passes must give the bits of one-token steps, and the q a drafted token was sampled from is the q
# the rule divides by, whatever kernel computed it. Measured on the zoo's 0.5B (Intel Xeon, AVX-512, 2 threads, the
# pinned wheel): a step 41.9 ms either way, a tree level of 4 nodes 63 ms against 110, a 64-token prompt 0.41 s against
# 0.91 s.
FASTEST = LLAMA_DEFAULTS

BATCH_TOKENS = 512  # the longest pass one llama_decode takes (a longer causal pass is cut into several)


def model_params(lib, settings: Settings = EXACT):
    """`llama_model_params` for loading a GGUF: the defaults,
    weights repacked as `settings` say, read rather than mapped."""
    params = lib.llama_model_default_params()
    params.use_extra_bufts = settings.repacked_weights
    # read into memory, not mapped: the repacked weights are a copy, and the mapped file's pages would stay resident
    # beside it. `specdec run`'s default pair, measured (Intel Xeon, 2 threads): 3.01 GB resident mapped, 2.37 GB read
    params.load_mode = lib.LLAMA_LOAD_MODE_NONE
    params.n_gpu_layers = 0  # a CPU runtime: nothing offloaded even where a GPU backend exists
    return params


def context_params(lib, settings: Settings, cells: int, sequences: int, threads: int):
    """`llama_context_params` for a cache of `cells` token cells
    shared by `sequences` sequence ids (module docstring)."""
    params = lib.llama_context_default_params()
    params.n_ctx = cells
    params.n_batch = BATCH_TOKENS
    # passes are cut by `Context.decode`
    params.n_ubatch = min(max(settings.ubatch, settings.prompt_ubatch), BATCH_TOKENS)
    params.n_seq_max = sequences
    params.n_outputs_max_per_seq = 0
    params.n_threads = threads
    params.n_threads_batch = threads
    params.flash_attn_type = settings.flash_attention
    params.type_k = settings.key_type
    params.type_v = settings.value_type
    params.kv_unified = True
    params.no_perf = True
    return params
