"""What a draft name means: the method it names or implies, and the resources to load for it (`needs_of`); the method a
run uses, named or implied, checked against what was loaded (`named_or_implied_method`). The methods themselves are in
`specdec.registry.methods`.
"""

from __future__ import annotations

from specdec.errors import SpecdecError
from specdec.registry.methods import METHODS, Method
from specdec.registry.resources import DRAFT_MODEL, DRAFT_TOKENIZER, RESOURCES, Resources


def needs_of(draft: str) -> tuple[Method | None, tuple[str, ...]]:
    """What a draft name means: (the method it names, or None for a draft model) and the resources to load for it.

    >>> needs_of("prompt-lookup")[1], needs_of("qwen2.5-coder-0.5b")
    ((), (None, ('draft model',)))
    """
    method = METHODS.get(draft)
    if method is not None and method.target_only:
        return method, ()
    for resource in RESOURCES.values():
        if resource.claims(draft):
            return next((m for m in METHODS.values() if resource.name in m.needs), None), (resource.name,)
    if method is not None:
        raise SpecdecError(
            f"{draft} drafts with {', '.join(method.needs)}: give a draft model as the draft and choose {draft} as the "
            "method (--method)"
        )
    return None, (DRAFT_MODEL,)


def named_or_implied_method(draft: str, resources: Resources, name: str | None = None) -> Method:
    """The method a run uses: the one named, else the one the draft implies (a draft model: its chain, or the
    cross-tokenizer method when its tokenizer differs); one clear line when the named method cannot run on what is
    loaded."""
    if name is None:
        implied, _ = needs_of(draft)
        if implied is not None:
            return implied
        return METHODS["cross-tokenizer" if DRAFT_TOKENIZER in resources else "draft-model"]
    if name not in METHODS:
        raise SpecdecError(f"unknown drafting method '{name}': choose from {', '.join(METHODS)}")
    method = METHODS[name]
    missing = [need for need in method.needs if need not in resources]
    if DRAFT_TOKENIZER in resources and DRAFT_TOKENIZER not in method.needs and DRAFT_MODEL in method.needs:
        missing.append("a draft sharing the target's tokenizer")
    if missing:
        raise SpecdecError(
            f"{name} needs {', '.join(missing)}, which this pair does not have: pick another method or another draft"
        )
    return method
