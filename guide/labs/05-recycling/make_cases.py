"""The cases lab 05-recycling is graded on, made by specdec's own `TokenRecyclingDrafter` (needs torch and specdec).

    python guide/labs/05-recycling/make_cases.py      # rewrites cases.json; tests/test_labs.py says when it is stale

Each "remember" case is one pass: the tokens its rows read, the target's top-k after each, which rows the rule kept,
the table before, and the table `TokenRecyclingDrafter.remember` leaves. Each "recycle" case is a table, a root, a
template (the drafter's own, at a budget) and a limit, and the tree `TokenRecyclingDrafter.recycle` drafts.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

VOCABULARY, K = 12, 3
HERE = Path(__file__).resolve().parent


def remember_case(seed: int) -> dict:
    import torch

    from specdec.drafting.token_recycling import TokenRecyclingDrafter
    from specdec.engine.contract import Verified
    from specdec.engine.trees import DraftTree

    choose = random.Random(seed)
    drafter = TokenRecyclingDrafter(candidates=K, tree=[[0]], budget=None)
    table = [
        [choose.randrange(-1, VOCABULARY) if choose.random() < 0.6 else -1 for _ in range(K)] for _ in range(VOCABULARY)
    ]
    drafter.table = torch.tensor(table, dtype=torch.long)
    text_rows, nodes = choose.choice((1, 1, 3, 5)), choose.randrange(0, 6)
    rows = [choose.randrange(VOCABULARY) for _ in range(text_rows + nodes)]  # tokens repeat: who writes last matters
    top = [choose.sample(range(VOCABULARY), K) for _ in rows]
    logits = torch.full((len(rows), VOCABULARY), -10.0)
    for row, best in enumerate(top):
        for rank, token in enumerate(best):
            logits[row, token] = float(K - rank)  # topk gives `best`, in order
    accepted = choose.randrange(0, nodes + 1)
    proposal = DraftTree.chain(torch.tensor(rows[text_rows:], dtype=torch.long))
    verified = Verified(
        torch.tensor(rows),
        text_rows,
        logits,
        None,
        None,
        proposal,
        tuple(range(accepted)),
        tuple([True] * accepted + [False] * min(1, nodes - accepted) + [None] * max(0, nodes - accepted - 1)),
        0,
        torch.tensor([0]),
    )
    drafter.remember(verified)
    kept = list(range(text_rows)) + [text_rows + node for node in range(accepted)]
    return {"table": table, "rows": rows, "top": top, "kept": kept, "after": drafter.table.tolist()}


def recycle_case(seed: int) -> dict:
    import torch

    from specdec.drafting.token_recycling import TokenRecyclingDrafter
    from specdec.engine.contract import DraftRequest

    choose = random.Random(1000 + seed)
    budget = choose.choice((3, 5, 8, 8, 12))
    drafter = TokenRecyclingDrafter(candidates=8, budget=budget)
    table = [
        [choose.randrange(VOCABULARY) if choose.random() < 0.8 else -1 for _ in range(8)] for _ in range(VOCABULARY)
    ]
    drafter.table = torch.tensor(table, dtype=torch.long)
    root, limit = choose.randrange(VOCABULARY), choose.choice((1, 2, 3, 6, 6))
    tree = drafter.recycle(DraftRequest(torch.tensor([choose.randrange(VOCABULARY), root]), limit, None, None))
    return {
        "table": table,
        "root": root,
        "template": [list(path) for path in drafter.template],
        "limit": limit,
        "tokens": tree.tokens.tolist(),
        "parents": list(tree.parents),
    }


def make_cases(count: int = 40) -> dict:
    return {
        "remember": [remember_case(seed) for seed in range(count)],
        "recycle": [recycle_case(seed) for seed in range(count)],
    }


def cases_json(cases: dict) -> str:
    return (
        '{"remember": [\n'
        + ",\n".join(json.dumps(case) for case in cases["remember"])
        + '\n],\n"recycle": [\n'
        + ",\n".join(json.dumps(case) for case in cases["recycle"])
        + "\n]}\n"
    )


if __name__ == "__main__":
    (HERE / "cases.json").write_text(cases_json(make_cases()), encoding="utf-8")
    print(f"wrote {HERE / 'cases.json'}")
