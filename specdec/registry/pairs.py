"""The catalogue's pairs: the zoo's model pairs, each method that needs only the target beside its curated targets, and
a trained head beside each target it was trained for; and the default pair's two names.

    >>> DEFAULT_DRAFT, DEFAULT_TARGET
    ('qwen2.5-coder-0.5b', 'qwen2.5-coder-1.5b')
"""

from __future__ import annotations

from specdec.registry.methods import METHODS
from specdec.registry.resources import RESOURCES
from specdec.zoo.catalog import DEFAULT_PAIR, PAIRS, PairEntry, split_pair_name


def pairs() -> dict[str, PairEntry]:
    """The catalogue's pairs: the zoo's model pairs, each method needing only the target beside its curated targets, and
    a trained head beside each target it was trained for ("eagle->TARGET")."""
    found = dict(PAIRS)
    for method in METHODS.values():
        for target in method.targets if method.target_only else ():
            entry = PairEntry(method.name, target, f"{method.summary} (no draft model)")
            found.setdefault(entry.name, entry)
    for resource in RESOURCES.values():
        for target in dict.fromkeys(pair.target for pair in PAIRS.values()):
            if resource.made_for is not None and resource.made_for(target):
                entry = PairEntry(resource.draft_name, target, f"the {resource.summary}, for {target}")
                found.setdefault(entry.name, entry)
    return found


DEFAULT_DRAFT, DEFAULT_TARGET = split_pair_name(DEFAULT_PAIR)
