"""The labs grade themselves: every solution passes its grader, every starter and every broken answer fail it.

A broken answer is the lab's solution with one line of it wrong, a classic bug of its chapter (resampling from
p instead of the residual, drafting every round from the start, the wrong occurrence, one length for a ragged
batch), or a plausible wrong solution whose output law is right (a sample that ignores q, a round that never
drafts or drops the bonus token, plain decoding in a batch): a grader that let it through could not teach
anything. Each is the negative control of the check that catches it. Correct answers written another way (a
last round shortened instead of cut, a prompt pass as a round of its own) must pass, and a loop that never
ends must be stopped with a verdict.

The graders of labs 1 and 2 compute the output law of a learner's sampler exactly, by driving it with a controlled
random source (`guide/labs/controlled_random.py`). Their negative controls are answers whose law is off by a small
bias, between about 0.005 and 0.03 in one token's probability (the tests compute each bias exactly and check that it is
that small): a sampled chi-square test of a few thousand draws let such answers through (issue 51); these must fail.
Correct answers the controlled source cannot drive (several values per draw) are sampled instead, enough to see
a 0.01 bias with probability 0.99. And `grade.py` runs from a fresh clone with NumPy alone: the labs
other than 03-lookup never import specdec, and 03-lookup says in one line what it needs.
"""

from __future__ import annotations

import doctest
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

LABS = Path(__file__).resolve().parents[1] / "guide" / "labs"
sys.path.insert(0, str(LABS))

import controlled_random  # noqa: E402  (guide/labs/controlled_random.py)
import grade as labs  # noqa: E402  (guide/labs/grade.py)

# lab -> wrong answers, each (name, a line of the solution or None, the line with the bug or code appended to the file):
# the chapter's classic one-line bugs, and the plausible wrong solutions a law-only grader let through (issue 45)
BROKEN = {
    "01-rule": [
        (
            "resample from p",
            "    return int(rng.choice(len(p), p=residual(p, q)))",
            "    return int(rng.choice(len(p), p=p))                  # resample from p: skips the residual",
        ),
        ("no normalising", "    return excess / excess.sum()", "    return excess"),
        (
            "the sample ignores q and draws from p",
            None,
            "def speculative_sample(p, q, rng):\n    return int(rng.choice(len(p), p=p))",
        ),
        (
            "accept probability 0, p as the residual",
            None,
            "def accept_probability(p, q, x):\n    return 0.0\n\n\ndef residual(p, q):\n    return p",
        ),
        (  # its law is p, and it keeps sum(q p) of the drafts instead of sum(min(p, q)) (issue 68)
            "the fixed-candidate test: keep x with p(x), else resample from p without x",
            None,
            "def speculative_sample(p, q, rng):\n    x = int(rng.choice(len(q), p=q))\n"
            "    if rng.random() < p[x]:\n        return x\n"
            "    rest = p.copy()\n    rest[x] = 0.0\n    return int(rng.choice(len(p), p=rest / rest.sum()))",
        ),
        (  # its law is p and it depends on q, but it never tests the draft (issue 68)
            "a draw from p shifted by the draft",
            None,
            "def speculative_sample(p, q, rng):\n    x = int(rng.choice(len(q), p=q))\n"
            "    y = int(rng.choice(len(p), p=np.roll(p, -x)))\n    return (y + x) % len(p)",
        ),
    ],
    "02-toy": [
        (
            "resample from p",
            "        emitted.append(int(rng.choice(len(p), p=excess / excess.sum())))  # the residual",
            "        emitted.append(int(rng.choice(len(p), p=p)))",
        ),
        (
            "every round drafts from the start",
            "        previous = tokens[-1] if tokens else start",
            "        previous = start",
        ),
        (
            "the start token ignored",
            "        previous = tokens[-1] if tokens else start",
            "        previous = tokens[-1] if tokens else 0",
        ),
        (
            "plain sampling from P, no draft",
            None,
            "def speculative_round(P, Q, previous, gamma, rng):\n    return [int(rng.choice(len(P), p=P[previous]))]",
        ),
        (
            "the bonus token dropped",
            "    emitted.append(int(rng.choice(len(P), p=P[context])))  # the bonus token",
            "    pass",
        ),
        (
            "zero-probability sequences left out",
            "        distribution[sequence] = float(probability)",
            "        if probability > 0:\n            distribution[sequence] = float(probability)",
        ),
        ("a round that emits nothing", None, "def speculative_round(P, Q, previous, gamma, rng):\n    return []"),
        (
            "drafts from P, tested as if q were p",
            "        state = int(rng.choice(len(Q), p=Q[state]))",
            "        state = int(rng.choice(len(P), p=P[state]))\n        Q = P",
        ),
        (
            "the generator does not use its rounds",
            None,
            "def speculative_generate(P, Q, start, length, gamma, rng):\n    tokens = []\n    while len(tokens) < "
            "length:\n"
            "        tokens.append(int(rng.choice(len(P), p=P[tokens[-1] if tokens else start])))\n    return tokens",
        ),
    ],
    "03-lookup": [
        (
            "the first occurrence",
            "        for start in range(len(text) - n - 1, -1, -1):  # the most recent occurrence first",
            "        for start in range(0, len(text) - n):                             # the first occurrence instead",
        ),
        (
            "the shortest tail first",
            "    for n in range(min(max_ngram, len(text) - 1), min_ngram - 1, -1):  # the longest tail first",
            "    for n in range(min_ngram, min(max_ngram, len(text) - 1) + 1):",
        ),
    ],
    "04-tree": [  # the guesses a reader of chapter 4 had to make (issue 51), each made the wrong way
        ("T does not grow by c per level", "passes * c + 1 + beta", "c + 1 + beta"),
        (
            "the prior worth one test, not four",
            "    return float((hits[b] + 4 * confidence**0.5) / (tests[b] + 4))  # the prior sqrt(q), worth 4 tests",
            "    return float((hits[b] + confidence ** 0.5) / (tests[b] + 1))",
        ),
        (
            "bins by rounding 10 q",
            "    b = min(int(confidence * 10), 9)  # the confidence's bin",
            "    b = min(int(round(confidence * 10)), 9)",
        ),
        ("E and T fixed within a level", "            E, T = E + worth, T + beta\n", "            pass\n"),
        (
            "the first level's best slot not forced",
            "            if not (level == 0 and rank == 0) and worth * T <= E * beta:",
            "            if worth * T <= E * beta:",
        ),
        (
            "reach not multiplied along the path",
            "                reach.append((1.0 if f == -1 else reach[f]) * a(float(laws[f][x])))",
            "                reach.append(a(float(laws[f][x])))",
        ),
        (
            "each node's slots taken node by node, not the level's best first",
            "        slots = sorted(slots, reverse=True)[:room]  # 3. the best first",
            "        slots = slots[:room]",
        ),
        (
            "the next level priced with c alone",
            "        if G * T <= E * (c + beta * len(best)):",
            "        if G * T <= E * c:",
        ),
        ("the next frontier in order of reach, not of number", "        frontier = new\n", "        frontier = best\n"),
    ],
    "05-recycling": [
        (
            "the first write wins",
            "        latest[rows[i]] = i  # one write per token: the last one",
            "        latest.setdefault(rows[i], i)",
        ),
        (
            "the kept rows not filed last",
            "    order = [i for i in range(len(rows)) if i not in set(kept)] + list(kept)  # the accepted path last: "
            "it wins",
            "    order = list(range(len(rows)))",
        ),
        (
            "the rejected rows not filed",
            "    order = [i for i in range(len(rows)) if i not in set(kept)] + list(kept)  # the accepted path last: "
            "it wins",
            "    order = list(kept)",
        ),
        (
            "a path kept when its parent was left out",
            "        if path[:-1] not in placed:\n            continue  # its parent was left out: so is it\n",
            "        if path[:-1] not in placed:\n            placed[path[:-1]] = (-1, root)\n",
        ),
        (
            "the limit ignored",
            "        if len(path) > limit:\n"
            "            break  # breadth-first: every later path is as deep or deeper\n",
            "",
        ),
    ],
    "09-batch": [
        (
            "one length for the batch",
            "        lengths[b] += len(new)  # one length per row",
            "        lengths[:] = lengths[b] + len(new)                       # one count for the batch",
        ),
        (
            "one write position for the batch",
            "        buffer[b, lengths[b] : lengths[b] + len(new)] = new  # at this row's end",
            "        buffer[b, lengths[0]:lengths[0] + len(new)] = new",
        ),
        (
            "the limit ignored",
            "        new = (drafts[:kept] + [target_next(text + drafts[:kept])])[: limit - lengths[b]]",
            "        new = drafts[:kept] + [target_next(text + drafts[:kept])]",
        ),
        (
            "plain decoding, the draft never asked",
            None,
            "def batch_round(buffer, lengths, gamma, limit, draft_next, target_next):\n    for b in "
            "range(len(lengths)):\n"
            "        if lengths[b] < limit:\n            buffer[b, lengths[b]] = target_next(buffer[b, "
            ":lengths[b]].tolist())\n"
            "            lengths[b] += 1",
        ),
        (
            "the bonus token skipped",
            "        new = (drafts[:kept] + [target_next(text + drafts[:kept])])[: limit - lengths[b]]",
            "        new = (drafts[:kept] + ([target_next(text + drafts[:kept])] if kept < gamma else []))[:limit - "
            "lengths[b]]",
        ),
    ],
}

# lab -> correct answers written another way, each (name, line or None, replacement): the graders must pass them
OTHER_WAYS = {
    "01-rule": [
        (
            "the draft by inverting q's cumulative sum, the test inline",
            None,
            "def speculative_sample(p, q, rng):\n    x = min(int(np.searchsorted(np.cumsum(q), rng.random(), "
            "side='right')), len(q) - 1)\n"
            "    if rng.random() < min(1.0, p[x] / q[x]):\n        return x\n"
            "    left = np.maximum(p - q, 0.0)\n    return int(rng.choice(len(p), p=left / left.sum()))",
        ),
        (
            "the test as u > 1 - a, with rng.uniform",
            "    if rng.random() < accept_probability(p, q, x):",
            "    if rng.uniform(0.0, 1.0) > 1.0 - accept_probability(p, q, x):",
        ),
        (
            "the residual drawn by inverting its cumulative sum",
            "    return int(rng.choice(len(p), p=residual(p, q)))",
            "    r = residual(p, q)\n    return min(int(np.searchsorted(np.cumsum(r), rng.random(), side='right')), "
            "len(r) - 1)",
        ),
    ],
    "02-toy": [
        (
            "the test as a ratio, u < p(x) / q(x)",
            "        if rng.random() * q[x] < p[x]:  # keep x with probability min(1, p(x) / q(x))",
            "        if rng.random() < p[x] / q[x]:",
        ),
        (
            "each draft tested as soon as it is drawn",
            None,
            "def speculative_round(P, Q, previous, gamma, rng):\n    emitted, context = [], previous\n    for _ in "
            "range(gamma):\n"
            "        x = int(rng.choice(len(Q), p=Q[context]))\n        if rng.random() < min(1.0, P[context, x] / "
            "Q[context, x]):\n"
            "            emitted.append(x)\n            context = x\n            continue\n"
            "        left = np.maximum(P[context] - Q[context], 0.0)\n        emitted.append(int(rng.choice(len(left), "
            "p=left / left.sum())))\n"
            "        return emitted\n    emitted.append(int(rng.choice(len(P), p=P[context])))\n    return emitted",
        ),
        (
            "the last round shortened instead of cut",
            "        tokens += speculative_round(P, Q, previous, gamma, rng)"
            "  # a full round; the last one is cut below",
            "        tokens += speculative_round(P, Q, previous, min(gamma, length - len(tokens) - 1), rng)",
        ),
        (
            "a prompt pass first: a round with gamma 0",
            "    tokens: list[int] = []",
            "    tokens: list[int] = speculative_round(P, Q, start, 0, rng)",
        ),
    ],
    "04-tree": [
        (
            "tied tokens taken highest first",
            '            for x in np.argsort(-laws[f], kind="stable")[: children[f]]:',
            "            for x in sorted(range(len(laws[f])), key=lambda t: (-laws[f][t], -t))[:children[f]]:",
        ),
    ],
    "09-batch": [
        (
            "every row drafts first, then every row is verified",
            None,
            "def batch_round(buffer, lengths, gamma, limit, draft_next, target_next):\n"
            "    active = [b for b in range(len(lengths)) if lengths[b] < limit]\n"
            "    drafts = {}\n    for b in active:\n        text, mine = buffer[b, :lengths[b]].tolist(), []\n"
            "        for _ in range(gamma):\n            mine.append(draft_next(text + mine))\n        drafts[b] = "
            "mine\n"
            "    for b in active:\n        text, mine, new = buffer[b, :lengths[b]].tolist(), drafts[b], []\n"
            "        for x in mine:\n            want = target_next(text + new)\n            new.append(want)\n"
            "            if want != x:\n                break\n        else:\n            new.append(target_next(text "
            "+ new))\n"
            "        new = new[:limit - lengths[b]]\n        buffer[b, lengths[b]:lengths[b] + len(new)] = new\n       "
            " lengths[b] += len(new)",
        ),
    ],
}


# lab -> answers whose output law is off by a small bias (each computed in
# test_the_biased_answers_are_only_slightly_off): what a sampled test of a few thousand draws cannot see, and what the
# graders must
BIASED = {
    "01-rule": [
        (
            "keeps a draft 2 points more often",
            "    if rng.random() < accept_probability(p, q, x):",
            "    if rng.random() < accept_probability(p, q, x) + 0.02:",
        ),
        (
            "keeps a draft 3% more often",
            "    if rng.random() < accept_probability(p, q, x):",
            "    if rng.random() < 1.03 * accept_probability(p, q, x):",
        ),
        (
            "a tenth of p mixed into the residual",
            "    return int(rng.choice(len(p), p=residual(p, q)))",
            "    return int(rng.choice(len(p), p=0.9 * residual(p, q) + 0.1 * p))",
        ),
        (
            "drafts from q with 3% of a uniform mixed in",
            "    x = int(rng.choice(len(q), p=q))",
            "    x = int(rng.choice(len(q), p=0.97 * q + 0.03 / len(q)))",
        ),
        (
            "keeps a draft 0.6 points more often (a law 0.6% off)",
            "    if rng.random() < accept_probability(p, q, x):",
            "    if rng.random() < accept_probability(p, q, x) + 0.006:",
        ),
        (
            "3% of p mixed into the residual (a law 0.75% off)",
            "    return int(rng.choice(len(p), p=residual(p, q)))",
            "    return int(rng.choice(len(p), p=0.97 * residual(p, q) + 0.03 * p))",
        ),
    ],
    "02-toy": [
        (
            "a bonus token with 3% of a uniform mixed in",
            "    emitted.append(int(rng.choice(len(P), p=P[context])))  # the bonus token",
            "    emitted.append(int(rng.choice(len(P), p=0.97 * P[context] + 0.01)))",
        ),
        (
            "keeps a draft 5% more often",
            "        if rng.random() * q[x] < p[x]:  # keep x with probability min(1, p(x) / q(x))",
            "        if rng.random() * q[x] < 1.05 * p[x]:",
        ),
        (
            "5% of p mixed into the residual",
            "        emitted.append(int(rng.choice(len(p), p=excess / excess.sum())))  # the residual",
            "        emitted.append(int(rng.choice(len(p), p=0.95 * excess / excess.sum() + 0.05 * p)))",
        ),
        (
            "drafts from Q with 3% of a uniform mixed in",
            "        state = int(rng.choice(len(Q), p=Q[state]))",
            "        state = int(rng.choice(len(Q), p=0.97 * Q[state] + 0.01))",
        ),
        (
            "keeps a draft 1.25% more often (a law 0.5% off)",
            "        if rng.random() * q[x] < p[x]:  # keep x with probability min(1, p(x) / q(x))",
            "        if rng.random() * q[x] < 1.0125 * p[x]:",
        ),
        (
            "2.5% of p mixed into the residual (a law 0.5% off)",
            "        emitted.append(int(rng.choice(len(p), p=excess / excess.sum())))  # the residual",
            "        emitted.append(int(rng.choice(len(p), p=0.975 * excess / excess.sum() + 0.025 * p)))",
        ),
    ],
}


def variant(lab: str, line: str | None, change: str) -> str:
    """The lab's solution with `line` replaced by `change` (everywhere),
    or with `change` appended (it then redefines a function)."""
    source = (LABS / lab / "solution.py").read_text(encoding="utf-8")
    if line is None:
        return source + "\n\n" + change + "\n"
    assert line in source, f"{lab}: the line to change is no longer in solution.py: {line!r}"
    return source.replace(line, change)


BUGS = [(lab, name, line, broken) for lab, bugs in sorted(BROKEN.items()) for name, line, broken in bugs]


def test_every_lab_is_listed():
    assert labs.NAMES == tuple(sorted(BROKEN)), labs.NAMES
    for lab in labs.NAMES:
        assert {"starter.py", "solution.py", "checks.py"} <= {path.name for path in (LABS / lab).iterdir()}


@pytest.mark.parametrize("lab", sorted(BROKEN))
def test_the_solution_passes_its_grader(lab):
    assert labs.grade(lab, LABS / lab / "solution.py") == []


@pytest.mark.parametrize("lab", sorted(BROKEN))
def test_the_starter_fails_its_grader(lab):
    problems = labs.grade(lab, LABS / lab / "starter.py")
    assert problems and problems[0].startswith("not written yet"), problems


@pytest.mark.parametrize("lab, name, line, broken", BUGS, ids=[f"{lab}: {name}" for lab, name, _, _ in BUGS])
def test_a_broken_answer_fails_its_grader(lab, name, line, broken, tmp_path):
    (tmp_path / "broken.py").write_text(variant(lab, line, broken), encoding="utf-8")
    problems = labs.grade(lab, tmp_path / "broken.py")
    assert problems and not problems[0].startswith(("your code raised", "your code did not finish")), problems


OTHERS = [(lab, name, line, change) for lab, ways in sorted(OTHER_WAYS.items()) for name, line, change in ways]


@pytest.mark.parametrize("lab, name, line, change", OTHERS, ids=[f"{lab}: {name}" for lab, name, _, _ in OTHERS])
def test_a_correct_answer_written_another_way_passes(lab, name, line, change, tmp_path):
    (tmp_path / "other.py").write_text(variant(lab, line, change), encoding="utf-8")
    assert labs.grade(lab, tmp_path / "other.py") == []


def test_a_loop_that_never_ends_is_stopped_with_a_verdict(tmp_path):
    """A generator whose text never grows would hang a grader without a time limit."""
    (tmp_path / "hangs.py").write_text(
        variant(
            "02-toy",
            None,
            "def speculative_generate(P, Q, start, length, gamma, rng):\n"
            "    tokens = []\n    while len(tokens) < length:\n"
            "        tokens += []\n    return tokens",
        ),
        encoding="utf-8",
    )
    problems = labs.grade("02-toy", tmp_path / "hangs.py", time_limit=3)  # the grading process starts in under a second
    assert len(problems) == 1 and "time limit of 3 s" in problems[0], problems
    assert labs.verdict("02-toy", "hangs.py", problems).startswith("FAIL (02-toy): your code did not finish")


def test_the_batch_lab_really_is_ragged():
    """Lab 4 tests bookkeeping only if its rows keep different numbers of drafts in one round, and some keep none."""
    batch = labs.load(LABS / "09-batch" / "checks.py", "lab_checks_09_batch")
    kept_per_round = []  # [rounds][rows]
    texts = [list(prompt) for prompt in batch.PROMPTS]
    for _ in range(3):
        kept = []
        for text in texts:
            drafts: list[int] = []
            for _ in range(batch.GAMMA):
                drafts.append(batch.draft_next(text + drafts))
            count = next((i for i, x in enumerate(drafts) if x != batch.target_next(text + drafts[:i])), batch.GAMMA)
            kept.append(count)
            text += drafts[:count] + [batch.target_next(text + drafts[:count])]
        kept_per_round.append(kept)
    assert all(len(set(kept)) > 1 for kept in kept_per_round), kept_per_round
    assert any(0 in kept for kept in kept_per_round) and any(batch.GAMMA in kept for kept in kept_per_round), (
        kept_per_round
    )


def test_the_tree_labs_cases_are_what_tree_drafter_grows_today():
    """lab 04-tree grades against guide/labs/04-tree/cases.json
    with NumPy alone; TreeDrafter must still grow those trees."""
    sys.path.insert(0, str(LABS.parent))
    import tree_growth  # guide/tree_growth.py

    committed = json.loads((LABS / "04-tree" / "cases.json").read_text(encoding="utf-8"))
    today = tree_growth.make_cases()
    assert case_difference(committed, today) is None, (
        case_difference(committed, today),
        "run `python guide/tree_growth.py --lab-cases`",
    )
    branching = sum(len(set(case["parents"])) < len(case["parents"]) for case in today)
    assert branching >= 30  # the cases branch: a chain-only grader would teach little


# The laws in cases.json are float32 softmaxes computed by torch, whose exp and sums round differently on other CPUs
# (AVX2 against AVX-512: 0.025905879214406013 against 0.025905881077051163; at most 2.4e-7 apart, and 1.7e-6 relatively
# for the tiniest, measured over all 120 cases). Every other field (settings, calibration, the tree grown) is exact:
# drawn by Python's `random`, rounded by `round`, or whole numbers.
LAW_ATOL = 1e-6  # 16 float32 ulps of a probability near 1
LAW_RTOL = 1e-5  # exp of a float32 log near -25 is good to about 25 ulps relatively


def case_difference(committed: list[dict], today: list[dict]) -> str | None:
    """None when `today`'s tree-lab cases are `committed`'s (laws to the
    tolerances above, all else exactly), else the first difference."""
    if len(committed) != len(today):
        return f"{len(committed)} cases committed, {len(today)} made today"
    for number, (old, new) in enumerate(zip(committed, today)):
        for field in sorted(set(old) | set(new)):
            if field == "laws":
                if sorted(old["laws"]) != sorted(new["laws"]):
                    return f"case {number}: the drafter read other paths"
                for path, law in old["laws"].items():
                    if not np.allclose(new["laws"][path], law, rtol=LAW_RTOL, atol=LAW_ATOL):
                        return f"case {number}: the law of path '{path}' differs beyond float32 rounding"
            elif old.get(field) != new.get(field):
                return f"case {number}: {field} {old.get(field)} -> {new.get(field)}"
    return None


def test_the_tree_case_comparison_tolerates_rounding_and_nothing_more():
    """The negative controls of the tolerances: a float32 ulp passes; 1e-5 of probability moved between two tokens, a
    tree grown differently, another calibration or other paths read fail."""
    committed = json.loads((LABS / "04-tree" / "cases.json").read_text(encoding="utf-8"))
    case = next(case for case in committed if len(case["laws"]) > 1)

    def changed(**fields) -> list[dict]:
        return [case | fields]

    law = np.array(case["laws"][""])
    rounded = (law * (1 + 2**-23 * np.where(np.arange(law.size) % 2 == 0, 1, -1))).tolist()  # one float32 ulp apart
    assert case_difference([case], changed(laws=case["laws"] | {"": rounded})) is None
    moved = law.copy()
    moved[int(np.argmax(law))] -= 1e-5
    moved[int(np.argmin(law))] += 1e-5
    assert "differs beyond" in case_difference([case], changed(laws=case["laws"] | {"": moved.tolist()}))
    assert "tokens" in case_difference([case], changed(tokens=case["tokens"][::-1]))
    assert "hits" in case_difference([case], changed(hits=[hit + 0.01 for hit in case["hits"]]))
    assert "other paths" in case_difference([case], changed(laws={"": case["laws"][""]}))


def test_the_tree_labs_tie_cases_are_what_tree_drafter_grows_today_up_to_ties():
    """ties.json: TreeDrafter still grows each tie case's tree, compared as the grader compares (the order of tied
    tokens free: `torch.topk` may take them in another order on another CPU), its laws to float32 rounding."""
    sys.path.insert(0, str(LABS.parent))
    import tree_growth  # guide/tree_growth.py

    checks = labs.checks("04-tree")
    committed = json.loads((LABS / "04-tree" / "ties.json").read_text(encoding="utf-8"))
    today = tree_growth.make_tie_cases()
    assert len(committed) == len(today)
    for old, new in zip(committed, today):
        assert {key: old[key] for key in ("c", "beta", "width", "budget", "depth", "passes")} == {
            key: new[key] for key in ("c", "beta", "width", "budget", "depth", "passes")
        }
        assert np.allclose(old["depth_laws"], new["depth_laws"], rtol=LAW_RTOL, atol=LAW_ATOL)
        laws = np.array(old["depth_laws"])
        assert checks.up_to_ties(old["tokens"], old["parents"], laws) == checks.up_to_ties(
            new["tokens"], new["parents"], laws
        )
    assert sum(case["passes"] > 1 for case in today) >= 3  # some ties below the root, not only beside it


def test_the_tie_check_frees_the_order_of_tied_tokens_and_nothing_else():
    """The negative controls of `up_to_ties`: tied tokens swapped pass; a tied token taken twice, or an untied token in
    a tied one's place, fail."""
    checks = labs.checks("04-tree")
    case = next(
        case for case in json.loads((LABS / "04-tree" / "ties.json").read_text(encoding="utf-8")) if case["passes"] > 1
    )
    laws = np.array(case["depth_laws"])
    tokens, parents = list(case["tokens"]), list(case["parents"])
    first, roots = laws[0], [i for i, parent in enumerate(parents) if parent == -1]
    taken = {tokens[i] for i in roots}
    node, tied = next(
        (i, t) for i in roots for t in range(len(first)) if t not in taken and first[t] == first[tokens[i]]
    )
    swapped = [tied if i == node else t for i, t in enumerate(tokens)]
    assert checks.up_to_ties(swapped, parents, laws) == checks.up_to_ties(tokens, parents, laws)
    untied = next(t for t in range(len(first)) if t not in taken and first[t] != first[tokens[node]])
    other = [untied if i == node else t for i, t in enumerate(tokens)]
    assert checks.up_to_ties(other, parents, laws) != checks.up_to_ties(tokens, parents, laws)

    class Twice:  # the root's first child's token for its tie partner too: one token twice
        @staticmethod
        def grow(draft, c, beta, hits, tests, width=3, budget=16, depth=12):
            roots = [i for i, p in enumerate(parents) if p == -1]
            duplicated = [tokens[roots[0]] if i in roots[:2] else t for i, t in enumerate(tokens)]
            return duplicated, parents, case["passes"]

    problems = checks.tie_problems(Twice)
    assert problems and "same token" in problems[0], problems


def test_the_recycling_labs_cases_are_what_token_recycling_does_today():
    """lab 05-recycling grades against guide/labs/05-recycling/cases.json
    with Python alone; the drafter must still make them."""
    make = labs.load(LABS / "05-recycling" / "make_cases.py", "recycling_cases")
    committed = (LABS / "05-recycling" / "cases.json").read_text(encoding="utf-8")
    assert committed == make.cases_json(make.make_cases()), "run `python guide/labs/05-recycling/make_cases.py`"


def test_every_lab_has_a_time_limit():
    for lab in labs.NAMES:
        assert 0 < labs.checks(lab).TIME_LIMIT_S <= 120, lab


def test_the_command_line_says_pass_or_fail_in_one_line(capsys):
    assert labs.main(["03-lookup", str(LABS / "03-lookup" / "solution.py")]) == 0
    assert labs.main(["03-lookup", str(LABS / "03-lookup" / "starter.py")]) == 1
    assert labs.main(["no-such-lab", "x.py"]) == 2
    passed, failed, usage = capsys.readouterr().out.splitlines()
    assert passed.startswith("PASS (03-lookup)") and failed.startswith("FAIL (03-lookup): not written yet"), (
        passed,
        failed,
    )


BIASES = [(lab, name, line, change) for lab, answers in sorted(BIASED.items()) for name, line, change in answers]


def module_from(source: str) -> types.ModuleType:
    module = types.ModuleType("answer")
    exec(compile(source, "answer.py", "exec"), module.__dict__)
    return module


def largest_bias(lab: str, module: types.ModuleType) -> float:
    """The largest error, in any token's probability, of the
    answer's law over what the lab's grader looks at (exactly)."""
    checks = labs.checks(lab)
    gaps = []
    if lab == "01-rule":
        cases = checks.pairs(np.random.default_rng(0))
        for _, p, q in cases[: checks.HAND_PICKED] + cases[-checks.RANDOM_LAWS :]:
            law, _ = controlled_random.driven_law(lambda rng, p=p, q=q: int(module.speculative_sample(p, q, rng)))
            gaps.append(controlled_random.law_distance(law, dict(enumerate(map(float, p))))[0])
    else:
        for previous in range(3):
            for gamma in range(checks.GAMMA + 1):
                law, _ = controlled_random.driven_law(
                    lambda rng, previous=previous, gamma=gamma: tuple(
                        int(t) for t in module.speculative_round(checks.P, checks.Q, previous, gamma, rng)
                    )
                )
                gaps.append(
                    controlled_random.law_distance(law, checks.round_law(checks.P, checks.Q, previous, gamma))[0]
                )
    return max(gaps)


@pytest.mark.parametrize("lab, name, line, change", BIASES, ids=[f"{lab}: {name}" for lab, name, _, _ in BIASES])
def test_an_answer_off_by_a_small_bias_fails_its_grader(lab, name, line, change, tmp_path):
    """The negative control of the law checks: the answer is
    off by 0.005 to 0.03 in one token's probability, no more."""
    source = variant(lab, line, change)
    assert 0.0049 <= largest_bias(lab, module_from(source)) <= 0.03
    (tmp_path / "biased.py").write_text(source, encoding="utf-8")
    problems = labs.grade(lab, tmp_path / "biased.py")
    assert problems and "probability" in problems[0], problems


def test_the_exact_law_of_the_solutions_is_the_target_law():
    """The controlled source is right where it must be: the reference answers' laws are p, but for rounding."""
    assert largest_bias("01-rule", module_from(variant("01-rule", None, ""))) < 1e-12
    assert largest_bias("02-toy", module_from(variant("02-toy", None, ""))) < 1e-12


# answers off by far less than any sample could see: only a law followed comparison by comparison catches them
TINY = [
    (
        "01-rule",
        "keeps a draft 1e-6 more often",
        "    if rng.random() < accept_probability(p, q, x):",
        "    if rng.random() < accept_probability(p, q, x) + 1e-6:",
    ),
    (
        "01-rule",
        "keeps a draft 0.5% more often (relative)",
        "    if rng.random() < accept_probability(p, q, x):",
        "    if rng.random() < 1.005 * accept_probability(p, q, x):",
    ),
    (
        "01-rule",
        "1e-6 of p mixed into the residual",
        "    return int(rng.choice(len(p), p=residual(p, q)))",
        "    return int(rng.choice(len(p), p=(1 - 1e-6) * residual(p, q) + 1e-6 * p))",
    ),
    (
        "02-toy",
        "keeps a draft 1e-5 more often (relative)",
        "        if rng.random() * q[x] < p[x]:  # keep x with probability min(1, p(x) / q(x))",
        "        if rng.random() * q[x] < (1 + 1e-5) * p[x]:",
    ),
    (
        "02-toy",
        "a bonus token with 1e-6 of a uniform mixed in",
        "    emitted.append(int(rng.choice(len(P), p=P[context])))  # the bonus token",
        "    emitted.append(int(rng.choice(len(P), p=(1 - 3e-6) * P[context] + 1e-6)))",
    ),
]


@pytest.mark.parametrize("lab, name, line, change", TINY, ids=[f"{lab}: {name}" for lab, name, _, _ in TINY])
def test_an_answer_off_by_a_millionth_fails_its_grader(lab, name, line, change, tmp_path):
    """The negative control of the 1e-9 tolerance: a law off by 1e-7 to 0.005 fails with the numbers that show it."""
    source = variant(lab, line, change)
    assert 1e-7 <= largest_bias(lab, module_from(source)) <= 0.005
    (tmp_path / "tiny.py").write_text(source, encoding="utf-8")
    problems = labs.grade(lab, tmp_path / "tiny.py")
    assert problems and "probability" in problems[0] and "apart" in problems[0], problems


# the same rule written so that u is used other than by comparing it: the source drives it on a grid of values
GRID_WAYS = [
    (
        "right",
        "    if rng.random() < accept_probability(p, q, x):",
        "    if np.log(rng.random()) < np.log(accept_probability(p, q, x)):",
    ),
    (
        "0.5% off",
        "    if rng.random() < accept_probability(p, q, x):",
        "    if np.log(rng.random()) < np.log(min(1.0, accept_probability(p, q, x) + 0.005)):",
    ),
]


@pytest.mark.parametrize("verdict, line, change", GRID_WAYS, ids=[verdict for verdict, _, _ in GRID_WAYS])
def test_a_uniform_draw_used_other_than_by_comparing_is_graded_on_the_grid(verdict, line, change, tmp_path):
    """`np.log(u)` is not a comparison of u: the law comes from the grid (tolerance 0.002), and still sees 0.5%."""
    source = variant("01-rule", line, change)
    module = module_from(source)
    p, q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.2, 0.2])
    law, tolerance = controlled_random.driven_law(lambda rng: int(module.speculative_sample(p, q, rng)))
    assert tolerance == controlled_random.GRID_TOLERANCE and law is not None
    (tmp_path / "grid.py").write_text(source, encoding="utf-8")
    assert (labs.grade("01-rule", tmp_path / "grid.py") == []) == (verdict == "right")


def test_a_comparison_written_any_way_round_is_followed_exactly():
    """u < t, t > u, u * q < p, p > q * u, 1 - u > t, uniform(0, q) < p: each is followed exactly (tolerance 1e-9)."""

    def law_of(test):
        return controlled_random.driven_law(lambda rng: "kept" if test(rng) else "not")

    for test in (
        lambda rng: rng.random() < 0.3,
        lambda rng: 0.3 > rng.random(),
        lambda rng: rng.random() * 0.6 < 0.18,
        lambda rng: np.float64(0.18) > np.float64(0.6) * rng.random(),
        lambda rng: 1 - rng.random() > 0.7,
        lambda rng: rng.uniform(0, 0.6) < 0.18,
        lambda rng: rng.random() <= np.array(0.3),
    ):
        law, tolerance = law_of(test)
        assert tolerance == controlled_random.EXACT_TOLERANCE and abs(law["kept"] - 0.3) < 1e-15, law


def test_the_controlled_random_source_holds_its_docstrings():
    assert doctest.testmod(controlled_random).failed == 0
    assert doctest.testmod(labs).failed == 0
    for lab in ("01-rule", "02-toy"):
        assert doctest.testmod(labs.checks(lab)).failed == 0


@pytest.mark.parametrize("biased", [False, True], ids=["exact", "biased"])
def test_an_answer_the_source_cannot_drive_is_sampled_with_the_same_power(biased, tmp_path):
    """Several values per draw (`rng.random(1)`): no exact law, so the grader samples 153,273 times. A correct answer
    passes; one that keeps a draft 2 points too often fails."""
    accept = "accept_probability(p, q, x) + 0.02" if biased else "accept_probability(p, q, x)"
    source = variant(
        "01-rule", "    if rng.random() < accept_probability(p, q, x):", f"    if rng.random(1)[0] < {accept}:"
    )
    (tmp_path / "vector.py").write_text(source, encoding="utf-8")
    checks = labs.checks("01-rule")
    p, q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.2, 0.2])
    assert controlled_random.exact_law(lambda rng: int(module_from(source).speculative_sample(p, q, rng))) is None
    problems = checks.sample_law_problems(module_from(source), "the course's example", p, q)
    assert bool(problems) == biased, problems


# --- grade.py from a fresh clone: NumPy alone, no specdec ------------------------------------------------

POISON = "raise ModuleNotFoundError(\"No module named 'specdec' (a fresh clone, not installed)\", name='specdec')\n"


def fresh_clone(tmp_path: Path) -> tuple[Path, dict]:
    """guide/labs/ copied into a folder without specdec, and an environment where `import specdec` fails wherever it is
    installed (a package of that name that raises, first on the path), run from another folder."""
    clone = tmp_path / "clone"
    shutil.copytree(LABS, clone / "guide" / "labs", ignore=shutil.ignore_patterns("__pycache__"))
    poison = tmp_path / "poison" / "specdec"
    poison.mkdir(parents=True)
    (poison / "__init__.py").write_text(POISON, encoding="utf-8")
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "PYTEST"))}
    environment["PYTHONPATH"] = str(poison.parent)
    return clone, environment


def run_grader(clone: Path, environment: dict, lab: str, answer: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        str(clone / "guide" / "labs" / "grade.py"),
        lab,
        str(clone / "guide" / "labs" / lab / answer),
    ]
    return subprocess.run(command, env=environment, cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("lab", [lab for lab in sorted(BROKEN) if lab != "03-lookup"])
def test_grade_py_runs_from_a_fresh_clone_with_numpy_alone(lab, tmp_path):
    clone, environment = fresh_clone(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run_grader(clone, environment, lab, "solution.py", elsewhere)
    assert done.returncode == 0 and done.stdout.startswith(f"PASS ({lab})"), (done.stdout, done.stderr)
    done = run_grader(clone, environment, lab, "starter.py", elsewhere)
    assert done.returncode == 1 and done.stdout.startswith(f"FAIL ({lab}): not written yet"), (done.stdout, done.stderr)


def test_the_lookup_lab_says_in_one_line_what_it_needs(tmp_path):
    """Negative control of the fresh-clone test: the poisoned specdec really is what the child imports."""
    clone, environment = fresh_clone(tmp_path)
    done = run_grader(clone, environment, "03-lookup", "solution.py", tmp_path)
    assert done.returncode == 2 and done.stdout.count("\n") == 1, (done.stdout, done.stderr)
    assert (
        done.stdout.startswith("CANNOT GRADE (03-lookup): lab 03-lookup grades your lookup against specdec's")
        and "pip install" in done.stdout
    )
