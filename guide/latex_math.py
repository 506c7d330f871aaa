"""LaTeX math to Typst math, for the chapters' PDFs (`guide/build_pdfs.py`).

    >>> latex_to_typst(r"\\min(p, q)")
    'min (p, q)'

It knows exactly the commands the chapters use (`LATEX_COMMANDS`, `LATEX_FUNCTIONS`); an unknown
command raises `ConversionError` naming it, never a silent mistake. Pure text in, text out.
"""

from __future__ import annotations

import re


class ConversionError(ValueError):
    """Markdown or LaTeX outside the subset this converter understands."""


LATEX_COMMANDS = {
    # Greek letters and symbols
    "alpha": "alpha",
    "beta": "beta",
    "gamma": "gamma",
    "delta": "delta",
    "epsilon": "epsilon",
    "lambda": "lambda",
    "mu": "mu",
    "sigma": "sigma",
    "theta": "theta",
    "pi": "pi",
    "tau": "tau",
    "Gamma": "Gamma",
    "Delta": "Delta",
    "infty": "infinity",
    "cdot": "dot",
    "times": "times",
    "le": "<=",
    "leq": "<=",
    "ge": ">=",
    "geq": ">=",
    "ne": "!=",
    "neq": "!=",
    "approx": "approx",
    "propto": "prop",
    "sim": "tilde.op",
    "to": "->",
    "rightarrow": "->",
    "leftarrow": "<-",
    "Rightarrow": "=>",
    "iff": "<=>",
    "in": "in",
    "dots": "dots",
    "ldots": "dots",
    "cdots": "dots.c",
    "mid": "|",
    "blacksquare": "square.filled",
    "lvert": "|",
    "rvert": "|",
    "prime": "prime",
    "lfloor": "floor.l",
    "rfloor": "floor.r",
    # operators
    "sum": "sum",
    "prod": "product",
    "min": "min",
    "max": "max",
    "arg": "arg",
    "log": "log",
    "exp": "exp",
    "cos": "cos",
    "Pr": "Pr",
    # spacing
    "quad": "quad",
    "qquad": "wide",
    ",": "thin",
    ";": "med",
    "!": "",
    " ": "space",
    # sizing is automatic in Typst
    "left": "",
    "right": "",
    "big": "",
    "Big": "",
}
LATEX_FUNCTIONS = {"hat": "hat", "tilde": "tilde", "bar": "overline", "sqrt": "sqrt", "mathbb": "bb"}
MATH_TOKEN = re.compile(r"\\([A-Za-z]+|.)|(\d+(?:\.\d+)?)|([A-Za-z]+)|(\s+)|(.)", re.DOTALL)


def _tokens(latex: str) -> list[tuple[str, str]]:
    kinds = ("command", "number", "letters", "space", "char")
    tokens = []
    for match in MATH_TOKEN.finditer(latex):
        kind = next(k for k, group in zip(kinds, match.groups()) if group is not None)
        tokens.append((kind, match.group(match.lastindex)))
    return tokens


class _MathConverter:
    """A small recursive-descent translator over LaTeX tokens."""

    def __init__(self, latex: str, operators: set[str]) -> None:
        self.latex = latex
        self.tokens = _tokens(latex)
        self.position = 0
        self.operators = operators  # \mathrm / \operatorname names, defined as Typst ops in the preamble

    def error(self, message: str) -> ConversionError:
        return ConversionError(f"{message} in ${self.latex}$")

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise self.error("unexpected end of math")
        self.position += 1
        return token

    def convert(self, until: str | None = None) -> str:
        parts = []
        while (token := self.peek()) is not None:
            if until is not None and token == ("char", until):
                self.position += 1
                return "".join(parts)
            parts.append(self.atom())
        if until is not None:
            raise self.error(f"missing '{until}'")
        return "".join(parts)

    def group(self) -> str:
        """The next argument: a {group} or a single token, converted."""
        token = self.peek()
        if token == ("char", "{"):
            self.position += 1
            return self.convert(until="}")
        if token is not None and token[0] == "space":
            self.position += 1
            return self.group()
        return self.atom()

    def raw_group(self) -> str:
        """The next {group} as plain text (for \\text and \\mathrm)."""
        if self.take() != ("char", "{"):
            raise self.error("expected '{'")
        depth, text = 1, []
        while True:
            kind, value = self.take()
            if (kind, value) == ("char", "{"):
                depth += 1
            elif (kind, value) == ("char", "}"):
                depth -= 1
                if depth == 0:
                    return "".join(text)
            text.append("\\" + value if kind == "command" else value)

    def atom(self) -> str:
        kind, value = self.take()
        if kind == "space":
            return " "
        if kind == "number":
            return value
        if kind == "letters":
            return value if len(value) == 1 else f'italic("{value}")'
        if kind == "char":
            if value in "^_":
                argument = self.group()
                return f"{value}({argument})"
            if value == "{":
                return self.convert(until="}")
            if value == "/":
                return "\\/"
            if value == "&":
                return " & "
            if value in '"#$':
                return "\\" + value
            return value
        # commands
        if value == "\\":
            return " \\ "
        if value == "frac":
            numerator, denominator = self.group(), self.group()
            return f"({numerator})/({denominator})"
        if value == "text":
            text = self.raw_group().replace("\\", "\\\\").replace('"', '\\"')
            return f'"{text}"'
        if value in ("mathrm", "operatorname"):
            name = self.raw_group()
            if not name.isalpha():
                raise self.error(f"\\{value}{{{name}}} must be letters only")
            self.operators.add(name)
            return f" op{name} "
        if value in LATEX_FUNCTIONS:
            return f"{LATEX_FUNCTIONS[value]}({self.group()})"
        if value in ("begin", "end"):
            environment = self.raw_group()
            if environment not in ("aligned", "align*"):
                raise self.error(f"unsupported environment {environment}")
            return ""
        if value in LATEX_COMMANDS:
            symbol = LATEX_COMMANDS[value]
            return f" {symbol} " if symbol and symbol[0].isalpha() else symbol
        raise self.error(f"unknown LaTeX command \\{value} (add it to LATEX_COMMANDS)")


def latex_to_typst(latex: str, operators: set[str] | None = None) -> str:
    """Translate the LaTeX of one formula into Typst math (without the dollar signs).

    >>> latex_to_typst(r"\\frac{1 - \\alpha^{\\gamma+1}}{1 - \\alpha}")
    '(1 - alpha ^( gamma +1))/(1 - alpha )'
    """
    converted = _MathConverter(latex, operators if operators is not None else set()).convert()
    return re.sub(r" {2,}", " ", converted).strip()
