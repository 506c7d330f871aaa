"""Grade a lab: run its checks on your file and say, in plain words, what is wrong.

    python guide/labs/grade.py 01-rule guide/labs/01-rule/starter.py      # after you wrote the functions
    python guide/labs/grade.py 01-rule guide/labs/01-rule/solution.py     # the reference answer passes

Each lab folder holds `starter.py` (the functions to write, with what they must return), `solution.py`
and `checks.py`, whose `grade(module)` returns a list of problems: empty means the lab is done. The checks
compare your code with `specdec` or with an exact enumeration, never with a copy of the solution's output.
Exit code 0: passed; 1: a problem was found; 2: the lab or the file does not exist.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

LABS = Path(__file__).resolve().parent
NAMES = tuple(sorted(path.name for path in LABS.iterdir() if (path / "checks.py").exists()))


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def grade(lab: str, path: Path) -> list[str]:
    """The problems the lab's checks find in the module at `path` (empty: passed)."""
    checks = load(LABS / lab / "checks.py", f"lab_checks_{lab.replace('-', '_')}")
    try:
        return checks.grade(load(Path(path), "learner"))
    except NotImplementedError as error:
        return [f"not written yet: {error}"]
    except Exception as error:                                   # a learner's crash is a finding, not a traceback
        return [f"your code raised {type(error).__name__}: {error}"]


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in NAMES or not Path(argv[1]).is_file():
        print(f"usage: python guide/labs/grade.py LAB FILE, with LAB one of {', '.join(NAMES)} and FILE your .py file")
        return 2
    problems = grade(argv[0], Path(argv[1]))
    for problem in problems:
        print(f"FAIL: {problem}")
    if not problems:
        print(f"PASS: {argv[1]} does what lab {argv[0]} asks")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
