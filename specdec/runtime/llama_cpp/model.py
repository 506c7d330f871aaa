"""A GGUF model on llama.cpp's kernels, behind the `Model` contract of `specdec.engine.model`.

    model = load_gguf("~/.cache/specdec/models/qwen2.5-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    model.vocab_size, model.traits.runtime         # (151936, 'llama.cpp')
    rows = model.rows([0])                         # an empty KV cache for one text
    logits, _ = rows.feed([torch.tensor(prompt_ids)])   # [1, 1, V] float32

The file is memory-mapped, not converted: loading the zoo's 1.5B took 1.0 s here (the import included), a
first cache and a 20-token pass 1.4 s more, 1.5 GB resident with torch; its weights stay in the page cache,
shared with any other process reading the same file. Weights are read as the file has
them (Q4_K, Q6_K, ...) by llama.cpp's CPU kernels with the exact settings (`specdec.runtime.llama_cpp.settings`).

What a loaded model holds:

- `vocab_size` and `embedding_rows`: `llama_vocab_n_tokens` (llama.cpp's logits are that wide);
- `context_length`: the shorter of the model's training context and the cells a text gets (`context`,
  default `CONTEXT_TOKENS`: a Qwen2.5 1.5B's cache costs 28 KB a token, 4096 tokens 115 MB per text);
- `traits`: `ModelTraits("llama.cpp", hidden_states=False, internals=False, sliding_window=...)`. For a model
  with sliding-window layers (Gemma 2/3: `llama_model_n_swa` > 0) llama.cpp keeps a second cache for those
  layers and, with `swa_full` (its default, kept here), every cell of it, masking the window by position; so
  rollback works, but the trait is set and the loop gives such a model one text and chains, as with torch:
  trees and batches on windowed layers are not proven exact here;
- `weight_bytes()`: the tensors' bytes (`llama_model_size`), less the input embedding table when the output
  layer has its own (a step reads one row of it): the bytes a decoding step reads;
- `verify_slope()`: beta in v(k) = 1 + beta k, a guess from what was measured on 2 AVX2 cores (1.0 on one thread,
  0.8 on two: the kernels are compute-bound there, a pass over 17 tokens costs 16.8 steps on one thread and 13.9
  on two, `benchmarks/llama_cpp_exactness.py timing`; more cores make a pass cheaper, and the policy measures).

Tokenizing stays with transformers (the zoo reads the tokenizer from the same GGUF file): this model takes
and gives token ids only, and says which ids the file marks as end and beginning (`eos_token_id`,
`bos_token_id`). Contexts are reused: `rows()` clears the last one when its `Rows` is gone.

Not handled: recurrent or hybrid models (Mamba, RWKV, Jamba: their state is not a cache of cells) and
encoder-decoder models are refused; GPU offload (this is the CPU runtime).
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from specdec.engine.model import ModelTraits
from specdec.errors import SpecdecError
from specdec.runtime.llama_cpp.context import Context
from specdec.runtime.llama_cpp.huge_pages import HugePagesOnLoad, wanted
from specdec.runtime.llama_cpp.library import Library, load_library
from specdec.runtime.llama_cpp.rows import LlamaCppRows
from specdec.runtime.llama_cpp.settings import EXACT, Settings, model_params

CONTEXT_TOKENS = 4096  # cells per text when the caller does not say (the model's own context when shorter)
TREE_SEQUENCES = 64  # sequence ids for the new tokens of one pass's trees, over all texts
SLACK_CELLS = 256  # cells beyond the texts': dropped tokens wait there until a repack
# beta in v(k) = 1 + beta k, by threads: the zoo's 1.5B with the exact settings on 2 AVX2 cores (benchmarks/
# llama-cpp-exactness.md): v(2) = 2.01, v(17) = 15.4 on one thread; v(2) = 1.69, v(17) = 11.1 on two.
VERIFY_SLOPES = {1: 1.0, 2: 0.8}


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_threads() -> int:
    """The thread count a model starts with and its self-test proves: every core (at most 8) this process may use.

    Measured on a 2-core AMD EPYC (AVX2), the 1.5B Q4_K_M's one-token step: quiet, 40.8 ms on 2 threads against 62.7
    on one (medians); with one other busy process, 77.9 against 65.7; while a test suite ran beside it, 2 threads took
    a median 1324 ms (a thread that lost its core stalls every layer's barrier) and 1 thread 112 ms. So a model loaded
    without a thread count is governed: its passes move to one
    fewer thread while that is faster, and back (`specdec.runtime.llama_cpp.threads`).
    """
    return max(1, min(available_cores(), 8))


def _is_gguf(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(4) == b"GGUF"


class LlamaCppModel:
    """A loaded GGUF model (module docstring): `rows()` gives KV caches, the rest describes it."""

    def __init__(
        self,
        library: Library,
        handle,
        path: Path,
        threads: int,
        context: int,
        settings: Settings,
        governed: bool = False,
    ) -> None:
        lib = library.lib
        self.library, self.handle, self.path, self.threads, self.settings = library, handle, path, threads, settings
        self.governed = governed  # its contexts choose every core or one fewer, pass by pass (`threads.py`)
        self.name = path.stem
        self.vocab_size = int(lib.llama_vocab_n_tokens(lib.llama_model_get_vocab(handle)))
        self.embedding_rows = self.vocab_size
        self.training_context = int(lib.llama_model_n_ctx_train(handle))
        self.context_tokens = min(context, self.training_context) if self.training_context > 0 else context
        self.context_length = self.context_tokens
        vocab = lib.llama_model_get_vocab(handle)
        self.eos_token_id = _token_or_none(lib.llama_vocab_eos(vocab))  # what the file says; tokenizing stays
        self.bos_token_id = _token_or_none(lib.llama_vocab_bos(vocab))  # with transformers
        self.sliding_window = int(lib.llama_model_n_swa(handle))
        self.traits = ModelTraits(
            runtime="llama.cpp",
            hidden_states=False,
            sliding_window=self.sliding_window > 0,
            batches=True,
            internals=False,
        )
        self.device = torch.device("cpu")
        self.dtype = torch.float32  # llama.cpp's activations
        self.weights = "GGUF"  # the file's type ("Q4_K_M") where the loader read it (`specdec.pair.loading`)
        self.passes = 0  # forward passes of every cache made from this model
        self._weight_bytes: int | None = None
        self._contexts: list[Context] = []  # contexts made here, freed with the model
        self._users: dict[int, weakref.ref] = {}  # id(context) -> the Rows using it

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        """Free every context, then the weights."""
        for context in getattr(self, "_contexts", []):
            context.close()
        self._contexts = []
        if getattr(self, "handle", None) is not None:
            self.library.lib.llama_model_free(self.handle)
            self.handle = None

    def rows(self, rows: Sequence[int], output_rows: int | None = None) -> LlamaCppRows:
        """An empty cache for the texts `rows` (ids, in order); `output_rows=K`: logits of the first K ids only."""
        rows = list(rows)
        cells = len(rows) * self.context_tokens + SLACK_CELLS
        sequences = min(256, len(rows) + 1 + TREE_SEQUENCES)
        context = next(
            (c for c in self._contexts if c.cells >= cells and c.sequences >= sequences and self._user(c) is None), None
        )
        if context is None:
            for idle in [c for c in self._contexts if self._user(c) is None]:  # one idle context at most stays
                idle.close()
                self._contexts.remove(idle)
            context = Context(self.library, self.handle, self.settings, cells, sequences, self.threads, self.governed)
            self._contexts.append(context)
        context.clear()
        cache = LlamaCppRows(self, context, rows, output_rows)
        self._users[id(context)] = weakref.ref(cache)
        return cache

    def _user(self, context: Context) -> LlamaCppRows | None:
        user = self._users.get(id(context))
        return None if user is None else user()

    @property
    def identity(self) -> str:
        """The file (its size and modification time), the threads, the settings and the library (the wheel's or one
        built for this CPU): what timings are kept under."""
        stat = self.path.stat()
        return (
            f"{self.path}:{stat.st_size}:{stat.st_mtime_ns} threads={self.threads} "
            f"{sorted(self.settings.key().items())} "
            f"library={self.library.path}"
        )

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        """The end-of-text id the file names (its tokenizer may name others)."""
        return () if self.eos_token_id is None else (self.eos_token_id,)

    def weight_bytes(self) -> int:
        """Bytes of weights one decoding step reads (module docstring); read off the file once."""
        if self._weight_bytes is None:
            self._weight_bytes = int(self.library.lib.llama_model_size(self.handle)) - _untied_embedding_bytes(
                self.path
            )
        return self._weight_bytes

    def verify_slope(self) -> float:
        """beta in v(k) = 1 + beta k, guessed without measuring: measured on 1 and 2 AVX2 threads (`VERIFY_SLOPES`)."""
        return VERIFY_SLOPES[min(self.threads, 2)]


def _token_or_none(token: int) -> int | None:
    return None if token < 0 else int(token)  # LLAMA_TOKEN_NULL is -1


def _untied_embedding_bytes(path: Path) -> int:
    """The input embedding table's bytes when the file also has an output layer (else 0: the step reads the table
    whole).

    Read from the file's tensor table alone (transformers' GGUF reader: 0.1 s, where gguf's own reader, which parses
    every metadata string, takes 10-20 s for Qwen2.5's 150k-token vocabulary on this project's CPU)."""
    import gguf
    from transformers.integrations.gguf import reader

    blob = reader._mapped(str(path))
    _, count, position = reader._read_metadata(blob, str(path), ())
    tensors = {name: (shape, kind) for name, shape, kind, _ in reader._read_tensor_table(blob, count, position)[0]}
    if "token_embd.weight" not in tensors or "output.weight" not in tensors:
        return 0
    shape, kind = tensors["token_embd.weight"]
    block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(kind)]
    return int(np.prod(shape)) // block * size


def load_gguf(
    path: str | Path,
    threads: int | None = None,
    context: int = CONTEXT_TOKENS,
    settings: Settings = EXACT,
    huge_pages: bool | None = None,
) -> LlamaCppModel:
    """Map a GGUF file into llama.cpp with the exact settings; one `SpecdecError` line when it cannot be read.

    `threads`: a fixed count; None (default): every core this process may use, or one fewer, chosen pass by pass by
    how fast each runs now (`specdec.runtime.llama_cpp.threads`); `context`: cells per text; `huge_pages`: ask the
    kernel to back the weights with huge pages (`specdec.runtime.llama_cpp.huge_pages`: the same bits, a faster step,
    a slower load; None: where `SPECDEC_HUGE_PAGES=1`).
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise SpecdecError(
            f"no GGUF file at {path}: fetch the model first (specdec models fetch NAME) or check the path"
        )
    if not _is_gguf(path):
        raise SpecdecError(f"{path} is not a GGUF file (it does not start with the GGUF magic): fetch it again")
    governed = threads is None
    threads = default_threads() if threads is None else threads
    if not 1 <= threads:
        raise SpecdecError(f"threads must be at least 1, got {threads}")
    library = load_library()
    ffi, lib = library.ffi, library.lib
    params, pages = model_params(lib, settings), HugePagesOnLoad(ffi, wanted() if huge_pages is None else huge_pages)
    if pages.callback is not None:
        params.progress_callback = pages.callback  # the weights on huge pages: a faster step, the same bits
    handle = lib.llama_model_load_from_file(str(path).encode(), params)
    if handle == ffi.NULL:
        raise SpecdecError(
            f"llama.cpp could not load {path}: the file is corrupt, truncated or of an architecture this "
            "llama.cpp does not know; fetch it again"
        )
    if lib.llama_model_is_recurrent(handle) or lib.llama_model_is_hybrid(handle) or lib.llama_model_has_encoder(handle):
        lib.llama_model_free(handle)
        raise SpecdecError(
            f"{path.name} is a recurrent, hybrid or encoder-decoder model, which the llama.cpp runtime "
            "does not run: use --runtime torch"
        )
    model = LlamaCppModel(library, handle, path, threads, context, settings, governed)
    model.rows([0])  # its first context, made now and kept idle: making one takes 1.6 s the first time (the
    return model  # memory is new to the process; 0.1 s after), a cost of loading, not of the first run
