"""The lesson chapters in `guide/`: which exist, their titles, and their PDFs.

    chapters = find_chapters(guide_folder())    # guide/00-*.md, guide/01-*.md, ... in order
    chapters[0].title, chapters[0].markdown(), chapters[0].pdf

The folder is `$SPECDEC_GUIDE_DIR` when set (the tests point it at fixtures), else `guide/` next
to `app.py`. A chapter's PDF is `guide/pdf/<chapter file name>.pdf` when it exists.

A chapter's images (`![caption](figures/x.svg)`, relative to the guide) are inlined as data URIs
with their caption below, because the app serves no files from `guide/`.
"""

from __future__ import annotations

import base64
import html
import mimetypes
import os
import re
from dataclasses import dataclass
from pathlib import Path

IMAGE = re.compile(r"!\[(?P<caption>[^\]]*)\]\((?P<path>[^)\s]+)\)")

APP_FOLDER = Path(__file__).resolve().parents[2]


def guide_folder() -> Path:
    """Where the chapters live."""
    return Path(os.environ.get("SPECDEC_GUIDE_DIR") or APP_FOLDER / "guide")


@dataclass(frozen=True)
class Chapter:
    path: Path
    title: str
    pdf: Path | None

    @property
    def slug(self) -> str:
        """The file name without .md, used in links: '01-acceptance'."""
        return self.path.stem

    def markdown(self) -> str:
        """The chapter's Markdown, its local images inlined."""
        return inline_images(self.path.read_text(encoding="utf-8"), self.path.parent)


def inline_images(markdown: str, folder: Path) -> str:
    """Replace `![caption](relative/path)` by an inline <img> with the caption under it; other images stay."""

    def replace(match: re.Match) -> str:
        path = folder / match["path"]
        if match["path"].startswith(("http:", "https:", "data:")) or not path.is_file():
            return match[0]
        mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        data = base64.b64encode(path.read_bytes()).decode()
        caption = html.escape(match["caption"])
        return (
            f'<figure style="margin:1rem 0;"><img src="data:{mime};base64,{data}" alt="{caption}" '
            'style="max-width:100%;"/>'
            f'<figcaption style="font-size:0.85rem;color:#666;">{caption}</figcaption></figure>'
        )

    return IMAGE.sub(replace, markdown)


def _title(path: Path) -> str:
    """The first '# ' heading, else the file name made readable."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem.replace("-", " ").replace("_", " ")


def find_chapters(folder: Path) -> list[Chapter]:
    """Every `*.md` chapter in `folder`, sorted by file name (README.md excluded)."""
    if not folder.is_dir():
        return []
    chapters = []
    for path in sorted(folder.glob("*.md")):
        if path.name.lower() == "readme.md":
            continue
        pdf = folder / "pdf" / f"{path.stem}.pdf"
        chapters.append(Chapter(path, _title(path), pdf if pdf.is_file() else None))
    return chapters
