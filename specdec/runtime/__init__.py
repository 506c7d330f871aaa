"""Runtimes: what runs a model's forward passes behind the contract of `specdec.engine.model`.

- `specdec.runtime.llama_cpp`: GGUF files on llama.cpp's own CPU kernels, through its C API (cffi, no compiler),
  with the settings that make a pass's rows the bits of one-token steps, proven on this machine before use.

The torch/transformers runtime lives with the engine's caches today (`specdec.engine.batch_cache`).
"""
