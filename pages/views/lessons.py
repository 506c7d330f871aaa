"""Lessons: the guide's chapters (guide/*.md) with their math, previous/next, and each chapter's PDF."""

from __future__ import annotations

import streamlit as st

from pages.common.lessons import Chapter, find_chapters, guide_folder
from pages.common.state import is_kept, keep, kept, remember


def _initial_slug(slugs: list[str]) -> str:
    """The chapter a link asks for (?chapter=...) on a session's
    first visit, else the remembered one, else the first."""
    linked = st.query_params.get("chapter")
    if linked in slugs and not is_kept("lesson"):
        keep("lesson", linked)
    if kept("lesson") not in slugs:
        keep("lesson", slugs[0])
    return kept("lesson")


def _navigation(chapters: list[Chapter], position: int, where: str) -> None:
    """Previous / next buttons."""
    left, right = st.columns(2)  # half the page each: a long chapter title is never cut off
    if position > 0:
        left.button(
            f"← {chapters[position - 1].title}",
            key=f"previous_{where}",
            width="stretch",
            on_click=keep,
            args=("lesson", chapters[position - 1].slug),
        )
    if position < len(chapters) - 1:
        right.button(
            f"{chapters[position + 1].title} →",
            key=f"next_{where}",
            width="stretch",
            on_click=keep,
            args=("lesson", chapters[position + 1].slug),
        )


chapters = find_chapters(guide_folder())
if not chapters:
    st.title("Lessons")
    st.info(f"No chapters yet: they are the Markdown files in {guide_folder()}.")
    st.stop()

st.title("Lessons")
slugs = [chapter.slug for chapter in chapters]
initial = _initial_slug(slugs)
titles = {chapter.slug: chapter.title for chapter in chapters}
slug = st.selectbox("Chapter", slugs, format_func=titles.get, **remember("lesson", initial))
position = slugs.index(slug)
chapter = chapters[position]
if st.query_params.get("chapter") != slug:
    st.query_params["chapter"] = slug

if chapter.pdf is not None:
    st.download_button(
        f"Download “{chapter.title}” as PDF",
        chapter.pdf.read_bytes(),
        file_name=chapter.pdf.name,
        mime="application/pdf",
        key="lesson_pdf",
    )
_navigation(chapters, position, "top")
st.markdown(chapter.markdown(), unsafe_allow_html=True)
st.divider()
_navigation(chapters, position, "bottom")
