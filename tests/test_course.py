"""The course's shape, held by tests: chapters a person finishes, a one-hour path that fits the hour and never sends
its reader to a section it skipped, measured numbers that name their machine, and "not measured" that is true.

- every chapter (`guide/NN-*.md`) is listed once in `reading_time.CHAPTERS` and has at most `MAX_WORDS` words, as
  `wc -w` counts them;
- the one-hour path takes at most 60 minutes at a newcomer's pace (`reading_time.path_minutes`), ends with lab 2, and
  none of its sections refers to a section of chapters 0 to 2 it skips (a step, a bug, a section's title);
- every `Measured` entry reads a file in a machine's folder of `guide/measurements/` whose `machine.json` names the
  machine, and the chapter section that quotes it says which machine it was;
- each place a chapter says something is not measured is listed here with the check that nothing saved measures it.

Each checker returns a list of problems, and each is fed a broken input to show it can fail.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "guide"
sys.path.insert(0, str(GUIDE))

import lesson_numbers  # noqa: E402  (guide/lesson_numbers.py)
import reading_time  # noqa: E402  (guide/reading_time.py)

MAX_WORDS = 5_000
MEASUREMENTS = GUIDE / "measurements"


def read(name: str) -> str:
    return (GUIDE / name).read_text(encoding="utf-8")


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


# --- chapters a person finishes ---------------------------------------------------------------------


def test_the_chapters_are_the_numbered_files_in_order():
    assert list(reading_time.CHAPTERS) == sorted(path.name for path in GUIDE.glob("[0-9][0-9]-*.md"))
    numbers = [int(name[:2]) for name in reading_time.CHAPTERS]
    assert numbers == list(range(len(numbers)))
    for name in reading_time.CHAPTERS:
        assert read(name).startswith(f"# {int(name[:2])}. "), f"{name} must open with '# {int(name[:2])}. title'"


def word_problems(texts: dict[str, str]) -> list[str]:
    return [
        f"{name} has {len(text.split()):,} words, more than {MAX_WORDS:,}: split it"
        for name, text in texts.items()
        if len(text.split()) > MAX_WORDS
    ]


def test_no_chapter_is_over_5000_words():
    problems = word_problems({name: read(name) for name in reading_time.CHAPTERS})
    assert not problems, "\n".join(problems)
    assert word_problems({"x.md": "word " * (MAX_WORDS + 1)})  # the check can fail


# --- the one-hour path ------------------------------------------------------------------------------


def test_the_one_hour_path_fits_an_hour_with_its_lab_at_the_courses_one_pace():
    """Its sections and its lab (at most 15 minutes) add up to 45-60 minutes, counted as every chapter's header is."""
    reading = sum(minutes for _, _, minutes in reading_time.path_minutes())
    lab = reading_time.lab_minutes(reading_time.PATH_LAB[0])
    assert lab <= 15, f"the path's lab is rated {lab} minutes: end the path with a lab of at most 15"
    assert 45 <= reading + lab <= 60, f"the one-hour path takes {reading} + {lab} minutes: choose its sections again"
    lines = reading_time.path_lines()
    assert lines[-2].startswith("- then lab 1") and "guide/labs/grade.py 01-rule" in lines[-2]
    assert lines[-1].startswith(f"- together {reading + lab} minutes")
    text = (reading_time.GUIDE / "01-math.md").read_text(encoding="utf-8")  # one pace: a chapter's header counts
    # as the path
    assert reading_time.chapter_time(text).reading_minutes == round(reading_time.reading_minutes_of(text))


def pointers(heading: str) -> list[re.Pattern]:
    """How a chapter refers to a section: its title in italics or
    quotes, 'step a' for 'Step a: ...', 'bug 3' for '3. ...'."""
    found = [re.compile(r"[*\"“]" + re.escape(heading) + r"[*\"”]", re.IGNORECASE)]
    step = re.match(r"Step ([a-e]):", heading)
    if step:
        found.append(re.compile(rf"\bstep {step.group(1)}\b(?!\w)", re.IGNORECASE))
    if heading == "The classic bugs":
        found.append(re.compile(r"\bbug \d\b", re.IGNORECASE))
    if heading.startswith("Temperature"):
        found.append(re.compile(r"temperature section|\bwarping section", re.IGNORECASE))
    if heading == "KV caches: why each pass only reads the new tokens":
        found.append(re.compile(r"\*KV caches\*", re.IGNORECASE))
    return found


def sentences(text: str) -> list[str]:
    """The prose of `text` (code blocks left out) cut into sentences, each on one line."""
    flat = re.sub(r"\s+", " ", reading_time.prose(text))
    return re.split(r"(?<=[.!?:])\s+(?=[A-Z(*`$])", flat)


def later_chapter_problems(name: str, heading: str, body: str, on_path: set[int]) -> list[str]:
    """Sentences of a section on the path that send the reader to a chapter off the path, without 'after the hour'."""
    problems = []
    for sentence in sentences(body):
        for match in re.finditer(r"\bchapters? (\d)((?:(?:, | and | to )\d)*)", sentence, re.IGNORECASE):
            numbers = {int(n) for n in re.findall(r"\d", match.group(0))}
            if numbers - on_path and reading_time.AFTER_THE_HOUR not in sentence.lower():
                problems.append(
                    f"{name}, *{heading}*, on the path, sends the reader to chapter {sorted(numbers - on_path)} "
                    f"without saying it comes {reading_time.AFTER_THE_HOUR!r}: …{sentence[:160]}…"
                )
    return problems


def path_problems(texts: dict[str, str], path) -> list[str]:
    """Sections on the path that refer to a section the path skips, or to a chapter off it, without 'after the hour'."""
    problems = []
    on_path = {int(name[:2]) for name, _ in path}
    for name, headings in path:
        text = texts[name]
        all_headings = [h for h in re.findall(r"^## (.+)$", text, re.MULTILINE) if h != "Exercises"]
        skipped = [h for h in all_headings if headings is not None and h not in headings]
        for heading in headings or all_headings:
            body = reading_time.section(text, heading)
            problems += later_chapter_problems(name, heading, body, on_path)
            for other_name, other_headings in path:  # skipped sections of every path chapter
                other_text = texts[other_name]
                other_all = [h for h in re.findall(r"^## (.+)$", other_text, re.MULTILINE) if h != "Exercises"]
                other_skipped = (
                    skipped
                    if other_name == name
                    else [h for h in other_all if other_headings and h not in other_headings]
                )
                for missing in other_skipped:
                    for pattern in pointers(missing):
                        match = pattern.search(body)
                        if match is None:
                            continue
                        near = body[max(0, match.start() - 80) : match.end() + 40]
                        if reading_time.AFTER_THE_HOUR in near.lower():
                            continue
                        if other_name == name or re.search(rf"chapter {int(other_name[:2])}", near, re.IGNORECASE):
                            problems.append(
                                f"{name}, *{heading}*, on the path, points to {other_name}'s *{missing}*, which the "
                                "path skips: "
                                f"…{body[max(0, match.start() - 60) : match.end() + 20]}…"
                            )
    return problems


def test_the_one_hour_path_never_points_into_what_it_skipped():
    texts = {name: read(name) for name, _ in reading_time.ONE_HOUR_PATH}
    problems = path_problems(texts, reading_time.ONE_HOUR_PATH)
    assert not problems, "\n".join(problems)
    broken = dict(texts)
    broken["02-algorithm.md"] = broken["02-algorithm.md"].replace(
        "## The bonus token\n", "## The bonus token\n\nAs noted in step a, ...\n", 1
    )
    broken["01-math.md"] = broken["01-math.md"].replace(
        "## The setting\n", "## The setting\n\nSee *Choosing gamma*.\n", 1
    )
    assert len(path_problems(broken, reading_time.ONE_HOUR_PATH)) == 2  # the check can fail
    broken["02-algorithm.md"] = texts["02-algorithm.md"].replace(
        "## The bonus token\n", "## The bonus token\n\nChapter 4 grows trees.\n", 1
    )
    assert len(path_problems(broken, reading_time.ONE_HOUR_PATH)) == 2
    broken["02-algorithm.md"] = texts["02-algorithm.md"].replace(
        "## The bonus token\n", "## The bonus token\n\nAfter the hour, chapter 4 grows trees.\n", 1
    )
    assert len(path_problems(broken, reading_time.ONE_HOUR_PATH)) == 1


# --- every measured number names its machine ---------------------------------------------------------


def machines() -> dict[str, dict]:
    return {
        folder.name: json.loads((folder / "machine.json").read_text(encoding="utf-8"))
        for folder in MEASUREMENTS.iterdir()
        if folder.is_dir()
    }


def section_of(text: str, phrase: str) -> str:
    """The '## ' section (or the chapter's opening, before the first one) whose prose holds `phrase`."""
    parts = re.split(r"^(?=## )", text, flags=re.MULTILINE)
    for part in parts:
        if squash(phrase) in squash(reading_time.prose(part)):
            return part
    return ""


def machine_problems(texts: dict[str, str], entries) -> list[str]:
    known = machines()
    problems = []
    for entry in entries:
        if not isinstance(entry, lesson_numbers.Measured):
            continue
        folder = entry.source.split("/")[0]
        if folder not in known or "/" not in entry.source:
            problems.append(
                f"{entry.source} is not in a machine's folder of guide/measurements/ (one with a machine.json)"
            )
            continue
        section = section_of(texts[entry.chapter], lesson_numbers.entry_text(entry))
        said = known[folder]["chapters_say"]
        if said.lower() not in section.lower():
            problems.append(
                f"{entry.chapter} quotes {entry.source} ({entry.text[:60]!r}…) in a section that does not say it ran "
                "on "
                f"{known[folder]['name']} (write {said!r} there)"
            )
    return problems


def test_every_measurement_file_sits_with_its_named_machine():
    for folder, machine in machines().items():
        assert {"name", "cpu", "instruction_sets", "cores", "chapters_say", "how_we_know"} <= set(machine), folder
        files = [path for path in (MEASUREMENTS / folder).iterdir() if path.name != "machine.json"]
        assert files, folder
    loose = [path.name for path in MEASUREMENTS.iterdir() if path.is_file() and path.name != "README.md"]
    assert not loose, f"measurement files outside a machine's folder: {loose}"
    probes = {
        folder: (MEASUREMENTS / folder / "w8a8-probe.txt").read_text(encoding="utf-8").splitlines()[0]
        for folder in machines()
    }
    for folder, machine in machines().items():  # the one file that records its CPU's flags
        flags = probes[folder].split(";")[1].replace(" ", "").split(",")
        assert flags == machine["instruction_sets"], (folder, flags)


def test_every_measured_number_names_its_machine():
    texts = {name: read(name) for name in reading_time.CHAPTERS}
    problems = machine_problems(texts, lesson_numbers.NUMBERS)
    assert not problems, "\n".join(problems)
    entry = next(
        e for e in lesson_numbers.NUMBERS if isinstance(e, lesson_numbers.Measured) and e.source.startswith("avx2/")
    )
    broken = dict(texts)
    broken[entry.chapter] = (
        broken[entry.chapter].replace("the AVX2 machine", "a machine").replace("The AVX2 machine", "A machine")
    )
    assert machine_problems(broken, [entry])  # the check can fail


# --- "not measured" is true -------------------------------------------------------------------------


def rows_of(path: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")))) if path.suffix == ".csv" else []


def no_alpha_in_the_head_curve() -> bool:
    """Chapter 6: the head curve's CSV keeps no count of tested nodes, so alpha cannot be read from it."""
    header = (MEASUREMENTS / "avx2" / "eagle-curve.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    return not any(name in header for name in ("alpha_estimate", "rejections", "tested"))


NOT_MEASURED = {  # a phrase of the chapter -> the check that nothing saved measures it
    (
        "06-own-vocabulary.md",
        "the CSV keeps no count of tested nodes, so alpha cannot be read from it",
    ): no_alpha_in_the_head_curve,
}


def test_where_the_course_says_not_measured_it_is_not():
    said = {
        (name, squash(match.group(0)))
        for name in reading_time.CHAPTERS
        for match in re.finditer(r"[^.]*\bnot (?:yet )?measured\b[^.]*", read(name))
    }
    for name, sentence in said:
        assert any(name == chapter and squash(phrase) in sentence for chapter, phrase in NOT_MEASURED), (
            f"{name} says something is not measured, and no test checks it: {sentence!r}"
        )
    for (chapter, phrase), check in NOT_MEASURED.items():
        assert squash(phrase) in squash(read(chapter)), (chapter, phrase)
        assert check(), f"{chapter} says {phrase!r}, but a saved run measures it"


def test_the_not_measured_check_can_fail(tmp_path, monkeypatch):
    fake = tmp_path / "avx2"
    fake.mkdir()
    (fake / "eagle-curve.csv").write_text("minutes,alpha_estimate,tokens_per_s\n5,0.61,20.0\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "MEASUREMENTS", tmp_path)
    assert not no_alpha_in_the_head_curve()


# --- a quoted command reproduces its saved run -------------------------------------------------------


def settings_problems(command: str, saved: dict) -> list[str]:
    """Where `specdec run`'s arguments in `command` would not ask for the settings the saved JSON run records."""
    from specdec.cli.parser import build_parser

    args = build_parser().parse_args(command.split()[1:])
    recorded = saved["settings"]
    asked = {
        "gamma": args.gamma,
        "max_new_tokens": args.max_new_tokens,
        "temperature": args.temperature,
        "top_k": args.top_k,
        "top_p": args.top_p,
        "chat": args.chat,
    }
    problems = [
        f"{name}: the command asks for {asked[name]!r}, the saved run used {recorded[name]!r}"
        for name in asked
        if name in recorded and asked[name] != recorded[name]
    ]
    if args.dtype != saved["dtype"]:
        problems.append(f"dtype: the command asks for {args.dtype!r}, the saved run used {saved['dtype']!r}")
    return problems


def test_the_quoted_json_run_is_asked_for_with_the_settings_it_was_run_with():
    """Chapter 0's command (also quoted in chapters 1 and 2) names gamma 4, as the saved run records: with gamma left
    out it would ask for today's default, another run."""
    saved = json.loads((MEASUREMENTS / "avx512-bf16" / "qwen-greedy-bf16.json").read_text(encoding="utf-8"))
    assert not settings_problems(lesson_numbers.RUN_JSON, saved), settings_problems(lesson_numbers.RUN_JSON, saved)
    assert lesson_numbers.RUN_TEXT in read("00-intuition.md") and lesson_numbers.RUN_JSON in read("00-intuition.md")
    without_gamma = lesson_numbers.RUN_JSON.replace(" --gamma 4", "")
    # it can fail
    assert settings_problems(without_gamma, saved) == ["gamma: the command asks for None, the saved run used 4"]
