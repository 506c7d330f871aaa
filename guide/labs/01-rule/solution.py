"""Lab 1 (chapter 1), a solution: the accept/reject rule for one drafted token."""

import numpy as np


def accept_probability(p: np.ndarray, q: np.ndarray, x: int) -> float:
    return float(min(1.0, p[x] / q[x]))


def residual(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    excess = np.maximum(p - q, 0.0)  # where the target wants more than the draft proposes
    return excess / excess.sum()


def speculative_sample(p: np.ndarray, q: np.ndarray, rng: np.random.Generator) -> int:
    x = int(rng.choice(len(q), p=q))
    if rng.random() < accept_probability(p, q, x):
        return x
    return int(rng.choice(len(p), p=residual(p, q)))
