"""The lessons' code solutions run: a learner who copies them gets code that passes the tests the chapter describes.

Chapter 4's exercise 2 asks for sampled token-tree verification on top of one's own decoder
(`verify_tree`). The solution block (```python solution) is taken from the chapter as it is, run on
trees drawn from a toy Markov draft, and its output sequences are held to the target's exact
distribution by a chi-square test, as the solution says. The same code with one line of the rule
removed must fail the same test: the check can fail.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from specdec.reference.rule import markov_sequence_distribution
from specdec.reference.stats import chi_square_test

GUIDE = Path(__file__).resolve().parents[1] / "guide"
SOLUTION = re.compile(r"^```python solution\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)

# A toy Markov language over 3 tokens: the target P and a draft Q that disagrees with it a lot.
P = np.array([[0.60, 0.30, 0.10], [0.20, 0.50, 0.30], [0.30, 0.10, 0.60]])
Q = np.array([[0.10, 0.20, 0.70], [0.50, 0.20, 0.30], [0.40, 0.50, 0.10]])
START, LENGTH, RUNS = 0, 3, 12_000
SHAPE = (-1, -1, 0, 0, 1)  # two guesses at the root, two below the first, one below the second


def solutions() -> dict[str, str]:
    """Every ```python solution block of every chapter, by chapter."""
    found = {}
    for chapter in sorted(GUIDE.glob("*.md")):
        for body in SOLUTION.findall(chapter.read_text(encoding="utf-8")):
            found.setdefault(chapter.name, []).append(body)
    return found


def load(source: str):
    namespace: dict = {}
    exec(compile(source, "04-trees.md (solution)", "exec"), namespace)
    return namespace["verify_tree"]


def draw_tree(last: int, rng: np.random.Generator):
    """Children drawn from Q without replacement, breadth-first;
    p and q rows from the tables, as a real round has them."""
    tokens: list[int] = []
    parents = list(SHAPE)
    for parent in parents:
        context = last if parent == -1 else tokens[parent]
        siblings = [tokens[i] for i in range(len(tokens)) if parents[i] == parent]
        law = Q[context].copy()
        law[siblings] = 0.0  # without replacement
        tokens.append(int(rng.choice(3, p=law / law.sum())))
    contexts = [last] + tokens  # row 0: after the root; row i + 1: after node i
    return tokens, parents, P[contexts], Q[contexts]


def sequences(verify_tree, seed: int = 0) -> Counter:
    rng = np.random.default_rng(seed)
    counts: Counter = Counter()
    for _ in range(RUNS):
        text = []
        while len(text) < LENGTH:
            tokens, parents, p, q = draw_tree(text[-1] if text else START, rng)
            emitted = verify_tree(tokens, parents, p, q, rng)
            assert 1 <= len(emitted) <= 3  # the path (at most 2 deep here), then one token
            text += emitted
        counts[tuple(text[:LENGTH])] += 1
    return counts


def fit(verify_tree):
    return chi_square_test(sequences(verify_tree), markov_sequence_distribution(P, START, LENGTH))


@pytest.fixture(scope="module")
def tree_solution() -> str:
    found = solutions()
    assert list(found) == ["04-trees.md"] and len(found["04-trees.md"]) == 1, (
        "a new ```python solution block needs a test here"
    )
    return found["04-trees.md"][0]


def test_the_tree_solution_matches_the_target_distribution(tree_solution):
    result = fit(load(tree_solution))
    assert result.p_value > 1e-3, result


@pytest.mark.parametrize("line", ["r = residual(r, s)", "s = without(s, x)"])
def test_the_same_solution_without_one_line_of_the_rule_fails(tree_solution, line):
    assert line in tree_solution
    broken = tree_solution.replace(line, "pass")
    result = fit(load(broken))
    assert result.p_value < 1e-6, result


def test_side_branches_are_really_taken(tree_solution):
    """The test means something only if the root's second guess is often kept."""
    verify_tree, rng, second = load(tree_solution), np.random.default_rng(1), 0
    for _ in range(2000):
        tokens, parents, p, q = draw_tree(START, rng)
        second += verify_tree(tokens, parents, p, q, rng)[0] == tokens[1] != tokens[0]
    assert second > 200
