"""The documentation builds (``make docs``) without a warning, and its API reference is generated."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_sphinx_builds_the_docs_without_warnings(tmp_path: Path) -> None:
    pytest.importorskip("sphinx", reason="sphinx comes with the [docs] extra that `make install` installs")
    result = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(REPO / "docs"),
                             str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    api = (tmp_path / "api.html").read_text(encoding="utf-8")
    for name in ("Workspace", "GpuCluster", "FileShare", "HorovodJob", "wait_until_ready", "stream"):
        assert name in api
    assert "cifar_cnn_distributed.py" in (tmp_path / "tutorial.html").read_text(encoding="utf-8")
