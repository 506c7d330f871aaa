"""The drafting methods, listed once: the command line, the pairs, the dashboard and the benchmark read this.

Notation: p is the target, q the draft, c a draft step's cost over a target step.

Each `Method` says what it is called, which class drafts, what it needs loaded besides the target, and
how to make one with its defaults; its capabilities are the ones its class declares
(`specdec.engine.contract.Capabilities`). The loop never reads this list: it speaks to whatever
drafter it is given. A new method is a module in `specdec/drafting/` and one entry here.

    >>> sorted(name for name, method in METHODS.items() if method.needs == TARGET)
    ['layer-skip', 'lookahead', 'prompt-lookup', 'recycling', 'suffix']
    >>> METHODS["recycling"].capabilities.sizes_rounds
    True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from transformers import PreTrainedModel

from specdec.drafting.cross_tokenizer import CrossTokenizerDrafter
from specdec.drafting.draft_model import ModelDrafter
from specdec.drafting.eagle import EagleDrafter
from specdec.drafting.layer_skip import LayerSkipDrafter
from specdec.drafting.lookahead import LookaheadDrafter
from specdec.drafting.prompt_lookup import PromptLookupDrafter
from specdec.drafting.suffix import SuffixDrafter
from specdec.drafting.token_recycling import TokenRecyclingDrafter
from specdec.drafting.tree_drafter import TreeDrafter
from specdec.engine.contract import Capabilities, Drafter
from specdec.errors import SpecdecError

TARGET = "the target only"                               # what a method needs loaded besides the target ...
DRAFT_MODEL = "a draft model sharing the target's tokenizer"
DRAFT_AND_TOKENIZER = "a draft model and its own tokenizer"
HEAD = "a head trained for the target (specdec heads train)"


@dataclass(frozen=True)
class Method:
    """One drafting method: its name, its class, what it needs loaded, and a fresh drafter with its defaults."""

    name: str                                            # what the CLI, the pairs, the dashboard and the benchmark call it
    drafter: type                                        # the class that drafts (its `capabilities` are declared there)
    needs: str                                           # TARGET, DRAFT_MODEL or DRAFT_AND_TOKENIZER
    summary: str                                         # one line, for lists and help
    make: Callable[[PreTrainedModel], Drafter] | None = None   # target -> a drafter with its defaults (methods needing only the target)

    @property
    def capabilities(self) -> Capabilities:
        """What the method's drafters declare (with its defaults)."""
        return self.drafter.capabilities


METHODS: dict[str, Method] = {method.name: method for method in (
    Method("draft-model", ModelDrafter, DRAFT_MODEL, "a small model of the same family drafts a chain (Leviathan et al. 2023)"),
    Method("tree", TreeDrafter, DRAFT_MODEL, "a small model drafts a token tree where it hesitates (SpecInfer, EAGLE-2's idea)"),
    Method("cross-tokenizer", CrossTokenizerDrafter, DRAFT_AND_TOKENIZER, "a model with another tokenizer drafts text, re-encoded"),
    Method("prompt-lookup", PromptLookupDrafter, TARGET, "n-gram lookup in the prompt and the output (Saxena 2023)",
           lambda target: PromptLookupDrafter()),
    Method("recycling", TokenRecyclingDrafter, TARGET, "the target's runner-up tokens, recycled into a tree (Luo et al. 2024)",
           lambda target: TokenRecyclingDrafter()),
    Method("lookahead", LookaheadDrafter, TARGET, "Jacobi iterations riding in the verification pass (Fu et al. 2024)",
           lambda target: LookaheadDrafter()),
    Method("suffix", SuffixDrafter, TARGET, "what followed the text's end before, from suffix trees (Oliaro et al. 2024)",
           lambda target: SuffixDrafter()),
    Method("eagle", EagleDrafter, HEAD, "a trained EAGLE-3 head reads the target's hidden states and drafts a dynamic tree "
           "(Li et al. 2024-25)"),
    Method("layer-skip", LayerSkipDrafter, TARGET, "the target skipping its quietest layers drafts for itself (SWIFT)",
           lambda target: LayerSkipDrafter(target)),
)}


def target_only() -> tuple[str, ...]:
    """The methods that need no draft model: a pair's draft may be one of these names.

    >>> target_only()[:2]
    ('prompt-lookup', 'recycling')
    """
    return tuple(name for name, method in METHODS.items() if method.needs == TARGET)


def is_target_only(name: str) -> bool:
    """Whether a draft name is a method that needs no model of its own (not a model to load)."""
    return name in target_only()


def make_drafter(name: str, target: PreTrainedModel) -> Drafter:
    """A fresh drafter of the target-only method `name` for `target`, with its defaults; one clear line for any other name."""
    if not is_target_only(name):
        raise SpecdecError(f"unknown drafting method '{name}': choose from {', '.join(target_only())} (or give a draft model)")
    return METHODS[name].make(target)
