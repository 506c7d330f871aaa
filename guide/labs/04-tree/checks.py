"""Checks for lab 4: your growth rule grows, node for node, the trees `specdec.TreeDrafter` grows.

1. `acceptance` against the calibration's formula, (h_b + 4 sqrt(q)) / (t_b + 4) with b = min(floor(10 q), 9), fresh and
   after some rounds (the bins' edges included: a confidence of 0.1 is bin 1, of 1.0 bin 9).
2. The chapter's worked example: the tree (-1, -1, 0, 0, 0, 2, 2, 3), read in 3 draft passes.
3. The 120 cases of `cases.json`: random draft laws (sure, torn between two, flat), calibrations, costs c and beta,
   width, budget and depth, and for each the tokens, the parents and the draft passes of the tree `TreeDrafter` grew
   from them (greedy). `python guide/tree_growth.py --lab-cases` wrote them with specdec, and `tests/test_labs.py`
   checks that TreeDrafter still grows them: the grader needs NumPy alone, and it grades against the engine.
4. The 8 cases of `ties.json`: laws with equal probabilities (the same law after every path of a depth), where the
   chapter lets a rule take either of two tied tokens. Trees are compared up to the order of tied tokens
   (`up_to_ties`: the same shape, each node's token as likely as TreeDrafter's), siblings distinct.

A draft law is handed out only for the paths TreeDrafter read: asking about any other path means reading a level
the rule would not read, and the grader says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

TIME_LIMIT_S = 60
CASES = Path(__file__).resolve().parent / "cases.json"
TIES = Path(__file__).resolve().parent / "ties.json"
WORKED = {(): (0.81, 0.09, 0.0049), (0,): (0.64, 0.20, 0.10), (1,): (0.36, 0.30, 0.20)}  # chapter 4's laws
WORKED_DEEPER = (0.50, 0.30, 0.10)


def law(top: tuple[float, ...], vocabulary: int = 64) -> np.ndarray:
    q = np.full(vocabulary, (1.0 - sum(top)) / (vocabulary - len(top)))
    q[: len(top)] = top
    return q


class PathNotRead(Exception):
    pass


def acceptance_problems(module) -> list[str]:
    rng = np.random.default_rng(4)
    fresh = np.zeros(10)
    trained_tests = rng.integers(0, 12, size=10).astype(float)
    trained_hits = np.round(trained_tests * rng.random(10), 2)
    for hits, tests, what in (
        (fresh, fresh, "a fresh calibration"),
        (trained_hits, trained_tests, "a trained calibration"),
    ):
        for confidence in (0.0049, 0.09, 0.1, 0.25, 0.5, 0.64, 0.81, 0.99, 1.0):
            b = min(int(confidence * 10), 9)
            want = (hits[b] + 4 * confidence**0.5) / (tests[b] + 4)
            yours = float(module.acceptance(confidence, hits.copy(), tests.copy()))
            if not np.isclose(yours, want, rtol=1e-12, atol=1e-12):
                return [
                    f"acceptance({confidence}, hits, tests) with {what} (hits {hits.tolist()}, tests {tests.tolist()}) "
                    "should be "
                    f"(h_b + 4 sqrt(q)) / (t_b + 4) with b = {b}: {want:.6f}; yours is {yours:.6f}"
                ]
    return []


def compare(yours, tokens, parents, passes, what: str) -> list[str]:
    tokens_y, parents_y, passes_y = (list(map(int, yours[0])), list(map(int, yours[1])), int(yours[2]))
    if parents_y != parents or tokens_y != tokens:
        first = next(
            (
                i
                for i in range(max(len(parents), len(parents_y)))
                if i >= len(parents) or i >= len(parents_y) or (parents_y[i], tokens_y[i]) != (parents[i], tokens[i])
            ),
            None,
        )
        return [
            f"{what}: TreeDrafter grows parents {tuple(parents)} with tokens {tokens}; yours are {tuple(parents_y)} "
            "with "
            f"tokens {tokens_y} (the first difference at node {first})"
        ]
    if passes_y != passes:
        return [
            f"{what}: the tree is right, but TreeDrafter read it in {passes} draft passes and yours says {passes_y}"
        ]
    return []


def up_to_ties(tokens, parents, depth_laws) -> tuple:
    """The tree whichever tied token it took: each node as (the probability of its token at its depth, its children's
    forms, sorted), so that two trees that differ only in which of two equally likely tokens they took are equal.

    >>> up_to_ties([0, 2, 1], [-1, -1, 1], [[0.4, 0.2, 0.2, 0.2], [0.5, 0.5, 0.0, 0.0]])
    ((0.2, ((0.5, ()),)), (0.4, ()))
    >>> up_to_ties([0, 1, 0], [-1, -1, 1], [[0.4, 0.2, 0.2, 0.2], [0.5, 0.5, 0.0, 0.0]])   # token 1 for 2: a tie
    ((0.2, ((0.5, ()),)), (0.4, ()))
    """
    children: dict[int, list[int]] = {}
    depths: list[int] = []
    for node, parent in enumerate(parents):
        children.setdefault(int(parent), []).append(node)
        depths.append(0 if parent == -1 else depths[parent] + 1)

    def form(node: int) -> tuple:
        probability = round(float(depth_laws[depths[node]][int(tokens[node])]), 12)
        return probability, tuple(sorted(form(child) for child in children.get(node, [])))

    return tuple(sorted(form(node) for node in children.get(-1, [])))


def tie_problems(module) -> list[str]:
    for index, case in enumerate(json.loads(TIES.read_text(encoding="utf-8"))):
        laws = [np.array(q) for q in case["depth_laws"]]
        settings = {key: case[key] for key in ("width", "budget", "depth")}
        fresh = np.zeros(10)
        tokens, parents, passes = module.grow(
            lambda path, laws=laws: laws[len(path)].copy(),
            case["c"],
            case["beta"],
            fresh.copy(),
            fresh.copy(),
            **settings,
        )
        tokens, parents = [int(t) for t in tokens], [int(p) for p in parents]
        what = f"tie case {index} (c {case['c']}, beta {case['beta']}, width {case['width']}, budget {case['budget']})"
        if len(set(zip(parents, tokens))) < len(tokens):
            return [
                f"{what}: your tree gives one node two children with the same token (parents {tuple(parents)}, "
                f"tokens {tokens}): tied tokens are different tokens, each taken at most once"
            ]
        want, yours = up_to_ties(case["tokens"], case["parents"], laws), up_to_ties(tokens, parents, laws)
        if yours != want:
            return [
                f"{what}: TreeDrafter grows parents {tuple(case['parents'])} with tokens {case['tokens']}; yours are "
                f"{tuple(parents)} with tokens {tokens}, and no order of the tied tokens makes them the same tree"
            ]
        if int(passes) != case["passes"]:
            return [
                f"{what}: the tree is right, but TreeDrafter read it in {case['passes']} draft passes and yours says "
                f"{int(passes)}"
            ]
    return []


def grade(module) -> list[str]:
    problems = acceptance_problems(module)
    if problems:
        return problems
    fresh = np.zeros(10)
    worked = module.grow(
        lambda path: law(WORKED.get(tuple(path), WORKED_DEEPER)), 0.2, 0.05, fresh.copy(), fresh.copy()
    )
    problems = compare(worked, [0, 1, 0, 1, 2, 0, 1, 0], [-1, -1, 0, 0, 0, 2, 2, 3], 3, "the chapter's worked example")
    if problems:
        return problems
    for index, case in enumerate(json.loads(CASES.read_text(encoding="utf-8"))):
        laws = {key: np.array(q) for key, q in case["laws"].items()}

        def draft(path, laws=laws, index=index):
            key = ",".join(str(int(token)) for token in path)
            if key not in laws:
                raise PathNotRead(
                    f"case {index}: your grow asked for the draft's law after the path {tuple(path)}, which "
                    "TreeDrafter never reads: is a level read that the rule would not read, or a node's path wrong?"
                )
            return laws[key].copy()

        settings = {key: case[key] for key in ("width", "budget", "depth")}
        try:
            yours = module.grow(
                draft, case["c"], case["beta"], np.array(case["hits"]), np.array(case["tests"]), **settings
            )
        except PathNotRead as error:
            return [str(error)]
        what = (
            f"case {index} (c {case['c']}, beta {case['beta']}, width {case['width']}, budget {case['budget']}, "
            f"depth {case['depth']})"
        )
        problems = compare(yours, case["tokens"], case["parents"], case["passes"], what)
        if problems:
            return problems
    return tie_problems(module)
