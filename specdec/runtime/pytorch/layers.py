"""A transformers model's decoder layers, and a view of it that runs only some of them: shared weights, nothing copied.

Two places need such a view: layer skipping drafts with the target minus its least influential layers
(`specdec.drafting.layer_skip`), and the batch-invariance self-test runs a target's own kernels on its first and last
layers alone (`specdec.kernels.batch_invariance`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from transformers import PreTrainedModel

from specdec.errors import SpecdecError


def decoder_layers(model: PreTrainedModel) -> tuple[str, torch.nn.ModuleList]:
    """The name and list of the decoder layers inside
    `model.base_model` (`layers` for Llama and Qwen2, `h` for GPT-2)."""
    count = model.config.get_text_config(decoder=True).num_hidden_layers
    for name, module in model.base_model.named_children():
        if isinstance(module, torch.nn.ModuleList) and len(module) == count:
            return name, module
    raise SpecdecError(
        f"could not find the decoder layers of this {type(model).__name__}: skip layers of a Llama, Qwen2 or "
        "GPT-2 style model"
    )


def skip_layers(model: PreTrainedModel, skip: Sequence[int]) -> PreTrainedModel:
    """A view of `model` that runs every decoder layer but those in `skip`: shared weights, nothing copied.

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> model = LlamaForCausalLM(LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=4,
    ...     num_attention_heads=1,
    ...                                      vocab_size=6))
    >>> view = skip_layers(model, [1, 2])
    >>> len(view.model.layers), len(model.model.layers), view.model.layers[1] is model.model.layers[3]
    (2, 4, True)
    """
    name, layers = decoder_layers(model)
    base = copy.copy(model.base_model)
    base._modules = dict(base._modules)
    base._modules[name] = torch.nn.ModuleList(layer for index, layer in enumerate(layers) if index not in set(skip))
    view = copy.copy(model)
    view._modules = dict(model._modules)
    view._modules[model.base_model_prefix] = base
    return view
