"""Code the dashboard's pages share. A package inside `pages/`, so Streamlit does not list it as a page.

- `settings`: the sidebar's settings as a dataclass, the one `RunSpec` they build, and their round trip through the URL
- `state`: widget values that survive a page switch
- `navigation`: the pages, declared once (app.py's menu, Home's links)
- `sidebar`: the sidebar app.py draws once for every page, and the settings it shows
- `jobs`: long work in a thread of its own, drawn by the page and stopped only by its own Stop
- `models`: fetching with progress, loading a pair once (`st.cache_resource`), errors as `st.error`
- `playground`: one Playground run, streamed to the page as it generates
- `heads`: trained EAGLE-3 heads: beside the draft models in the sidebar, and training one from the Playground
- `trace`: a run laid out for reading, one span per token and one row per round (no Streamlit)
- `tokens_html`: coloured tokens with hover details
- `figures`: the Explainer's and the Playground's Plotly figures (the benchmark's are `specdec.bench.charts`)
- `lessons`: the chapters in `guide/`
"""

from pages.common.models import fetch_models, offer_downloads, pair_loader, shows_errors
from pages.common.settings import Settings
from pages.common.sidebar import current_settings, render_sidebar

__all__ = [
    "Settings",
    "current_settings",
    "fetch_models",
    "pair_loader",
    "offer_downloads",
    "render_sidebar",
    "shows_errors",
]
