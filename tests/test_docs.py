"""The first docs a newcomer reads describe the house as it is: checked against the tree, so they cannot drift.

- the layout page's table of modules (`docs/layout.md`, "What you get") has a row for every folder and top-level module
  of `specdec/`, and
  each folder's row names every module and sub-folder in it;
- its layers sentence names the layers of the import contract (`pyproject.toml`), in its order;
- `help(specdec)` (the package docstring) names every folder and top-level module.

Each check is shown to fail on a tree with a module the docs do not name.
"""

from __future__ import annotations

import re
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10: import-linter brings tomli
    import tomli as tomllib

import specdec

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "specdec"


def house(package: Path = PACKAGE) -> dict[str, set[str]]:
    """'specdec/x/' -> the names its row must mention (its modules
    'a.py' and sub-folders 'b/'); 'specdec/y.py' -> set()."""
    found: dict[str, set[str]] = {}
    for path in sorted(package.iterdir()):
        if path.is_dir() and (path / "__init__.py").is_file():
            found[f"specdec/{path.name}/"] = {
                child.name + ("/" if child.is_dir() else "")
                for child in path.iterdir()
                if (child.suffix == ".py" and child.name != "__init__.py")
                or (child.is_dir() and (child / "__init__.py").is_file())
            }
        elif path.suffix == ".py" and path.name not in ("__init__.py", "__main__.py"):
            found[f"specdec/{path.name}"] = set()
    return found


def table_rows(readme: str) -> dict[str, str]:
    """The layout page's module table: '`specdec/x/`' -> the row's text."""
    section = readme.split("## What you get", 1)[1].split("\n\n", 2)[1]
    rows = {}
    for line in section.splitlines():
        match = re.match(r"\| `(specdec/[^`]+)` \|(.*)\|$", line)
        if match:
            rows[match.group(1)] = match.group(2)
    return rows


def missing_from_table(readme: str, tree: dict[str, set[str]]) -> list[str]:
    rows = table_rows(readme)
    missing = [entry for entry in tree if entry not in rows]
    missing += [
        f"{entry}{name}"
        for entry, names in tree.items()
        if entry in rows
        for name in names
        if f"`{name}`" not in rows[entry] and f"`{name.rstrip('/')}/`" not in rows[entry]
    ]
    return missing


def contract_layers() -> list[str]:
    """The layers contract's module names, top to bottom."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [contract["layers"] for contract in config["contracts"] if contract["type"] == "layers"]
    names = []
    for layer in layers:
        for part in re.split(r"[|:]", layer):
            name = part.strip()
            if name not in names:
                names.append(name)
    return names


def layers_sentence(readme: str) -> list[str]:
    sentence = readme.split("The folders are layers, each importing only from those below it", 1)[1].split(
        "; the dashboard", 1
    )[0]
    return re.findall(r"`(specdec(?:\.\w+)?)`", sentence)


LAYOUT = ROOT / "docs" / "layout.md"


def test_the_layout_page_names_every_module_in_its_table():
    readme = LAYOUT.read_text()
    assert missing_from_table(readme, house()) == []
    assert missing_from_table(readme, house() | {"specdec/oracle.py": set()}) == ["specdec/oracle.py"]  # it can fail
    assert missing_from_table(readme, {"specdec/engine/": {"loop.py", "gremlin.py"}}) == ["specdec/engine/gremlin.py"]


def test_the_layout_page_names_the_layers_in_the_contracts_order():
    readme = LAYOUT.read_text()
    assert layers_sentence(readme) == contract_layers()
    assert (
        layers_sentence(
            readme.replace("`specdec.run_spec` > `specdec.registry`", "`specdec.registry` > `specdec.run_spec`")
        )
        != contract_layers()
    )  # it can fail


def test_help_specdec_names_every_folder_and_module():
    assert [entry for entry in house() if entry not in specdec.__doc__] == []
    assert "specdec/oracle.py" not in specdec.__doc__  # what the check would flag
