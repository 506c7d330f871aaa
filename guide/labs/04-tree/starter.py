"""Lab 4 (chapter 4): the token tree's growth rule, greedy, as chapter 4's *The algorithm, step by step* writes it.

Write the two functions. The draft is a function: `draft(path)` returns q (a numpy array [V] that sums to 1), the
draft's distribution after the root and then the tokens of `path`, a tuple (`()` is the root). `hits` and `tests`
are the calibration's ten bins (numpy arrays [10]). The line v(N) = 1 + beta N prices the verification pass. Grade
your copy with

    cp guide/labs/04-tree/starter.py my_tree.py        # work on a copy; this file stays as it is
    python guide/labs/grade.py 04-tree my_tree.py
"""

import numpy as np


def acceptance(confidence: float, hits: np.ndarray, tests: np.ndarray) -> float:
    """Step 0: the calibrated chance a node drafted with this confidence is accepted.

    acceptance(0.81, np.zeros(10), np.zeros(10)) == 0.9      (a fresh calibration: the square root)
    """
    raise NotImplementedError("acceptance")


def grow(
    draft, c: float, beta: float, hits: np.ndarray, tests: np.ndarray, width: int = 3, budget: int = 16, depth: int = 12
) -> tuple[list[int], list[int], int]:
    """Steps 1 to 8: grow the tree greedily (a node's children are its likeliest tokens, likeliest first).

    Returns (tokens, parents, passes): the nodes' tokens and parents in node order (breadth-first, -1 the root),
    and how many draft passes were read (1 for the root, one more for each further level).
    The chapter's worked example: grow(...) == ([0, 1, 0, 1, 2, 0, 1, 0], [-1, -1, 0, 0, 0, 2, 2, 3], 3).
    """
    raise NotImplementedError("grow")
