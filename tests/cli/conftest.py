"""Fixtures for the command-line tool's tests: ``main([...])`` run in-process against the test's
own local service, found through its state directory as a user's shell would find it."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import pytest

from horovod_batchai.cli import main
from horovod_batchai.local import LocalService

from cli_support import ACCOUNT, RG, SHARE, WS, CliRun


@pytest.fixture(autouse=True)
def clean_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No setting of the developer's leaks in, and ``--generate-ssh-keys`` writes to a scratch home."""
    for name in ("HOROVOD_BATCHAI_TARGET", "HOROVOD_BATCHAI_STATE_DIR", "AZURE_SUBSCRIPTION_ID",
                 "AZURE_BATCHAI_STORAGE_ACCOUNT"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def cli(service: LocalService, capsys: pytest.CaptureFixture[str]) -> Callable[..., CliRun]:
    """``cli("workspace", "show", ...)`` runs the tool against ``service`` and returns its exit
    status and output. No run may print a traceback of its own, whatever its outcome."""
    def run(*args: str) -> CliRun:
        capsys.readouterr()
        code = main(["--state-dir", str(service.state_dir), *args])
        captured = capsys.readouterr()
        # (a failed job's own stderr tail is quoted indented; a traceback of the tool starts a line)
        assert not re.search(r"^Traceback", captured.err + captured.out, re.MULTILINE)
        return CliRun(code, captured.out, captured.err)
    return run


@pytest.fixture
def workspace(cli: Callable[..., CliRun]) -> str:
    assert cli("workspace", "create", "-g", RG, "-n", WS).code == 0
    return WS


@pytest.fixture
def share(cli: Callable[..., CliRun]) -> str:
    assert cli("share", "create", "-g", RG, "--account-name", ACCOUNT, "--share-name", SHARE).code == 0
    return SHARE
