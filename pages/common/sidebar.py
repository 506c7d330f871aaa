"""The sidebar every page shares: the draft/target pair and how its models run, how it drafts, how it decodes.

    render_sidebar()                 # app.py, once per run, below Streamlit's page menu
    settings = current_settings()    # any page: the `Settings` the sidebar shows; also in the URL's query string

Values are remembered across pages (`pages.common.state`) and mirrored in the URL, so a link
reproduces the configuration: a new session starts from the link's query string. The pairs, the methods
and each method's options are the registry's (`specdec.registry`): a method registered there is offered
here, its options drawn from the fields of its options dataclass, with no change to this file.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from pages.common.heads import head_caption, head_draft, head_pair_label
from pages.common.models import pair_availability_labels, planned_weights
from pages.common.settings import (
    AUTO,
    CUSTOM,
    FASTEST,
    MAX_NEW_TOKENS_RANGE,
    OLDER_KEYS,
    OPTION,
    SEED_RANGE,
    TEMPERATURE_RANGE,
    TOP_K_RANGE,
    TOP_P_RANGE,
    Settings,
    drafts_with,
    implied_method,
    method_choices,
    pair_choices,
)
from pages.common.state import is_kept, keep, kept, remember
from specdec.engine.inputs import Decoding
from specdec.kernels.devices import DTYPE_CHOICES, available_devices
from specdec.kernels.quantization import QUANTIZATION_CHOICES
from specdec.registry import HEAD, METHODS, Method, option_value, pairs, target_only
from specdec.run_spec import GAMMA_RANGE
from specdec.runtimes import choices as runtime_choices
from specdec.zoo.catalog import DEFAULT_PAIR


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
    pair = pairs()[name]
    if drafts_with(pair.draft, HEAD):
        return head_pair_label(name)
    default = " (default)" if name == DEFAULT_PAIR else ""
    return f"{pair.draft} → {pair.target}{default} · {pair_availability_labels().get(name, '?')}"


def _pair_picker(initial: Settings) -> tuple[str, str, str]:
    """The pair selectbox (plus two text fields for a custom pair); returns (pair, custom draft, custom target)."""
    options = pair_choices()
    if kept("pair", initial.pair) not in options:  # a pair from a catalogue that changed since
        keep("pair", DEFAULT_PAIR)
    pair = st.selectbox(
        "Draft → target pair",
        options,
        format_func=pair_label,
        **remember("pair", initial.pair),
        help="q drafts, p verifies. Model pairs share a tokenizer or re-encode the text; a method that needs "
        "only the target drafts for it alone; 'cached' ones run without a download. A target with a "
        "trained EAGLE-3 head lists it after its other drafts.",
    )
    draft = (
        st.text_input(
            "Draft model q",
            placeholder=f"a zoo name, hub id, folder, .gguf file, {', '.join(target_only())} or {head_draft()}",
            **remember("custom_draft", initial.custom_draft),
        )
        if pair == CUSTOM
        else kept("custom_draft", "")
    )
    target = (
        st.text_input(
            "Target model p",
            placeholder="a zoo name, hub id, folder or .gguf file",
            **remember("custom_target", initial.custom_target),
        )
        if pair == CUSTOM
        else kept("custom_target", "")
    )
    if pair != CUSTOM:
        st.caption(pairs()[pair].description)
    head_caption(Settings(pair, draft, target))
    return pair, draft, target


def _method_label(name: str) -> str:
    return {AUTO: "default: the draft model at work", FASTEST: "auto: the fastest exact plan here"}.get(name, name)


def _method_picker(initial: Settings, draft: str) -> tuple[str, Method | None]:
    """The drafting method: fixed where the draft stands for one (a method needing only the target, a trained head),
    else AUTO or a method drafting with the draft model (`specdec.registry.draft_methods`); returns (the choice, the
    registry's method)."""
    implied = implied_method(draft)
    if implied is not None:
        st.selectbox(
            "Drafting method",
            [implied.name],
            disabled=True,
            help=f"{draft} is a drafting method itself: the pair's draft decides it. Pick a pair with a draft model to "
            "choose.",
        )
        choice, method = AUTO, implied
    else:
        choices = method_choices(draft)
        if kept("method", initial.method) not in choices:  # a method unregistered since
            keep("method", AUTO)
        choice = st.selectbox(
            "Drafting method",
            choices,
            format_func=_method_label,
            **remember("method", initial.method),
            help="how the draft model drafts; the default drafts a chain or tree with it even where that "
            "does not pay here, and the run says how fast it is predicted and which plan is fastest",
        )
        method = None if choice in (AUTO, FASTEST) else METHODS[choice]
    st.caption(
        method.summary
        if method is not None
        else "The planner's fastest exact plan here, which may draft without the draft model or not at all (as "
        "`specdec run "
        "--method auto`); the run says what it chose."
        if choice == FASTEST
        else "The default policy chooses for the pair as loaded; the run says what it drafted."
    )
    return choice, method


def _option_widgets(method: Method, initial: Settings) -> tuple[tuple[str, str], ...]:
    """One widget per field of the method's options dataclass (int, float, bool, else text), its help from the field's
    metadata (else the dataclass's docstring); returns the values as text, by name (`Method.parse_options` reads
    them)."""
    given = dict(initial.options) if initial.chosen_method is method else {}
    defaults, about = (
        dataclasses.asdict(method.options()),
        (method.options.__doc__ or "").strip().split("\n")[0] or None,
    )
    chosen = []
    for item in dataclasses.fields(method.options):
        start = option_value(item, given[item.name], method.name) if item.name in given else defaults[item.name]
        label, kind, help_text = item.name.replace("_", " "), str(item.type), item.metadata.get("help", about)
        kept_as = remember(f"opt:{method.name}:{item.name}", start)
        if kind == "bool":
            value = st.checkbox(label, help=help_text, **kept_as)
        elif kind == "int":
            value = int(st.number_input(label, step=1, help=help_text, **kept_as))
        elif kind == "float":
            value = float(st.number_input(label, step=0.05, format="%.2f", help=help_text, **kept_as))
        else:
            value = st.text_input(label, help=help_text, **kept_as)
        chosen.append((item.name, str(value)))
    return tuple(chosen)


def _drafting(initial: Settings, draft: str) -> tuple[str, tuple[tuple[str, str], ...], bool, int]:
    """The method, its options, whether the planner sizes the
    rounds, and gamma; returns them as `Settings` holds them."""
    method_name, method = _method_picker(initial, draft)
    options = _option_widgets(method, initial) if method is not None else ()
    own_rounds = method is not None and method.capabilities.sizes_rounds
    if own_rounds:
        st.caption(f"{method.name} sizes its own rounds: gamma does not apply.")
    stop_rule = st.toggle(
        "Round length: the planner's choice",
        disabled=own_rounds,
        **remember("stop_rule", initial.stop_rule),
        help="On: the planner sizes each round from this machine's costs c and v(k) (a token tree, a chain "
        "drafted while another token is worth it, or plain steps); the run's plan says which. Off: a "
        "fixed gamma every round.",
    )
    gamma = st.slider(
        "gamma: drafted tokens per round",
        *GAMMA_RANGE,
        disabled=stop_rule or own_rounds,
        **remember("gamma", initial.gamma),
        help="a chain of this many drafted tokens per round, when the planner's choice is off",
    )
    return method_name, options, bool(stop_rule), int(gamma)


SETTINGS = "sidebar_settings"  # in the session: what the sidebar showed in this run

_PRECISION_LABELS = {
    "auto": "auto ({auto})",
    "none": "as the dtype",
    "int8": "int8 (CPU)",
    "int4": "int4 (CPU)",
    "w8a8": "w8a8 (CPU with AVX-512)",
}


def current_settings() -> Settings:
    """The settings the sidebar drew in this run (app.py draws it before the page runs)."""
    return st.session_state[SETTINGS]


def render_sidebar() -> Settings:
    """Draw the shared sidebar's settings (Streamlit's page menu
    is above them) and return them (also written to the URL)."""
    devices = available_devices()
    initial = _initial_settings(devices)
    with st.sidebar:
        st.subheader("Models")
        pair, custom_draft, custom_target = _pair_picker(initial)
        device = st.selectbox(
            "Device",
            ["auto", *devices],
            **remember("device", initial.device),
            help="auto picks cuda, then mps, then cpu; only devices this machine has are listed",
        )
        dtype = st.selectbox(
            "dtype",
            DTYPE_CHOICES,
            **remember("dtype", initial.dtype),
            help="auto: float32 on the CPU (exact greedy checks; bfloat16 for int4 weights), bfloat16 on CUDA.",
        )
        planned = planned_weights(initial)  # what auto means here, as the plan will run it
        quantization = st.selectbox(
            "target weights",
            QUANTIZATION_CHOICES,
            **remember("quantization", initial.quantization),
            format_func=lambda choice: _PRECISION_LABELS[choice].format(auto=planned[0]),
            help="int8 weights make each target pass several times cheaper on a CPU, and a pass over several tokens "
            "still costs "
            "about one step. A quantized target is a different target: the output is exactly that target's.",
        )
        draft_quantization = st.selectbox(
            "draft weights",
            QUANTIZATION_CHOICES,
            **remember("draft_quantization", initial.draft_quantization),
            format_func=lambda choice: _PRECISION_LABELS[choice].format(auto=planned[1]),
            help="int4 makes each draft step several times cheaper on a CPU (a smaller c). Only the draft's q changes, "
            "never the output.",
        )
        runtime = st.selectbox(
            "Runtime",
            runtime_choices(),
            **remember("runtime", initial.runtime),
            help="what runs the models: torch (transformers), or llama.cpp for GGUF models on a CPU; auto "
            "takes llama.cpp where it passes its self-test, else torch",
        )
        st.subheader("Drafting")
        method, options, stop_rule, gamma = _drafting(initial, Settings(pair, custom_draft, custom_target).draft)
        st.subheader("Decoding")
        temperature = st.slider(
            "temperature (0 = greedy)",
            *TEMPERATURE_RANGE,
            step=0.05,
            **remember("temperature", initial.decoding.temperature),
        )
        top_k = st.number_input("top-k (0 = off)", *TOP_K_RANGE, step=1, **remember("top_k", initial.decoding.top_k))
        top_p = st.slider("top-p (1 = off)", *TOP_P_RANGE, step=0.05, **remember("top_p", initial.decoding.top_p))
        max_new_tokens = st.number_input(
            "max new tokens",
            *MAX_NEW_TOKENS_RANGE,
            step=8,
            **remember("max_new_tokens", initial.decoding.max_new_tokens),
        )
        seed = st.number_input("seed", *SEED_RANGE, step=1, **remember("seed", initial.decoding.seed))
        problems = st.session_state.pop("link_problems", None)
        if problems:
            st.warning(f"The link had values this app cannot use; defaults were taken for: {', '.join(problems)}")
    decoding = Decoding(int(max_new_tokens), float(temperature), int(top_k), float(top_p), int(seed))
    settings = Settings(
        pair,
        custom_draft,
        custom_target,
        device,
        dtype,
        quantization,
        draft_quantization,
        runtime,
        method,
        options,
        stop_rule,
        gamma,
        decoding,
    )
    _write_query(settings)
    st.session_state[SETTINGS] = settings
    return settings


def _write_query(settings: Settings) -> None:
    """Mirror `settings` in the URL, touching only the keys that changed (other pages may add their own); keys of the
    settings that no longer apply (a custom pair's names, another method's options, an older link's tree keys) go."""
    wanted = settings.to_query()
    for key in list(st.query_params):
        if key not in wanted and (key in ("custom_draft", "custom_target", *OLDER_KEYS) or key.startswith(OPTION)):
            del st.query_params[key]
    for key, value in wanted.items():
        if st.query_params.get(key) != value:
            st.query_params[key] = value
