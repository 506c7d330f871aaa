"""The one registry of drafting methods: what each needs loaded, its options, and how it makes its drafter.

Notation: p is the target, q the draft, gamma the drafted tokens per round, c a draft step's cost over a
target step.

Every list of methods in the project is read from here and nowhere else: the command line's choices and
help (`specdec.cli.parser`), the dashboard's pickers (`pages.common.settings`), the benchmark's
`--methods all` (`specdec.bench.methods`), the catalogue's pairs (`pairs()`), the Spec-Bench table, the
docs and the tests. A `Method` says

    needs     what it needs loaded besides the target and its tokenizer: nothing, a draft model sharing
              the target's tokenizer (DRAFT_MODEL), one with its own (DRAFT_TOKENIZER too), a trained
              head (HEAD); `uses` what it reads when given (CORPUS)
    options   a frozen dataclass of its own options, defaults included: the command line (`--option
              NAME=VALUE`) and the sidebar render its fields, so a new option needs no other change
    make      how its drafter is made from the loaded resources (`Resources`) and its options

and a `Resource` says how one thing a method needs is loaded (a head: `specdec.heads.files`). The loop never
reads this registry: it speaks to whatever drafter it is given (`specdec.engine.contract`).

    >>> sorted(name for name, method in METHODS.items() if not method.needs)
    ['layer-skip', 'lookahead', 'prompt-lookup', 'recycling', 'suffix']
    >>> METHODS["tree"].options(), METHODS["recycling"].capabilities.sizes_rounds
    (TreeSettings(budget=16, depth=12, width=3), True)

A new method: its drafter in a module of `specdec/drafting/` and one `register(Method(...))` (a test
registers its own, `tests/test_registry.py`, and finds it everywhere a method is chosen).

One module per job:

    methods.py     `Method`, `register`, the built-in methods
    draft_names.py what a draft name means (`needs_of`), and the method it names or implies
    resources.py   what a method may need loaded (the names, a trained head's `Resource`), corpus files
    pairs.py       the catalogue's pairs, the default pair's names
"""

from specdec.registry.draft_names import named_or_implied_method, needs_of
from specdec.registry.methods import (
    CHAIN,
    FREE_DRAFT,
    FREE_DRAFT_OPTIONS,
    LOOKUP,
    METHODS,
    TREE,
    Method,
    NoOptions,
    draft_methods,
    option_value,
    register,
    target_only,
    unregister,
)
from specdec.registry.pairs import DEFAULT_DRAFT, DEFAULT_TARGET, pairs
from specdec.registry.resources import (
    CORPUS,
    DRAFT_MODEL,
    DRAFT_TOKENIZER,
    HEAD,
    RESOURCES,
    TARGET,
    TOKENIZER,
    WHOLE,
    Resource,
    Resources,
    corpus_files,
    corpus_tokens,
)

__all__ = [
    "CHAIN",
    "CORPUS",
    "DEFAULT_DRAFT",
    "DEFAULT_TARGET",
    "DRAFT_MODEL",
    "DRAFT_TOKENIZER",
    "FREE_DRAFT",
    "FREE_DRAFT_OPTIONS",
    "HEAD",
    "LOOKUP",
    "METHODS",
    "RESOURCES",
    "TARGET",
    "TOKENIZER",
    "TREE",
    "WHOLE",
    "Method",
    "NoOptions",
    "Resource",
    "Resources",
    "corpus_files",
    "corpus_tokens",
    "draft_methods",
    "named_or_implied_method",
    "needs_of",
    "option_value",
    "pairs",
    "register",
    "target_only",
    "unregister",
]
