"""The tree growth rule of chapter 4, step by step as the chapter numbers its steps, and the same tree grown by
`TreeDrafter`.

Chapter 4 writes `specdec.TreeDrafter`'s growth rule as a procedure a reader can follow line by line. This module is
that procedure in plain Python, greedy, with a trace of every number the chapter's worked example quotes, and a
stand-in reader (`LawReader`) that lets `TreeDrafter` itself grow a tree from the same draft laws. Tests hold the two
to the same tree, on the worked example and on random laws and calibrations (`tests/test_tree_growth.py`), so the
text and the code cannot part. The procedure, in the chapter's words:

    >>> grown = grow(worked_law, c=0.2, beta=0.05)                    # chapter 4's worked example
    >>> grown.parents, grown.passes
    ((-1, -1, 0, 0, 0, 2, 2, 3), 3)
    >>> second = grown.levels[0].slots[1]                              # the root's second slot: taken
    >>> round(second.worth, 2), round(second.expected_after, 2), round(second.cost_after, 2)
    (0.3, 2.2, 1.3)

`grow` needs only NumPy; `drafter_tree` imports torch and specdec.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

VOCABULARY = 64
BINS, PRIOR_WEIGHT, DECAY = 10, 4.0, 0.98  # ConfidenceStop's calibration: its defaults


def law(*top: float, vocabulary: int = VOCABULARY) -> np.ndarray:
    """A draft law whose likeliest tokens 0, 1, 2, ... have probabilities `top`, the rest spread evenly.

    >>> law(0.5, 0.3, vocabulary=4).round(2).tolist()
    [0.5, 0.3, 0.1, 0.1]
    """
    q = np.full(vocabulary, (1.0 - sum(top)) / (vocabulary - len(top)))
    q[: len(top)] = top
    return q


def acceptance(confidence: float, hits: np.ndarray | None = None, tests: np.ndarray | None = None) -> float:
    """Step 0, the calibration: a(q) = (h_b + 4 sqrt(q)) / (t_b + 4), b = min(floor(10 q), 9).

    >>> # (2 + 4 * 0.9) / (4 + 4)
    >>> acceptance(0.81), round(acceptance(0.81, hits=np.full(10, 2.0), tests=np.full(10, 4.0)), 4)
    (0.9, 0.7)
    """
    hits = np.zeros(BINS) if hits is None else hits
    tests = np.zeros(BINS) if tests is None else tests
    b = min(int(confidence * BINS), BINS - 1)
    return float((hits[b] + PRIOR_WEIGHT * confidence**0.5) / (tests[b] + PRIOR_WEIGHT))


@dataclass(frozen=True)
class Slot:
    frontier: int  # the frontier node offering it (-1: the root)
    rank: int  # its rank among that node's probabilities (0: the likeliest)
    confidence: float  # that probability
    worth: float  # R(f) a(q)
    taken: bool
    gain: float  # worth * T, T before the slot
    price: float  # E * (v(N + 1) - v(N)), E before the slot
    expected_after: float  # E after the slot (unchanged when refused)
    cost_after: float  # T after the slot


@dataclass(frozen=True)
class Decision:
    """Step 7: another level's predicted gain against its cost."""

    nodes: tuple[int, ...]  # the new nodes of largest reach it counts (m of them)
    gain: float  # G
    cost: float  # T = L c + v(N)
    expected: float  # E
    extra: float  # c + v(N + m) - v(N)
    more: bool  # G T > E extra


@dataclass
class Level:
    passes: int  # L while this level's slots were priced
    expected: float  # E when the level starts
    cost: float  # T when the level starts
    slots: list[Slot] = field(default_factory=list)
    children: dict[int, int] = field(default_factory=dict)  # frontier node -> children it got
    decision: Decision | None = None


@dataclass
class Grown:
    tokens: tuple[int, ...]
    parents: tuple[int, ...]
    reach: tuple[float, ...]
    passes: int
    levels: list[Level]


def grow(
    draft: Callable[[tuple[int, ...]], np.ndarray],
    c: float,
    beta: float,
    hits: np.ndarray | None = None,
    tests: np.ndarray | None = None,
    width: int = 3,
    budget: int = 16,
    depth: int = 12,
    verify: Callable[[int], float] | None = None,
) -> Grown:
    """Steps 1-8 of chapter 4's growth rule, greedy. `draft(path)` is the draft's q after the root and the tokens
    `path`.

    `verify(N)` is v(N), a pass over N nodes (and the root) in target steps; None: the line 1 + beta N.
    """
    v = verify or (lambda nodes: 1.0 + beta * nodes)

    def a(confidence: float) -> float:
        return acceptance(confidence, hits, tests)

    tokens: list[int] = []
    parents: list[int] = []
    reach: list[float] = []
    confidences: list[float] = []
    paths: dict[int, tuple[int, ...]] = {-1: ()}
    frontier, passes, levels = [-1], 1, []  # step 1: one pass reads the text
    laws = {-1: np.asarray(draft(()), dtype=np.float64)}
    for level in range(depth):
        expected, cost = 1.0 + sum(reach), passes * c + v(len(tokens))
        record = Level(passes, expected, cost)
        levels.append(record)
        room = min(width, budget - len(tokens), len(laws[frontier[0]]))  # step 2: each frontier node's slots
        offered = []
        for position, node in enumerate(frontier):
            top = sorted(laws[node], reverse=True)[:room]
            node_reach = 1.0 if node == -1 else reach[node]
            offered += [(node_reach * a(value), position, rank, value) for rank, value in enumerate(top) if value > 0]
        offered = sorted(offered, key=lambda slot: (slot[0], slot[1]), reverse=True)[:room]  # step 3: the best first
        counts = {node: 0 for node in frontier}
        nodes = len(tokens)
        for rank, (worth, position, own_rank, value) in enumerate(offered):  # step 4: take them while each pays
            extra = v(nodes + 1) - v(nodes)
            taken = (level == 0 and rank == 0) or worth * cost > expected * extra
            gain, price = worth * cost, expected * extra
            if taken:
                counts[frontier[position]] += 1
                expected, cost, nodes = expected + worth, cost + extra, nodes + 1
            record.slots.append(Slot(frontier[position], own_rank, value, worth, taken, gain, price, expected, cost))
            if not taken:
                break  # the first refused slot ends the level
        new = []
        for node in frontier:  # step 5: the children, numbered in order
            order = np.argsort(-laws[node], kind="stable")[: counts[node]]
            for token in order:
                new.append(len(tokens))
                tokens.append(int(token))
                parents.append(node)
                confidences.append(float(laws[node][token]))
                reach.append((1.0 if node == -1 else reach[node]) * a(float(laws[node][token])))
                paths[new[-1]] = paths[node] + (int(token),)
        record.children = {node: count for node, count in counts.items() if count}
        if not new or level + 1 == depth or len(tokens) == budget:  # step 6
            break
        best = sorted(new, key=lambda node: -reach[node])[:width]  # step 7: another level?
        gain = sum(reach[node] * a(confidences[node]) for node in best)
        n = len(tokens)
        record.decision = Decision(
            tuple(best),
            gain,
            passes * c + v(n),
            1.0 + sum(reach),
            c + v(n + len(best)) - v(n),
            gain * (passes * c + v(n)) > (1.0 + sum(reach)) * (c + v(n + len(best)) - v(n)),
        )
        if not record.decision.more:
            break
        passes += 1  # step 8: one pass over all the new nodes
        laws |= {node: np.asarray(draft(paths[node]), dtype=np.float64) for node in new}
        frontier = new
    return Grown(tuple(tokens), tuple(parents), tuple(reach), passes, levels)


class LawReader:
    """A tree reader handing out fixed draft laws: `draft(path)`
    after the root and the tokens `path` (for TreeDrafter)."""

    name, draft_model, hidden_layers, internals = "draft laws", None, (), False

    def __init__(self, draft: Callable[[tuple[int, ...]], np.ndarray]) -> None:
        self.draft, self.passes = draft, 0

    def begin(self, generation) -> None:
        pass

    def read_text(self, row, sequence):
        return self._logits([()])

    def read_level(self, row, new, tokens, parents):
        def path(node: int) -> tuple[int, ...]:
            return () if node == -1 else path(parents[node]) + (int(tokens[node]),)

        return self._logits([path(node) for node in new])

    def observe(self, row, verified) -> None:
        pass

    def forget(self, row) -> None:
        pass

    def _logits(self, paths):
        import torch

        self.passes += 1
        return torch.log(torch.tensor(np.stack([self.draft(path) for path in paths]), dtype=torch.float32))


def drafter_tree(
    draft: Callable[[tuple[int, ...]], np.ndarray],
    c: float,
    beta: float,
    hits: np.ndarray | None = None,
    tests: np.ndarray | None = None,
    width: int = 3,
    budget: int = 16,
    depth: int = 12,
    record: list | None = None,
    verify: tuple[float, ...] = (),
) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(tokens, parents, draft passes) of the tree `specdec.TreeDrafter` grows, greedy, from the same laws.

    `record`, if given, receives (E, T, counts) of every call to `TreeDrafter._children_counts`: the start of each
    level. `verify` is a measured v(0), v(1), ... (`DraftCosts.verify`); () prices on the line 1 + beta N.
    """
    import torch

    from specdec.drafting.tree_drafter import TreeDrafter, TreeSettings, TreeText
    from specdec.engine.sampling import SamplingConfig
    from specdec.engine.stop_rule import ConfidenceStop

    reader = LawReader(draft)
    drafter = TreeDrafter.reading(reader, name="draft laws", settings=TreeSettings(budget, depth, width))
    drafter.c, drafter.verify_slope, drafter.vocab_size = c, beta, len(draft(()))
    rule = ConfidenceStop(c=c, verify_slope=beta, max_gamma=depth, verify=verify)
    if hits is not None:
        rule.hits, rule.tests = np.array(hits, dtype=np.float64), np.array(tests, dtype=np.float64)
    drafter.texts[0] = TreeText(rule)
    if record is not None:
        counts = drafter._children_counts

        def recorded(*args, **kwargs):
            result = counts(*args, **kwargs)
            record.append((kwargs["expected"], kwargs["cost"], result))
            return result

        drafter._children_counts = recorded
    tree = drafter.grow(0, torch.tensor([5, 7]), depth, SamplingConfig(temperature=0), None)
    return tuple(int(t) for t in tree.tokens.tolist()), tuple(tree.parents), reader.passes


# --- chapter 4's worked example ------------------------------------------------------------------------------------

WORKED_C, WORKED_BETA = 0.2, 0.05
WORKED_LAWS = {
    (): (0.81, 0.09, 0.0049),  # q after the root: its three likeliest tokens
    (0,): (0.64, 0.20, 0.10),
    (1,): (0.36, 0.30, 0.20),
}  # after the root's two children
WORKED_DEEPER = (0.50, 0.30, 0.10)  # after every node of level 2 and deeper


def worked_law(path: tuple[int, ...]) -> np.ndarray:
    return law(*WORKED_LAWS.get(path, WORKED_DEEPER))


def worked_example() -> Grown:
    return grow(worked_law, WORKED_C, WORKED_BETA)


# --- the lab's cases: random laws and calibrations, and the tree TreeDrafter grows from each -------------------------


def random_law(seed: int, path: tuple[int, ...], vocabulary: int = 10) -> np.ndarray:
    """A draft law for a path, drawn from (seed, path) alone: sure, torn between two, or flat."""
    import random

    draw = random.Random(f"{seed}:{','.join(map(str, path))}")
    shape = draw.choice(("sure", "two", "flat"))
    weights = [draw.random() ** (6 if shape == "flat" else 2) for _ in range(vocabulary)]
    first = draw.randrange(vocabulary)
    weights[first] += {"sure": 12.0, "two": 3.0, "flat": 0.5}[shape]
    if shape == "two":
        weights[(first + 1 + draw.randrange(vocabulary - 1)) % vocabulary] += 2.5
    total = sum(weights)
    return np.array([weight / total for weight in weights])


def as_the_drafter_reads(q: np.ndarray) -> np.ndarray:
    """q as TreeDrafter sees it: the float32 softmax of the float32 log q a reader returns, in float64."""
    import torch

    return torch.softmax(torch.log(torch.tensor(q, dtype=torch.float32)), dim=-1).double().numpy()


def make_cases(count: int = 120) -> list[dict]:
    """The lab's cases: settings, calibration, the laws of every path TreeDrafter read, and the tree it grew."""
    import random

    cases = []
    for seed in range(count):
        choose = random.Random(seed)
        settings = {
            "c": choose.choice((0.02, 0.1, 0.3, 0.6)),
            "beta": choose.choice((0.01, 0.05, 0.2, 0.6)),
            "width": choose.choice((1, 2, 3, 3, 4)),
            "budget": choose.choice((3, 8, 16, 16)),
            "depth": choose.choice((2, 4, 12, 12)),
        }
        tests = [float(choose.randrange(0, 20)) if choose.random() < 0.5 else 0.0 for _ in range(BINS)]
        hits = [round(test * choose.random(), 2) for test in tests]
        read: dict[tuple[int, ...], np.ndarray] = {}

        def draft(path: tuple[int, ...], seed: int = seed, read: dict = read) -> np.ndarray:
            if path not in read:
                read[path] = as_the_drafter_reads(random_law(seed, path))
            return read[path]

        tokens, parents, passes = drafter_tree(draft, hits=np.array(hits), tests=np.array(tests), **settings)
        cases.append(
            {
                **settings,
                "hits": hits,
                "tests": tests,
                "laws": {",".join(map(str, path)): q.tolist() for path, q in sorted(read.items())},
                "tokens": list(tokens),
                "parents": list(parents),
                "passes": passes,
            }
        )
    return cases


# ties: laws with equal probabilities, the same after every path of a depth, so that whichever tied token a rule takes,
# the tree grows the same below it; the grader compares trees up to the order of tied tokens
TIE_TOPS = ((0.3, 0.3, 0.15, 0.15), (0.4, 0.2, 0.2, 0.1), (0.25, 0.25, 0.25), (0.5, 0.1, 0.1, 0.1))


def make_tie_cases(count: int = 8) -> list[dict]:
    """The lab's tie cases: settings, one law per depth (each with ties), and the tree TreeDrafter grew from them."""
    import random

    cases = []
    for seed in range(count):
        choose = random.Random(f"ties:{seed}")
        settings = {
            "c": choose.choice((0.02, 0.1, 0.3)),
            "beta": choose.choice((0.01, 0.05, 0.2)),
            "width": choose.choice((2, 3, 4)),
            "budget": choose.choice((8, 16)),
            "depth": choose.choice((3, 12)),
        }
        depth_laws = [as_the_drafter_reads(law(*choose.choice(TIE_TOPS), vocabulary=10)) for _ in range(13)]
        tokens, parents, passes = drafter_tree(lambda path, laws=depth_laws: laws[len(path)], **settings)
        cases.append(
            {
                **settings,
                "depth_laws": [q.tolist() for q in depth_laws],
                "tokens": list(tokens),
                "parents": list(parents),
                "passes": passes,
            }
        )
    return cases


def cases_json(cases: list[dict]) -> str:
    """The lab's cases.json: one case a line."""
    import json

    return "[\n" + ",\n".join(json.dumps(case) for case in cases) + "\n]\n"


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--lab-cases"]:  # python guide/tree_growth.py --lab-cases  (needs torch and specdec)
        from pathlib import Path

        out = Path(__file__).resolve().parent / "labs" / "04-tree" / "cases.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(cases_json(make_cases()), encoding="utf-8")
        ties = out.with_name("ties.json")
        ties.write_text(cases_json(make_tie_cases()), encoding="utf-8")
        print(f"wrote {out} and {ties}")


def worked_example_paragraphs() -> list[str]:
    """Chapter 4's worked example, one paragraph a level, every number from `grow`'s trace (rounded to two decimals)."""
    grown, c, beta = worked_example(), WORKED_C, WORKED_BETA
    f2 = "{:.2f}".format

    def tops(path: tuple[int, ...]) -> tuple[str, str]:
        top = WORKED_LAWS.get(path, WORKED_DEEPER)
        return (
            ", ".join(f2(value) if value >= 0.01 else f"{value:g}" for value in top),
            ", ".join(f2(acceptance(value)) for value in top),
        )

    def test(slot: Slot, before: Slot | None) -> str:
        cost = before.cost_after if before else None
        return (
            f"${f2(slot.worth)} \\cdot {f2(cost)} = {f2(slot.gain)}$ against "
            f"${f2(before.expected_after)} \\cdot {beta:g} = {f2(slot.price)}$"
        )

    def decision(level: Level) -> str:
        d = level.decision
        terms = " + ".join(f"{f2(grown.reach[n])} \\cdot {f2(acceptance(confidence(n)))}" for n in d.nodes)
        verdict = "beats" if d.more else "loses to"
        then = {0: "a second pass reads both", 1: "a third pass reads them"}.get(
            len(grown.levels[: grown.levels.index(level)]), ""
        )
        end = then if d.more else (f"the tree stops, with parents {grown.parents}, after {grown.passes} draft passes")
        return (
            f"Another level: $G = {terms} = {f2(d.gain)}$, and ${f2(d.gain)} \\cdot {f2(d.cost)} = "
            f"{f2(d.gain * d.cost)}$ "
            f"{verdict} ${f2(d.expected)} \\cdot ({c:g} + {beta:g} \\cdot {len(d.nodes)}) = "
            f"{f2(d.expected * d.extra)}$: {end}."
        )

    def path_of(node: int) -> tuple[int, ...]:
        return () if node == -1 else path_of(grown.parents[node]) + (grown.tokens[node],)

    def confidence(node: int) -> float:
        """The probability the node's token was drafted with: its parent's law at its token."""
        return worked_law(path_of(grown.parents[node]))[grown.tokens[node]]

    one, two, three = grown.levels
    q, a = tops(())
    s1, s2, s3 = one.slots
    first = (
        f"With $c = {c:g}$, $\\beta = {beta:g}$ and a fresh calibration ($a = \\sqrt{{q}}$): the draft's three "
        "likeliest "
        f"tokens after the root have $q$ = {q}, so $a$ = {a}. Level 1 starts at $E = {f2(one.expected)}$, "
        f"$T = {c:g} + 1 = {f2(one.cost)}$. The first slot is taken (the first of the first level): $E = "
        f"{f2(s1.expected_after)}$, "
        f"$T = {f2(s1.cost_after)}$. The second: {test(s2, s1)}, taken: $E = {f2(s2.expected_after)}$, $T = "
        f"{f2(s2.cost_after)}$. "
        f"The third: {test(s3, s2)}, refused. The root gets two children, nodes 0 and 1, of reach "
        f"{f2(grown.reach[0])} and {f2(grown.reach[1])}. {decision(one)}"
    )
    (q0, a0), (q1, a1) = tops((0,)), tops((1,))
    t1, t2, t3 = two.slots
    second = (
        f"After node 0 the draft's likeliest tokens have $q$ = {q0} ($a$ = {a0}), after node 1 {q1} ($a$ = {a1}). "
        f"The slots are worth "
        + ", ".join(f2(grown.reach[0] * acceptance(v)) for v in WORKED_LAWS[(0,)])
        + " (node 0) and "
        + ", ".join(f2(grown.reach[1] * acceptance(v)) for v in WORKED_LAWS[(1,)])
        + " (node 1): the three best are node 0's. "
        f"$T = 2 \\cdot {c:g} + {f2(1 + beta * 2)} = {f2(two.cost)}$, $E = {f2(two.expected)}$: "
        f"${f2(t1.worth)} \\cdot {f2(two.cost)} = {f2(t1.gain)}$ against ${f2(two.expected)} \\cdot {beta:g} = "
        f"{f2(t1.price)}$, "
        f"taken ($E = {f2(t1.expected_after)}$, $T = {f2(t1.cost_after)}$); {test(t2, t1)}, taken ($E = "
        f"{f2(t2.expected_after)}$, "
        f"$T = {f2(t2.cost_after)}$); {test(t3, t2)}, taken ($E = {f2(t3.expected_after)}$, $T = "
        f"{f2(t3.cost_after)}$). "
        f"Node 0 gets nodes 2, 3 and 4; node 1 none. {decision(two)}"
    )
    q3, a3 = tops((0, 0))
    u1, u2, u3 = three.slots
    third = (
        f"After each of nodes 2, 3 and 4 the likeliest have $q$ = {q3} ($a$ = {a3}). "
        f"$T = 3 \\cdot {c:g} + {f2(1 + beta * 5)} = {f2(three.cost)}$. The three best slots are node 2's first two "
        f"({f2(u1.worth)}, {f2(u2.worth)}) and node 3's first ({f2(u3.worth)}), ahead of node 4's first "
        f"({f2(grown.reach[4] * acceptance(WORKED_DEEPER[0]))}): ${f2(u1.worth)} \\cdot {f2(three.cost)} = "
        f"{f2(u1.gain)}$ against "
        f"${f2(three.expected)} \\cdot {beta:g} = {f2(u1.price)}$, {test(u2, u1)}, {test(u3, u2)}, all taken: "
        f"$E = {f2(u3.expected_after)}$, $T = {f2(u3.cost_after)}$. Node 2 gets nodes 5 and 6, node 3 node 7. "
        f"{decision(three)}"
    )
    assert [s.taken for s in one.slots] == [True, True, False] and all(s.taken for s in two.slots + three.slots)
    assert one.children == {-1: 2} and two.children == {0: 3} and three.children == {2: 2, 3: 1}
    assert grown.parents == (-1, -1, 0, 0, 0, 2, 2, 3), "the worked example grew another tree: rewrite its paragraphs"
    return [first, second, third]
