"""The tools every Python project of this size runs, run by the test command: ruff over the whole tree, mypy on the
core.

`ruff check` (rules in pyproject.toml: pyflakes, pycodestyle's errors and warnings with no line over 120 characters,
bugbear) and `ruff format --check` (line length 120) over every file, in the fast tier; mypy, strict on
`specdec/engine`, `specdec/reference` and `specdec/planner`, in the slow tier (a first run reads torch's types: about 30
s). Each is shown failing on a file written to fail, so neither passes by checking nothing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", *args], cwd=ROOT, capture_output=True, text=True
    )


def test_ruff_finds_nothing_in_the_tree(tmp_path):
    result = ruff(".")
    assert result.returncode == 0, result.stdout + result.stderr
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\n\ndef f(items=[]):\n    return items\n")
    result = ruff("--config", str(ROOT / "pyproject.toml"), str(bad))
    assert result.returncode == 1 and "F401" in result.stdout and "B006" in result.stdout  # it can fail
    long = tmp_path / "long.py"
    long.write_text("# " + "a comment that runs on " * 6 + "\n")
    result = ruff("--config", str(ROOT / "pyproject.toml"), str(long))
    assert result.returncode == 1 and "E501" in result.stdout  # a line over 120 characters fails


def test_ruff_format_would_change_nothing(tmp_path):
    def format_check(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "ruff", "format", "--check", "--no-cache", *args]
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True)

    result = format_check(".")
    assert result.returncode == 0, result.stdout + result.stderr
    unformatted = tmp_path / "unformatted.py"
    unformatted.write_text("x = {'a':1,\n  'b':2}\n")
    result = format_check("--config", str(ROOT / "pyproject.toml"), str(unformatted))
    assert result.returncode == 1 and "unformatted.py" in result.stdout + result.stderr  # it can fail


@pytest.mark.slow
def test_mypy_is_clean_and_strict_on_the_core(tmp_path):
    from mypy import api

    out, err, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache")])
    assert status == 0, out + err
    bad = tmp_path / "bad.py"
    bad.write_text("def half(x):\n    return x / 2\n\n\ndef name() -> str:\n    return 3\n")
    out, _, status = api.run(["--strict", "--cache-dir", str(tmp_path / "cache"), str(bad)])
    assert status == 1 and "no-untyped-def" in out and "return-value" in out  # it can fail
