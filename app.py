"""specdec's dashboard: `streamlit run app.py`. This file is the frame every page runs in.

It builds the navigation from the one list of pages (`pages.common.navigation.PAGES`; Streamlit draws the
menu), sets the page up once, draws the sidebar once (its settings reach every page through
`pages.common.sidebar.current_settings`), then runs the page chosen. Pages live in `pages/`, the code
they share in `pages/common/`.
"""

from __future__ import annotations

import streamlit as st

from pages.common.navigation import HOME, PAGES
from pages.common.sidebar import render_sidebar

st.set_page_config(page_title="specdec · speculative decoding, hands on", page_icon=":material/bolt:", layout="wide")
page = st.navigation(
    [
        st.Page(page.file, title=page.title, icon=page.icon, url_path=page.url_path or None, default=page == HOME)
        for page in PAGES
    ]
)
render_sidebar()
page.run()
