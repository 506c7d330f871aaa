"""One llama.cpp context: a KV cache of token cells, the passes run on it, and the bookkeeping that keeps it exact.

A context holds `cells` token cells shared by every sequence (`kv_unified`). This module feeds it batches
(`decode`), gives out sequence ids (`acquire`/`release`), and drops tokens so that no later pass can read
them out of order (`drop`, `repack`).

Why dropping needs care. The CPU flash-attention kernel sums a query's visible cells in cell order, and
floating-point sums depend on their order. A fresh text's cells are in position order (each token takes
the next free cell), so the one-token decoding every result is compared with sums in position order. If a
dropped token's cell were freed, llama.cpp would put a later token into that hole, before cells holding
earlier positions of the same text, and the sums would change: measured on Qwen2.5-Coder 0.5B, after a
12-node tree kept a 4-node path, steps 8 and 9 after it differed from a fresh run by 0.15 in the logits.
So a dropped token is never freed: its cell moves to a sequence nobody reads (`GARBAGE`), the cache only
ever grows at its end, and when it is full the live texts are copied out and back in order
(`repack`: `llama_state_seq_get_data`/`set_data`, the same bits in new cells, position order, no holes).

    context = Context(library, model_handle, EXACT, cells=1024, sequences=8, threads=2)
    seq = context.acquire()
    rows = context.decode([Entry(token, position, (seq,), output=True) for ...])   # logits of the output entries
    context.drop(seq, 5, -1)                  # positions 5.. of `seq` are forgotten (their cells go to GARBAGE)

Not handled: recurrent and hybrid models (their state is not a set of cells; `specdec.runtime.llama_cpp.model`
refuses them).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from specdec.errors import SpecdecError
from specdec.runtime.llama_cpp.library import Library
from specdec.runtime.llama_cpp.settings import BATCH_TOKENS, Settings, context_params
from specdec.runtime.llama_cpp.threads import Threads

GARBAGE = 0  # the sequence id whose cells no query reads: dropped tokens wait there for the next repack


@dataclass(frozen=True)
class Entry:
    """One token of a pass: its id, position, the sequence ids it
    joins (the first is its own), and whether its logits are read."""

    token: int
    position: int
    sequences: tuple[int, ...]
    output: bool = False


class Context:
    """A llama.cpp context (module docstring): passes, sequence ids, dropped cells and repacking."""

    def __init__(
        self,
        library: Library,
        model,
        settings: Settings,
        cells: int,
        sequences: int,
        threads: int,
        governed: bool = False,
    ) -> None:
        self.library, self.settings, self.threads = library, settings, threads
        # governed: every core, or one fewer, whichever is faster now
        self.governor = Threads(threads, fixed=not governed)
        ffi, lib = library.ffi, library.lib
        self.handle = lib.llama_init_from_model(model, context_params(lib, settings, cells, sequences, threads))
        if self.handle == ffi.NULL:
            raise SpecdecError(
                f"llama.cpp could not make a context of {cells} cells and {sequences} sequences "
                "(out of memory?): load the model with a smaller context"
            )
        self.memory = lib.llama_get_memory(self.handle)
        self.cells = int(lib.llama_n_ctx(self.handle))  # llama.cpp pads to a multiple of 256
        self.sequences = int(lib.llama_n_seq_max(self.handle))
        self.vocab_size = int(lib.llama_vocab_n_tokens(lib.llama_model_get_vocab(model)))
        self.batch = lib.llama_batch_init(BATCH_TOKENS, 0, self.sequences)
        self.used = 0  # cells holding a token, kept or dropped
        self._free_ids = list(range(self.sequences - 1, GARBAGE, -1))  # popped from the end: 1, 2, 3, ...
        self.repacks = 0

    def close(self) -> None:
        """Free the context (its cells and buffers); the object is unusable afterwards."""
        if self.handle is not None:
            self.library.lib.llama_batch_free(self.batch)
            self.library.lib.llama_free(self.handle)
            self.handle = None

    def clear(self) -> None:
        """Forget every token and give every sequence id back: an empty cache, ready for new texts."""
        self.library.lib.llama_memory_clear(self.memory, False)
        self.used = 0
        self._free_ids = list(range(self.sequences - 1, GARBAGE, -1))

    @property
    def free(self) -> int:
        """Cells no token holds yet (the end of the cache: dropped tokens keep theirs until `repack`)."""
        return self.cells - self.used

    def acquire(self) -> int:
        """A sequence id nobody uses."""
        if not self._free_ids:
            raise SpecdecError(
                f"the llama.cpp context has no free sequence id left ({self.sequences} in all, one per "
                "text and one per new tree token of a pass): feed smaller trees or fewer texts"
            )
        return self._free_ids.pop()

    def release(self, sequence: int) -> None:
        """Give a sequence id back, taking it off every cell (a cell it held alone is freed: `drop` those first)."""
        self.library.lib.llama_memory_seq_rm(self.memory, sequence, -1, -1)
        self._free_ids.append(sequence)

    def drop(self, sequence: int, start: int = -1, end: int = -1) -> None:
        """Forget `sequence`'s tokens at positions [start, end) (-1:
        open): their cells go to `GARBAGE`, never freed here."""
        lib = self.library.lib
        lib.llama_memory_seq_cp(self.memory, sequence, GARBAGE, start, end)
        lib.llama_memory_seq_rm(self.memory, sequence, start, end)

    def copy(self, source: int, target: int, start: int, end: int) -> None:
        """Let `target` see `source`'s cells at positions [start, end) too (the cells are shared, not duplicated)."""
        self.library.lib.llama_memory_seq_cp(self.memory, source, target, start, end)

    def repack(self, sequences: list[int]) -> None:
        """Copy the live `sequences` out, empty the cache, copy
        them back: no dropped cells left, each in position order."""
        ffi, lib = self.library.ffi, self.library.lib
        saved = []
        for sequence in sequences:
            size = lib.llama_state_seq_get_size(self.handle, sequence)
            buffer = ffi.new("uint8_t[]", size)
            written = lib.llama_state_seq_get_data(self.handle, buffer, size, sequence)
            saved.append((sequence, buffer, written))
        lib.llama_memory_clear(self.memory, False)
        self.used = 0
        for sequence, buffer, size in saved:
            if lib.llama_state_seq_set_data(self.handle, buffer, size, sequence) == 0:
                raise SpecdecError("llama.cpp could not restore a text while repacking its KV cache")
            self.used += max(0, int(lib.llama_memory_seq_pos_max(self.memory, sequence)) + 1)
        self.repacks += 1

    def decode(self, entries: list[Entry], prompt: bool = False) -> list[np.ndarray]:
        """Run a pass over `entries` (at most `BATCH_TOKENS`): the logits [V] of each output entry, in order.

        A `prompt` pass (one text's first tokens) runs in ubatches of `settings.prompt_ubatch`, any other in ubatches of
        `settings.ubatch`, one `llama_decode` each: what llama.cpp's own split would do with that ubatch size, while the
        context itself is made for the larger of the two."""
        if not 0 < len(entries) <= BATCH_TOKENS:
            raise ValueError(f"a llama.cpp pass takes 1 to {BATCH_TOKENS} tokens, got {len(entries)}")
        if len(entries) > self.free:
            raise SpecdecError(
                f"the llama.cpp KV cache is full ({self.cells} cells): load the model with a larger context"
            )
        count = self.governor.count_for(len(entries))
        if count != self.threads:
            self.threads = count
            self.library.lib.llama_set_n_threads(self.handle, self.threads, self.threads)
        size = self.settings.prompt_ubatch if prompt else self.settings.ubatch
        start = time.perf_counter()
        rows = []
        for first in range(0, len(entries), size):
            rows += self._decode_one(entries[first : first + size])
        self.governor.passed(len(entries), time.perf_counter() - start)
        return rows

    def _decode_one(self, entries: list[Entry]) -> list[np.ndarray]:
        """One `llama_decode` over `entries`: the logits [V] of each output entry, in order."""
        ffi, lib, batch = self.library.ffi, self.library.lib, self.batch
        batch.n_tokens = len(entries)
        for i, entry in enumerate(entries):
            batch.token[i] = entry.token
            batch.pos[i] = entry.position
            batch.n_seq_id[i] = len(entry.sequences)
            for j, sequence in enumerate(entry.sequences):
                batch.seq_id[i][j] = sequence
            batch.logits[i] = entry.output
        status = lib.llama_decode(self.handle, batch)
        if status != 0:
            raise SpecdecError(
                f"llama.cpp's llama_decode failed with status {status} (1: no room in the KV cache, "
                "-1: a batch it refused): this is a bug in specdec's llama.cpp runtime, please report it"
            )
        self.used += len(entries)
        rows = []
        for i, entry in enumerate(entries):
            if entry.output:
                pointer = lib.llama_get_logits_ith(self.handle, i)
                rows.append(np.frombuffer(ffi.buffer(pointer, 4 * self.vocab_size), dtype=np.float32).copy())
        return rows
