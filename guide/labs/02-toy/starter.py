"""Lab 2 (chapter 2): speculative decoding on the toy Markov language, and the enumeration that tests it.

A toy Markov language over V tokens: the next token depends only on the previous one. The target is a
table P with P[a, b] = p(b | a), the draft a table Q with Q[a, b] = q(b | a), both numpy arrays [V, V]
whose rows sum to 1. Grade your copy with

    cp guide/labs/02-toy/starter.py my_toy.py        # work on a copy; this file stays as it is
    python guide/labs/grade.py 02-toy my_toy.py
"""

import numpy as np


def sequence_distribution(table: np.ndarray, start: int, length: int) -> dict[tuple[int, ...], float]:
    """The exact probability of every sequence of `length` tokens after the token `start`, under `table`.

    Every one of the V ** length sequences is a key, including those of probability zero.
    """
    raise NotImplementedError("sequence_distribution")


def speculative_round(P: np.ndarray, Q: np.ndarray, previous: int, gamma: int, rng: np.random.Generator) -> list[int]:
    """One round after the token `previous`: the tokens it emits, between 1 and gamma + 1.

    Draft gamma tokens from Q (each after the one drafted before it, the first after `previous`); test them
    left to right with chapter 1's rule against P's row after the token before each; at the first rejection
    emit a token from the residual and end the round; if all gamma are kept, add a bonus token from P.
    With gamma = 0 the round is one token from P (what the engine's prompt pass is).
    """
    raise NotImplementedError("speculative_round")


def speculative_generate(
    P: np.ndarray, Q: np.ndarray, start: int, length: int, gamma: int, rng: np.random.Generator
) -> list[int]:
    """`length` tokens after `start`, by speculative decoding with target P and draft Q.

    Call speculative_round after the last token so far (`start` at first) until there are `length` tokens.
    Near the end you may shorten the round (at most length - len(tokens) - 1 drafts) or cut what it emits
    to `length`: both are exact.
    """
    raise NotImplementedError("speculative_generate")
