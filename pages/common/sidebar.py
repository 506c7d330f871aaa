"""The sidebar every page shares: the draft/target pair, device, dtype and the decoding settings.

    render_sidebar()                 # app.py, once per run, below Streamlit's page menu
    settings = current_settings()    # any page: the `Settings` the sidebar shows; also in the URL's query string

Values are remembered across pages (`pages.common.state`) and mirrored in the URL, so a link
reproduces the configuration: a new session starts from the link's query string.
"""

from __future__ import annotations

import streamlit as st

from pages.common.heads import head_caption, head_pair_label, pair_choices
from pages.common.models import pair_availability_labels
from pages.common.settings import (
    CUSTOM,
    GAMMA_RANGE,
    HEAD,
    MAX_NEW_TOKENS_RANGE,
    SEED_RANGE,
    TEMPERATURE_RANGE,
    TOP_K_RANGE,
    TOP_P_RANGE,
    TREE_BUDGET_RANGE,
    Settings,
    head_pairs,
)
from pages.common.state import is_kept, keep, kept, remember
from specdec.engine.inputs import Decoding
from specdec.generation.methods import target_only
from specdec.kernels.devices import DTYPE_CHOICES, available_devices
from specdec.kernels.quantization import QUANTIZATION_CHOICES
from specdec.zoo.catalog import DEFAULT_PAIR, PAIRS


def _initial_settings(devices: list[str]) -> Settings:
    """The settings a session starts from: the link's query string on its first run, else the defaults."""
    if is_kept("pair"):
        return Settings()
    settings, problems = Settings.from_query(st.query_params.to_dict(), devices)
    if problems:
        st.session_state["link_problems"] = problems
    return settings


def pair_label(name: str) -> str:
    """'draft → target · cached' (and '(default)'), for the pair picker; a trained head's pair says so."""
    if name == CUSTOM:
        return "custom: your own draft and target"
    if name not in PAIRS:
        return head_pair_label(name)
    pair = PAIRS[name]
    default = " (default)" if name == DEFAULT_PAIR else ""
    return f"{pair.draft} → {pair.target}{default} · {pair_availability_labels().get(name, '?')}"


def _pair_picker(initial: Settings) -> tuple[str, str, str]:
    """The pair selectbox (plus two text fields for a custom pair); returns (pair, custom draft, custom target)."""
    options = pair_choices()
    if kept("pair", initial.pair) not in options:   # a pair from a catalogue that changed since
        keep("pair", DEFAULT_PAIR)
    pair = st.selectbox("Draft → target pair", options, format_func=pair_label, **remember("pair", initial.pair),
                        help="q drafts, p verifies. Curated pairs share a tokenizer; 'cached' ones run without a download. "
                             "A target with a trained EAGLE-3 head lists it after its draft models.")
    draft = st.text_input("Draft model q", placeholder=f"a zoo name, hub id, folder, .gguf file, {', '.join(target_only())} or {HEAD}",
                          **remember("custom_draft", initial.custom_draft)) if pair == CUSTOM else kept("custom_draft", "")
    target = st.text_input("Target model p", placeholder="a zoo name, hub id, folder or .gguf file",
                           **remember("custom_target", initial.custom_target)) if pair == CUSTOM else kept("custom_target", "")
    if pair != CUSTOM:
        st.caption((PAIRS.get(pair) or head_pairs()[pair]).description)
    head_caption(Settings(pair, draft, target))
    return pair, draft, target


SETTINGS = "sidebar_settings"   # in the session: what the sidebar showed in this run

_PRECISION_LABELS = {"auto": "auto ({auto} on a CPU)", "none": "as the dtype", "int8": "int8 (CPU)", "int4": "int4 (CPU)",
                     "w8a8": "w8a8 (CPU with AVX-512)"}


def current_settings() -> Settings:
    """The settings the sidebar drew in this run (app.py draws it before the page runs)."""
    return st.session_state[SETTINGS]


def render_sidebar() -> Settings:
    """Draw the shared sidebar's settings (Streamlit's page menu is above them) and return them (also written to the URL)."""
    devices = available_devices()
    initial = _initial_settings(devices)
    with st.sidebar:
        st.subheader("Models")
        pair, custom_draft, custom_target = _pair_picker(initial)
        device = st.selectbox("Device", ["auto", *devices], **remember("device", initial.device),
                              help="auto picks cuda, then mps, then cpu; only devices this machine has are listed")
        dtype = st.selectbox("dtype", DTYPE_CHOICES, **remember("dtype", initial.dtype),
                             help="auto: float32 on the CPU (exact greedy checks; bfloat16 for int4 weights), bfloat16 on CUDA.")
        quantization = st.selectbox(
            "target weights", QUANTIZATION_CHOICES, **remember("quantization", initial.quantization),
            format_func=lambda choice: _PRECISION_LABELS[choice].format(auto="int8"),
            help="int8 weights make each target pass several times cheaper on a CPU, and a pass over several tokens still costs "
                 "about one step. A quantized target is a different target: the output is exactly that target's.")
        draft_quantization = st.selectbox(
            "draft weights", QUANTIZATION_CHOICES, **remember("draft_quantization", initial.draft_quantization),
            format_func=lambda choice: _PRECISION_LABELS[choice].format(auto="int4"),
            help="int4 makes each draft step several times cheaper on a CPU (a smaller c). Only the draft's q changes, never the output.")
        st.subheader("Decoding")
        own_rounds = Settings(pair, custom_draft, custom_target).own_rounds
        if own_rounds:
            st.caption(f"{Settings(pair, custom_draft, custom_target).draft} sizes its own rounds: the tree and gamma settings do not apply.")
        tree = st.toggle("Token tree", disabled=own_rounds, **remember("tree", initial.tree),
                         help="Draft a tree of guesses (several where the draft hesitates) and verify it in one target pass; "
                              "the target walks down the branch it agrees with. Off: a chain of guesses.")
        tree_budget = st.slider("tree budget: drafted nodes at most", *TREE_BUDGET_RANGE, disabled=not tree or own_rounds,
                                **remember("tree_budget", initial.tree_budget),
                                help="the tree grows while another node is worth its cost, up to this many nodes")
        stop_rule = st.toggle("Stop rule: draft while worth it", disabled=tree or own_rounds, **remember("stop_rule", initial.stop_rule),
                              help="After each drafted token, draft another only if it raises the expected tokens per second "
                                   "(from the draft's confidence and the costs c and v). Off: a fixed gamma every round.")
        gamma = st.slider("gamma: drafted tokens per round", *GAMMA_RANGE, disabled=stop_rule or tree or own_rounds,
                          **remember("gamma", initial.gamma), help="used for a chain when the stop rule is off")
        temperature = st.slider("temperature (0 = greedy)", *TEMPERATURE_RANGE, step=0.05,
                                **remember("temperature", initial.decoding.temperature))
        top_k = st.number_input("top-k (0 = off)", *TOP_K_RANGE, step=1, **remember("top_k", initial.decoding.top_k))
        top_p = st.slider("top-p (1 = off)", *TOP_P_RANGE, step=0.05, **remember("top_p", initial.decoding.top_p))
        max_new_tokens = st.number_input("max new tokens", *MAX_NEW_TOKENS_RANGE, step=8,
                                         **remember("max_new_tokens", initial.decoding.max_new_tokens))
        seed = st.number_input("seed", *SEED_RANGE, step=1, **remember("seed", initial.decoding.seed))
        problems = st.session_state.pop("link_problems", None)
        if problems:
            st.warning(f"The link had values this app cannot use; defaults were taken for: {', '.join(problems)}")
    decoding = Decoding(int(max_new_tokens), float(temperature), int(top_k), float(top_p), int(seed))
    settings = Settings(pair, custom_draft, custom_target, device, dtype, quantization, draft_quantization, bool(stop_rule), int(gamma),
                        bool(tree), int(tree_budget), decoding)
    _write_query(settings)
    st.session_state[SETTINGS] = settings
    return settings


def _write_query(settings: Settings) -> None:
    """Mirror `settings` in the URL, touching only the keys that changed (other pages may add their own)."""
    wanted = settings.to_query()
    for key in ("custom_draft", "custom_target"):
        if key not in wanted and key in st.query_params:
            del st.query_params[key]
    for key, value in wanted.items():
        if st.query_params.get(key) != value:
            st.query_params[key] = value
