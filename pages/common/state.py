"""Widget values that survive a page switch.

Streamlit forgets a widget's value when the page that drew it is left (widget ids include the
page), even if the next page draws a widget with the same key. So every remembered widget has
two entries in `st.session_state`: the widget's own (`widget:<name>`) and a kept copy
(`kept:<name>`) that no page switch touches. Before a widget is drawn the kept copy seeds it;
when the user changes it, a callback copies the new value back.

    gamma = st.slider("gamma", 1, 16, **remember("gamma", default=4))
    keep("pair", "prompt-lookup->smollm2-135m")    # set a remembered value from code
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st


def _widget_key(name: str) -> str:
    return f"widget:{name}"


def _kept_key(name: str) -> str:
    return f"kept:{name}"


def kept(name: str, default: Any = None) -> Any:
    """The remembered value of `name`, or `default` when there is none yet."""
    return st.session_state.get(_kept_key(name), default)


def is_kept(name: str) -> bool:
    return _kept_key(name) in st.session_state


def keep(name: str, value: Any) -> None:
    """Remember `value` for `name`; the widget shows it the next time it is drawn."""
    st.session_state[_kept_key(name)] = value


def _copy_back(name: str, then: Callable[[Any], None] | None) -> None:
    keep(name, st.session_state[_widget_key(name)])
    if then is not None:
        then(kept(name))


def remember(name: str, default: Any, then: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """Keyword arguments for a widget whose value is remembered across reruns and pages.

    Pass them instead of `value=`/`index=`/`key=`: the widget starts from the kept value (or
    `default` the first time) and every change is kept; `then(new_value)` runs after a change.
    """
    if not is_kept(name):
        keep(name, default)
    st.session_state[_widget_key(name)] = kept(name)
    return {"key": _widget_key(name), "on_change": _copy_back, "args": (name, then)}
