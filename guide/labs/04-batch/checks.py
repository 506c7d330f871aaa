"""Checks for lab 4: every row of the batch must equal the target's own greedy text for that row alone.

Four rows with prompts of different lengths, a greedy target and a draft that is right only part of the
time (so rows accept different numbers of tokens each round), rounds until every row has `LIMIT` tokens.
The comparison covers every token, and names the first wrong one: bookkeeping bugs never show in the first
round, so a row's 3rd token and later are where they appear.
"""

from __future__ import annotations

import numpy as np

VOCABULARY, LIMIT, GAMMA, WIDTH = 7, 30, 3, 40
PROMPTS = [[1], [2, 3, 4, 5], [6, 0], [3, 3, 3, 1, 2, 4]]


def target_next(text: list[int]) -> int:
    """A deterministic toy target: the next token depends on the last two."""
    last, before = text[-1], text[-2] if len(text) > 1 else 0
    return (3 * last + 2 * before + 1) % VOCABULARY


def draft_next(text: list[int]) -> int:
    """A draft that agrees with the target about two times in three, depending on the text."""
    guess = target_next(text)
    return guess if (len(text) + sum(text)) % 3 else (guess + 1) % VOCABULARY


def alone(prompt: list[int]) -> list[int]:
    text = list(prompt)
    while len(text) < LIMIT:
        text.append(target_next(text))
    return text


def grade(module) -> list[str]:
    buffer = np.full((len(PROMPTS), WIDTH), -1, dtype=np.int64)
    lengths = np.array([len(prompt) for prompt in PROMPTS])
    for b, prompt in enumerate(PROMPTS):
        buffer[b, :len(prompt)] = prompt
    for _ in range(LIMIT):                                        # more rounds than any row needs
        if (lengths >= LIMIT).all():
            break
        module.batch_round(buffer, lengths, GAMMA, LIMIT, draft_next, target_next)
    problems = []
    for b, prompt in enumerate(PROMPTS):
        expected, yours = alone(prompt), buffer[b, :lengths[b]].tolist()
        first = next((i for i, (x, y) in enumerate(zip(yours, expected)) if x != y), None)
        if first is not None:
            problems.append(f"row {b}: the first wrong token is token {first - len(prompt) + 1} after the prompt "
                            f"(yours {yours[len(prompt):first + 1]}, alone {expected[len(prompt):first + 1]})")
        elif len(yours) != LIMIT:
            problems.append(f"row {b} holds {len(yours)} tokens, prompt included, where it should hold exactly {LIMIT} "
                            f"(its tokens so far are right: check the length you keep and the limit)")
    return problems
