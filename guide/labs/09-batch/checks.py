"""Checks for lab 4: each round speculates row by row, and every row ends as the target's own greedy text for that row
alone.

Four rows with prompts of different lengths, a greedy target and a draft that is right only part of the
time (so rows accept different numbers of tokens each round), rounds until every row has `LIMIT` tokens.

1. The draft is asked: a round that never calls `draft_next` is plain decoding, whose text is right too.
2. After every round, each row's length is what that round's rule gives it: the drafts the target kept plus
   its own token (the correction, or the bonus token after a full accept), never past `LIMIT`. This is
   computed here from `draft_next` and `target_next`, round by round, so a dropped bonus token or a row
   advanced by another row's count is named in the round where it happens.
3. The comparison covers every token, and names the first wrong one: bookkeeping bugs never show in the
   first round, so a row's 3rd token and later are where they appear.
"""

from __future__ import annotations

import numpy as np

TIME_LIMIT_S = 60
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


def advance(text: list[int]) -> tuple[int, int]:
    """(drafts the greedy rule keeps, tokens the row gains) for one round after `text`."""
    drafts: list[int] = []
    for _ in range(GAMMA):
        drafts.append(draft_next(text + drafts))
    kept = next((i for i, x in enumerate(drafts) if x != target_next(text + drafts[:i])), GAMMA)
    return kept, min(kept + 1, LIMIT - len(text))


def grade(module) -> list[str]:
    buffer = np.full((len(PROMPTS), WIDTH), -1, dtype=np.int64)
    lengths = np.array([len(prompt) for prompt in PROMPTS])
    for b, prompt in enumerate(PROMPTS):
        buffer[b, : len(prompt)] = prompt
    asked = [0]

    def counted_draft(text: list[int]) -> int:
        asked[0] += 1
        return draft_next(list(text))

    for round_ in range(1, LIMIT + 1):  # more rounds than any row needs
        if (lengths >= LIMIT).all():
            break
        before = lengths.copy()
        expected = [
            (0, 0) if before[b] >= LIMIT else advance(buffer[b, : before[b]].tolist()) for b in range(len(PROMPTS))
        ]
        module.batch_round(buffer, lengths, GAMMA, LIMIT, counted_draft, target_next)
        if asked[0] == 0:
            return [
                "batch_round never called draft_next: that is plain decoding (its text is right, but nothing is "
                "speculated); draft gamma tokens per row, then keep them while the target agrees"
            ]
        for b, (kept, gain) in enumerate(expected):
            if lengths[b] != before[b] + gain:
                bonus = " (all drafts kept: the target's bonus token comes after them)" if kept == GAMMA else ""
                return [
                    f"round {round_}, row {b}: it held {before[b]} tokens, kept {kept} of {GAMMA} drafts and gains the "
                    f"target's own token{bonus}, so it should hold {before[b] + gain}"
                    + (f" (never more than {LIMIT})" if gain < kept + 1 else "")
                    + f"; yours holds {lengths[b]}"
                ]
    problems = []
    for b, prompt in enumerate(PROMPTS):
        expected_text, yours = alone(prompt), buffer[b, : lengths[b]].tolist()
        first = next((i for i, (x, y) in enumerate(zip(yours, expected_text)) if x != y), None)
        if first is not None:
            problems.append(
                f"row {b}: the first wrong token is token {first - len(prompt) + 1} after the prompt "
                f"(yours {yours[len(prompt) : first + 1]}, alone {expected_text[len(prompt) : first + 1]})"
            )
        elif len(yours) != LIMIT:
            problems.append(
                f"row {b} holds {len(yours)} tokens, prompt included, where it should hold exactly {LIMIT} "
                f"(its tokens so far are right: check the length you keep and the limit)"
            )
    return problems
