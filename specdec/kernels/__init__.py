"""The kernel layer: how a model's weights are stored and multiplied, and the precision each model runs in.

Notation: p is the target, q the draft, c a draft step's cost over a target step, v(k) a verification
pass over k tokens in one-token steps. Kernels change c and v(k); the engine never imports them, and
they know nothing of speculative decoding beyond one promise, tested bit for bit: a token's logits do
not depend on the other tokens of the pass (so a quantized target is exact against itself as loaded).

- `devices`: which devices this machine has, and the dtype each runs
- `quantization`: int8, int4 and w8a8 linear layers (fewer bytes read per step)
- `int8_rows`: int8 weights with a scale per output row, the storage int8 and w8a8 share
- `w8a8`: int8 activations too, in vLLM's prebuilt CPU kernel (or an exact reference kernel)
- `w8a8_gate`: that kernel proven on this machine, bit for bit, in a subprocess, before it is used
- `packed_linear`: bfloat16 linear layers laid out once for the CPU kernel (the same bits, faster)
- `invariant_attention`: attention whose rows do not depend on the pass, for quantized models
- `precision`: a model's device, dtype, weights, kernel and why, resolved once and carried by the rest

Not handled here: where weights come from (`specdec.zoo`), what runs them (the engine).
"""
