"""Every dotted `specdec.` name the docs and the docstrings give resolves: a module, or an attribute of one, that
exists.

A reader copies `from specdec.pair.loading import load_spec` out of docs/api.md, or follows `specdec.runtime.costs` from
a docstring; a name left behind by a move (`specdec.pairing`, `specdec.generation.speculative`) sends them nowhere. The
negative control: names that do not exist are reported, each with where it was written.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = re.compile(r"\bspecdec(?:\.[A-Za-z_]\w*)+")


def written_names(text: str) -> set[str]:
    """The dotted names that start with `specdec.` in `text`, without a trailing file suffix (`specdec.py` is no name).

    >>> sorted(written_names("see `specdec.pair.loading.load_spec`; run specdec.cli, not specdec/cli/run.py"))
    ['specdec.cli', 'specdec.pair.loading.load_spec']
    """
    return {name for name in NAME.findall(text) if not name.endswith((".py", ".md", ".json", ".csv"))}


def resolves(name: str) -> bool:
    """Whether `name` is a module, or a chain of attributes of the longest module it starts with."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):  # a dataclass's field without a default is no class attribute
                return dataclasses.is_dataclass(found) and attribute in {
                    field.name for field in dataclasses.fields(found)
                }
            found = getattr(found, attribute)
        return True
    return False


def docstring_text(path: Path) -> str:
    """Every docstring and comment of a Python file: what a reader reads as prose."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    docs = [
        ast.get_docstring(node, clean=False) or ""
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    comments = [line.split("#", 1)[1] for line in source.splitlines() if "#" in line]
    return "\n".join(docs + comments)


def unresolved(places: dict[str, str]) -> dict[str, list[str]]:
    """Where -> the names written there that do not resolve."""
    found = {
        where: sorted(name for name in written_names(text) if not resolves(name)) for where, text in places.items()
    }
    return {where: names for where, names in found.items() if names}


def places() -> dict[str, str]:
    texts = {
        str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
        for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    }
    for folder in ("specdec", "pages"):
        texts |= {str(path.relative_to(ROOT)): docstring_text(path) for path in (ROOT / folder).rglob("*.py")}
    return texts


def test_every_dotted_name_in_the_docs_and_docstrings_resolves():
    assert unresolved(places()) == {}


def test_a_name_that_is_gone_is_reported_where_it_was_written():
    written = {
        "docs/old.md": "from specdec.pairing import load_spec; see `specdec.pair.loading.load_spec`",
        "specdec/x.py": "the loop (`specdec.generation.speculative`), the cache "
        "(`specdec.runtime.pytorch.batch_cache.BatchCache`)",
    }
    assert unresolved(written) == {
        "docs/old.md": ["specdec.pairing"],
        "specdec/x.py": ["specdec.generation.speculative"],
    }
