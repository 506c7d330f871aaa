"""An EAGLE-3 head's configuration: its shape, the target it was trained for, and the three target layers it reads.

Notation: H the target's hidden size, V its vocabulary, d the head's draft vocabulary, L the target's decoder layers.
The head itself is `specdec.heads.head.EagleHead`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from torch import nn

from specdec.errors import SpecdecError


@dataclass(frozen=True)
class HeadConfig:
    """The shape of a head and what it was trained for: the target's sizes and the layers it reads.

    >>> HeadConfig.default_layers(28), HeadConfig.default_layers(4)   # vLLM's choice: (2, L // 2, L - 3)
    ((2, 14, 25), (2, 2, 1))
    """

    hidden_size: int  # H, the target's hidden size (the head's too)
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int  # V, the target's vocabulary
    draft_vocab_size: int  # d
    # the target's hidden states it fuses (transformers' `hidden_states` index = vLLM's layer id)
    layers: tuple[int, ...]
    target_layers: int  # the target's decoder layers, L (0: not known yet, a published head before `bind`)
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    max_position_embeddings: int = 32768
    target: str = ""  # the target's name when trained (reports only)

    @staticmethod
    def default_layers(layer_count: int) -> tuple[int, int, int]:
        return tuple(min(max(index, 0), layer_count) for index in (2, layer_count // 2, layer_count - 3))

    @classmethod
    def for_target(
        cls, target: nn.Module, draft_vocab_size: int, layers: tuple[int, int, int] | None = None, name: str = ""
    ) -> HeadConfig:
        """The config of a head for `target` (a transformers causal
        LM); a clear error for one with no hidden states to read."""
        config = getattr(target, "config", None)
        hidden, count = getattr(config, "hidden_size", None), getattr(config, "num_hidden_layers", None)
        if not hidden or not count or not hasattr(target, "get_input_embeddings"):
            raise SpecdecError(
                f"a {type(target).__name__} has no hidden states to read (an EAGLE head needs a transformers "
                "causal LM with hidden_size and num_hidden_layers): pick a transformers target"
            )
        layers = tuple(layers) if layers is not None else cls.default_layers(count)
        if len(layers) != 3 or not all(0 <= index <= count for index in layers):
            raise SpecdecError(f"an EAGLE-3 head fuses three hidden states of the target's 0..{count}, got {layers}")
        heads = getattr(config, "num_attention_heads", None) or max(1, hidden // 64)
        vocab = target.get_output_embeddings().out_features
        if not 1 <= draft_vocab_size <= vocab:
            raise SpecdecError(
                f"the draft vocabulary must hold 1..{vocab} tokens (the target's), got {draft_vocab_size}"
            )
        return cls(
            hidden_size=hidden,
            intermediate_size=getattr(config, "intermediate_size", None) or 4 * hidden,
            num_attention_heads=heads,
            num_key_value_heads=getattr(config, "num_key_value_heads", None) or heads,
            head_dim=getattr(config, "head_dim", None) or hidden // heads,
            vocab_size=vocab,
            draft_vocab_size=draft_vocab_size,
            layers=layers,
            target_layers=count,
            rms_norm_eps=getattr(config, "rms_norm_eps", None) or 1e-6,
            rope_theta=float(getattr(config, "rope_theta", None) or 10000.0),
            max_position_embeddings=getattr(config, "max_position_embeddings", None) or 32768,
            target=name,
        )

    def check_target(self, target: nn.Module) -> HeadConfig:
        """This config for `target` (a published head's unknown layer
        count and layers filled in); one line for a wrong target."""
        config = getattr(target, "config", None)
        seen = (
            getattr(config, "hidden_size", None),
            getattr(config, "num_hidden_layers", None),
            target.get_output_embeddings().out_features if hasattr(target, "get_output_embeddings") else None,
        )
        if not self.target_layers and seen[1]:  # a published checkpoint does not say
            layers = self.layers or self.default_layers(seen[1])
            return replace(self, target_layers=seen[1], layers=layers).check_target(target)
        if seen != (self.hidden_size, self.target_layers, self.vocab_size):
            raise SpecdecError(
                f"this head was trained for a target with hidden size {self.hidden_size}, {self.target_layers} layers "
                f"and {self.vocab_size} tokens{f' ({self.target})' if self.target else ''}; this target has "
                f"{seen[0]}, {seen[1]} and {seen[2]}: train a head for it (specdec heads train --target NAME)"
            )
        return self
