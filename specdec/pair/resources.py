"""A loaded pair: the models, tokenizers and whatever else its run spec asked for, and how each model was planned.

Notation: p is the target, q the draft, c a draft step's cost over a target step, v(k) a verification pass
over k drafted tokens in target steps.

A pair holds resources by the registry's names (`specdec.registry`), not one slot per kind: the target and
its tokenizer always, and what the draft name asks for: a draft model (with its own tokenizer when the two
differ), a trained head (`eagle`, or a head's folder), nothing for a method that needs only the target
(`prompt-lookup`, `recycling`, ...). It also holds each model's plan (`models`: runtime, precision, why,
from `specdec.planner.models`), the costs c and v(k) measured on this machine at load (`costs`, None where
none were), the seconds each part took to load, and the drafters that live as long as the pair.

    pair = load_spec(spec)                           # specdec.pair.loading
    plan = pair.plan(spec)                           # the one planner (specdec.planner.plan)
    pair.target, pair.draft, pair.tokenizer          # the target p, the draft q (None: no draft model), the tokenizer

What a run does is the planner's: this class only hands it what was loaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from transformers import PreTrainedTokenizerBase

from specdec.drafting.cross_tokenizer import retokenize, whole_character_tokens
from specdec.engine.contract import DraftCosts, Drafter
from specdec.engine.costs import CostProfile
from specdec.engine.model import Model
from specdec.kernels.precision import Precision
from specdec.kernels.quantization import precision_summary
from specdec.planner import ModelPlan, Plan, plan
from specdec.registry import DRAFT_MODEL, DRAFT_TOKENIZER, TARGET, TOKENIZER, WHOLE, Resources
from specdec.run_spec import Drafting, RunSpec
from specdec.runtime import as_model
from specdec.runtime.costs import draft_costs
from specdec.runtimes import runtime_of


@dataclass
class LoadedPair:
    """What a pair's run spec asked for, loaded (module docstring). The drafters of a pair live as long as it
    (`drafters`), so that those that learn across texts (Token Recycling's table, suffix decoding's earlier outputs)
    keep what they learned; a benchmark asks for fresh ones."""

    target_name: str
    draft_name: str
    resources: Resources
    # how the target and the draft model were loaded (the planner's first stage)
    models: tuple[ModelPlan, ModelPlan | None]
    load_seconds: dict[str, float] = field(default_factory=dict)
    drafters: dict[tuple, Drafter] = field(default_factory=dict)
    # c and v(k) measured on this machine at load (the llama.cpp runtime), else None: estimated
    costs: CostProfile | None = None
    cost_key: dict[str, object] | None = None  # what `costs` are kept under (`specdec.runtime.costs.measured_costs`)
    # the last run's target or draft passes over what `costs` predict, where they disagreed by more than 20%
    costs_off: dict[str, float] | None = None

    @classmethod
    def from_models(
        cls,
        target_name: str,
        draft_name: str,
        target: object,
        draft: object | None,
        tokenizer: PreTrainedTokenizerBase,
        draft_tokenizer: PreTrainedTokenizerBase | None = None,
        whole: torch.Tensor | None = None,
    ) -> LoadedPair:
        """A pair put together by hand from models already loaded (transformers models or runtime models); each model's
        plan is read off the model as built."""
        resources: Resources = {TARGET: as_model(target), TOKENIZER: tokenizer}
        if draft is not None:
            resources[DRAFT_MODEL] = as_model(draft)
        if draft_tokenizer is not None:
            resources[DRAFT_TOKENIZER] = draft_tokenizer
            resources[WHOLE] = (
                whole
                if whole is not None
                else whole_character_tokens(draft_tokenizer, resources[DRAFT_MODEL].vocab_size)
            )
        models = (
            read_off(resources[TARGET], "target", target_name),
            None if draft is None else read_off(resources[DRAFT_MODEL], "draft", draft_name),
        )
        return cls(target_name, draft_name, resources, models)

    def plan(self, spec: RunSpec, rows: int = 1, fresh: bool = False, resources: Resources | None = None) -> Plan:
        """The planner's plan for `spec` on this pair (`specdec.planner.plan`): its resources (or `resources`: these
        plus what a benchmark loaded beside them), its model plans, its measured costs, its kept drafters (unless
        `fresh`)."""
        return plan(
            spec,
            resources or self.resources,
            self.models,
            self.draft_costs(),
            None if fresh else self.drafters,
            rows,
            fresh,
        )

    def spec(self, drafting: Drafting = Drafting(), decoding=None) -> RunSpec:
        """A run spec for this pair's names with `drafting` (and
        `decoding`, default the spec's): for callers holding a pair."""
        from specdec.engine.inputs import Decoding

        return RunSpec(self.target_name, self.draft_name, drafting=drafting, decoding=decoding or Decoding())

    @property
    def target(self) -> Model:
        return self.resources[TARGET]

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        return self.resources[TOKENIZER]

    @property
    def draft(self) -> Model | None:
        """The draft model, or None for a drafter that needs none (prompt lookup, a trained head)."""
        return self.resources.get(DRAFT_MODEL)

    @property
    def draft_tokenizer(self) -> PreTrainedTokenizerBase | None:
        """The draft's own tokenizer, only when it maps text to other ids than the target's."""
        return self.resources.get(DRAFT_TOKENIZER)

    @property
    def cross_tokenizer(self) -> bool:
        """Whether the draft has its own tokenizer."""
        return DRAFT_TOKENIZER in self.resources

    @property
    def tokenizer_note(self) -> str:
        """For reports: 'shared', or 'its own, text re-encoded' for a draft with another tokenizer."""
        return "its own, text re-encoded" if self.cross_tokenizer else "shared"

    @property
    def device(self) -> torch.device:
        return self.models[0].precision.device

    @property
    def dtype(self) -> torch.dtype:
        """The target's activations' dtype."""
        return self.models[0].precision.dtype

    def precision_of(self, role: str = "target") -> Precision | None:
        """How the target or the draft runs (device, dtype, weights, kernel and why), as planned; None for the draft of
        a drafter that needs no model."""
        planned = self.models[0] if role == "target" else self.models[1]
        return None if planned is None else planned.precision

    @property
    def quantization(self) -> str:
        """The target's weights: "none", "int8", "int4", "w8a8", or a GGUF file's type, as loaded."""
        return self.precision_of("target").weights

    @property
    def draft_quantization(self) -> str:
        """The draft's weights ("none" for prompt lookup)."""
        return "none" if self.draft is None else self.precision_of("draft").weights

    @property
    def precision(self) -> str:
        """How the target ran, for reports: 'float32', 'float32 int8'."""
        return self.precision_of("target").name

    @property
    def draft_precision(self) -> str:
        """How the draft ran: 'bfloat16 int4', or 'none' for prompt lookup."""
        return "none" if self.draft is None else self.precision_of("draft").name

    @property
    def kernels(self) -> str:
        """Each model's precision in one line with its kernel and why (`Precision.describe`), for a report."""
        return "   ".join(
            f"{planned.role} {planned.precision.describe()}" for planned in self.models if planned is not None
        )

    @property
    def precisions(self) -> str:
        """Both, for a caption: 'target float32 int8, draft bfloat16 int4' (just the target's for prompt lookup)."""
        return precision_summary(self.precision, None if self.draft is None else self.draft_precision)

    def draft_costs(self) -> DraftCosts | None:
        """The policy's costs from what was measured at load (None: none were, the policy estimates them)."""
        return None if self.costs is None else draft_costs(self.costs, self.target.verify_slope())

    def draft_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        """`input_ids` [1, T] as the draft reads them: the same ids, or the text re-encoded by the draft's tokenizer."""
        if self.draft_tokenizer is None:
            return input_ids
        return torch.tensor([retokenize(input_ids.reshape(-1).tolist(), self.tokenizer, self.draft_tokenizer)])

    @property
    def eos_token_ids(self) -> list[int]:
        """Every id that ends generation: the tokenizer's EOS and the target's own (its generation config's)."""
        ids = set(self.target.eos_token_ids)
        if self.tokenizer.eos_token_id is not None:
            ids.add(int(self.tokenizer.eos_token_id))
        return sorted(ids)


def read_off(model: Model, role: str, name: str) -> ModelPlan:
    """The plan of a model built by hand: its runtime, dtype and weights as it holds them."""
    runtime = runtime_of(model.traits.runtime)
    precision, settings = runtime.read_off(model, f"read off the {role} as built")
    return ModelPlan(role, name, runtime.name, precision, settings, "given")
