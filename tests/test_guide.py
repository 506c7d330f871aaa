"""The lessons in guide/ are held to the code: numbers, code excerpts, figures, links and exercises.

- Every number a chapter quotes is listed in guide/lesson_numbers.py with the call that produces it;
  the chapter must contain it with today's value, and any decimal, percentage or "2.4x" in a
  chapter that no entry accounts for fails the test.
- Every ```python block is either an excerpt, announced by a line "From `specdec/....py`",
  that must appear verbatim (up to indentation) in that file, or marked ```python sketch, or an
  exercise's ```python solution, which tests/test_guide_solutions.py runs.
- Command outputs quoted in a chapter are produced again and must match line for line.
- Figures are redrawn from specdec and must equal the SVG files; links must be well formed;
  every chapter ends with two to five exercises (one more per method taught past four), each with a collapsed solution.

Each checker is a plain function returning a list of problems, and the last tests feed the
checkers a broken chapter to show they can fail.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "guide"
sys.path.insert(0, str(GUIDE))

import figures  # noqa: E402  (guide/figures.py)
import lesson_numbers as guide_numbers  # noqa: E402  (guide/lesson_numbers.py)
import reading_time  # noqa: E402  (guide/reading_time.py)

CHAPTERS = list(reading_time.CHAPTERS)
EXTRAS = ["papers.md", "glossary.md"]

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]+`")
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:\s?%|[xX](?!\w)|×)?(?!\w)")
EXCERPT_SOURCE = re.compile(r"^From `((?:specdec|tests|guide)/[\w/.-]+\.py)`")


def read(name: str) -> str:
    return (GUIDE / name).read_text(encoding="utf-8")


def squash(text: str) -> str:
    """Collapse every run of whitespace into one space, so line wrapping never matters."""
    return re.sub(r"\s+", " ", text).strip()


# the chapter without code blocks and link targets (inline code stays; its numbers are not claims)
prose = reading_time.prose


# --- numbers ---------------------------------------------------------------------------------


def number_problems(chapter: str, text: str, entries) -> list[str]:
    """Entries whose text is missing from the chapter, and numbers in the chapter no entry covers."""
    problems = []
    flat = squash(prose(text))
    covered = [False] * len(flat)
    for code in INLINE_CODE.finditer(flat):  # commands and calls: their numbers are arguments, not claims
        covered[code.start() : code.end()] = [True] * (code.end() - code.start())
    for entry in entries:
        if entry.chapter != chapter:
            continue
        expected = squash(guide_numbers.entry_text(entry))
        if expected not in flat:
            problems.append(
                f"{chapter} should contain {expected!r} ({type(entry).__name__} entry {entry.text!r}) but does not"
            )
            continue
        start = flat.find(expected)
        while start != -1:
            covered[start : start + len(expected)] = [True] * len(expected)
            start = flat.find(expected, start + 1)
        if isinstance(entry, guide_numbers.Measured) and squash(entry.command) not in squash(text):
            problems.append(f"{chapter} quotes a measurement but never shows its command {entry.command!r}")
        if isinstance(entry, guide_numbers.Reported) and entry.source not in text:
            problems.append(f"{chapter} quotes {entry.text!r} but does not link its source {entry.source}")
    for match in NUMBER.finditer(flat):
        token = match.group(0)
        if "." not in token and not token.rstrip().endswith(("%", "x", "X", "×")):
            continue  # whole numbers (gamma = 4, 64 tokens) are inputs, not results
        if not all(covered[match.start() : match.end()]):
            context = flat[max(0, match.start() - 50) : match.end() + 30]
            problems.append(f"{chapter}: the number {token!r} is not in guide/lesson_numbers.py (…{context}…)")
    return problems


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_number_is_computed_by_specdec(chapter):
    problems = number_problems(chapter, read(chapter), guide_numbers.NUMBERS)
    assert not problems, "\n".join(problems)


def test_every_number_entry_belongs_to_a_chapter():
    names = set(CHAPTERS)
    stray = [entry.text for entry in guide_numbers.NUMBERS + guide_numbers.OUTPUTS if entry.chapter not in names]
    assert not stray, f"entries for chapters that do not exist: {stray}"
    for entry in guide_numbers.NUMBERS:
        if isinstance(entry, guide_numbers.Measured):
            assert (guide_numbers.MEASUREMENTS / entry.source).is_file(), f"missing saved run {entry.source}"


def output_problems(chapter: str, text: str, outputs) -> list[str]:
    blocks = [body.rstrip("\n") for _, body in FENCE.findall(text)]
    problems = []
    for output in outputs:
        if output.chapter != chapter:
            continue
        produced = output.produce()
        if produced not in blocks:
            problems.append(f"{chapter} should contain a code block with the output of `{output.command}`:\n{produced}")
    for _info, body in FENCE.findall(text):
        first = body.splitlines()[0] if body.strip() else ""
        if first.startswith("$ specdec") and not any(
            o.chapter == chapter and first == f"$ {o.command}" for o in outputs
        ):
            problems.append(
                f"{chapter} quotes the output of `{first[2:]}`, which guide/lesson_numbers.py does not reproduce"
            )
    return problems


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_quoted_command_output_is_reproduced(chapter):
    problems = output_problems(chapter, read(chapter), guide_numbers.OUTPUTS)
    assert not problems, "\n".join(problems)


# --- code excerpts ---------------------------------------------------------------------------


def excerpts(text: str) -> list[tuple[str | None, str, str]]:
    """(source path or None, info string, body) for every fenced block, the source taken from the line before it."""
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").splitlines()
        previous = before[-1].strip() if before else ""
        source = EXCERPT_SOURCE.match(previous)
        found.append((source.group(1) if source else None, match.group(1).strip(), match.group(2)))
    return found


def appears_verbatim(excerpt: str, source: str) -> bool:
    """Whether each run of lines in `excerpt` (runs split at a line
    "...") is a run of lines of `source`, up to indentation."""
    source_lines = source.splitlines()
    position = 0
    for chunk in re.split(r"^[ \t]*(?:#[ \t]*)?\.\.\.[ \t]*$\n?", excerpt, flags=re.MULTILINE):
        lines = textwrap.dedent(chunk).strip("\n").splitlines()
        if not lines:
            continue
        wanted = textwrap.dedent("\n".join(lines))
        for start in range(position, len(source_lines) - len(lines) + 1):
            if textwrap.dedent("\n".join(source_lines[start : start + len(lines)])) == wanted:
                position = start + len(lines)
                break
        else:
            return False
    return True


def excerpt_problems(chapter: str, text: str) -> list[str]:
    problems = []
    for source, info, body in excerpts(text):
        if source is not None:
            path = ROOT / source
            if not path.is_file():
                problems.append(f"{chapter} quotes {source}, which does not exist")
            elif not appears_verbatim(body, path.read_text(encoding="utf-8")):
                problems.append(f"{chapter}: this excerpt is no longer in {source} (update the lesson):\n{body}")
        elif info.split()[:1] == ["python"] and info not in ("python sketch", "python solution"):
            problems.append(
                f"{chapter}: a python block must follow a line 'From `specdec/....py`' or be marked ```python sketch "
                f"(or ```python solution, run by tests/test_guide_solutions.py):\n{body}"
            )
    return problems


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_code_excerpts_match_the_code(chapter):
    problems = excerpt_problems(chapter, read(chapter))
    assert not problems, "\n".join(problems)


def test_the_algorithm_chapter_quotes_the_engine():
    sources = {source for source, _, _ in excerpts(read("02-algorithm.md")) if source}
    assert {
        "specdec/engine/loop.py",
        "specdec/engine/verification.py",
        "specdec/drafting/draft_model.py",
        "specdec/runtime/pytorch/kv_cache.py",
    } <= sources, sources


# --- figures, links, exercises ----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(figures.FIGURE_BUILDERS))
def test_figures_are_drawn_from_specdec(name):
    on_disk = (figures.FIGURES / name).read_text(encoding="utf-8")
    assert on_disk == figures.FIGURE_BUILDERS[name](), f"guide/figures/{name} is stale: run `python guide/figures.py`"


def test_the_causal_figure_draws_the_engines_chain_mask():
    """Chapter 0's mask picture is the mask specdec builds for a chain (a tree of width one); a wider tree's is not."""
    import torch

    from specdec.engine.trees import DraftTree, tree_attention

    rows = figures.causal_rows(2, 4)  # "The cat" + 4 guesses; "The" is in the cache, "cat" is the root
    attend, _ = tree_attention(1, DraftTree.chain(torch.arange(4)))
    assert [sees for sees, _ in rows[1:]] == attend.tolist()
    # the root's row judges guess 1, the last row is the bonus
    assert [judged for _, judged in rows] == [None, 0, 1, 2, 3, 4]
    wide, _ = tree_attention(1, DraftTree(torch.arange(4), (-1, -1, 0, 0), None))
    assert [sees for sees, _ in rows[1:]] != wide.tolist()  # negative control: the comparison can fail


def link_problems(name: str, text: str) -> list[str]:
    problems = []
    for image, label, target in LINK.findall(prose_links_only(text)):
        if not label.strip():
            problems.append(f"{name}: a link to {target} has no text")
        if target.startswith(("http://", "https://")):
            if not re.match(r"https://[\w.-]+\.[a-z]{2,}(/\S*)?$", target):
                problems.append(f"{name}: malformed or non-https link {target}")
            if "arxiv.org" in target and not re.fullmatch(r"https://arxiv\.org/abs/\d{4}\.\d{4,5}", target):
                problems.append(f"{name}: link arXiv papers as https://arxiv.org/abs/NNNN.NNNNN, not {target}")
        elif target.startswith("#"):
            continue
        elif not (GUIDE / target).exists():
            problems.append(f"{name}: {'image' if image else 'link'} target {target} does not exist")
    return problems


def prose_links_only(text: str) -> str:
    return FENCE.sub(" ", text)


@pytest.mark.parametrize("name", CHAPTERS + EXTRAS)
def test_links_are_well_formed(name):
    problems = link_problems(name, read(name))
    assert not problems, "\n".join(problems)


def test_reading_list_has_one_line_per_paper():
    items = [line for line in read("papers.md").splitlines() if line.startswith("- ")]
    assert len(items) >= 15
    for item in items:
        assert re.search(r"\]\(https://(arxiv\.org/abs/\d{4}\.\d{4,5}|[\w.-]+/\S*)\)", item), f"no link: {item}"
        assert " — " in item or ": " in item, f"no one-line description: {item}"


def test_no_pdfs_of_papers_are_shipped():
    assert not [path for path in GUIDE.rglob("*.pdf") if path.parent.name != "pdf"]


DETAILS = re.compile(r"<details><summary>Solution</summary>\n\n(.*?)\n\n</details>", re.DOTALL)


def exercise_problems(name: str, text: str) -> list[str]:
    if "\n## Exercises\n" not in text:
        return [f"{name} has no '## Exercises' section"]
    section = text.split("\n## Exercises\n", 1)[1]
    questions = re.findall(r"^\*\*(\d+)\.\*\*", section, flags=re.MULTILINE)
    solutions = DETAILS.findall(section)
    problems = []
    methods = text.count("\n### Run it yourself")  # a chapter that teaches more methods asks more: one each past four
    most = 5 + max(0, methods - 4)
    if not 2 <= len(questions) <= most:
        problems.append(f"{name} has {len(questions)} exercises; the course promises two to {most}")
    if len(solutions) != len(questions):
        problems.append(f"{name} has {len(questions)} exercises but {len(solutions)} well-formed collapsed solutions")
    if section.count("<details>") != section.count("</details>"):
        problems.append(f"{name}: unbalanced <details> tags")
    if any(not solution.strip() for solution in solutions):
        problems.append(f"{name}: an empty solution")
    return problems


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_has_exercises_with_solutions(chapter):
    problems = exercise_problems(chapter, read(chapter))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_exercise_and_lab_states_its_minutes(chapter):
    problems = reading_time.missing_estimates(chapter, read(chapter))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_opens_with_its_own_time(chapter):
    text = read(chapter)
    phrase = reading_time.chapter_phrase(reading_time.chapter_time(text))
    assert text.split("\n")[2].startswith("*" + phrase), f"{chapter}'s third line must start with '*{phrase}'"


@pytest.mark.parametrize("readme", [GUIDE / "README.md", GUIDE.parent / "README.md"])
def test_the_course_states_its_time_as_computed(readme):
    """Prose at 100 words a minute, code, tables and formulas at 5 lines a minute, plus the exercises' and labs' own
    estimates, as `python guide/reading_time.py` prints."""
    phrase = reading_time.course_time().phrase()
    stated = re.findall(
        r"about [\w ]+ hours?: \d+ minutes of reading, \d+ of exercises and \d+ of labs",
        squash(readme.read_text(encoding="utf-8")),
    )
    assert stated == [phrase], f"{readme.name} must state the course's time as '{phrase}', not {stated}"


def test_the_time_checker_catches_an_exercise_without_minutes():
    text = "# T\n\n## Exercises\n\n**1.** *(10 min)* Compute alpha.\n\n**2.** Prove it.\n\n**Lab.** Write it.\n"
    assert len(reading_time.missing_estimates("t.md", text)) == 2
    assert (
        reading_time.CourseTime(words=3_000, exercise_minutes=20, lab_minutes=0, lines=100)
        .phrase()
        .startswith("about 1 hour: 50 minutes")
    )


def test_code_and_tables_are_read_at_their_own_speed():
    """A chapter's code blocks, tables and display formulas count by the line, its prose by the word."""
    text = "One two three.\n\n```python\na = 1\nb = 2\n```\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\n$$\nE = mc^2\n$$\n"
    assert reading_time.reading_parts(text) == (3, 6)
    assert reading_time.chapter_time(text).reading_minutes == round(
        3 / reading_time.PROSE_WORDS_PER_MINUTE + 6 / reading_time.CODE_LINES_PER_MINUTE
    )


def test_the_one_hour_path_is_stated_on_the_first_page_and_in_chapter_0():
    """The guide's first page and chapter 0 list the one-hour path as
    `reading_time.path_lines()` counts it, and it is about an hour."""
    lines = reading_time.path_lines()
    total = sum(minutes for _, _, minutes in reading_time.path_minutes()) + reading_time.lab_minutes(
        reading_time.PATH_LAB[0]
    )
    assert 45 <= total <= 60, (
        f"the one-hour path takes {total} minutes with its lab: choose its sections again (reading_time.ONE_HOUR_PATH)"
    )
    for page in (GUIDE / "README.md", GUIDE / "00-intuition.md"):
        block = re.search(
            r"<!-- one-hour path: start -->\n(.*?)<!-- one-hour path: end -->",
            page.read_text(encoding="utf-8"),
            re.DOTALL,
        )
        assert block and block.group(1).splitlines() == lines, (
            f"{page.name} must state the one-hour path as computed: python guide/reading_time.py --write"
        )


def test_intuition_ends_with_try_it_and_chapters_have_titles():
    intuition = read("00-intuition.md")
    assert "## Try it" in intuition and "specdec toy" in intuition and "Playground" in intuition
    for chapter in CHAPTERS:
        assert read(chapter).startswith("# "), f"{chapter} must start with its title"


# --- the checkers can fail -------------------------------------------------------------------


def test_checkers_catch_a_wrong_number_and_a_typed_in_number():
    entry = next(
        e for e in guide_numbers.NUMBERS if isinstance(e, guide_numbers.Computed) and e.chapter == "01-math.md"
    )
    text = read("01-math.md")
    right = guide_numbers.entry_text(entry)
    wrong = re.sub(
        r"\d\.\d+", lambda m: f"{float(m.group(0)) + 0.01:.{len(m.group(0).split('.')[1])}f}", right, count=1
    )
    assert wrong != right
    broken = squash(text).replace(squash(right), squash(wrong))
    assert any("should contain" in problem for problem in number_problems("01-math.md", broken, guide_numbers.NUMBERS))
    typed = text + "\nThe speedup is 9.87x.\n"
    assert any("9.87x" in problem for problem in number_problems("01-math.md", typed, guide_numbers.NUMBERS))


def test_checkers_catch_a_stale_excerpt_and_a_missing_solution():
    text = read("02-algorithm.md")
    source, _, body = next(item for item in excerpts(text) if item[0])
    stale = text.replace(body, body.replace("(", "( ", 1), 1)
    assert any("no longer in" in problem for problem in excerpt_problems("02-algorithm.md", stale))
    unsolved = text.replace("<details><summary>Solution</summary>", "<details><summary>Answer</summary>", 1)
    assert exercise_problems("02-algorithm.md", unsolved)
    assert link_problems("x.md", "[paper](https://arxiv.org/pdf/2211.17192)")


def test_explainer_is_one_self_contained_file():
    page = read("explainer.html")
    assert "<script src" not in page and "<link" not in page and "@import" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "the explainer must not load anything"
    assert "fetch(" not in page and "XMLHttpRequest" not in page


# --- one Spec-Bench revision, read from one table --------------------------------------------------------


def spec_bench_numbers() -> set[str]:
    """Every number of the cited revision's table, as the chapters write them ('2.10x', '3.58')."""
    from specdec.bench.spec_bench import A100_VICUNA_7B, EAGLE3_VICUNA_13B

    numbers = set()
    for row in (*A100_VICUNA_7B.values(), EAGLE3_VICUNA_13B):
        numbers |= {f"{value:.2f}x" for value in (row.overall, *row.speedup.values())} | {f"{row.mean_accepted:.2f}"}
    return numbers


def spec_bench_problems(texts: dict[str, str], entries) -> list[str]:
    """Spec-Bench links to another revision, and Spec-Bench numbers that are not in the table of
    `specdec.bench.spec_bench`."""
    from specdec.bench.spec_bench import LEADERBOARD

    problems = [
        f"{name} links a Spec-Bench leaderboard other than {LEADERBOARD}: {link}"
        for name, text in texts.items()
        for link in re.findall(r"https://github\.com/hemingkx/Spec-Bench/\S*?(?=\)|\s|$)", text)
        if link != LEADERBOARD
    ]
    known = spec_bench_numbers()
    for entry in entries:
        if isinstance(entry, guide_numbers.Reported) and "Spec-Bench" in entry.source:
            if entry.source != LEADERBOARD:
                problems.append(f"{entry.text!r} cites {entry.source}, not the table's revision {LEADERBOARD}")
            stray = [number for number in NUMBER.findall(entry.text) if "." in number and number not in known]
            if stray:
                problems.append(f"{entry.text!r} quotes {stray}, which are not in specdec/bench/spec_bench.py's table")
    return problems


def test_every_spec_bench_number_comes_from_the_one_table_in_the_code():
    """Chapters 3 and 4 quote one revision (file and commit), through `lesson_numbers.spec_bench`, and the Compare page
    reads the same table (`families_table`, `LEADERBOARD`, `SETTING`)."""
    from specdec.bench.spec_bench import LEADERBOARD, REVISION

    assert guide_numbers.SPEC_BENCH == LEADERBOARD and REVISION in LEADERBOARD
    problems = spec_bench_problems({name: read(name) for name in CHAPTERS + EXTRAS}, guide_numbers.NUMBERS)
    assert not problems, "\n".join(problems)
    assert sum(isinstance(e, guide_numbers.Reported) and e.source == LEADERBOARD for e in guide_numbers.NUMBERS) >= 15
    compare = (ROOT / "pages" / "views" / "compare.py").read_text(encoding="utf-8")
    assert "from specdec.bench.spec_bench import LEADERBOARD, SETTING, families_figures, families_table" in compare


def test_the_spec_bench_check_can_fail():
    stale = guide_numbers.Reported(
        "03-methods.md", "| EAGLE | 2.29x | 3.61 |", "https://github.com/hemingkx/Spec-Bench/blob/main/Leaderboard.md"
    )
    problems = spec_bench_problems(
        {"x.md": "[board](https://github.com/hemingkx/Spec-Bench/blob/main/Leaderboard.md)"}, [stale]
    )
    assert len(problems) == 3, problems


def test_the_eagle2_porting_bug_is_computed_as_the_engine_runs_it():
    """Chapter 4's row 'the top-2 tokens tested as if drawn': the engine's tree rule, handed q's two likeliest tokens as
    children instead of draws, emits what `lesson_numbers.top_k_tested_as_drawn` computes, which is not p."""
    import numpy as np
    import torch

    from specdec.engine.tree_verification import verify_tree_sampled
    from specdec.engine.trees import DraftTree
    from specdec.reference.stats import binomial_standard_error

    p, q = np.array(guide_numbers.TREE_P), np.array(guide_numbers.TREE_Q)
    expected = guide_numbers.top_k_tested_as_drawn(p, q, 2)
    top = [int(x) for x in np.argsort(-q, kind="stable")[:2]]
    tree = DraftTree(
        torch.tensor(top), (-1, -1), torch.tensor(np.stack([q, np.zeros(3), np.zeros(3)]), dtype=torch.float32)
    )
    rows = torch.tensor(np.stack([p, p, p]), dtype=torch.float32)
    generator, trials, counts = torch.Generator().manual_seed(0), 20_000, np.zeros(3)
    for _ in range(trials):
        verdict = verify_tree_sampled(rows, tree, generator)
        counts[top[verdict.path[0]] if verdict.path else verdict.next_token] += 1
    for token in range(3):
        assert (
            abs(counts[token] / trials - expected[token]) <= 5 * binomial_standard_error(expected[token], trials) + 1e-9
        )
    assert np.abs(expected - p).max() > 0.05  # the bug is visible: the output is not p


def test_the_llama_cpp_lesson_reads_the_benchmarks_own_results():
    """Chapter 8's llama.cpp numbers come from guide/measurements/avx2/llama-cpp-exactness.jsonl, a copy of the file
    `benchmarks/llama_cpp_exactness.py` appends to: rerunning a measurement there and not here must fail."""
    copy = (GUIDE / "measurements" / "avx2" / "llama-cpp-exactness.jsonl").read_bytes()
    assert copy == (ROOT / "benchmarks" / "llama-cpp-exactness.jsonl").read_bytes(), (
        "copy benchmarks/llama-cpp-exactness.jsonl to guide/measurements/avx2/ and rerun this test"
    )
    numbers = guide_numbers.llama_cpp_numbers(copy.decode("utf-8"))
    # what the prose says in words (whole numbers, which the number check leaves alone): where each control breaks
    said = {"ubatch4": (4, 4), "ubatch": (4, 4), "unrepacked": (8, 8), "flash": (2, 2), "value": (None, None)}
    assert {key: (numbers[f"{key}_1.5b_first"], numbers[f"{key}_0.5b_first"]) for key in said} == said
    assert numbers["exact_differ"] == 0 and numbers["greedy_equal"]
    assert all(numbers[f"value_{m}_long"] > 0 and numbers[f"unrepacked_{m}_long"] == 0 for m in ("1.5b", "0.5b"))
    broken = copy.decode("utf-8").replace('"rows_differ": 0', '"rows_differ": 1', 1)  # one exact row made to differ
    assert guide_numbers.llama_cpp_numbers(broken)["exact_differ"] == 1
