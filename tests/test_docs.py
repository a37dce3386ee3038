"""The documentation builds (``make docs``) without a warning, and its API reference is generated."""
from __future__ import annotations

import re
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
    # every public name has its entry, under the name users import it by, and nothing private has one
    import horovod_batchai
    import horovod_batchai.aio
    for package in (horovod_batchai, horovod_batchai.aio):
        missing = [n for n in package.__all__ if f'id="{package.__name__}.{n}"' not in api]
        assert not missing, f"{package.__name__}.__all__ names missing from docs/api.rst: {missing}"
    private = sorted(set(re.findall(r'id="(horovod_batchai[\w.]*\._[a-z]\w*)"', api)))
    assert not private, f"private names in the API reference: {private}"
    assert "cifar_cnn_distributed.py" in (tmp_path / "tutorial.html").read_text(encoding="utf-8")
