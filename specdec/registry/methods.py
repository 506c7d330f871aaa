"""The drafting methods: what each is called, needs, takes as options and makes (`Method`), registered once
(`register`), and the lists of them a pair's draft is chosen from (what a draft name means:
`specdec.registry.draft_names`).

    >>> sorted(name for name, method in METHODS.items() if not method.needs)
    ['layer-skip', 'lookahead', 'prompt-lookup', 'recycling', 'suffix']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from specdec.drafting.cross_tokenizer import CrossTokenizerDrafter
from specdec.drafting.draft_model import DraftModelOptions, ModelDrafter
from specdec.drafting.layer_skip import LayerSkipDrafter, LayerSkipOptions
from specdec.drafting.lookahead import LookaheadDrafter, LookaheadOptions
from specdec.drafting.prompt_lookup import PromptLookupDrafter, PromptLookupOptions
from specdec.drafting.suffix import SuffixDrafter, SuffixOptions
from specdec.drafting.token_recycling import RecyclingOptions, TokenRecyclingDrafter
from specdec.drafting.tree_drafter import TreeDrafter, TreeSettings
from specdec.engine.contract import Capabilities, Drafter
from specdec.errors import SpecdecError
from specdec.heads.reader import EagleDrafter, HeadTree
from specdec.registry.resources import (
    CORPUS,
    DRAFT_MODEL,
    DRAFT_TOKENIZER,
    HEAD,
    RESOURCES,
    TARGET,
    TOKENIZER,
    WHOLE,
    Resources,
    corpus_tokens,
)
from specdec.runtime import transformers_model


@dataclass(frozen=True)
class NoOptions:
    """A method without options of its own."""


@dataclass(frozen=True)
class Method:
    """One drafting method: its name, its drafter, what it needs,
    its options and how it makes a drafter (module docstring)."""

    name: str  # what the CLI, the dashboard, the benchmark and the pairs call it
    summary: str  # one line, for lists and help
    drafter: type  # the class that drafts (its `capabilities` are declared there)
    make: Callable[[Resources, object], Drafter]  # (loaded resources, options) -> a fresh drafter
    needs: tuple[str, ...] = ()  # resources besides the target and its tokenizer
    options: type = NoOptions  # a frozen dataclass of its options, with their defaults
    uses: tuple[str, ...] = ()  # resources it reads when given (a corpus), never required
    family: bool = True  # runs in `specdec bench --methods all`, Spec-Bench style
    targets: tuple[str, ...] = ()  # curated targets it is offered with (a method needing only the target)
    spec_bench: str = ""  # the Spec-Bench leaderboard row beside it ("PLD"), if there is one
    # its drafter's own declaration from options, where they change it
    declare: Callable[[object], Capabilities] | None = None

    @property
    def capabilities(self) -> Capabilities:
        """What the method's drafters declare with its default options (`capabilities_for`)."""
        return self.capabilities_for(self.options())

    def capabilities_for(self, options: object) -> Capabilities:
        """What a drafter made with `options` declares, read from the one place its class declares it (`declare`, the
        class's `declared`; else its class attribute): the checks before a run see what the loop will see."""
        return self.drafter.capabilities if self.declare is None else self.declare(options)

    @property
    def target_only(self) -> bool:
        """It needs nothing but the target: its name can stand for the draft of a pair
        ("prompt-lookup->qwen2.5-coder-1.5b")."""
        return not self.needs

    def parse_options(self, values: dict[str, str]) -> object:
        """Its options from text ("budget" -> "8"), each converted to its field's type; one clear line for a bad name or
        value.

        >>> METHODS["tree"].parse_options({"budget": "8"})
        TreeSettings(budget=8, depth=12, width=3)
        """
        fields = {item.name: item for item in dataclasses.fields(self.options)}
        parsed = {}
        for name, text in values.items():
            if name not in fields:
                known = ", ".join(fields) or "none"
                raise SpecdecError(f"{self.name} has no option '{name}': its options are {known}")
            parsed[name] = option_value(fields[name], text, self.name)
        return self.options(**parsed)


def option_value(item: dataclasses.Field, text: str, method: str) -> object:
    """`text` as the option `item`'s type (int, float, bool or str)."""
    kind = {"int": int, "float": float, "bool": bool}.get(str(item.type), str)
    if kind is bool:
        if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
            raise SpecdecError(f"{method}'s option {item.name} is true or false, got '{text}'")
        return text.lower() in ("true", "1", "yes")
    try:
        return kind(text)
    except ValueError:
        raise SpecdecError(f"{method}'s option {item.name} takes a {kind.__name__}, got '{text}'") from None


METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add a method to the registry (a new name, resources that are known): every list of methods then shows it."""
    unknown = [
        name for name in method.needs + method.uses if name not in (DRAFT_MODEL, DRAFT_TOKENIZER, CORPUS, *RESOURCES)
    ]
    if unknown:
        raise SpecdecError(
            f"{method.name} needs {unknown}, which the registry cannot load: register the Resource first"
        )
    if not dataclasses.is_dataclass(method.options):
        raise SpecdecError(
            f"{method.name}'s options must be a dataclass (the command line and the sidebar render its fields)"
        )
    METHODS[method.name] = method
    return method


def unregister(name: str) -> None:
    """Take a method out again (for tests that register their own)."""
    METHODS.pop(name, None)


for _method in (
    Method(
        "draft-model",
        "a small model of the same family drafts a chain (Leviathan et al. 2023)",
        ModelDrafter,
        lambda resources, options: ModelDrafter(
            resources[DRAFT_MODEL], resources[DRAFT_MODEL].name, options.vocab_limit or None
        ),
        needs=(DRAFT_MODEL,),
        options=DraftModelOptions,
        family=False,
    ),
    Method(
        "tree",
        "a small model drafts a token tree where it hesitates (SpecInfer, EAGLE-2's idea)",
        TreeDrafter,
        lambda resources, options: TreeDrafter.from_settings(
            resources[DRAFT_MODEL], options, resources[DRAFT_MODEL].name
        ),
        needs=(DRAFT_MODEL,),
        options=TreeSettings,
        family=False,
        declare=TreeDrafter.declared,
    ),
    Method(
        "cross-tokenizer",
        "a model with another tokenizer drafts text, re-encoded",
        CrossTokenizerDrafter,
        lambda resources, options: CrossTokenizerDrafter(
            resources[DRAFT_MODEL],
            resources[DRAFT_TOKENIZER],
            resources[TOKENIZER],
            resources[DRAFT_MODEL].name,
            resources.get(WHOLE),
        ),
        needs=(DRAFT_MODEL, DRAFT_TOKENIZER),
        family=False,
    ),
    Method(
        "prompt-lookup",
        "n-gram lookup in the prompt and the output (Saxena 2023)",
        PromptLookupDrafter,
        lambda resources, options: PromptLookupDrafter(options.max_ngram, options.min_ngram),
        options=PromptLookupOptions,
        targets=("qwen2.5-coder-1.5b", "smollm2-135m"),
        spec_bench="PLD",
    ),
    Method(
        "recycling",
        "the target's runner-up tokens, recycled into a tree (Luo et al. 2024)",
        TokenRecyclingDrafter,
        lambda resources, options: TokenRecyclingDrafter(candidates=options.candidates, budget=options.budget),
        options=RecyclingOptions,
        targets=("qwen2.5-coder-1.5b",),
        spec_bench="Recycling",
        declare=TokenRecyclingDrafter.declared,
    ),
    Method(
        "lookahead",
        "Jacobi iterations riding in the verification pass (Fu et al. 2024)",
        LookaheadDrafter,
        lambda resources, options: LookaheadDrafter(options.window, options.ngram, options.candidates),
        options=LookaheadOptions,
        targets=("qwen2.5-coder-1.5b",),
        spec_bench="Lookahead",
        declare=LookaheadDrafter.declared,
    ),
    Method(
        "suffix",
        "what followed the text's end before, from suffix trees (Oliaro et al. 2024)",
        SuffixDrafter,
        lambda resources, options: SuffixDrafter(
            options.budget, options.max_depth, tree=options.tree, corpus=corpus_tokens(resources)
        ),
        options=SuffixOptions,
        uses=(CORPUS,),
        targets=("qwen2.5-coder-1.5b",),
        spec_bench="REST",
        declare=SuffixDrafter.declared,
    ),
    Method(
        "eagle",
        "a trained EAGLE-3 head reads the target's hidden states and drafts a dynamic tree (Li et al. 2024-25)",
        EagleDrafter,
        lambda resources, options: EagleDrafter(resources[HEAD], None, options.budget, options.depth, options.width),
        needs=(HEAD,),
        options=HeadTree,
        spec_bench="EAGLE-3",
        declare=EagleDrafter.declared,
    ),
    Method(
        "layer-skip",
        "the target skipping its quietest layers drafts for itself (SWIFT)",
        LayerSkipDrafter,
        lambda resources, options: LayerSkipDrafter(
            transformers_model(resources[TARGET], "layer skipping"),
            fraction=options.fraction,
            max_gamma=options.max_gamma,
        ),
        options=LayerSkipOptions,
        targets=("qwen2.5-coder-1.5b",),
        declare=LayerSkipDrafter.declared,
    ),
):
    register(_method)


# The default policy's building blocks, named here once: the planner (`specdec.planner.drafting`) asks for them by these
# constants, and nothing outside this module names a method.
CHAIN = "draft-model"  # a draft model's chain, under the stop rule
TREE = "tree"  # a draft model's token tree, where trees pay
LOOKUP = "prompt-lookup"  # n-gram lookup: the draft name other engines' lookup is filed under
FREE_DRAFT = LOOKUP  # drafting that costs nothing, where a draft model does not pay ...
FREE_DRAFT_OPTIONS = (("max_ngram", "3"), ("min_ngram", "3"))  # ... and only where the text's last 3 tokens came before


def target_only() -> tuple[str, ...]:
    """The methods that need nothing but the target: a pair's draft may be one of these names.

    >>> target_only()[:2]
    ('prompt-lookup', 'recycling')
    """
    return tuple(name for name, method in METHODS.items() if method.target_only)


def draft_methods() -> tuple[str, ...]:
    """The methods that draft with the pair's draft model (it shares the target's tokenizer): a sidebar's choice for
    such a pair.

    >>> draft_methods()
    ('draft-model', 'tree')
    """
    return tuple(name for name, method in METHODS.items() if method.needs == (DRAFT_MODEL,))
