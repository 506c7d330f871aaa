"""The dashboard's pages (Streamlit runs each `pages/*.py` file as a page of `app.py`).

This file only makes `pages` a package so the pages can share code from `pages/common/`, which
Streamlit does not list as a page because it only looks at `pages/*.py` (and skips this file).
"""
