"""Lab 2 (chapter 2), a solution: speculative decoding on the toy Markov language, and its enumeration."""

import itertools

import numpy as np


def sequence_distribution(table: np.ndarray, start: int, length: int) -> dict[tuple[int, ...], float]:
    distribution = {}
    for sequence in itertools.product(range(table.shape[0]), repeat=length):
        probability, previous = 1.0, start
        for token in sequence:
            probability *= table[previous, token]
            previous = token
        distribution[sequence] = float(probability)
    return distribution


def speculative_round(P: np.ndarray, Q: np.ndarray, previous: int, gamma: int, rng: np.random.Generator) -> list[int]:
    drafted, state = [], previous
    for _ in range(gamma):  # the draft proposes gamma tokens
        state = int(rng.choice(len(Q), p=Q[state]))
        drafted.append(state)
    emitted, context = [], previous
    for x in drafted:  # the target checks them in order
        p, q = P[context], Q[context]
        if rng.random() * q[x] < p[x]:  # keep x with probability min(1, p(x) / q(x))
            emitted.append(x)
            context = x
            continue
        excess = np.maximum(p - q, 0.0)
        emitted.append(int(rng.choice(len(p), p=excess / excess.sum())))  # the residual
        return emitted
    emitted.append(int(rng.choice(len(P), p=P[context])))  # the bonus token
    return emitted


def speculative_generate(
    P: np.ndarray, Q: np.ndarray, start: int, length: int, gamma: int, rng: np.random.Generator
) -> list[int]:
    tokens: list[int] = []
    while len(tokens) < length:
        previous = tokens[-1] if tokens else start
        tokens += speculative_round(P, Q, previous, gamma, rng)  # a full round; the last one is cut below
    return tokens[:length]
