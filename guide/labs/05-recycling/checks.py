"""Checks for lab 5: your table and your tree against specdec's `TokenRecyclingDrafter`, case by case.

1. Chapter 5's exercise 1 by hand: the table after its pass, and the tree it drafts.
2. `remember` on the 40 passes of `cases.json`: tokens read by several rows (who writes last), rejected nodes (filed
   too), accepted ones (filed last), against the table `TokenRecyclingDrafter.remember` left.
3. `recycle` on the 40 tables of `cases.json` (entries of -1, templates of 3 to 12 nodes, limits of 1 to 6), against
   the tree `TokenRecyclingDrafter.recycle` drafted.

`make_cases.py` wrote the cases with specdec, and `tests/test_labs.py` checks that the drafter still makes them: the
grader needs nothing but Python.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

TIME_LIMIT_S = 60
CASES = Path(__file__).resolve().parent / "cases.json"
A, B, C, D, E = 0, 1, 2, 3, 4  # chapter 5's exercise 1: "a", "b", "c", "d", "e"


def exercise_problems(module) -> list[str]:
    table = [[-1, -1] for _ in range(5)]
    module.remember(table, [A, B, C], [[B, C], [D, A], [A, D]], [0, 1])  # the root "a", "b" kept, "c" rejected
    want = [[B, C], [D, A], [A, D], [-1, -1], [-1, -1]]
    if table != want:
        return [
            "chapter 5's exercise 1: after the pass the table should be a: (b, c), b: (d, a), c: (a, d) and nothing "
            "else; "
            f"yours is {table} (with a, b, c, d, e = 0, 1, 2, 3, 4)"
        ]
    tokens, parents = module.recycle(want, B, [[0], [1], [0, 0]], 6)
    if (list(tokens), list(parents)) != ([D, A], [-1, -1]):
        return [
            "chapter 5's exercise 1: from the root b with the template [0], [1], [0, 0] the tree is d and a (d was "
            "never "
            f"read, so [0, 0] is left out): tokens [3, 0], parents [-1, -1]; yours are {list(tokens)}, {list(parents)}"
        ]
    return []


def grade(module) -> list[str]:
    problems = exercise_problems(module)
    if problems:
        return problems
    cases = json.loads(CASES.read_text(encoding="utf-8"))
    for index, case in enumerate(cases["remember"]):
        table = copy.deepcopy(case["table"])
        module.remember(table, list(case["rows"]), [list(row) for row in case["top"]], list(case["kept"]))
        if table != case["after"]:
            wrong = next(token for token in range(len(table)) if table[token] != case["after"][token])
            return [
                f"remember, pass {index} (rows {case['rows']}, kept {case['kept']}): table[{wrong}] should be "
                f"{case['after'][wrong]}, yours is {table[wrong]}: every row is filed, a token read twice keeps the "
                "row "
                "filed last, and the kept rows are filed after the others"
            ]
    for index, case in enumerate(cases["recycle"]):
        tokens, parents = module.recycle(
            copy.deepcopy(case["table"]), case["root"], [list(p) for p in case["template"]], case["limit"]
        )
        if (list(tokens), list(parents)) != (case["tokens"], case["parents"]):
            return [
                f"recycle, case {index} (root {case['root']}, limit {case['limit']}, template {case['template']}): "
                f"TokenRecyclingDrafter drafts tokens {case['tokens']} with parents {case['parents']}; yours are "
                f"{list(tokens)} and {list(parents)}"
            ]
    return []
