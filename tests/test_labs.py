"""The labs grade themselves: every solution passes its grader, every starter and every broken answer fail it.

A broken answer is the lab's solution with one line of it wrong, a classic bug of its chapter (resampling from
p instead of the residual, drafting every round from the start, the wrong occurrence, one length for a ragged
batch): a grader that let it through could not teach anything.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

LABS = Path(__file__).resolve().parents[1] / "guide" / "labs"
sys.path.insert(0, str(LABS))

import grade as labs  # noqa: E402  (guide/labs/grade.py)

# lab -> the chapter's classic bugs, each (name, a line of the solution, the same line with the bug)
BROKEN = {
    "01-rule": [
        ("resample from p", "    return int(rng.choice(len(p), p=residual(p, q)))",
         "    return int(rng.choice(len(p), p=p))                  # resample from p: skips the residual"),
        ("no normalising", "    return excess / excess.sum()", "    return excess"),
    ],
    "02-toy": [
        ("resample from p", "            tokens.append(int(rng.choice(len(p), p=excess / excess.sum())))   # the residual",
         "            tokens.append(int(rng.choice(len(p), p=p)))"),
        ("every round drafts from the start", "        drafted, state = [], previous", "        drafted, state = [], start"),
        ("the start token ignored", "        previous = tokens[-1] if tokens else start", "        previous = tokens[-1] if tokens else 0"),
    ],
    "03-lookup": [
        ("the first occurrence", "        for start in range(len(text) - n - 1, -1, -1):                    # the most recent occurrence first",
         "        for start in range(0, len(text) - n):                             # the first occurrence instead"),
        ("the shortest tail first", "    for n in range(min(max_ngram, len(text) - 1), min_ngram - 1, -1):   # the longest tail first",
         "    for n in range(min_ngram, min(max_ngram, len(text) - 1) + 1):"),
    ],
    "04-batch": [
        ("one length for the batch", "        lengths[b] += len(new)                                   # one length per row",
         "        lengths[:] = lengths[b] + len(new)                       # one count for the batch"),
        ("one write position for the batch", "        buffer[b, lengths[b]:lengths[b] + len(new)] = new        # at this row's end",
         "        buffer[b, lengths[0]:lengths[0] + len(new)] = new"),
        ("the limit ignored", "        new = (drafts[:kept] + [target_next(text + drafts[:kept])])[:limit - lengths[b]]",
         "        new = drafts[:kept] + [target_next(text + drafts[:kept])]"),
    ],
}
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
    source = (LABS / lab / "solution.py").read_text(encoding="utf-8")
    assert line in source, f"{lab}: the line to break is no longer in solution.py"
    (tmp_path / "broken.py").write_text(source.replace(line, broken), encoding="utf-8")
    problems = labs.grade(lab, tmp_path / "broken.py")
    assert problems and not problems[0].startswith("your code raised"), problems


def test_the_batch_lab_really_is_ragged():
    """Lab 4 tests bookkeeping only if its rows keep different numbers of drafts in one round, and some keep none."""
    batch = labs.load(LABS / "04-batch" / "checks.py", "lab_checks_04_batch")
    kept_per_round = []                                                  # [rounds][rows]
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
    assert any(0 in kept for kept in kept_per_round) and any(batch.GAMMA in kept for kept in kept_per_round), kept_per_round


def test_the_command_line_says_pass_or_fail(capsys):
    assert labs.main(["03-lookup", str(LABS / "03-lookup" / "solution.py")]) == 0
    assert labs.main(["03-lookup", str(LABS / "03-lookup" / "starter.py")]) == 1
    assert labs.main(["no-such-lab", "x.py"]) == 2
    assert "PASS" in capsys.readouterr().out
