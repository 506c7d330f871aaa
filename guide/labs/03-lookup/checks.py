"""Checks for lab 3: your lookup against the engine's `PromptLookupDrafter.lookup`, on hand cases and random texts.

The one lab whose grader needs more than NumPy: `specdec.drafting.prompt_lookup` imports torch. Without it the grader
says so in one line (`grade.py` prints CANNOT GRADE and what to install).
"""

from __future__ import annotations

import numpy as np

try:
    from specdec.drafting.prompt_lookup import PromptLookupDrafter
except ModuleNotFoundError as missing:
    raise ModuleNotFoundError(
        f"lab 03-lookup grades your lookup against specdec's PromptLookupDrafter, which needs the package "
        f"'{missing.name}' (torch): run `pip install -e .` in the checkout, or `pip install torch`",
        name=missing.name,
    ) from missing

TIME_LIMIT_S = 60
HAND = [
    ([7, 8, 9, 4, 5, 7, 8], 3, 3, 1),
    ([1, 2, 3], 4, 3, 1),
    ([5, 5, 5, 5], 2, 3, 1),
    ([1, 2, 1, 3, 1, 2], 5, 3, 2),
    ([4], 3, 3, 1),
    ([1, 2, 3, 9, 2, 3, 8, 1, 2, 3], 3, 3, 1),
]


def grade(module) -> list[str]:
    rng = np.random.default_rng(3)
    cases = list(HAND)
    for _ in range(400):  # small vocabularies, so tails recur often
        vocabulary = int(rng.integers(2, 6))
        text = rng.integers(0, vocabulary, size=int(rng.integers(1, 30))).tolist()
        max_ngram = int(rng.integers(1, 5))
        cases.append((text, int(rng.integers(1, 6)), max_ngram, int(rng.integers(1, max_ngram + 1))))
    for text, gamma, max_ngram, min_ngram in cases:
        expected = PromptLookupDrafter(max_ngram, min_ngram).lookup(list(text), gamma)
        yours = module.lookup(list(text), gamma, max_ngram, min_ngram)
        if list(yours) != expected:
            return [
                f"lookup({text}, gamma={gamma}, max_ngram={max_ngram}, min_ngram={min_ngram}) "
                f"should be {expected}, yours is {list(yours)}"
            ]
    return []
