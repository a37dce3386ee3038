"""Imports point down: the public classes and their backends import each other in one direction
only (imports made for type checking alone do not count)."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "horovod_batchai"
PUBLIC_CLASSES = ("_workspace", "_experiment", "_cluster", "_job", "_fileshare", "_stream")


def _modules() -> dict[str, Path]:
    return {".".join(p.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__"): p
            for p in PACKAGE.rglob("*.py") if "local" not in p.relative_to(PACKAGE).parts}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(sub) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) for sub in ast.walk(node)}
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only or not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        base = package[:len(package) - (node.level - 1)]
        target = ".".join([*base, *(node.module.split(".") if node.module else [])])
        submodules = [f"{target}.{a.name}".lstrip(".") for a in node.names]
        if any(s in modules for s in submodules):  # `from . import arm` imports arm, not the package's code
            found.update(s for s in submodules if s in modules and s != name)
        elif target in modules and target != name:
            found.add(target)
    return found


def test_the_public_classes_and_backends_form_no_import_circle() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(d == goal or (d not in seen and reaches(d, goal, seen | {d})) for d in graph[start])

    circles = [m for m in modules if (m in PUBLIC_CLASSES or m.startswith("_backends")) and reaches(m, m, {m})]
    assert circles == []
    # and the backends never import the public classes above them
    for name in modules:
        if name.startswith("_backends"):
            assert not graph[name] & set(PUBLIC_CLASSES), name


def test_every_public_name_of_the_packages_is_in_their_all() -> None:
    """``__init__.py`` is the whole public surface: no helper is importable from it by accident."""
    import inspect

    import horovod_batchai
    import horovod_batchai.aio
    for package in (horovod_batchai, horovod_batchai.aio):
        stray = [name for name in dir(package) if not name.startswith("_") and name not in package.__all__
                 and not inspect.ismodule(getattr(package, name))]
        assert not stray, f"{package.__name__} exposes names outside its __all__: {stray}"
