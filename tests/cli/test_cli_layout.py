"""The command's package keeps its layout: imports point down (context -> views -> parser -> the
command groups -> run -> the package) and a command group never imports another."""
from __future__ import annotations

import ast
from pathlib import Path

import horovod_batchai.cli as cli

ROOT = Path(cli.__file__).parent
GROUPS = {"workspace", "experiment", "cluster", "job", "sweep", "storage", "local"}
LEVELS = {"context": 0, "views": 1, "parser": 2, **{g: 3 for g in GROUPS}, "run": 4, "__init__": 5, "__main__": 5}


def _cli_imports(path: Path) -> set[str]:
    """The modules of the package ``path`` imports, anywhere in its code (``from .x`` / ``from . import x``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found.update([node.module] if node.module else [a.name for a in node.names])
    return found


def test_every_module_has_a_level():
    assert {p.stem for p in ROOT.glob("*.py")} == set(LEVELS)


def test_imports_point_down_and_groups_stay_apart():
    wrong = [f"{path.stem} -> {target}" for path in ROOT.glob("*.py") for target in _cli_imports(path)
             if LEVELS[target] >= LEVELS[path.stem]]
    assert not wrong, "imports that point up or sideways:\n" + "\n".join(sorted(wrong))
