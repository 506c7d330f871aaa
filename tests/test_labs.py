"""The labs grade themselves: every solution passes its grader, every starter and a broken answer fail it.

A broken answer is the lab's solution with one line of it wrong, the classic bug of its chapter: a grader
that let it through could not teach anything.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

LABS = Path(__file__).resolve().parents[1] / "guide" / "labs"
sys.path.insert(0, str(LABS))

import grade as labs  # noqa: E402  (guide/labs/grade.py)

# lab -> (a line of its solution, the same line with the chapter's classic bug)
BROKEN = {
    "01-rule": ("    return int(rng.choice(len(p), p=residual(p, q)))",
                "    return int(rng.choice(len(p), p=p))                  # resample from p: skips the residual"),
    "02-toy": ("            tokens.append(int(rng.choice(len(p), p=excess / excess.sum())))   # the residual",
               "            tokens.append(int(rng.choice(len(p), p=p)))"),
    "03-lookup": ("        for start in range(len(text) - n - 1, -1, -1):                    # the most recent occurrence first",
                  "        for start in range(0, len(text) - n):                             # the first occurrence instead"),
    "04-batch": ("        lengths[b] += len(new)                                   # one length per row",
                 "        lengths[:] = lengths[b] + len(new)                       # one count for the batch"),
}


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


@pytest.mark.parametrize("lab", sorted(BROKEN))
def test_a_broken_answer_fails_its_grader(lab, tmp_path):
    line, broken = BROKEN[lab]
    source = (LABS / lab / "solution.py").read_text(encoding="utf-8")
    assert line in source, f"{lab}: the line to break is no longer in solution.py"
    (tmp_path / "broken.py").write_text(source.replace(line, broken), encoding="utf-8")
    problems = labs.grade(lab, tmp_path / "broken.py")
    assert problems and not problems[0].startswith("your code raised"), problems


def test_the_command_line_says_pass_or_fail(capsys):
    assert labs.main(["01-rule", str(LABS / "01-rule" / "solution.py")]) == 0
    assert labs.main(["01-rule", str(LABS / "01-rule" / "starter.py")]) == 1
    assert labs.main(["no-such-lab", "x.py"]) == 2
    assert "PASS" in capsys.readouterr().out
