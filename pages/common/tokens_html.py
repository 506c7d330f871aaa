"""Coloured tokens as HTML: each token a span whose colour says how it arose, with p, q, p/q and u on hover.

    st.html(tokens_html(trace(result, decode).spans))
    st.html(legend_html())

The spans come from `pages.common.trace`; this module only styles them. Styles are inline so the HTML
renders the same in `st.html`, in a saved page and in a test's proto.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from pages.common.trace import SpanKind, TokenSpan

STYLE = {
    SpanKind.ACCEPTED: "background:#c6efce;",
    SpanKind.REJECTED: "background:#ffc7ce;color:#9c0006;text-decoration:line-through;",
    SpanKind.RESAMPLED: "background:#ffeb9c;",
    SpanKind.BONUS: "background:#bdd7ee;",
    SpanKind.TARGET: "background:#e7e6e6;",
}
MEANING = {
    SpanKind.ACCEPTED: "accepted draft token",
    SpanKind.REJECTED: "rejected draft token (not in the output)",
    SpanKind.RESAMPLED: "resampled by the target after a rejection",
    SpanKind.BONUS: "bonus token after a full accept",
    SpanKind.TARGET: "drawn by the target, nothing drafted",
}
BOX = (
    "font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:0.9rem;line-height:1.9;white-space:pre-wrap;"
    "word-break:break-word;padding:0.6rem;border:1px solid #ddd;border-radius:0.4rem;"
)
TOKEN = "border-radius:3px;padding:1px 0;margin:0 1px 0 0;"


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def tooltip(span: TokenSpan) -> str:
    """The hover text of one token: its kind, p, q, p/q and u, and why it is there."""
    return (
        f"{MEANING[span.kind]} (round {span.round_index})\n"
        f"p = {_number(span.p)}   q = {_number(span.q)}   p/q = {_number(span.ratio)}   u = {_number(span.u)}\n"
        f"{span.explain()}"
    )


def _token(span: TokenSpan) -> str:
    text = span.text if span.text else "∅"
    return (
        f'<span class="specdec-token {span.kind.value}" data-kind="{span.kind.value}" '
        f'style="{TOKEN}{STYLE[span.kind]}" '
        f'title="{html.escape(tooltip(span))}">{html.escape(text)}</span>'
    )


def tokens_html(spans: Sequence[TokenSpan], box: str = "specdec-tokens") -> str:
    """All spans in one box, newlines and spaces kept; `box` names the box (the replay's are not the run's output)."""
    return f'<div class="{box}" style="{BOX}">{"".join(_token(span) for span in spans)}</div>'


def plain_text_html(text: str) -> str:
    """Text in the same box, uncoloured, for the target-alone output."""
    return f'<div class="specdec-plain" style="{BOX}">{html.escape(text)}</div>'


def legend_html(counts: dict[str, int] | None = None) -> str:
    """One chip per kind, with counts when given."""
    chips = []
    for kind in SpanKind:
        count = f" ({counts[kind.value]})" if counts is not None else ""
        chips.append(
            f'<span style="{TOKEN}{STYLE[kind]}padding:2px 6px;margin-right:0.5rem;display:inline-block;'
            f'white-space:nowrap;">{MEANING[kind]}{count}</span>'
        )
    return f'<div style="font-size:0.85rem;line-height:2;">{"".join(chips)}</div>'
