"""The house keeps its shape: nothing outside the registry, the runtimes and the methods' own modules names a method, a
drafter class or a model's `.module`; nothing outside the runtimes and their registry compares a runtime's name; no
module over 300 lines and no function over 60.

Each check reads the source (Python's `ast`, so docstrings and comments may speak of anything), and each is shown
failing on a made-up violation, so none of them can pass by reading nothing.
"""

from __future__ import annotations

import ast
from pathlib import Path

from specdec.registry import METHODS
from specdec.runtimes import RUNTIMES

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 300, 60
# where a method may be named: the registry names them, the runtimes serve a model's insides, and each method's own
# module (a drafting module, a head's package) is where its class lives and what it is built on
ALLOWED = ("specdec/registry/", "specdec/runtime/", "specdec/drafting/", "specdec/heads/")
DRAFTER_CLASSES = {method.drafter.__name__ for method in METHODS.values()} | {"NoDraft", "ModelReader", "HeadReader"}


def checked_files() -> list[Path]:
    """Every Python file of the package and the dashboard outside `ALLOWED`."""
    files = sorted((ROOT / "specdec").rglob("*.py")) + sorted((ROOT / "pages").rglob("*.py")) + [ROOT / "app.py"]
    return [path for path in files if not str(path.relative_to(ROOT)).startswith(ALLOWED)]


def named(
    source: str, methods: set[str] = frozenset(METHODS), classes: set[str] = frozenset(DRAFTER_CLASSES)
) -> list[str]:
    """Each place in `source` that names a method (a string that
    is one, outside docstrings), a drafter class, or `.module`."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "module":
            found.append(f"{node.lineno}: .module")
        elif isinstance(node, ast.Name) and node.id in classes:
            found.append(f"{node.lineno}: {node.id}")
        elif isinstance(node, ast.alias) and node.name in classes:
            found.append(f"import {node.name}")
        elif isinstance(node, ast.Constant) and node.value in methods and id(node) not in docstrings:
            found.append(f"{node.lineno}: {node.value!r}")
    return found


def oversized(source: str) -> list[str]:
    """The module if it is over `MAX_MODULE_LINES` lines, and each function over `MAX_FUNCTION_LINES`."""
    found = [f"module: {source.count(chr(10))} lines"] if source.count("\n") > MAX_MODULE_LINES else []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
        ):
            found.append(f"{node.name}: {node.end_lineno - node.lineno + 1} lines")
    return found


def test_nothing_outside_the_registry_names_a_method_a_drafter_class_or_a_models_insides():
    assert {str(path.relative_to(ROOT)): found for path in checked_files() if (found := named(path.read_text()))} == {}
    violation = (
        'from specdec.drafting.tree_drafter import TreeDrafter\nif method == "tree":\n    layers = '
        "model.module.layers\n"
    )
    assert named(violation) == ["import TreeDrafter", "2: 'tree'", "3: .module"]  # it can fail
    assert named('"""The tree method."""\nTREE = registry.TREE\n') == []  # docstrings and constants may


def test_no_module_over_300_lines_and_no_function_over_60():
    assert {
        str(path.relative_to(ROOT)): found
        for path in sorted((ROOT / "specdec").rglob("*.py"))
        if (found := oversized(path.read_text()))
    } == {}
    assert oversized("def f():\n" + "    x = 1\n" * 60) == ["f: 61 lines"]  # it can fail
    assert oversized("x = 1\n" * 301) == ["module: 301 lines"]


RUNTIME_HOMES = ("specdec/runtime/", "specdec/runtimes/")


def compared_runtimes(source: str, names: frozenset[str] = frozenset(RUNTIMES)) -> list[str]:
    """Each comparison in `source` (==, !=, in, not in, a match
    case) with a string that is a registered runtime's name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            strings = [operand.value for operand in operands if isinstance(operand, ast.Constant)]
            strings += [
                element.value
                for operand in operands
                if isinstance(operand, (ast.Tuple, ast.List, ast.Set))
                for element in operand.elts
                if isinstance(element, ast.Constant)
            ]
            found += [f"{node.lineno}: {value!r}" for value in strings if value in names]
        elif isinstance(node, ast.MatchValue) and isinstance(node.value, ast.Constant) and node.value.value in names:
            found.append(f"{node.lineno}: case {node.value.value!r}")
    return found


def test_nothing_outside_the_runtimes_compares_a_runtimes_name():
    """Choosing, loading, describing a runtime: each reads the
    registry's entries (`specdec.runtimes`), never its name."""
    files = sorted((ROOT / "specdec").rglob("*.py")) + sorted((ROOT / "pages").rglob("*.py")) + [ROOT / "app.py"]
    outside = [path for path in files if not str(path.relative_to(ROOT)).startswith(RUNTIME_HOMES)]
    assert {
        str(path.relative_to(ROOT)): found for path in outside if (found := compared_runtimes(path.read_text()))
    } == {}
    violation = (
        'if planned.runtime == "llama.cpp":\n    pass\nok = runtime in ("torch", "auto")\nmatch runtime:\n    '
        'case "torch": pass\n'
    )
    assert compared_runtimes(violation) == ["1: 'llama.cpp'", "3: 'torch'", "5: case 'torch'"]  # it can fail
