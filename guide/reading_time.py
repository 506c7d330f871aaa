"""How long the course takes: its words at 200 a minute, plus the minutes its exercises and labs say they take.

A reader plans by the course's stated time, so the statement is computed, not guessed. Every exercise opens
with its own estimate and every lab pointer with its own:

    **2.** *(10 min)* A draft is accepted with ...
    **Lab.** *(30 min)* Write the accept/reject rule ...

and `course_time()` adds them to the reading time of the chapters' prose (code blocks and link targets left
out; a reader skims code, and the labs' minutes pay for reading it properly):

    >>> time = CourseTime(words=24_000, exercise_minutes=300, lab_minutes=120)
    >>> time.reading_minutes, time.total_minutes, time.phrase()
    (120, 540, 'about 9 hours: 120 minutes of reading, 300 of exercises and 120 of labs')

`tests/test_guide.py` checks that every exercise and lab carries an estimate, that every chapter opens with
`chapter_phrase()` of its own time, and that `guide/README.md` and the project README state `phrase()` as it is today. The estimates are ours: ten minutes for a question worked on
paper, fifteen to thirty for a proof or a page of code, thirty to forty-five for a lab.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

GUIDE = Path(__file__).resolve().parent
CHAPTERS = ("00-intuition.md", "01-math.md", "02-algorithm.md", "03-methods.md", "04-beyond-the-chain.md")
WORDS_PER_MINUTE = 200

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
EXERCISE = re.compile(r"^\*\*\d+\.\*\*", re.MULTILINE)
EXERCISE_ESTIMATE = re.compile(r"^\*\*\d+\.\*\* \*\((\d+) min\)\*", re.MULTILINE)
LAB = re.compile(r"^\*\*Lab\.\*\*", re.MULTILINE)
LAB_ESTIMATE = re.compile(r"^\*\*Lab\.\*\* \*\((\d+) min\)\*", re.MULTILINE)


def prose(text: str) -> str:
    """The chapter without code blocks and link targets: what a reader reads as sentences."""
    text = FENCE.sub(" ", text)
    return LINK.sub(lambda match: match.group(1) + "[" + match.group(2) + "]", text)


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
    words: int
    exercise_minutes: int
    lab_minutes: int

    @property
    def reading_minutes(self) -> int:
        return round(self.words / WORDS_PER_MINUTE)

    @property
    def total_minutes(self) -> int:
        return self.reading_minutes + self.exercise_minutes + self.lab_minutes

    def phrase(self) -> str:
        """The sentence the READMEs state, in half hours: 'about 9 hours: 120 minutes of reading, ...'."""
        halves = round(self.total_minutes / 30)
        hours = f"{halves // 2}" + (" and a half" if halves % 2 else "")
        unit = "hour" if halves <= 2 else "hours"
        return (f"about {hours} {unit}: {self.reading_minutes} minutes of reading, "
                f"{self.exercise_minutes} of exercises and {self.lab_minutes} of labs")


def chapter_time(text: str) -> CourseTime:
    """One chapter's words and the estimates its exercises and lab open with."""
    exercises = sum(int(m) for m in EXERCISE_ESTIMATE.findall(exercises_section(text)))
    return CourseTime(words=len(prose(text).split()), exercise_minutes=exercises,
                      lab_minutes=sum(int(m) for m in LAB_ESTIMATE.findall(text)))


def chapter_phrase(time: CourseTime) -> str:
    """How a chapter's first line states its time: 'About 14 minutes to read, 40 for the exercises and 30 for the lab.'"""
    lab = f" and {time.lab_minutes} for the lab" if time.lab_minutes else ""
    return f"About {time.reading_minutes} minutes to read, {time.exercise_minutes} for the exercises{lab}."


def course_time(guide: Path = GUIDE) -> CourseTime:
    """Count the chapters' words and add up the estimates their exercises and labs open with."""
    times = [chapter_time((guide / name).read_text(encoding="utf-8")) for name in CHAPTERS]
    return CourseTime(words=sum(t.words for t in times), exercise_minutes=sum(t.exercise_minutes for t in times),
                      lab_minutes=sum(t.lab_minutes for t in times))


if __name__ == "__main__":
    for name in CHAPTERS:
        print(f"{name}: {chapter_phrase(chapter_time((GUIDE / name).read_text(encoding='utf-8')))}")
    time = course_time()
    print(f"the course, {time.words} words: {time.phrase()}")
