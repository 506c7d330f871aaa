"""Runtimes: what runs a model's forward passes behind the model contract (`specdec.engine.model`).

Notation: p is the target, q the draft.

One folder per runtime:

- `pytorch`: transformers on torch (`TorchModel`): any Hugging Face causal LM, on a CPU, CUDA or MPS,
  with hidden states and internals for the methods that read them; its caches are `kv_cache` (one text)
  and `batch_cache` (several ragged texts)
- `llama_cpp`: llama.cpp's own kernels for GGUF files, through its C API, with the settings that make
  them exact

and `costs`: c and v(k) measured on the models as they run, kept per machine.

The loop and the drafters never ask which runtime they hold: they read `model.traits`. `as_model` is the
one place that tells a transformers model from a model already behind the contract.

    target = as_model(hf_model)          # a TorchModel
    target = as_model(target)            # already a model: itself
"""

from __future__ import annotations


def is_model(model: object) -> bool:
    """Whether `model` is a causal LM this package can run: a transformers model, or a runtime's model already.

    >>> is_model(object())
    False
    """
    from specdec.engine.model import ModelTraits

    if isinstance(getattr(model, "traits", None), ModelTraits):
        return True
    from transformers import PreTrainedModel

    return isinstance(model, PreTrainedModel)


def as_model(model: object):
    """`model` behind the model contract: a transformers model wrapped in a `TorchModel`, a runtime's model as it is.

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> tiny = LlamaForCausalLM(LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=1,
    ...     num_attention_heads=1, vocab_size=4))
    >>> type(as_model(tiny)).__name__, as_model(as_model(tiny)).module is tiny
    ('TorchModel', True)
    """
    from specdec.engine.model import ModelTraits
    from specdec.errors import SpecdecError

    if isinstance(getattr(model, "traits", None), ModelTraits):
        return model
    from transformers import PreTrainedModel

    if isinstance(model, PreTrainedModel):
        from specdec.runtime.pytorch.torch_model import TorchModel

        return TorchModel(model)
    raise SpecdecError(
        f"expected a causal language model (a transformers model, or one loaded by specdec.load_model), "
        f"got {type(model).__name__}"
    )


def transformers_model(model: object, purpose: str):
    """The transformers model behind `model`, for what needs transformers' own API (training a head, binding one to the
    target's embedding table, layer skipping, transformers' own generate): served only by a runtime whose traits declare
    `internals` (torch); one line naming `purpose` and the runtime that serves it elsewhere.

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> tiny = LlamaForCausalLM(LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=1,
    ...     num_attention_heads=1, vocab_size=4))
    >>> transformers_model(as_model(tiny), "a test") is tiny
    True
    """
    from specdec.errors import SpecdecError

    served = as_model(model)
    if not served.traits.internals:
        raise SpecdecError(
            f"{purpose} needs the target's own layers, which the {served.traits.runtime} runtime does not expose: "
            "load it on the torch runtime (--runtime torch)"
        )
    return served.module
