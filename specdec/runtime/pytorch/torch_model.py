"""transformers on torch as a runtime: any Hugging Face causal LM behind the model contract (`specdec.engine.model`).

Notation: p is the target, q the draft, c a draft step's cost over a target step, s the cost of one more
token in a verification pass (v(k) = 1 + beta k).

`TorchModel(hf_model)` is the model a run speaks to; its caches are `specdec.runtime.pytorch.batch_cache`'s (a
`OneRow` for one text, a `BatchCache` for several), and it counts every forward pass any of them makes
(`passes`), so a run counts a draft's passes from outside the drafter. It reaches the model's internals
(`module`: hidden states, layers to skip, the embedding a trained head shares), runs on a CPU, CUDA or MPS,
and, as a target loaded through the zoo, cuts every pass into the sizes its self-test proved exact on this machine
(`cut`: `specdec.kernels.batch_invariance`, `specdec.runtime.pytorch.cut`). A model built by hand is not checked:
in float32 its rows equal one-token steps' up to rounding in the last bits, not bit for bit.

    model = TorchModel(AutoModelForCausalLM.from_pretrained("gpt2"))
    rows = model.rows([0])
    logits, _ = rows.feed([torch.tensor([464, 3290])])      # [1, 1, V]
    model.passes, model.vocab_size                          # 1, 50257

Not handled here: loading (`specdec.zoo`), quantized layers (`specdec.kernels`): a model arrives built.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedModel

from specdec.engine.model import ModelTraits
from specdec.runtime.pytorch.batch_cache import BatchCache, rows_cache
from specdec.runtime.pytorch.cut import CutRows
from specdec.runtime.pytorch.one_row import OneRow
from specdec.runtime.pytorch.kv_cache import has_sliding_window


class TorchModel:
    """A transformers causal LM behind the model contract; `module` is the model itself.

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> tiny = TorchModel(LlamaForCausalLM(LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=1,
    ...                                                num_attention_heads=1, vocab_size=6)))
    >>> tiny.vocab_size, tiny.traits.runtime, tiny.traits.hidden_states
    (6, 'torch', True)
    """

    def __init__(
        self,
        module: PreTrainedModel,
        name: str | None = None,
        counts_into: TorchModel | None = None,
        cut: tuple[int, ...] | None = None,
        rows_check: str = "",
    ) -> None:
        self.module = module
        self.name = name or model_name(module)
        sliding = has_sliding_window(module)
        self.traits = ModelTraits(
            "torch", hidden_states=True, sliding_window=sliding, batches=not sliding, internals=True
        )
        self.passes = 0  # forward passes of every cache made from this model
        self.counts_into = counts_into  # a model whose count includes this one's (a view of it)
        # a target's passes are cut into these sizes, each proved exact here (`specdec.runtime.pytorch.cut`)
        self.cut = cut
        self.rows_check = rows_check  # the self-test's verdict in one line (`specdec.kernels.batch_invariance`)

    def view(self, module: PreTrainedModel, name: str | None = None) -> TorchModel:
        """Another module built from this one's weights (the target with layers skipped): its passes count here too."""
        return TorchModel(module, name or self.name, counts_into=self)

    @property
    def vocab_size(self) -> int:
        return self.module.get_output_embeddings().out_features

    @property
    def identity(self) -> str:
        """The name, dtype and device, and the threads torch runs on: what timings of this model are kept under."""
        weight = next(self.module.parameters())
        return (
            f"{self.name} {str(weight.dtype).removeprefix('torch.')} {weight.device} threads={torch.get_num_threads()}"
        )

    @property
    def embedding_rows(self) -> int:
        return self.module.get_input_embeddings().num_embeddings

    @property
    def context_length(self) -> int | None:
        return getattr(self.module.config, "max_position_embeddings", None)

    @property
    def device(self) -> torch.device:
        return self.module.device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.module.parameters()).dtype

    @property
    def weights(self) -> str:
        """'none', 'int8', 'int4' or 'w8a8': what the quantizer
        (`specdec.kernels.quantization`) marked the model with."""
        return getattr(self.module, "specdec_quantization", "none")

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        """The ids its generation config ends a text with (the tokenizer may name another)."""
        configured = getattr(getattr(self.module, "generation_config", None), "eos_token_id", None)
        if configured is None:
            return ()
        return (configured,) if isinstance(configured, int) else tuple(configured)

    @property
    def k_star(self) -> int | None:
        """The longest pass proved to give one-token steps' bits here (1: none longer), None when never checked."""
        return None if self.cut is None else max(self.cut, default=1)

    def rows(self, rows: Sequence[int], output_rows: int | None = None) -> BatchCache | OneRow | CutRows:
        cache = rows_cache(self.module, rows, output_rows, on_pass=self._counted)
        return cache if self.cut is None else CutRows(cache, self.cut)

    def _counted(self) -> None:
        self.passes += 1
        if self.counts_into is not None:
            self.counts_into._counted()

    def weight_bytes(self) -> int:
        return weight_bytes(self.module)

    def verify_slope(self) -> float:
        """0.5 for float32 on a CPU (compute-bound), else 0.05; quantized layers tell their own (the steepest counts).

        Measured on this project's 2-core CPU: a 5-token pass costs about 3 one-token steps in float32
        and 0.84-1.19 in bfloat16 (`specdec.runtime.costs.measure_costs` gives the real v(k) for a pair).
        Quantized layers tell their own slope (`verify_slope`: int8 0.05, int4 0.4).
        """
        slopes = [module.verify_slope for module in self.module.modules() if hasattr(module, "verify_slope")]
        if slopes:
            return max(slopes)
        weight = next(self.module.parameters())
        return 0.5 if weight.device.type == "cpu" and weight.dtype == torch.float32 else 0.05


def model_name(model: PreTrainedModel) -> str:
    """The name a model was loaded under, else its class name: how drafters name themselves in reports."""
    return getattr(model.config, "_name_or_path", "") or type(model).__name__


def weight_bytes(model: torch.nn.Module) -> int:
    """Bytes of weights one decoding step reads: every tensor once, the input embedding table left out.

    A step looks up one row of the input embedding but reads every other weight (the output layer
    included, even when it shares the embedding's storage). Packed int8 weights count one byte each.

    >>> weight_bytes(torch.nn.Linear(4, 2))                   # 8 float32 weights and 2 biases
    40
    """
    embedding = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    output = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    skip = set()
    table = getattr(embedding, "weight", None)  # None: rows looked up elsewhere (`specdec.zoo.gguf_files`)
    if table is not None and not (isinstance(output, torch.nn.Linear) and output.weight is table):
        skip.add(table.data_ptr())
    seen, total = set(), 0.0
    for module in model.modules():
        # a weight kept outside the state dict (`specdec.kernels.packed_linear`)
        total += getattr(module, "packed_bytes", 0)
        scale = getattr(module, "read_cost", 1.0)  # a quantized layer whose kernel reads its bytes slower says so
        own: dict = {}
        module._save_to_state_dict(own, "", keep_vars=True)  # this module's tensors, not its children's
        for value in own.values():
            # PyTorch's own quantized layers pack (weight, bias)
            for tensor in value if isinstance(value, tuple) else (value,):
                if not isinstance(tensor, torch.Tensor):
                    continue
                key = (tensor.data_ptr(), tensor.numel()) if not tensor.is_quantized else (id(tensor),)
                if tensor.is_quantized or (tensor.data_ptr() not in skip and key not in seen):
                    seen.add(key)
                    total += tensor.numel() * tensor.element_size() * scale
    return round(total)
