"""Self-speculation: the target with some of its layers skipped drafts for itself (Draft & Verify, SWIFT).

Notation: p is the full target, q the same model with layers skipped, c a draft step's cost over a target
step, beta the cost of one more token in a verification pass.

No second model: the draft is a view of the target that runs only some of its decoder layers (the same
weights, no copy), with a KV cache of its own. The full target verifies, so the output is exactly the
target's. Which layers to skip, the rule used here:

    1. the prompt pass gives the target's hidden states before and after every layer (`observe` asks for
       them: `Capabilities.hidden_states`); a layer's influence is 1 - cos(input, output), averaged over
       the prompt's tokens (ShortGPT's Block Influence, Men et al. 2024): a layer that barely turns the
       residual stream matters least to this text
    2. skip the `fraction` of layers of least influence, never the first (its cache length is the one
       transformers reads) nor the last (it feeds the output layer)

Draft & Verify searches the skipped set offline with Bayesian optimisation, SWIFT on the fly on the run's
own text; this rule costs nothing beyond the prompt pass the target makes anyway, and looks at this text.
A round drafts a chain under the stop rule (`specdec.engine.stop_rule.ConfidenceStop`), priced with a c that is
measured, not read from the weights: the median of the draft's own step times over the median target
step (the time from its proposal to the target's verdict, divided by 1 + beta k: the drafter times the
target's pass from outside, as it would any other service). Until the first round is measured, c is the
share of layers kept. A measured c makes rounds depend on timing, so with a seed a sampled text is
reproducible only with `c` given; its distribution is exactly p either way. Each text of a batch picks
its own layers from its own prompt, and drafts with its own view (`SkipText`).

Why it is exact: each drafted token is drawn from the skipped model's q, which the rule is given, and the
round's length is decided from the draft's confidences and past rounds only.

What it costs on a CPU: every step still reads the output layer (15% of Qwen2.5-Coder-1.5B's weights)
and the kept layers, so c stays at about the share kept, while the skipped layers lower alpha.

    drafter = LayerSkipDrafter(target)                 # skips half the layers, chosen on the prompt
    speculative_generate(target, drafter, input_ids, temperature=0)
    LayerSkipDrafter(target, skip=[5, 6, 7, 8])        # or the layers you choose

Not handled: early exit with a trained head (LayerSkip, Elhoushi et al. 2024), sliding-window models.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import torch
from transformers import PreTrainedModel

from specdec.drafting.draft_model import ModelDrafter
from specdec.engine.contract import Capabilities, DraftRequest, Generation, Verified
from specdec.runtime.pytorch.kv_cache import has_sliding_window
from specdec.runtime.pytorch.layers import decoder_layers, skip_layers
from specdec.runtime.pytorch.torch_model import TorchModel
from specdec.engine.stop_rule import ConfidenceStop
from specdec.engine.timing import synchronize
from specdec.engine.trees import DraftTree
from specdec.errors import SpecdecError
from specdec.runtime import transformers_model


def least_influential_layers(hidden: Sequence[torch.Tensor], count: int) -> list[int]:
    """The `count` layers whose output is most like their input (cosine over the rows), never the first nor the last.

    `hidden` is transformers' `output_hidden_states` for one pass: L + 1 tensors [n, H], the embeddings
    first and the last after the final norm, so layer l reads hidden[l] and writes hidden[l + 1].

    >>> h = [torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]]), torch.tensor([[0.1, 1.0]]), torch.tensor([[1.0,
    ...     1.0]]),
    ...      torch.tensor([[1.0, 0.0]])]
    >>> least_influential_layers(h, 1)                 # layer 1 barely turns [0, 1]; layers 0 and 3 are never skipped
    [1]
    """
    layers = len(hidden) - 1
    influence = {
        layer: 1.0
        - float(torch.nn.functional.cosine_similarity(hidden[layer].float(), hidden[layer + 1].float(), dim=-1).mean())
        for layer in range(1, layers - 1)
    }
    return sorted(sorted(influence, key=influence.get)[:count])


@dataclass
class SkipText:
    """One text's self-draft: the layers it skips, its stop rule,
    and (once the layers are known) the view that drafts."""

    prompt: torch.Tensor
    skipped: list[int]
    rule: ConfidenceStop
    inner: ModelDrafter | None = None


class LayerSkipDrafter:
    """The target drafting for itself with layers skipped: `skip`
    given, or the `fraction` least influential (module docstring)."""

    name = "layer-skip"

    @staticmethod
    def declared(options: LayerSkipOptions, skip_given: bool = False, skipped: str = "") -> Capabilities:
        """What a layer-skipping drafter declares (its instances and the registry's checks read this one place): it
        reaches into the target's layers, and reads its hidden states to choose which to skip unless they are given."""
        return Capabilities(
            sizes_rounds=True,
            hidden_states=not skip_given,
            full_attention=True,
            internals=True,
            drafts=f"chain from its own layers{f' ({skipped} skipped)' if skipped else ''}",
        )

    def __init__(
        self,
        target: PreTrainedModel,
        skip: Sequence[int] | None = None,
        fraction: float = 0.5,
        max_gamma: int = 8,
        c: float | None = None,
    ) -> None:
        _, layers = decoder_layers(target)
        if has_sliding_window(target):
            raise SpecdecError("layer skipping needs a full-attention model: this one has sliding-window layers")
        if skip is not None and any(not 0 < index < len(layers) - 1 for index in skip):
            raise SpecdecError(
                f"skip layers from 1 to {len(layers) - 2}: the first and the last of the {len(layers)} always run, "
                f"got {sorted(skip)}"
            )
        if not 0 < fraction < 1 or max_gamma < 1 or (c is not None and c < 0):
            raise SpecdecError(f"need 0 < fraction < 1, max_gamma >= 1 and c >= 0, got {fraction}, {max_gamma} and {c}")
        self.target, self.layers = target, len(layers)
        self.draft_model = TorchModel(target, "layer-skip")  # counts the passes of every text's view of the target
        self.given = None if skip is None else sorted(set(skip))
        self.fraction, self.max_gamma, self.fixed_c = fraction, max_gamma, c
        self.capabilities = self.declared(
            LayerSkipOptions(fraction, max_gamma), skip is not None, f"{self.layer_count_skipped()} of {self.layers}"
        )
        self.texts: dict[int, SkipText] = {}
        self.generation: Generation | None = None
        self._step_s: list[float] = []  # seconds per draft step, these texts
        self._target_step_s: list[float] = []  # seconds per target step, from each verification pass
        self._proposed_at: float | None = None  # when the last proposals went to the target

    def layer_count_skipped(self) -> int:
        """How many layers the draft skips: those given, else
        `fraction` of them (at most all but the first and the last)."""
        return (
            len(self.given)
            if self.given is not None
            else min(self.layers - 2, max(1, round(self.fraction * self.layers)))
        )

    @property
    def skipped(self) -> list[int]:
        """The layers the first text skips (every text picks its own from its prompt)."""
        return next(iter(self.texts.values())).skipped if self.texts else list(self.given or [])

    @property
    def c(self) -> float:
        """The cost ratio the stop rule uses: given, measured (median
        draft step / median target step), else the share kept."""
        if self.fixed_c is not None:
            return self.fixed_c
        if self._step_s and self._target_step_s:
            return statistics.median(self._step_s) / statistics.median(self._target_step_s)
        return 1.0 - self.layer_count_skipped() / self.layers

    def begin(self, generation: Generation) -> None:
        if transformers_model(generation.target, "layer skipping") is not self.target:
            raise SpecdecError("a LayerSkipDrafter drafts for the target it was made with: make one for this target")
        self.generation = generation
        self._step_s, self._target_step_s, self._proposed_at = [], [], None
        self.texts = {
            row: SkipText(
                prompt,
                list(self.given or []),
                ConfidenceStop(c=self.c, verify_slope=generation.costs.verify_slope, max_gamma=self.max_gamma),
            )
            for row, prompt in generation.prompts.items()
        }

    def draft(self, requests: dict[int, DraftRequest]) -> dict[int, DraftTree]:
        chains = {}
        for row, request in requests.items():
            state = self.texts[row]
            if state.inner is None:  # the layers are known: the view and its cache
                state.inner = ModelDrafter(self.draft_model.view(skip_layers(self.target, state.skipped)), self.name)
                state.inner.begin(replace(self.generation, prompts={row: state.prompt}))
            state.rule.c = self.c
            state.rule.next_gamma()
            before = self.draft_model.passes
            start = _now(self.target)
            chains[row] = state.inner.draft(
                {
                    row: replace(
                        request, limit=min(request.limit, self.max_gamma), keep_drafting=state.rule.keep_drafting
                    )
                }
            )[row]
            steps = self.draft_model.passes - before
            if steps:
                self._step_s.append((_now(self.target) - start) / steps)
        self._proposed_at = _now(self.target)
        return chains

    def observe(self, verified: dict[int, Verified]) -> None:
        # the target's pass, from outside
        waited = None if self._proposed_at is None else _now(self.target) - self._proposed_at
        self._proposed_at = None
        longest = 0
        for row, seen in verified.items():
            state = self.texts[row]
            if state.inner is None:  # the first pass: choose the layers from its hidden states
                if self.given is None and seen.hidden is not None:
                    state.skipped = least_influential_layers(seen.hidden, self.layer_count_skipped())
                continue
            drafted = seen.proposal.size
            longest = max(longest, drafted)
            if state.inner is not None:
                state.inner.observe({row: seen})
            if drafted:
                state.rule.update(drafted, len(seen.path))
            if seen.finished:
                del self.texts[row]
        if waited is not None:
            self._target_step_s.append(waited / (1.0 + self.generation.costs.verify_slope * longest))


def _now(model: PreTrainedModel) -> float:
    """Seconds on the clock once `model`'s device has finished its queued work."""
    synchronize(model.device)
    return time.perf_counter()


@dataclass(frozen=True)
class LayerSkipOptions:
    """Which of the target's layers its draft skips."""

    fraction: float = field(
        default=0.5, metadata={"help": "share of the layers skipped (the least influential on the prompt)"}
    )
    max_gamma: int = field(default=8, metadata={"help": "the longest chain a round drafts"})
