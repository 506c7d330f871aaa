"""Drafting methods, one per module, and the one contract the loop speaks to all of them.

Notation: p is the target, q the draft, gamma the drafted tokens per round, c a draft step's cost over a
target step.

- `contract`: the protocol (`Drafter`: begin, draft, observe), what a drafter declares (`Capabilities`),
  what it is asked (`DraftRequest`) and told (`Generation`, `Verified`), proposals (`Draft`, a tree's
  `DraftTree`) and the rows a drafter may add to the target's pass (`ExtraRows`)
- `policy`: the default choices, in one place: which drafter, which schedule, the costs c and s
- `draft_model`: a small causal LM as the draft (`ModelDrafter`)
- `tree_drafter`: a draft model growing a token tree (`TreeDrafter`, its limits in `TreeSettings`)
- `cross_tokenizer`: a draft with another tokenizer (`CrossTokenizerDrafter`)
- `prompt_lookup`: n-gram lookup in the prompt and the output (`PromptLookupDrafter`)
- `token_recycling`: the target's runner-up tokens, recycled (`TokenRecyclingDrafter`)
- `lookahead`: Jacobi iterations riding along in the verification pass (`LookaheadDrafter`)
- `suffix`, `suffix_tree`: what followed the text's end before, counted in a suffix tree (`SuffixDrafter`)
- `layer_skip`: the target skipping some of its own layers (`LayerSkipDrafter`)

A new method is a new module here: a class with `name`, `passes`, `capabilities`, `begin`, `draft` and
`observe`; the loop needs no change (tests/test_drafter_contract.py plugs one in, in a test file).

`by_name` makes the drafters that need no model of their own (the CLI's `--draft recycling` ...).
"""

from __future__ import annotations

from collections.abc import Callable

from transformers import PreTrainedModel

from specdec.engine.contract import (  # noqa: F401
    Capabilities,
    ChainDrafter,
    Draft,
    DraftCosts,
    Drafter,
    DraftRequest,
    ExtraRows,
    Generation,
    Proposal,
    Verified,
    as_drafter,
)
from specdec.drafting.cross_tokenizer import CrossTokenizerDrafter  # noqa: F401
from specdec.drafting.draft_model import ModelDrafter  # noqa: F401
from specdec.drafting.layer_skip import LayerSkipDrafter
from specdec.drafting.lookahead import LookaheadDrafter
from specdec.drafting.prompt_lookup import PromptLookupDrafter
from specdec.drafting.suffix import SuffixDrafter
from specdec.drafting.token_recycling import TokenRecyclingDrafter
from specdec.drafting.tree_drafter import TreeDrafter, TreeSettings  # noqa: F401
from specdec.errors import SpecdecError

# The drafters that need no model beyond the target, by the name the CLI, the dashboard and the benchmark use.
TARGET_ONLY: dict[str, Callable[[PreTrainedModel], Drafter]] = {
    "prompt-lookup": lambda target: PromptLookupDrafter(),
    "recycling": lambda target: TokenRecyclingDrafter(),
    "lookahead": lambda target: LookaheadDrafter(),
    "suffix": lambda target: SuffixDrafter(),
    "layer-skip": lambda target: LayerSkipDrafter(target),
}


def by_name(name: str, target: PreTrainedModel) -> Drafter:
    """A fresh drafter of the method `name` (a key of `TARGET_ONLY`) for `target`, with its defaults.

    >>> sorted(TARGET_ONLY)
    ['layer-skip', 'lookahead', 'prompt-lookup', 'recycling', 'suffix']
    """
    if name not in TARGET_ONLY:
        raise SpecdecError(f"unknown drafting method '{name}': choose from {', '.join(TARGET_ONLY)} (or give a draft model)")
    return TARGET_ONLY[name](target)
