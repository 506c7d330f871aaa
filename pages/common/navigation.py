"""The dashboard's pages, declared once: `app.py` builds Streamlit's navigation from this list, Home its links.

for page in PAGES: page.file, page.title, page.icon, page.purpose
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Page:
    file: str  # the script, from the repository root
    title: str
    icon: str
    url_path: str  # "" for Home, the default page at the root URL
    purpose: str  # one line for Home's "Where to go"


HOME = Page(
    "pages/views/home.py", "Home", ":material/home:", "", "what speculative decoding is, the models on this machine"
)
PAGES = [
    HOME,
    Page(
        "pages/views/playground.py",
        "Playground",
        ":material/play_circle:",
        "playground",
        "run a prompt, watch which tokens the draft got right, compare with the target alone",
    ),
    Page(
        "pages/views/compare.py",
        "Compare",
        ":material/bar_chart:",
        "compare",
        "benchmark pairs across gamma and prompt categories; download the CSV",
    ),
    Page(
        "pages/views/explainer.py",
        "Explainer",
        ":material/calculate:",
        "explainer",
        "edit p and q and see the accept/reject rule and the speedup formula at work",
    ),
    Page(
        "pages/views/lessons.py",
        "Lessons",
        ":material/menu_book:",
        "lessons",
        "the guide's chapters, with exercises and PDFs",
    ),
]
PLAYGROUND = PAGES[1].file
