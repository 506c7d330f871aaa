"""How long the course takes: its prose at one pace, its code, tables and formulas at another, plus the minutes its
exercises and labs say they take. One pace for the whole course, the one-hour path included.

A reader plans by the course's stated time, so the statement is computed, not guessed. The text is counted in two
parts, each with its own stated speed:

- prose, the chapters' sentences (inline math included, link targets left out): `PROSE_WORDS_PER_MINUTE` words a
  minute, the pace of a newcomer's first read of a technical text whose every formula is new;
- code blocks, tables and display formulas, read line by line: `CODE_LINES_PER_MINUTE` non-empty lines a minute.

Every exercise opens with its own estimate and every lab pointer with its own:

    **2.** *(10 min)* A draft is accepted with ...
    **Lab.** *(30 min)* Write the accept/reject rule ...

and `course_time()` adds them to the reading time:

    >>> time = CourseTime(words=30_000, exercise_minutes=300, lab_minutes=120, lines=300)
    >>> time.reading_minutes, time.total_minutes, time.phrase()
    (360, 780, 'about 13 hours: 360 minutes of reading, 300 of exercises and 120 of labs')

The course is long; its first page (`guide/README.md`) and chapter 0 state a one-hour path through it,
`ONE_HOUR_PATH`, for a newcomer: its sections at the same pace and the lab it ends with, lab 1, where the rule for
one drafted token is written and graded (`PATH_LAB`, with the minutes its pointer opens with), must fit the hour
together (`path_minutes()`, `lab_minutes()`). `python guide/reading_time.py --write`
writes every stated time anew after a chapter changed.

`tests/test_guide.py` checks that every exercise and lab carries an estimate, that every chapter opens with
`chapter_phrase()` of its own time, that `guide/README.md` and the project README state `phrase()` as it is today,
and that the one-hour path is stated as `path_lines()` gives it. The estimates are ours: ten minutes for a question
worked on paper, fifteen to thirty for a proof or a page of code, thirty to forty-five for a lab.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

GUIDE = Path(__file__).resolve().parent
CHAPTERS = (
    "00-intuition.md",
    "01-math.md",
    "02-algorithm.md",
    "03-methods.md",
    "04-trees.md",
    "05-model-free.md",
    "06-own-vocabulary.md",
    "07-kernels.md",
    "08-runtimes.md",
    "09-batches.md",
)
PROSE_WORDS_PER_MINUTE = 100  # a newcomer's first read of technical text: the whole course, the one-hour path included
CODE_LINES_PER_MINUTE = 5  # code, tables and display formulas, line by line

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
DISPLAY_MATH = re.compile(r"^\$\$[ \t]*\n(.*?)^\$\$[ \t]*$", re.MULTILINE | re.DOTALL)
TABLE_LINE = re.compile(r"^\|.*\|[ \t]*$", re.MULTILINE)
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
EXERCISE = re.compile(r"^\*\*\d+\.\*\*", re.MULTILINE)
EXERCISE_ESTIMATE = re.compile(r"^\*\*\d+\.\*\* \*\((\d+) min\)\*", re.MULTILINE)
LAB = re.compile(r"^\*\*Lab\.\*\*", re.MULTILINE)
LAB_ESTIMATE = re.compile(r"^\*\*Lab\.\*\* \*\((\d+) min\)\*", re.MULTILINE)

# The one-hour path: chapter -> the "## " sections to read, in order. The core of the course for a newcomer: why
# generation is slow and what speculation does (chapter 0), the rule, its proof, many tokens a round and the expected
# tokens per pass (chapter 1), the loop, the rule in the engine and the bonus token (chapter 2); then lab 1. No
# section on it points into a part it skips, unless it says the part comes after the hour (tests/test_course.py).
ONE_HOUR_PATH: tuple[tuple[str, tuple[str, ...] | None], ...] = (
    (
        "00-intuition.md",
        (
            "Why generating text is slow",
            "Guess and check",
            "Why the output is exactly the big model's",
            "What the speedup depends on",
        ),
    ),
    (
        "01-math.md",
        (
            "The setting",
            "The rule for one drafted token",
            "Proof that the output is distributed as p",
            "Many tokens per round",
            "Expected tokens per target pass",
        ),
    ),
    ("02-algorithm.md", ("The loop in one screen", "Step c: the accept/reject rule", "The bonus token")),
)
PATH_LAB = (
    "01-rule",
    "`cp guide/labs/01-rule/starter.py my_rule.py`, then `python guide/labs/grade.py 01-rule my_rule.py`",
)
AFTER_THE_HOUR = "after the hour"  # how a section on the path points to a part it skips


def prose(text: str) -> str:
    """The chapter without code blocks and link targets: what the number checks read (tables and formulas stay)."""
    text = FENCE.sub(" ", text)
    return LINK.sub(lambda match: match.group(1) + "[" + match.group(2) + "]", text)


def reading_parts(text: str) -> tuple[int, int]:
    """(words of prose, lines of code, tables and display formulas) of a piece of a chapter.

    >>> reading_parts("Two words.\\n\\n```python\\nx = 1\\n\\ny = 2\\n```\\n\\n| a | b |\\n|---|---|\\n")
    (2, 4)
    """
    blocks = [body for _, body in FENCE.findall(text)]
    text = FENCE.sub(" ", text)
    blocks += DISPLAY_MATH.findall(text)
    text = DISPLAY_MATH.sub(" ", text)
    blocks += TABLE_LINE.findall(text)
    text = TABLE_LINE.sub(" ", text)
    lines = sum(1 for block in blocks for line in block.splitlines() if line.strip())
    return len(LINK.sub(lambda match: match.group(2), text).split()), lines


def exercises_section(text: str) -> str:
    return text.split("\n## Exercises\n", 1)[1] if "\n## Exercises\n" in text else ""


def missing_estimates(name: str, text: str) -> list[str]:
    """One line per exercise or lab in a chapter that does not open with its minutes."""
    problems = []
    section = exercises_section(text)
    if len(EXERCISE.findall(section)) != len(EXERCISE_ESTIMATE.findall(section)):
        problems.append(f"{name}: every exercise must open with its estimate, like '**2.** *(10 min)* ...'")
    if len(LAB.findall(text)) != len(LAB_ESTIMATE.findall(text)):
        problems.append(f"{name}: the lab must open with its estimate, like '**Lab.** *(30 min)* ...'")
    return problems


@dataclass(frozen=True)
class CourseTime:
    words: int  # prose, at PROSE_WORDS_PER_MINUTE
    exercise_minutes: int
    lab_minutes: int
    lines: int = 0  # code, tables and display formulas, at CODE_LINES_PER_MINUTE

    @property
    def reading_minutes(self) -> int:
        return round(self.words / PROSE_WORDS_PER_MINUTE + self.lines / CODE_LINES_PER_MINUTE)

    @property
    def total_minutes(self) -> int:
        return self.reading_minutes + self.exercise_minutes + self.lab_minutes

    def phrase(self) -> str:
        """The sentence the READMEs state, in half hours: 'about 9 hours: 120 minutes of reading, ...'."""
        halves = round(self.total_minutes / 30)
        hours = f"{halves // 2}" + (" and a half" if halves % 2 else "")
        unit = "hour" if halves <= 2 else "hours"
        return (
            f"about {hours} {unit}: {self.reading_minutes} minutes of reading, "
            f"{self.exercise_minutes} of exercises and {self.lab_minutes} of labs"
        )


def chapter_time(text: str) -> CourseTime:
    """One chapter's prose words, its lines of code, tables and
    formulas, and the estimates its exercises and lab open with."""
    exercises = sum(int(m) for m in EXERCISE_ESTIMATE.findall(exercises_section(text)))
    words, lines = reading_parts(text)
    return CourseTime(
        words=words,
        lines=lines,
        exercise_minutes=exercises,
        lab_minutes=sum(int(m) for m in LAB_ESTIMATE.findall(text)),
    )


def chapter_phrase(time: CourseTime) -> str:
    """How a chapter's first line states its time: 'About 14
    minutes to read, 40 for the exercises and 30 for the lab.'"""
    lab = f" and {time.lab_minutes} for the lab" if time.lab_minutes else ""
    return f"About {time.reading_minutes} minutes to read, {time.exercise_minutes} for the exercises{lab}."


def course_time(guide: Path = GUIDE) -> CourseTime:
    """Count the chapters' prose and code and add up the estimates their exercises and labs open with."""
    times = [chapter_time((guide / name).read_text(encoding="utf-8")) for name in CHAPTERS]
    return CourseTime(
        words=sum(t.words for t in times),
        lines=sum(t.lines for t in times),
        exercise_minutes=sum(t.exercise_minutes for t in times),
        lab_minutes=sum(t.lab_minutes for t in times),
    )


def section(text: str, heading: str) -> str:
    """The '## heading' section of a chapter, up to the next '## ' heading."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    if not match:
        raise ValueError(f"no section '## {heading}'")
    return match.group(1)


def reading_minutes_of(text: str) -> float:
    """Minutes to read `text` at the course's one pace."""
    words, lines = reading_parts(text)
    return words / PROSE_WORDS_PER_MINUTE + lines / CODE_LINES_PER_MINUTE


def chapter_body(text: str) -> str:
    """A chapter without its exercises: what the one-hour path reads of a whole chapter."""
    return text.split("\n## Exercises\n", 1)[0]


def path_minutes(guide: Path = GUIDE) -> list[tuple[str, tuple[str, ...] | None, int]]:
    """(chapter, its sections or None, minutes to read them) for every step of the one-hour path."""
    steps = []
    for name, headings in ONE_HOUR_PATH:
        text = (guide / name).read_text(encoding="utf-8")
        parts = [chapter_body(text)] if headings is None else [section(text, heading) for heading in headings]
        steps.append((name, headings, round(sum(reading_minutes_of(part) for part in parts))))
    return steps


def lab_minutes(lab: str, guide: Path = GUIDE) -> int:
    """The minutes a lab's pointer opens with, in the chapter that points to it."""
    for name in CHAPTERS:
        for match in re.finditer(
            r"^\*\*Lab\.\*\* \*\((\d+) min\)\*(.*?)(?=\n\n)",
            (guide / name).read_text(encoding="utf-8"),
            re.MULTILINE | re.DOTALL,
        ):
            if f"guide/labs/{lab}/" in match.group(2):
                return int(match.group(1))
    raise ValueError(f"no chapter points to lab {lab}")


def path_lines(guide: Path = GUIDE) -> list[str]:
    """The one-hour path as the guide's first page and chapter 0
    state it: one markdown list item a step, the total, the lab."""
    lines = []
    for name, headings, minutes in path_minutes(guide):
        what = (
            "all of it, without the exercises"
            if headings is None
            else ", ".join(f"*{heading}*" for heading in headings)
        )
        lines.append(f"- `{name}`: {what} ({minutes} min)")
    total = sum(minutes for _, _, minutes in path_minutes(guide))
    lab, how = PATH_LAB
    lines.append(
        f"- then lab 1, the rule for one drafted token written by you and graded: {how} ({lab_minutes(lab, guide)} min)"
    )
    lines.append(
        f"- together {total + lab_minutes(lab, guide)} minutes: {total} of reading at the course's pace "
        f"({PROSE_WORDS_PER_MINUTE} words and {CODE_LINES_PER_MINUTE} lines of code a minute) and the lab"
    )
    return lines


PATH_BLOCK = re.compile(r"(<!-- one-hour path: start -->\n).*?(<!-- one-hour path: end -->)", re.DOTALL)
PATH_PAGES = (GUIDE / "README.md", GUIDE / "00-intuition.md")
PHRASE = re.compile(r"about [\w ]+ hours?: \d+ minutes of reading, \d+ of exercises and \d+ of labs")
CHAPTER_PHRASE = re.compile(
    r"^\*About \d+ minutes to read, \d+ for the exercises(?: and \d+ for the lab)?\.", re.MULTILINE
)


def write(guide: Path = GUIDE) -> list[Path]:
    """Write today's times where the course states them: each chapter's third line, the one-hour path on the guide's
    first page and in chapter 0, the course's total in both READMEs. Repeated until nothing changes (chapter 0's
    minutes count its own statement of the path). Returns the files it changed."""
    changed: set[Path] = set()
    for _ in range(5):
        before = {
            path: path.read_text(encoding="utf-8")
            for path in (*(guide / name for name in CHAPTERS), *PATH_PAGES, guide.parent / "README.md")
        }
        for name in CHAPTERS:
            path = guide / name
            text = path.read_text(encoding="utf-8")
            path.write_text(
                CHAPTER_PHRASE.sub("*" + chapter_phrase(chapter_time(text)), text, count=1), encoding="utf-8"
            )
        block = "\n".join(path_lines(guide)) + "\n"
        for path in PATH_PAGES:
            text = path.read_text(encoding="utf-8")
            path.write_text(
                PATH_BLOCK.sub(lambda match, block=block: match.group(1) + block + match.group(2), text),
                encoding="utf-8",
            )
        for path in (guide / "README.md", guide.parent / "README.md"):
            path.write_text(PHRASE.sub(course_time(guide).phrase(), path.read_text(encoding="utf-8")), encoding="utf-8")
        now = {path: path.read_text(encoding="utf-8") for path in before}
        changed |= {path for path in before if before[path] != now[path]}
        if now == before:
            return sorted(changed)
    raise RuntimeError("the stated times did not settle in 5 rounds")


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--write"]:
        print(*(f"wrote {path}" for path in write()), sep="\n")
    for name in CHAPTERS:
        print(f"{name}: {chapter_phrase(chapter_time((GUIDE / name).read_text(encoding='utf-8')))}")
    time = course_time()
    print(
        f"the course, {time.words} words of prose and {time.lines} lines of code, tables and formulas: {time.phrase()}"
    )
    print("the one-hour path:", *path_lines(), sep="\n")
