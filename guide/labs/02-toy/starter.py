"""Lab 2 (chapter 2): speculative decoding on the toy Markov language, and the enumeration that tests it.

A toy Markov language over V tokens: the next token depends only on the previous one. The target is a
table P with P[a, b] = p(b | a), the draft a table Q with Q[a, b] = q(b | a), both numpy arrays [V, V]
whose rows sum to 1. Grade with

    python guide/labs/grade.py 02-toy guide/labs/02-toy/starter.py
"""

import numpy as np


def sequence_distribution(table: np.ndarray, start: int, length: int) -> dict[tuple[int, ...], float]:
    """The exact probability of every sequence of `length` tokens after the token `start`, under `table`.

    Every one of the V ** length sequences is a key, including those of probability zero.
    """
    raise NotImplementedError("sequence_distribution")


def speculative_generate(P: np.ndarray, Q: np.ndarray, start: int, length: int, gamma: int,
                         rng: np.random.Generator) -> list[int]:
    """`length` tokens after `start`, by speculative decoding with target P and draft Q.

    Each round: draft gamma tokens from Q (each after the previous drafted one); check them left to right
    with chapter 1's rule against P's row after the token before; at the first rejection emit a token from
    the residual and end the round; if all gamma are kept, add a bonus token from P. Stop at `length` tokens.
    """
    raise NotImplementedError("speculative_generate")
