"""The local service's layout holds: imports (relative, or absolute ones of horovod_batchai.local)
point down (core -> the storage planes -> the runner -> Batch AI -> the service) and no two modules
import each other, even late, inside a function.

The runner sits below Batch AI: it runs what the Batch AI provider stored and hands it nothing back
but through the store (the provider holds the runner's scheduler as a ``JobScheduler`` protocol the
service wires in), so what both read -- the VM sizes, where output directories are -- lives in the
runner."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

import horovod_batchai.local as local

ROOT = Path(local.__file__).parent
#: how far up each part sits; a module may import from its own level or below.
LEVELS = {"core": 0, "files": 1, "storage": 1, "resources": 1, "blob": 1, "tracking": 1, "runner": 2, "batchai": 3}
TOP = 4  # __init__, __main__, app, service: they wire the parts together


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _local_module(absolute: str) -> Optional[str]:
    """``horovod_batchai.local.runner.mounts`` -> ``runner.mounts`` (None outside local/)."""
    prefix = local.__name__ + "."
    return absolute[len(prefix):] if absolute.startswith(prefix) else None


def _imports() -> dict[str, set[str]]:
    """Every module of local/ -> the modules of local/ it imports, anywhere in its code."""
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):  # import horovod_batchai.local.x.y
                found.update(m for alias in node.names if (m := _local_module(alias.name)))
                continue
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level == 0:  # from horovod_batchai.local.x import y
                absolute = _local_module(node.module or "")
                if absolute is None:
                    continue
                target = absolute
            else:
                base = package.split(".") if package else []
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                candidate = f"{target}.{alias.name}" if target else alias.name
                found.add(candidate if candidate in modules else target)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def _level(module: str) -> int:
    return LEVELS.get(module.split(".")[0], TOP) if module else TOP


def test_imports_point_down():
    upward = [f"{m} -> {t}" for m, targets in _imports().items() for t in targets if _level(t) > _level(m)]
    assert not upward, "modules importing from a level above their own:\n" + "\n".join(sorted(upward))


def test_no_import_cycles():
    graph = _imports()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycles.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_every_part_is_a_package_named_for_what_it_serves():
    packages = sorted(p.parent.name for p in ROOT.glob("*/__init__.py"))
    assert packages == sorted(LEVELS), packages
