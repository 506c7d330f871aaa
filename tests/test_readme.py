"""The README a newcomer reads in five minutes: short, and every command in it runs as written.

- at most 250 lines, the app's command on its first screen (its first 20 lines);
- the test command is, character for character, the one CI runs (`.ci/run`);
- the quick start's command that needs no model runs and prints what the README shows (the same lines, the numbers
  aside: the toy draws afresh each run), PASS included;
- the commands that need models are accepted by `specdec`'s own parser as written;
- every link to a page of the repository leads to a file.

Each check is shown to fail where it should.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from specdec.cli.parser import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
APP = "python3 -m venv .venv && . .venv/bin/activate && pip install -r requirements.txt && streamlit run app.py"


def fenced(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def commands(text: str) -> list[str]:
    return [line.strip() for block in fenced(text, "bash") for line in block.splitlines() if line.strip()]


def test_the_readme_is_short_and_opens_with_the_app():
    assert len(README.splitlines()) <= 250, len(README.splitlines())
    assert APP in "\n".join(README.splitlines()[:20])


def test_the_test_command_is_the_one_ci_runs():
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if "pytest" in line]
    assert len(ci) == 1 and ci[0] in commands(README)
    assert ci[0].replace("--all ", "") not in commands(README)  # it can fail: another command


def shape(output: str) -> list[str]:
    """Lines with their numbers masked: what the toy prints whatever it draws."""
    return [re.sub(r"\d+(\.\d+)?", "#", line).rstrip() for line in output.strip().splitlines()]


def test_the_quick_starts_toy_runs_and_prints_what_the_readme_shows():
    toy = next(command for command in commands(README) if command.startswith("specdec toy"))
    shown = next(block for block in fenced(README, "text") if block.startswith("--- Losslessness"))
    ran = subprocess.run(
        [sys.executable, "-m", "specdec", *shlex.split(toy)[1:]], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert ran.returncode == 0, ran.stderr
    assert "PASS" in ran.stdout and shape(ran.stdout) == shape(shown)
    assert shape(ran.stdout) != shape(shown.replace("PASS", "FAIL"))  # it can fail


def test_the_commands_that_need_models_parse_as_written():
    parser = build_parser()
    needing_models = [
        command for command in commands(README) if command.startswith("specdec ") and "toy" not in command
    ]
    assert len(needing_models) >= 2
    for command in needing_models:
        parser.parse_args(shlex.split(command)[1:])  # exits 2 on a wrong option


def test_every_link_leads_to_a_file():
    links = re.findall(r"\]\(([^)#]+)\)", README)
    assert links and [link for link in links if not link.startswith("http") and not (ROOT / link).exists()] == []
    for page in (ROOT / "docs").glob("*.md"):
        text = page.read_text()
        missing = [
            link
            for link in re.findall(r"\]\(([^)#]+)\)", text)
            if not link.startswith("http") and not (page.parent / link).exists()
        ]
        assert missing == [], (page.name, missing)
