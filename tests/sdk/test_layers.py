"""The SDK's house: imports point down and close no circle.

From the bottom: ``_models`` (specs, states, records, errors, constants; no I/O), ``_shared`` (what
the sync and the aio classes both run without a request), ``_places`` (one folder per place to
run, its connection and backends), the public classes, and ``aio`` on top. Every import made when
the code runs counts, those inside functions too; imports for type checking alone do not. The
local service and the CLI have layout tests of their own.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "horovod_batchai"
#: each layer, and the layers below it that it may import
LAYERS = {"_models": {"_models"}, "_shared": {"_models", "_shared"},
          "_places": {"_models", "_shared", "_places"},
          "public": {"_models", "_shared", "_places", "public"},
          "aio": {"_models", "_shared", "_places", "public", "aio"}}


def _modules() -> dict[str, Path]:
    return {".".join(p.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__").removesuffix("__init__"):
            p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in ("local", "cli")}


def _layer(module: str) -> str:
    first = module.split(".")[0]
    return first if first in LAYERS else "public"


def _runtime_imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, list[str], int]]:
    """(module imported, names taken from it, line) for every import this module makes at run time."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(sub) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) for sub in ast.walk(node)}
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("horovod_batchai."):
                    target = alias.name.removeprefix("horovod_batchai.")
                    if target in modules:
                        found.append((target, [], node.lineno))
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 0:
            if not (node.module or "").startswith("horovod_batchai"):
                continue
            base: list[str] = []
            module_parts = (node.module or "").split(".")[1:]
        else:
            base = package[:len(package) - (node.level - 1)]
            module_parts = node.module.split(".") if node.module else []
        target = ".".join([*base, *module_parts])
        for alias in node.names:
            sub = f"{target}.{alias.name}".lstrip(".")
            if sub in modules:  # `from . import arm` imports the module arm
                found.append((sub, [], node.lineno))
            elif target in modules:
                found.append((target, [alias.name], node.lineno))
    return found


def _graph() -> tuple[dict[str, Path], dict[str, list[tuple[str, list[str], int]]]]:
    modules = _modules()
    return modules, {name: _runtime_imports(name, path, modules) for name, path in modules.items()}


def find_circle(edges: dict[str, set[str]]) -> Optional[list[str]]:
    """One circle of ``edges`` (a list of nodes, the first again at the end), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> Optional[list[str]]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                circle = visit(nxt)
                if circle:
                    return circle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            circle = visit(node)
            if circle:
                return circle
    return None


def test_no_module_of_the_sdk_imports_another_in_a_circle() -> None:
    modules, graph = _graph()
    edges = {name: {target for target, _, _ in imports if target != name and target != ""}
             for name, imports in graph.items()}
    edges.pop("", None)  # the package's face imports everything it hands on
    assert find_circle(edges) is None, " -> ".join(find_circle(edges) or [])


def test_each_layer_imports_only_the_layers_below_it() -> None:
    modules, graph = _graph()
    wrong = [f"{name} (line {line}) imports {target}"
             for name, imports in graph.items() if name
             for target, _, line in imports
             if target and _layer(target) not in LAYERS[_layer(name)]]
    assert wrong == []


def test_aio_takes_no_private_name_from_a_sync_public_class_module() -> None:
    """The aio classes share what they need with the sync ones through ``_models``, ``_shared``
    and ``_places``; from a sync public class's module they may take only its public names."""
    modules, graph = _graph()
    wrong = [f"{name} (line {line}) takes {taken} from {target}"
             for name, imports in graph.items() if name.startswith("aio")
             for target, names, line in imports if _layer(target) == "public" and target
             for taken in names if taken.startswith("_")]
    wrong += [f"{name} (line {line}) imports the module {target}"
              for name, imports in graph.items() if name.startswith("aio")
              for target, names, line in imports if _layer(target) == "public" and target and not names]
    assert wrong == []


@pytest.mark.parametrize("source, problem", [
    ("from .._job import _fetch\n", "takes _fetch"),
    ("from .. import _job\n", "imports the module _job"),
    ("def later():\n    from .._job import _fetch\n", "takes _fetch"),  # inside a function: counted too
])
def test_the_aio_check_sees_a_private_import(tmp_path: Path, source: str, problem: str) -> None:
    """The check above is not vacuous: an aio module importing a sync class module's private
    name (or the module itself) is caught."""
    modules = {"aio._probe": tmp_path / "_probe.py", "_job": PACKAGE / "_job.py"}
    modules["aio._probe"].write_text(source)
    imports = _runtime_imports("aio._probe", modules["aio._probe"], modules)
    taken = [f"takes {n}" for _, names, _ in imports for n in names] + \
            [f"imports the module {t}" for t, names, _ in imports if not names]
    assert problem in taken


def test_the_circle_check_finds_a_circle() -> None:
    tree = {"_models.a": {"_models.b"}, "_models.b": {"_shared.c"}, "_shared.c": {"_models.a"}}
    assert find_circle(tree) == ["_models.a", "_models.b", "_shared.c", "_models.a"]
    assert find_circle({"_models.a": {"_models.b"}, "_models.b": set()}) is None


def test_every_public_name_of_the_packages_is_in_their_all() -> None:
    """``__init__.py`` is the whole public surface: no helper is importable from it by accident."""
    import inspect

    import horovod_batchai
    import horovod_batchai.aio
    for package in (horovod_batchai, horovod_batchai.aio):
        stray = [name for name in dir(package) if not name.startswith("_") and name not in package.__all__
                 and not inspect.ismodule(getattr(package, name))]
        assert not stray, f"{package.__name__} exposes names outside its __all__: {stray}"
