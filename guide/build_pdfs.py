"""Build print-ready PDFs of the chapters from their markdown, through Typst.

    python guide/build_pdfs.py                  # writes guide/pdf/00-intuition.pdf ... 09-batches.pdf
    python guide/build_pdfs.py --out /tmp/pdf --png /tmp/png   # elsewhere, plus every page as PNG
    python guide/build_pdfs.py --typst /tmp/typ                # also keep the generated .typ sources

The chapters are written once, in markdown (the dashboard renders them as they are). This file
turns each one into Typst source and compiles it with the `typst` package from the package index
(no other install, no network, no Typst packages). It understands exactly the markdown subset the
chapters use, and refuses anything else with an error that names the line:

    # / ## / ### headings, paragraphs, - and 1. lists, **bold**, *italic*, `code`, [links](url),
    ![figures](figures/x.svg), ``` fenced code ```, | tables |, $inline$ and $$display$$ LaTeX math,
    and <details><summary>Solution</summary> ... </details> blocks, printed as solutions.

LaTeX math is translated to Typst math by `latex_math.latex_to_typst`, which knows the commands
the chapters use; an unknown command is an error, not a silent mistake. Only the
fonts embedded in the typst package are used, so the PDFs are the same on every machine.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import typst

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: guide/ holds latex_math.py
from latex_math import ConversionError, latex_to_typst  # noqa: E402

GUIDE = Path(__file__).resolve().parent
ROOT = GUIDE.parent
from reading_time import CHAPTERS  # noqa: E402  (the chapters, in order: one list for the course)

COURSE = "specdec: speculative decoding, from zero"


# --- markdown -> Typst markup ----------------------------------------------------------------

INLINE = re.compile(
    r"(?P<code>`[^`\n]+`)"
    r"|(?P<math>\$[^$\n]+\$)"
    r"|(?P<link>\[(?P<label>[^\]]+)\]\((?P<url>[^)\s]+)\))"
    r"|(?P<bold>\*\*(?P<bold_text>.+?)\*\*)"
    r"|(?P<italic>\*(?P<italic_text>[^*\s][^*]*?)\*)"
)
TYPST_SPECIAL = re.compile(r"([\\#$*_`@<>\[\]~=+/-])")


def escape_text(text: str) -> str:
    """Plain text safe for Typst markup: every character Typst gives a meaning to is escaped."""
    return TYPST_SPECIAL.sub(r"\\\1", text)


def typst_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def inline(text: str, operators: set[str]) -> str:
    """Convert one paragraph's inline markdown to Typst markup."""
    out, position = [], 0
    for match in INLINE.finditer(text):
        out.append(_after_construct(escape_text(text[position : match.start()]), out))
        position = match.end()
        if match.group("code"):
            out.append(f"#raw({typst_string(match.group('code')[1:-1])})")
        elif match.group("math"):
            out.append("$" + latex_to_typst(match.group("math")[1:-1], operators) + "$")
        elif match.group("link"):
            url, label = match.group("url"), inline(match.group("label"), operators)
            if url.startswith(("http://", "https://")):
                out.append(f"#link({typst_string(url)})[{label}]#footnote[#link({typst_string(url)})]")
            else:
                out.append(label)
        elif match.group("bold"):
            out.append(f"#strong[{inline(match.group('bold_text'), operators)}]")
        else:
            out.append(f"#emph[{inline(match.group('italic_text'), operators)}]")
    out.append(_after_construct(escape_text(text[position:]), out))
    return "".join(out)


def _after_construct(text: str, out: list[str]) -> str:
    """Escape a ; . or ( right after a #function[...] call, which Typst would read as part of the call."""
    if out and out[-1].startswith("#") and text[:1] in (";", ".", "("):
        return "\\" + text
    return text


FENCE = re.compile(r"^```(.*)$")
HEADING = re.compile(r"^(#{1,3}) (.+)$")
BULLET = re.compile(r"^(\s*)- (.*)$")
NUMBERED = re.compile(r"^(\s*)\d+\. (.*)$")
IMAGE = re.compile(r"^!\[([^\]]*)\]\((figures/[\w.-]+\.(?:svg|png))\)$")
DETAILS_OPEN = "<details><summary>Solution</summary>"


def blocks_to_typst(lines: list[str], operators: set[str], source: str, offset: int = 0) -> tuple[str, str | None]:
    """Convert a list of markdown lines; returns (Typst markup, the first level-1 heading or None)."""
    out: list[str] = []
    title = None
    index = 0

    def where(i: int) -> str:
        return f"{source}:{offset + i + 1}"

    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if not stripped:
            index += 1
            continue
        if fence := FENCE.match(stripped):
            language = fence.group(1).strip().split()[0] if fence.group(1).strip() else ""
            end = next((j for j in range(index + 1, len(lines)) if lines[j].strip() == "```"), None)
            if end is None:
                raise ConversionError(f"{where(index)}: unclosed code block")
            body = "\n".join(lines[index + 1 : end])
            language = "" if language == "text" else language
            language_argument = f", lang: {typst_string(language)}" if language else ""
            out.append(f"#raw(block: true{language_argument}, {typst_string(body)})")
            index = end + 1
            continue
        if heading := HEADING.match(stripped):
            level, text = len(heading.group(1)), heading.group(2)
            if level == 1:
                title = text
                out.append(f"#chapter-title[{inline(text, operators)}]")
            else:
                out.append("=" * (level - 1) + " " + inline(text, operators))
            index += 1
            continue
        if stripped == DETAILS_OPEN:
            end = next((j for j in range(index + 1, len(lines)) if lines[j].strip() == "</details>"), None)
            if end is None:
                raise ConversionError(f"{where(index)}: <details> without </details>")
            body, _ = blocks_to_typst(lines[index + 1 : end], operators, source, offset + index + 1)
            out.append(f"#solution[\n{body}\n]")
            index = end + 1
            continue
        if stripped.startswith("<!--") and stripped.endswith("-->"):  # a comment for the editors, not the reader
            index += 1
            continue
        if stripped.startswith("<"):
            raise ConversionError(
                f"{where(index)}: HTML other than a Solution <details> block is not supported: {stripped}"
            )
        if image := IMAGE.match(stripped):
            caption, path = image.group(1), image.group(2)
            out.append(
                f"#figure(image({typst_string('/guide/' + path)}, width: 100%), caption: "
                f"[{inline(caption, operators)}])"
            )
            index += 1
            continue
        if stripped.startswith("|"):
            end = index
            while end < len(lines) and lines[end].strip().startswith("|"):
                end += 1
            out.append(table_to_typst(lines[index:end], operators, where(index)))
            index = end
            continue
        if stripped.startswith("$$"):
            end = index
            text = stripped
            while not (text.endswith("$$") and len(text) > 2):
                end += 1
                if end >= len(lines):
                    raise ConversionError(f"{where(index)}: unclosed $$")
                text += " " + lines[end].strip()
            out.append("$ " + latex_to_typst(text[2:-2], operators) + " $")
            index = end + 1
            continue
        if BULLET.match(line) or NUMBERED.match(line):
            end = index
            items: list[tuple[str, str]] = []
            while end < len(lines) and lines[end].strip():
                if bullet := BULLET.match(lines[end]):
                    items.append(("-", bullet.group(2)))
                elif numbered := NUMBERED.match(lines[end]):
                    items.append(("+", numbered.group(2)))
                elif lines[end].startswith("  ") and items:
                    items[-1] = (items[-1][0], items[-1][1] + " " + lines[end].strip())
                else:
                    break
                end += 1
            out.append("\n".join(f"{marker} {inline(text, operators)}" for marker, text in items))
            index = end
            continue
        end = index
        paragraph = []
        while end < len(lines) and lines[end].strip() and not _starts_block(lines[end]):
            paragraph.append(lines[end].strip())
            end += 1
        if not paragraph:
            raise ConversionError(f"{where(index)}: cannot convert: {stripped}")
        markup = inline(" ".join(paragraph), operators)
        following = next((lines[j].strip() for j in range(end, len(lines)) if lines[j].strip()), "")
        if paragraph[-1].endswith(":") and following.startswith(("```", "$$", "|")):
            markup = f"#block(sticky: true)[{markup}]"  # keep "From `file`:" on the page of its code
        out.append(markup)
        index = end
    return "\n\n".join(out), title


def _starts_block(line: str) -> bool:
    stripped = line.strip()
    return bool(
        FENCE.match(stripped)
        or HEADING.match(stripped)
        or stripped.startswith(("|", "$$", "<", "!["))
        or BULLET.match(line)
        or NUMBERED.match(line)
    )


def table_to_typst(rows: list[str], operators: set[str], where: str) -> str:
    cells = [[cell.strip() for cell in row.strip().strip("|").split("|")] for row in rows]
    if len(cells) < 2 or not all(re.fullmatch(r":?-+:?", cell) for cell in cells[1]):
        raise ConversionError(f"{where}: a table needs a header row and a --- separator row")
    header, body = cells[0], cells[2:]
    width = len(header)
    if any(len(row) != width for row in body):
        raise ConversionError(f"{where}: every table row needs {width} cells")
    parts = [f"[{inline(cell, operators)}]" for cell in header]
    header_markup = "table.header(" + ", ".join(parts) + ")"
    body_markup = ", ".join(f"[{inline(cell, operators)}]" for row in body for cell in row)
    return f"#table(columns: {width}, {header_markup}, {body_markup})"


PREAMBLE = r"""
#set document(title: chapter, author: "specdec", date: none)
#set page(paper: "a4", margin: (x: 1.8cm, top: 2.0cm, bottom: 2.0cm), numbering: "1",
  header: context { if counter(page).get().first() > 1 { set text(8pt, fill: luma(120)); [#course #h(1fr) #chapter] } })
#set text(font: "Libertinus Serif", size: 10.5pt, lang: "en")
#set par(justify: false, leading: 0.6em, spacing: 1.0em)
#show math.equation: set text(font: "New Computer Modern Math")
#show raw: set text(font: "DejaVu Sans Mono", size: 7.4pt)
#show raw.where(block: false): box.with(fill: luma(243), inset: (x: 2pt), outset: (y: 2.5pt), radius: 2pt)
#show raw.where(block: true): block.with(
  fill: luma(246), inset: 8pt, radius: 3pt, width: 100%, stroke: 0.5pt + luma(215))
#show heading.where(level: 1): set text(size: 13.5pt)
#show heading.where(level: 1): set block(above: 1.5em, below: 0.8em)
#show heading.where(level: 2): set text(size: 11.5pt)
#show link: set text(fill: rgb("#1d4ed8"))
#show figure.caption: set text(size: 9pt)
#set footnote.entry(separator: line(length: 30%, stroke: 0.5pt))
#show footnote.entry: set text(size: 7.5pt)
#set table(stroke: 0.5pt + luma(185), inset: (x: 5pt, y: 4pt))
#show table.cell.where(y: 0): set text(weight: "bold")
#let chapter-title(body) = block(below: 1.2em, {
  text(9pt, fill: luma(110), upper(course))
  v(0.2em)
  text(21pt, weight: "bold", body)
})
#let solution(body) = block(width: 100%, inset: (left: 10pt, top: 6pt, bottom: 6pt), breakable: true,
  stroke: (left: 2pt + rgb("#16a34a")), [#text(fill: rgb("#15803d"), weight: "bold")[Solution.] #body])
"""


def chapter_to_typst(markdown: str, source: str) -> str:
    """The complete Typst source for one chapter."""
    operators: set[str] = set()
    body, title = blocks_to_typst(markdown.splitlines(), operators, source)
    if title is None:
        raise ConversionError(f"{source}: the chapter has no '# ' title")
    names = f"#let course = {typst_string(COURSE)}\n#let chapter = {typst_string(title)}\n"
    definitions = "".join(f'#let op{name} = math.op("{name}")\n' for name in sorted(operators))
    return names + PREAMBLE + definitions + "\n" + body + "\n"


def compile_chapter(
    markdown_path: Path, pdf_path: Path, png_directory: Path | None = None, typst_directory: Path | None = None
) -> Path:
    """Convert and compile one chapter; optionally also write its pages as PNG and keep the .typ."""
    source = chapter_to_typst(markdown_path.read_text(encoding="utf-8"), markdown_path.name)
    if typst_directory is not None:
        typst_directory.mkdir(parents=True, exist_ok=True)
        (typst_directory / markdown_path.with_suffix(".typ").name).write_text(source, encoding="utf-8")
    compiler = typst.Compiler(root=str(ROOT), ignore_system_fonts=True)
    pdf_path.parent.mkdir(parents=True, exist_ok=True)
    pdf_path.write_bytes(compiler.compile(input=source.encode("utf-8"), format="pdf"))
    if png_directory is not None:
        png_directory.mkdir(parents=True, exist_ok=True)
        pages = compiler.compile(input=source.encode("utf-8"), format="png", ppi=110)
        for number, page in enumerate(pages if isinstance(pages, list) else [pages], start=1):
            (png_directory / f"{markdown_path.stem}-page{number:02d}.png").write_bytes(page)
    return pdf_path


def build(
    out: Path = GUIDE / "pdf",
    png: Path | None = None,
    typst_sources: Path | None = None,
    chapters: tuple[str, ...] = CHAPTERS,
) -> list[Path]:
    """Build every chapter's PDF into `out`; returns the paths written."""
    return [
        compile_chapter(GUIDE / name, out / Path(name).with_suffix(".pdf").name, png, typst_sources)
        for name in chapters
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the course PDFs (guide/pdf/*.pdf) from the chapters' markdown.")
    parser.add_argument("--out", type=Path, default=GUIDE / "pdf", help="where the PDFs go (default guide/pdf)")
    parser.add_argument("--png", type=Path, default=None, help="also render every page as PNG into this folder")
    parser.add_argument("--typst", type=Path, default=None, help="also keep the generated .typ sources in this folder")
    args = parser.parse_args(argv)
    try:
        for path in build(args.out, args.png, args.typst):
            print(path)
    except (ConversionError, typst.TypstError) as error:
        print(f"build_pdfs: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
