"""The lessons' figures, drawn as SVG from specdec's own functions.

    python guide/figures.py            # rewrite guide/figures/*.svg

Every bar height and curve point comes from `specdec.reference.theory`, so a figure cannot disagree with
the text; `tests/test_guide.py` redraws each figure and fails when the file on disk differs.

The chapters refer to figures with ordinary markdown, `![caption](figures/overlap.svg)`. The
dashboard's Lessons page inlines them as data: URLs (pages/common/lessons.py); the PDF build
(guide/build_pdfs.py) hands the SVG files to Typst directly.

Plain string building, no plotting library: the figures are small and must look the same everywhere.
"""

from __future__ import annotations

import html
import sys
from pathlib import Path

GUIDE = Path(__file__).resolve().parent
sys.path.insert(0, str(GUIDE.parent))  # run as a script from anywhere: make `specdec` importable

from specdec.reference.theory import acceptance_rate, best_gamma, residual_distribution, walltime_speedup  # noqa: E402

FIGURES = GUIDE / "figures"
TOY_P = (0.30, 0.40, 0.30)  # the course's running example (also `specdec toy`'s default)
TOY_Q = (0.60, 0.20, 0.20)
LABELS = ("A", "B", "C")
COLORS = {
    "p": "#2563eb",
    "q": "#ea580c",
    "overlap": "#16a34a",
    "residual": "#7c3aed",
    "ink": "#1f2937",
    "grid": "#e5e7eb",
    "muted": "#6b7280",
    "reject": "#b91c1c",
    "bonus": "#ca8a04",
}
FONT = 'font-family="DejaVu Sans, Helvetica, Arial, Libertinus Serif, sans-serif"'


def _svg(width: int, height: int, body: list[str]) -> str:
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'{FONT} font-size="13">',
            f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
            *body,
            "</svg>",
            "",
        ]
    )


def _text(
    x: float,
    y: float,
    text: str,
    anchor: str = "middle",
    size: int | None = None,
    weight: str | None = None,
    color: str | None = None,
) -> str:
    extra = (
        (f' font-size="{size}"' if size else "")
        + (f' font-weight="{weight}"' if weight else "")
        + (f' fill="{color}"' if color else f' fill="{COLORS["ink"]}"')
    )
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>{html.escape(text)}</text>'


def _rect(x: float, y: float, width: float, height: float, fill: str, stroke: str | None = None) -> str:
    outline = f' stroke="{stroke}" stroke-width="1.2"' if stroke else ""
    return f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{max(height, 0):.1f}" fill="{fill}"{outline}/>'


def _axis(
    left: float, top: float, height: float, right: float, ticks: list[float], scale: float, suffix: str = ""
) -> list[str]:
    parts = []
    for tick in ticks:
        y = top + height * (1 - tick / scale)
        parts.append(f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="{COLORS["grid"]}"/>')
        parts.append(_text(left - 6, y + 4, f"{tick:g}{suffix}", anchor="end", size=11))
    return parts


def overlap_figure(p=TOY_P, q=TOY_Q) -> str:
    """Left: p and q side by side. Right: the output assembled as min(p, q) + (1 - alpha) * residual = p."""
    alpha = acceptance_rate(p, q)
    residual = residual_distribution(p, q)
    width, height, top, plot = 760, 320, 40, 200
    body = [
        _text(190, 22, "the target p and the draft q", size=14, weight="bold"),
        _text(575, 22, "what comes out: accepted + resampled = p", size=14, weight="bold"),
    ]
    for left, right in ((50, 350), (440, 740)):
        body += _axis(left, top, plot, right, [0, 0.2, 0.4, 0.6], 0.7)
    slot = 300 / len(p)
    for i, label in enumerate(LABELS[: len(p)]):
        center = 50 + slot * (i + 0.5)
        for value, offset, color in ((p[i], -24, COLORS["p"]), (q[i], 24, COLORS["q"])):
            bar_height = plot * value / 0.7
            body.append(_rect(center + offset - 20, top + plot - bar_height, 40, bar_height, color))
            body.append(_text(center + offset, top + plot - bar_height - 5, f"{value:.2f}", size=11))
        body.append(_text(center, top + plot + 18, label, weight="bold"))
        center = 440 + slot * (i + 0.5)
        accepted = min(p[i], q[i])
        resampled = (1 - alpha) * residual[i]
        accepted_height, resampled_height = plot * accepted / 0.7, plot * resampled / 0.7
        body.append(_rect(center - 24, top + plot - accepted_height, 48, accepted_height, COLORS["overlap"]))
        body.append(
            _rect(
                center - 24, top + plot - accepted_height - resampled_height, 48, resampled_height, COLORS["residual"]
            )
        )
        p_y = top + plot - plot * p[i] / 0.7
        body.append(
            f'<line x1="{center - 32:.1f}" x2="{center + 32:.1f}" y1="{p_y:.1f}" y2="{p_y:.1f}" '
            f'stroke="{COLORS["ink"]}" stroke-width="2.5"/>'
        )
        body.append(_text(center, p_y - 6, f"{p[i]:.2f}", size=11))
        body.append(_text(center, top + plot + 18, label, weight="bold"))
    legend_y = height - 34
    legend = [
        (50, COLORS["p"], "p (target)"),
        (150, COLORS["q"], "q (draft)"),
        (440, COLORS["overlap"], "min(p, q): accepted"),
        (595, COLORS["residual"], "(1 − α) × residual"),
    ]
    for x, color, text in legend:
        body.append(_rect(x, legend_y - 10, 12, 12, color))
        body.append(_text(x + 17, legend_y, text, anchor="start", size=12))
    body.append(_text(575, legend_y + 22, f"α = {alpha:.2f}; the black tick is p", size=12, color=COLORS["muted"]))
    return _svg(width, height, body)


def speedup_figure(alphas=(0.6, 0.7, 0.8, 0.9), c: float = 0.1, max_gamma: int = 12) -> str:
    """Speedup against gamma for a few alphas at one cost ratio c, with each curve's best gamma circled."""
    width, height, left, top, plot_width, plot_height = 760, 340, 60, 40, 540, 240
    curves = {alpha: [walltime_speedup(alpha, gamma, c) for gamma in range(1, max_gamma + 1)] for alpha in alphas}
    y_max = 4.0
    body = [
        _text(
            left + plot_width / 2,
            22,
            f"expected speedup against γ, c = {c:g}, verification cost 1",
            size=14,
            weight="bold",
        )
    ]
    body += _axis(left, top, plot_height, left + plot_width, [0, 1, 2, 3, 4], y_max, suffix="x")

    def x_of(gamma: float) -> float:
        return left + plot_width * (gamma - 1) / (max_gamma - 1)

    def y_of(value: float) -> float:
        return top + plot_height * (1 - value / y_max)

    body.append(
        f'<line x1="{left}" x2="{left + plot_width}" y1="{y_of(1):.1f}" y2="{y_of(1):.1f}" stroke="{COLORS["muted"]}" '
        'stroke-dasharray="5 4"/>'
    )
    for gamma in range(1, max_gamma + 1):
        body.append(_text(x_of(gamma), top + plot_height + 18, str(gamma), size=11))
    body.append(_text(left + plot_width / 2, top + plot_height + 38, "γ (drafted tokens per round)", size=12))
    palette = ["#93c5fd", "#60a5fa", "#2563eb", "#1e3a8a"]
    for (alpha, values), color in zip(curves.items(), palette):
        points = " ".join(f"{x_of(g + 1):.1f},{y_of(v):.1f}" for g, v in enumerate(values))
        body.append(f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2.5"/>')
        gamma, value = best_gamma(alpha, c, max_gamma=max_gamma)
        body.append(
            f'<circle cx="{x_of(gamma):.1f}" cy="{y_of(value):.1f}" r="5" fill="#ffffff" stroke="{COLORS["ink"]}" '
            'stroke-width="2"/>'
        )
        body.append(
            _text(left + plot_width + 10, y_of(values[-1]) + 4, f"α = {alpha:g}", anchor="start", size=12, color=color)
        )
    body.append(_text(left + plot_width + 10, top + plot_height + 38, "o = best γ", anchor="start", size=12))
    return _svg(width, height, body)


def round_figure() -> str:
    """One round of speculative decoding drawn as token boxes: draft, check, output."""
    width, height = 760, 300
    body = [_text(380, 22, 'one round after the text "The cat", γ = 4', size=14, weight="bold")]
    rows = [
        (
            "1. the draft q proposes",
            [(" sat", COLORS["q"], ""), (" on", COLORS["q"], ""), (" a", COLORS["q"], ""), (" mat", COLORS["q"], "")],
        ),
        (
            "2. one target pass checks",
            [
                (" sat", COLORS["overlap"], "accept"),
                (" on", COLORS["overlap"], "accept"),
                (" a", COLORS["reject"], "reject"),
                (" mat", COLORS["muted"], "discarded"),
            ],
        ),
        (
            "3. the text grows by 3",
            [
                (" sat", COLORS["overlap"], ""),
                (" on", COLORS["overlap"], ""),
                (" the", COLORS["residual"], "resampled from the residual"),
            ],
        ),
    ]
    for row, (title, tokens) in enumerate(rows):
        y = 50 + row * 80
        body.append(_text(20, y + 28, title, anchor="start", size=13, weight="bold"))
        for i, (token, color, note) in enumerate(tokens):
            x = 230 + i * 120
            body.append(
                f'<rect x="{x}" y="{y + 8}" width="104" height="32" rx="6" fill="{color}" fill-opacity="0.15" '
                f'stroke="{color}" stroke-width="2"/>'
            )
            body.append(_text(x + 52, y + 29, token.strip(), size=14, weight="bold", color=color))
            if note:
                body.append(_text(x + 52, y + 56, note, size=11, color=color))
            if row == 1 and i == 3:
                body.append(
                    f'<line x1="{x + 6}" x2="{x + 98}" y1="{y + 24}" y2="{y + 24}" stroke="{COLORS["muted"]}" '
                    'stroke-width="2"/>'
                )
    body.append(
        _text(
            380,
            height - 12,
            "If all four had been accepted, the same target pass would add a fifth token: the bonus token.",
            size=12,
            color=COLORS["muted"],
        )
    )
    return _svg(width, height, body)


def causal_rows(text_length: int, gamma: int) -> list[tuple[list[bool], int | None]]:
    """For each position of one target pass over the text and gamma guesses: what it sees, and what its output judges.

    Position i sees positions 0..i (the causal mask), so its output is the target's next-token distribution given
    exactly the tokens up to i. The judged guess is 0-based; `gamma` means the bonus token, None a token already in the
    text.

    >>> causal_rows(2, 2)    # "The cat" + guesses "sat", "on"
    [([True, False, False, False], None), ([True, True, False, False], 0), ([True, True, True, False], 1), ([True, True,
    True, True], 2)]
    """
    length = text_length + gamma
    rows = []
    for row in range(length):
        sees = [column <= row for column in range(length)]  # lower-triangular: only the tokens up to this one
        judged = row - text_length + 1  # the last text token's row judges guess 0
        rows.append((sees, judged if judged >= 0 else None))
    return rows


def causal_figure(text=("The", "cat"), guesses=("sat", "on", "a", "mat")) -> str:
    """The causal mask of one target pass over the text and the guesses: which row judges which guess."""
    tokens = [*text, *guesses]
    cell, left, top = 46, 150, 70
    width, height = 760, top + cell * len(tokens) + 76
    notes_x = left + cell * len(tokens) + 16
    body = [
        _text(
            380, 22, "one target pass: each row sees only the tokens to its left (and itself)", size=14, weight="bold"
        ),
        _text(left + cell * len(tokens) / 2, top - 30, "tokens the row can see", size=12, color=COLORS["muted"]),
        _text(notes_x + 134, top - 30, "what the row's output judges", size=12, color=COLORS["muted"]),
    ]
    for column, token in enumerate(tokens):
        color = COLORS["ink"] if column < len(text) else COLORS["q"]
        body.append(_text(left + column * cell + cell / 2, top - 8, token, size=13, weight="bold", color=color))
    for row, (sees, judged) in enumerate(causal_rows(len(text), len(guesses))):
        y = top + row * cell
        color = COLORS["ink"] if row < len(text) else COLORS["q"]
        body.append(
            _text(left - 12, y + cell / 2 + 5, f"row {row + 1}: {tokens[row]}", anchor="end", size=12, color=color)
        )
        for column, visible in enumerate(sees):
            fill = COLORS["p"] if visible else COLORS["grid"]
            body.append(
                f'<rect x="{left + column * cell + 2}" y="{y + 2}" width="{cell - 4}" height="{cell - 4}" rx="4" '
                f'fill="{fill}" fill-opacity="{0.35 if visible else 0.6}"/>'
            )
        if judged is None:
            note, note_color = "p of the next token: already in the text", COLORS["muted"]
        elif judged == len(guesses):
            note, note_color = "p after all four: the bonus token", COLORS["bonus"]
        else:
            note, note_color = f'p of the next token: judges guess {judged + 1}, "{guesses[judged]}"', COLORS["overlap"]
            x = left + (len(text) + judged) * cell  # the judged guess: the first cell this row cannot see
            body.append(
                f'<rect x="{x + 2}" y="{y + 2}" width="{cell - 4}" height="{cell - 4}" rx="4" fill="none" '
                f'stroke="{COLORS["overlap"]}" stroke-width="2.5"/>'
            )
            body.append(_text(x + cell / 2, y + cell / 2 + 5, "?", size=14, weight="bold", color=COLORS["overlap"]))
        body.append(_text(notes_x, y + cell / 2 + 5, note, anchor="start", size=12, color=note_color))
    legend_y = top + cell * len(tokens) + 26
    legend = [
        (60, COLORS["p"], 0.35, "seen"),
        (130, COLORS["grid"], 0.6, "hidden by the mask"),
        (290, None, 0, "the guess the row judges"),
    ]
    for x, fill, opacity, label in legend:
        if fill:
            body.append(
                f'<rect x="{x}" y="{legend_y - 11}" width="13" height="13" rx="2" fill="{fill}" '
                f'fill-opacity="{opacity}"/>'
            )
        else:
            body.append(
                f'<rect x="{x}" y="{legend_y - 11}" width="13" height="13" rx="2" fill="none" '
                f'stroke="{COLORS["overlap"]}" stroke-width="2"/>'
            )
            body.append(_text(x + 6.5, legend_y, "?", size=11, weight="bold", color=COLORS["overlap"]))
        body.append(_text(x + 19, legend_y, label, anchor="start", size=12))
    body.append(_text(500, legend_y, "black: the text", anchor="start", size=12, color=COLORS["ink"]))
    body.append(_text(605, legend_y, "orange: the guesses", anchor="start", size=12, color=COLORS["q"]))
    body.append(
        _text(
            380,
            height - 14,
            "A guess changes only its own row and the rows below it: every row above is the target's own answer.",
            size=12,
            color=COLORS["muted"],
        )
    )
    return _svg(width, height, body)


FIGURE_BUILDERS = {
    "overlap.svg": overlap_figure,
    "speedup-vs-gamma.svg": speedup_figure,
    "round.svg": round_figure,
    "causal.svg": causal_figure,
}


def build(directory: Path = FIGURES) -> list[Path]:
    """Write every figure into `directory`; returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, builder in FIGURE_BUILDERS.items():
        path = directory / name
        path.write_text(builder(), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in build():
        print(written_path.relative_to(GUIDE.parent))
