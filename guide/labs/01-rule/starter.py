"""Lab 1 (chapter 1): the accept/reject rule for one drafted token.

Write the three functions. p is the target's distribution, q the draft's, both 1-D numpy arrays over the
same vocabulary that sum to 1. Grade your copy with

    cp guide/labs/01-rule/starter.py my_rule.py        # work on a copy; this file stays as it is
    python guide/labs/grade.py 01-rule my_rule.py
"""

import numpy as np


def accept_probability(p: np.ndarray, q: np.ndarray, x: int) -> float:
    """The chance that a drafted token x (drawn from q, so q[x] > 0) is kept: min(1, p[x] / q[x])."""
    raise NotImplementedError("accept_probability")


def residual(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """What a rejection samples from: max(0, p - q), normalised to sum to 1 (only called when p != q)."""
    raise NotImplementedError("residual")


def speculative_sample(p: np.ndarray, q: np.ndarray, rng: np.random.Generator) -> int:
    """One token by the rule: draw x from q, keep it with accept_probability, else draw from the residual."""
    raise NotImplementedError("speculative_sample")
