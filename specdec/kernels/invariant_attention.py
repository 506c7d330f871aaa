"""Attention whose output for a token does not depend on how many tokens share the pass.

Notation: p is the target. A verification pass computes p for several tokens at once; plain
decoding computes it one token at a time. In float32 the two differ in the last bits, because the
matrix kernels pick another summation order for another shape. With float weights that is harmless
(only near-ties can flip). With int8 activations (`specdec.kernels.quantization.Int8Linear`) it is not:
a last-bit difference can move a value across a quantization step, and the logits then differ by far
more than rounding (seen on Qwen2.5-Coder-1.5B while this was built, before this module existed:
greedy speculative and plain outputs parted at token 63, where the two best logits were 0.42 apart).

Here queries, keys and values are widened to float64 for the scores, the softmax and the weighted
sum, and the result is rounded back. The two passes still sum in different orders, but their float64
results agree to about 1e-16, far inside one float32 (or bfloat16) step, so they round to the same
value in all but a vanishing share of cases; with the quantized layers (whose rows are already
bit-identical) the whole model then gives a token the same logits in a pass as alone, which the tests
check bit for bit. Keys and values are few on a CPU (grouped-query attention: 2 heads of 128 for
Qwen2.5-Coder), so widening them costs little next to reading the weights.

    use_invariant_attention(model)     # for plain causal attention; a model with a window or soft-capping keeps its own
"""

from __future__ import annotations

import torch
from transformers import AttentionInterface, PreTrainedModel

NAME = "specdec_invariant"


def invariant_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """query [B, H, M, D], key and value [B, Hkv, L, D] -> output [B, M, H, D], in float64 inside."""
    batch, heads, new, dim = query.shape
    kv_heads, length = key.shape[1], key.shape[2]
    groups = heads // kv_heads
    scale = dim**-0.5 if scaling is None else scaling
    q = query.double().reshape(batch, kv_heads, groups * new, dim)  # [B, Hkv, G*M, D]
    scores = torch.matmul(q, key.double().transpose(2, 3)) * scale  # [B, Hkv, G*M, L]
    scores = scores.reshape(batch, heads, new, length)  # [B, H, M, L]
    if attention_mask is not None:
        mask = attention_mask[..., :length]
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask.double()
    elif new > 1:  # causal, the new tokens last
        future = torch.ones(new, length, dtype=torch.bool, device=query.device).triu(length - new + 1)
        scores = scores.masked_fill(future, float("-inf"))
    weights = torch.softmax(scores, dim=-1).reshape(batch, kv_heads, groups * new, length)  # [B, Hkv, G*M, L]
    output = torch.matmul(weights, value.double()).reshape(batch, heads, new, dim)  # [B, H, M, D]
    return output.to(query.dtype).transpose(1, 2).contiguous(), None


AttentionInterface.register(NAME, invariant_attention)


def use_invariant_attention(model: PreTrainedModel) -> bool:
    """Switch `model` to `invariant_attention` where its attention
    is plain causal softmax attention; say whether it was."""
    config = model.config
    special = (
        getattr(config, "attn_logit_softcapping", None)
        or getattr(config, "sliding_window", None)
        and getattr(config, "use_sliding_window", True)
        or getattr(config, "layer_types", None)
        and any(kind != "full_attention" for kind in config.layer_types)
    )
    if special or config.model_type not in ("llama", "qwen2", "mistral", "qwen3"):
        return False
    model.set_attn_implementation(NAME)
    return True
