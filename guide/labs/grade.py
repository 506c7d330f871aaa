"""Grade a lab: run its checks on your file, within a time limit, and say in one line what is wrong.

    cp guide/labs/01-rule/starter.py my_rule.py              # write the functions in your copy
    python guide/labs/grade.py 01-rule my_rule.py             # PASS (01-rule): ..., or FAIL (01-rule): ...
    python guide/labs/grade.py 01-rule guide/labs/01-rule/solution.py     # the reference answer passes

Each lab folder holds `starter.py` (the functions to write, with what they must return), `solution.py`
and `checks.py`, whose `grade(module)` returns a list of problems: empty means the lab is done. The checks
compare your code with `specdec` or with an exact enumeration, never with a copy of the solution's output,
and they check the algorithm as well as its output law: a function that never drafts can have the right law.

Your code runs in a process of its own, stopped after the lab's `TIME_LIMIT_S` seconds (a loop that never
ends, such as a round that emits no token, is a finding like any other). The verdict is one line: PASS, or
FAIL with the first problem found (and how many more there were).
Exit code 0: passed; 1: a problem was found; 2: the lab or the file does not exist, or the lab's grader needs a
package this Python lacks (the line says which: lab 03-lookup grades against specdec's PromptLookupDrafter, which
imports torch).

No install is needed: this process reads only the lab's time limit from its `checks.py` (as text) and imports no
lab code; the process that grades puts the checkout and `guide/labs/` on its path. Labs other than 03-lookup need
nothing but NumPy.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

LABS = Path(__file__).resolve().parent
ROOT = LABS.parents[1]  # the checkout, so that `specdec` imports without an install
NAMES = tuple(sorted(path.name for path in LABS.iterdir() if (path / "checks.py").exists()))
TIME_LIMIT_S = 60  # a lab's checks.py may set its own


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class GraderCannotRun(Exception):
    """The lab's grader needs a package this Python lacks; the message says which and what to do."""


def checks(lab: str) -> ModuleType:
    """The lab's checks, imported (with `guide/labs/` on the path, for `controlled_random`)."""
    if str(LABS) not in sys.path:
        sys.path.insert(0, str(LABS))
    return load(LABS / lab / "checks.py", f"lab_checks_{lab.replace('-', '_')}")


def lab_time_limit(lab: str) -> float:
    """The lab's TIME_LIMIT_S, read from its checks.py as text: the grading process alone imports the checks.

    >>> lab_time_limit("01-rule")
    60
    """
    tree = ast.parse((LABS / lab / "checks.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            getattr(target, "id", None) == "TIME_LIMIT_S" for target in node.targets
        ):
            return ast.literal_eval(node.value)
    return TIME_LIMIT_S


def grade_here(lab: str, path: Path) -> list[str]:
    """The problems the lab's checks find in the module at `path`, in this process (no time limit).

    Raises GraderCannotRun when the checks cannot be imported for want of a package."""
    try:
        lab_checks = checks(lab)
    except ModuleNotFoundError as missing:
        raise GraderCannotRun(str(missing)) from missing
    try:
        return lab_checks.grade(load(Path(path), "learner"))
    except NotImplementedError as error:
        return [f"not written yet: {error}"]
    except Exception as error:  # a learner's crash is a finding, not a traceback
        return [f"your code raised {type(error).__name__}: {error}"]


def grade(lab: str, path: Path, time_limit: float | None = None) -> list[str]:
    """The problems the lab's checks find in the module at `path`
    (empty: passed), the code stopped after `time_limit` s."""
    limit = time_limit if time_limit is not None else lab_time_limit(lab)
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "problems.json"
        path_entries = [str(ROOT), str(LABS)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
        environment = dict(os.environ, PYTHONPATH=os.pathsep.join(path_entries))
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--inside",
            lab,
            str(Path(path).resolve()),
            str(report),
        ]
        try:
            done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            return [
                f"your code did not finish within the lab's time limit of {limit:g} s: a loop that never ends? "
                "(for example a round that emits no token, so the text never grows)"
            ]
        if not report.exists():
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            return [f"your code stopped the grader before it could finish (exit code {done.returncode}): {last}"]
        answer = json.loads(report.read_text(encoding="utf-8"))
        if isinstance(answer, dict):
            raise GraderCannotRun(answer["cannot_run"])
        return answer


def verdict(lab: str, path: str, problems: list[str]) -> str:
    """The one line the grader prints.

    >>> verdict("01-rule", "my_rule.py", [])
    'PASS (01-rule): my_rule.py does what the lab asks'
    >>> verdict("01-rule", "my_rule.py", ["residual is wrong", "and so is the law"])
    'FAIL (01-rule): residual is wrong (and 1 more problem)'
    """
    if not problems:
        return f"PASS ({lab}): {path} does what the lab asks"
    more = len(problems) - 1
    return f"FAIL ({lab}): {problems[0]}" + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")


def main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[0] == "--inside":  # the child process: grade, write the problems
        try:
            answer: object = grade_here(argv[1], Path(argv[2]))
        except GraderCannotRun as missing:
            answer = {"cannot_run": str(missing)}
        Path(argv[3]).write_text(json.dumps(answer), encoding="utf-8")
        return 0
    if len(argv) != 2 or argv[0] not in NAMES or not Path(argv[1]).is_file():
        print(f"usage: python guide/labs/grade.py LAB FILE, with LAB one of {', '.join(NAMES)} and FILE your .py file")
        return 2
    try:
        problems = grade(argv[0], Path(argv[1]))
    except GraderCannotRun as missing:
        print(f"CANNOT GRADE ({argv[0]}): {missing}")
        return 2
    print(verdict(argv[0], argv[1], problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
