"""The package's shape is checked, not promised: true layers, no import cycles, a loop that never asks a type.

- the import contract in pyproject.toml (import-linter: the layers, the zoo that knows no algorithm, no
  streamlit in `specdec`) holds, and the same layers, checked with grimp, would catch an import upwards;
- no two modules import each other, directly or around a loop, counting imports inside functions too;
- the loop and its round's steps (`specdec.engine.loop`, `specdec.engine.rounds`, `specdec.generation.run`)
  contain no `isinstance`, `hasattr`, `getattr` or `type(...)`: they read what drafters declare, nothing more.
"""

from __future__ import annotations

import ast
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10: import-linter brings tomli
    import tomli as tomllib

import grimp
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[1]
LOOP = ["specdec/engine/loop.py", "specdec/engine/rounds.py", "specdec/generation/run.py"]


def contract_layers() -> list[grimp.Layer]:
    """The layers contract of pyproject.toml as grimp layers ("a | b": independent siblings, "a : b": not)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [contract["layers"] for contract in config["contracts"] if contract["type"] == "layers"]
    return [
        grimp.Layer(*[part.strip() for part in layer.replace(":", "|").split("|")], independent=":" not in layer)
        for layer in layers
    ]


def cycles(graph: grimp.ImportGraph, package: str = "specdec") -> list[list[str]]:
    """Groups of modules that import each other, directly or around a loop (Tarjan's strongly connected components)."""
    modules = sorted(module for module in graph.modules if module == package or module.startswith(package + "."))
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]

    def visit(module: str) -> None:
        index[module] = low[module] = counter[0]
        counter[0] += 1
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in modules:
                continue
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in modules:
        if module not in index:
            visit(module)
    return found


def test_the_import_contract_holds_and_would_catch_an_import_upwards():
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0
    graph = grimp.build_graph("specdec", include_external_packages=False)
    layers = contract_layers()
    assert not graph.find_illegal_dependencies_for_layers(layers, containers=set())
    # the loop naming a method
    graph.add_import(importer="specdec.engine.loop", imported="specdec.drafting.draft_model")
    assert graph.find_illegal_dependencies_for_layers(layers, containers=set())


def test_no_module_is_in_an_import_cycle():
    graph = grimp.build_graph("specdec", include_external_packages=False)
    assert cycles(graph) == []
    graph.add_import(importer="specdec.engine.trees", imported="specdec.engine.contract")  # contract -> trees already
    assert cycles(graph) == [["specdec.engine.contract", "specdec.engine.trees"]]


def type_tests(source: str) -> list[str]:
    """The calls of isinstance, hasattr, getattr and type in a module's source, as 'line: call'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "hasattr", "getattr", "type")
        ):
            found.append(f"{node.lineno}: {node.func.id}")
    return found


def test_the_loop_asks_no_type():
    for path in LOOP:
        assert type_tests((ROOT / path).read_text()) == [], path
    assert type_tests("if isinstance(proposal, DraftTree):\n    pass\n") == ["1: isinstance"]  # the check can fail
