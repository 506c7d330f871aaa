"""An EAGLE-3 draft head: one decoder layer that reads the target's own hidden states (Li et al. 2025).

Notation: p is the target, q the draft (here the head), V the target's vocabulary, d the head's draft
vocabulary, H the target's hidden size. A draft model re-reads the whole text with weights of its own;
a head reads what the target already computed. At position i the target's verification pass leaves
hidden states h_i at every layer; the head fuses three of them (low, middle, high, EAGLE-3's change
from EAGLE's top layer alone) with the embedding of the token that followed, x_{i+1}, and predicts x_{i+2}:

    f_i   = fc([h_i^low ; h_i^mid ; h_i^high])              [3H] -> [H]   the fusion, once per target row
    a_i   = attention over [norm(embed(x_{i+1})) ; norm(f_i)] [2H] -> [H]   one decoder layer, with a KV cache
    g_i   = f_i + a_i + mlp(norm(f_i + a_i))                                the head's own hidden state
    q(x_{i+2}) = softmax(lm_head(norm(g_i)))                [H] -> [d]   over the draft vocabulary only

To draft further than one token the head feeds itself: the next entry is (embed(y), g_i) where y is the
token it just drafted, its own g in place of the target's fused f (EAGLE-3's "training-time test" trains
it to do exactly that, `specdec.heads.training`). So a draft step costs one decoder layer and an output
layer of d rows: for Qwen2.5-1.5B about 50M + 49M weights against the target's 1.5B.

The reduced vocabulary: the head scores only the d most frequent tokens (32,000 of Qwen's 151,936).
`d2t[j]` is the offset from draft id j to its target id (target = j + d2t[j], EAGLE-3's layout), `t2d`
marks the target ids the head can say. `target_logits` spreads the head's d logits into the target's V
with -inf elsewhere, so q is a distribution over the target's vocabulary with zero outside the draft
vocabulary: that is what the acceptance rule needs to stay exact (a q over the d draft ids laid on the
first d target ids would be a different law from the one the tokens are drawn from).

The weights' names are the ones vLLM and SGLang load for `"method": "eagle3"` (`midlayer.self_attn.q_proj`,
`fc`, `norm`, `lm_head`, `d2t`, `t2d`; the token embedding is the target's own and is not stored):

    head = EagleHead.for_target(target, draft_ids)          # a fresh head, its output layer from the target's
    logits, g, keys, values = head.step(embeds, hidden, positions, past, attend)

Not handled: more than one decoder layer, attention biases, rope scaling (the head's layer is Llama's).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from specdec.errors import SpecdecError
from specdec.heads.config import HeadConfig


class RMSNorm(nn.Module):
    """x / rms(x) * weight, Llama's normalisation."""

    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., H] -> [..., H]
        scale = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return (x.float() * scale).to(x.dtype) * self.weight


class Attention(nn.Module):
    """Llama attention whose queries, keys and values read 2H
    inputs (the embedding and the hidden state side by side)."""

    def __init__(self, config: HeadConfig) -> None:
        super().__init__()
        h, heads, kv, dim = config.hidden_size, config.num_attention_heads, config.num_key_value_heads, config.head_dim
        self.heads, self.kv_heads, self.dim = heads, kv, dim
        self.q_proj = nn.Linear(2 * h, heads * dim, bias=False)
        self.k_proj = nn.Linear(2 * h, kv * dim, bias=False)
        self.v_proj = nn.Linear(2 * h, kv * dim, bias=False)
        self.o_proj = nn.Linear(heads * dim, h, bias=False)
        self.register_buffer(
            "inv_freq", 1.0 / config.rope_theta ** (torch.arange(0, dim, 2).float() / dim), persistent=False
        )

    def rotate(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Rotary position embedding (rotate-half layout, as Llama's): x [n, heads, dim], positions [n]."""
        angles = positions.float()[:, None] * self.inv_freq[None]  # [n, dim / 2]
        cos, sin = torch.cat([angles, angles], -1).cos()[:, None], torch.cat([angles, angles], -1).sin()[:, None]
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return (x.float() * cos + rotated.float() * sin).to(x.dtype)

    def project(self, x: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries [n, heads, dim], keys and values [n, kv_heads, dim] of x [n, 2H], rotated to `positions`."""
        n = x.shape[0]
        q = self.rotate(self.q_proj(x).view(n, self.heads, self.dim), positions)
        k = self.rotate(self.k_proj(x).view(n, self.kv_heads, self.dim), positions)
        return q, k, self.v_proj(x).view(n, self.kv_heads, self.dim)

    def attend(self, q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """softmax(q k^T / sqrt(dim)) v over the keys `mask` [n, K] allows:
        q [n, heads, dim], keys/values [K, kv_heads, dim] -> [n, H]."""
        repeat = self.heads // self.kv_heads
        keys, values = keys.repeat_interleave(repeat, dim=1), values.repeat_interleave(repeat, dim=1)  # [K, heads, dim]
        scores = torch.einsum("nhd,khd->hnk", q, keys) / math.sqrt(self.dim)  # [heads, n, K]
        scores = scores.masked_fill(~mask[None], float("-inf"))
        out = torch.einsum("hnk,khd->nhd", scores.softmax(-1), values)  # [n, heads, dim]
        return self.o_proj(out.reshape(out.shape[0], -1))


class MLP(nn.Module):
    def __init__(self, config: HeadConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [n, H] -> [n, H]
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class MidLayer(nn.Module):
    """The head's one decoder layer (vLLM's `midlayer`): two input norms, attention over 2H, an MLP."""

    def __init__(self, config: HeadConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)  # on the token's embedding
        self.hidden_norm = RMSNorm(config.hidden_size, config.rms_norm_eps)  # on the hidden state
        self.self_attn = Attention(config)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = MLP(config)

    def inputs(self, embeds: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:  # [n, H], [n, H] -> [n, 2H]
        return torch.cat([self.input_layernorm(embeds), self.hidden_norm(hidden)], dim=-1)

    # attention out [n, H], residual [n, H] -> g [n, H]
    def finish(self, attended: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        h = hidden + attended
        return h + self.mlp(self.post_attention_layernorm(h))


class EagleHead(nn.Module):
    """An EAGLE-3 head: fusion `fc`, one decoder layer `midlayer`,
    `norm`, `lm_head` over d tokens, and the maps `d2t`, `t2d`."""

    def __init__(self, config: HeadConfig) -> None:
        super().__init__()
        self.config = config
        h = config.hidden_size
        self.fc = nn.Linear(3 * h, h, bias=False)
        self.midlayer = MidLayer(config)
        self.norm = RMSNorm(h, config.rms_norm_eps)
        self.lm_head = nn.Linear(h, config.draft_vocab_size, bias=False)
        # target id = draft id + d2t
        self.register_buffer("d2t", torch.zeros(config.draft_vocab_size, dtype=torch.long))
        self.register_buffer("t2d", torch.zeros(config.vocab_size, dtype=torch.bool))  # target ids the head can say
        self.embed_tokens: nn.Module | None = None  # the target's own embedding, bound by `bind` (never stored)
        self.passes = 0  # forward passes (`step`), counted as a model counts its own

    @classmethod
    def for_target(
        cls,
        target: nn.Module,
        draft_ids: torch.Tensor,
        layers: tuple[int, int, int] | None = None,
        name: str = "",
        seed: int = 0,
    ) -> EagleHead:
        """A fresh head for `target` over the target ids `draft_ids` [d] (ascending): its output layer starts as the
        target's rows.

        >>> from transformers import LlamaConfig, LlamaForCausalLM
        >>> target = LlamaForCausalLM(LlamaConfig(hidden_size=8, intermediate_size=16, num_hidden_layers=4,
        ...     num_attention_heads=2, vocab_size=10))
        >>> head = EagleHead.for_target(target, torch.tensor([0, 3, 4, 9]))
        >>> head.draft_ids().tolist(), head.d2t.tolist(), head.config.layers
        ([0, 3, 4, 9], [0, 2, 2, 6], (2, 2, 1))
        """
        draft_ids = torch.as_tensor(draft_ids, dtype=torch.long)
        if draft_ids.ndim != 1 or not bool((draft_ids[1:] > draft_ids[:-1]).all()):
            raise SpecdecError("the draft vocabulary must be distinct target ids in ascending order")
        torch.manual_seed(seed)
        head = cls(HeadConfig.for_target(target, int(draft_ids.numel()), layers, name))
        if int(draft_ids[-1]) >= head.config.vocab_size:
            raise SpecdecError(f"draft id {int(draft_ids[-1])} is outside the target's {head.config.vocab_size} tokens")
        with torch.no_grad():
            for module in head.modules():
                if isinstance(module, nn.Linear):
                    nn.init.normal_(module.weight, std=0.02)
            head.d2t.copy_(draft_ids - torch.arange(draft_ids.numel()))
            head.t2d.zero_()
            head.t2d[draft_ids] = True
            output = target.get_output_embeddings()
            if isinstance(output, nn.Linear) and output.weight.shape[1] == head.config.hidden_size:
                head.lm_head.weight.copy_(output.weight[draft_ids].float())  # start from the target's own rows
            final_norm = getattr(getattr(target, "model", None), "norm", None)
            if (
                isinstance(getattr(final_norm, "weight", None), torch.Tensor)
                and final_norm.weight.shape == head.norm.weight.shape
            ):
                head.norm.weight.copy_(final_norm.weight.float())
        return head.bind(target)

    def bind(self, target: nn.Module) -> EagleHead:
        """Read token embeddings through `target`'s own table (EAGLE shares it; checkpoints leave it out)."""
        self.config = self.config.check_target(target)
        # not a submodule: never saved or trained
        object.__setattr__(self, "embed_tokens", target.get_input_embeddings())
        return self

    @property
    def device(self) -> torch.device:
        return self.d2t.device

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of the head's activations (its norms' weights:
        an int8 head's linear layers keep no float weight)."""
        return self.norm.weight.dtype

    @property
    def name(self) -> str:
        return f"EAGLE-3 head ({self.config.target or 'trained'})"

    def weight_bytes(self) -> int:
        """Bytes of weights one head pass reads (the target's embedding table it borrows is not the head's)."""
        from specdec.runtime.pytorch.torch_model import weight_bytes

        return weight_bytes(self)

    def get_input_embeddings(self) -> nn.Module | None:
        return self.embed_tokens

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def draft_ids(self) -> torch.Tensor:
        """The target ids of the draft vocabulary, [d]."""
        return torch.arange(self.config.draft_vocab_size, device=self.d2t.device) + self.d2t

    # --- the head's arithmetic ---------------------------------------------------------------------

    def embed(self, ids: torch.Tensor) -> torch.Tensor:  # [n] -> [n, H]
        if self.embed_tokens is None:
            raise SpecdecError("this head is not bound to a target: call head.bind(target) first")
        with torch.no_grad():  # the target's table: frozen
            return self.embed_tokens(ids).to(self.dtype)

    def fuse(self, features: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """f = fc([low; mid; high]): the target's three hidden states [n, H] each -> [n, H]."""
        return self.fc(torch.cat([feature.to(self.dtype) for feature in features], dim=-1))

    def step(
        self,
        ids: torch.Tensor,
        hidden: torch.Tensor,
        positions: torch.Tensor,
        past: tuple[torch.Tensor, torch.Tensor] | None,
        attend: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One pass of the decoder layer over n new entries (token x_{i+1}, hidden state f_i or g) at `positions` [n].

        `past` holds the keys and values [P, kv_heads, dim] of earlier entries; `attend` [n, P + n] says what
        each new entry sees. Returns the draft-vocabulary logits [n, d], g [n, H], and the new keys and values.
        """
        self.passes += 1
        x = self.midlayer.inputs(self.embed(ids), hidden)  # [n, 2H]
        q, k, v = self.midlayer.self_attn.project(x, positions)
        keys, values = (k, v) if past is None else (torch.cat([past[0], k]), torch.cat([past[1], v]))
        g = self.midlayer.finish(self.midlayer.self_attn.attend(q, keys, values, attend), hidden)  # [n, H]
        return self.lm_head(self.norm(g)), g, k, v

    def target_logits(self, draft_logits: torch.Tensor) -> torch.Tensor:
        """The head's logits [n, d] spread over the target's vocabulary [n, V]: -inf (q = 0) outside the draft
        vocabulary.

        >>> head = EagleHead(HeadConfig(8, 16, 2, 1, 4, vocab_size=5, draft_vocab_size=2, layers=(0, 1, 2),
        ...     target_layers=2))
        >>> _ = head.d2t.copy_(torch.tensor([1, 2]))                        # draft ids 0, 1 are target ids 1, 3
        >>> head.target_logits(torch.tensor([[0.5, 2.0]])).tolist()
        [[-inf, 0.5, -inf, 2.0, -inf]]
        """
        spread = draft_logits.new_full((draft_logits.shape[0], self.config.vocab_size), float("-inf"))  # [n, V]
        spread[:, self.draft_ids()] = draft_logits
        return spread
