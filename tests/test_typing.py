"""The package ships ``py.typed``, so its own annotations must hold: mypy passes on it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_package_passes_mypy() -> None:
    assert (REPO / "horovod_batchai" / "py.typed").exists()
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "mypy.ini")],
                            cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
