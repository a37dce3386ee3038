"""The tool as a pipeline runs it: the installed console script and ``python -m
horovod_batchai.cli`` in their own processes, and ``local start / status / stop`` managing a real
background service."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from horovod_batchai import Target, Workspace
from horovod_batchai.cli import EXIT_NOT_FOUND, EXIT_USAGE, main
from horovod_batchai.local import LocalService, find_running, stop_daemon

from cli_support import RG, WS

CONSOLE_SCRIPT = Path(sys.executable).parent / "horovod-batchai"


def _run(args: list[str], home: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOROVOD_BATCHAI_", "AZURE_"))}
    env["HOME"] = str(home)
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.skipif(not CONSOLE_SCRIPT.exists(), reason="the package is not installed with its console script")
def test_console_script_against_a_running_service(service: LocalService, clean_environment: Path) -> None:
    state = ["--state-dir", str(service.state_dir)]
    created = _run([str(CONSOLE_SCRIPT), *state, "workspace", "create", "-g", RG, "-n", WS, "-o", "json"],
                   clean_environment)
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["name"] == WS
    # the service that answered is the test's own, found through its state directory
    with Target.local(service=service) as target:
        assert [w.name for w in Workspace.list(target)] == [WS]

    missing = _run([str(CONSOLE_SCRIPT), *state, "cluster", "show", "-g", RG, "-w", WS, "-n", "nope"],
                   clean_environment)
    assert missing.returncode == EXIT_NOT_FOUND
    assert missing.stdout == "" and "nope" in missing.stderr and "Traceback" not in missing.stderr

    usage = _run([sys.executable, "-m", "horovod_batchai.cli", *state, "cluster", "create", "-g", RG, "-w", WS,
                  "-n", "c", "--target", "many"], clean_environment)
    assert usage.returncode == EXIT_USAGE
    assert "--target" in usage.stderr and "Traceback" not in usage.stderr
    assert usage.stderr.count("\n") == 1 and "--help" in usage.stderr  # one line, as every error


def test_local_start_status_stop(tmp_path: Path, clean_environment: Path) -> None:
    state_dir = tmp_path / "daemon-state"
    cli = [sys.executable, "-m", "horovod_batchai.cli", "--state-dir", str(state_dir)]
    try:
        before = _run([*cli, "local", "status"], clean_environment)
        assert before.returncode == EXIT_NOT_FOUND and "no local service is running" in before.stderr

        started = _run([*cli, "local", "start", "-o", "json"], clean_environment)
        assert started.returncode == 0, started.stderr
        info = json.loads(started.stdout)
        assert info["running"] is True and info["endpoint"].startswith("https://127.0.0.1:")
        running = find_running(state_dir)
        assert running is not None and running.pid == info["pid"] and running.pid != os.getpid()
        # starting again reuses it
        again = _run([*cli, "local", "start", "--query", "pid"], clean_environment)
        assert again.returncode == 0 and again.stdout.strip() == str(info["pid"])
        status = _run([*cli, "local", "status", "--query", "endpoint"], clean_environment)
        assert (status.returncode, status.stdout.strip()) == (0, info["endpoint"])

        # other verbs use the daemon the state directory names
        assert _run([*cli, "workspace", "create", "-g", RG, "-n", WS], clean_environment).returncode == 0
        listed = _run([*cli, "workspace", "list", "-o", "json"], clean_environment)
        assert [w["name"] for w in json.loads(listed.stdout)] == [WS]

        stopped = _run([*cli, "local", "stop", "-o", "json"], clean_environment)
        assert stopped.returncode == 0 and json.loads(stopped.stdout)["stopped"] is True
        assert find_running(state_dir) is None
        after = _run([*cli, "local", "status"], clean_environment)
        assert after.returncode == EXIT_NOT_FOUND
        assert json.loads(_run([*cli, "local", "stop", "-o", "json"], clean_environment).stdout)["stopped"] is False
    finally:
        stop_daemon(state_dir)


def test_local_verbs_refuse_the_azure_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--target", "azure", "--subscription", "00000000-0000-0000-0000-000000000001",
                 "local", "status"])
    assert code == EXIT_USAGE and "--target azure" in capsys.readouterr().err


def test_the_azureml_target_needs_its_workspace_and_checks_vm_sizes_before_any_request(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("AZURE_RESOURCE_GROUP", "AZUREML_WORKSPACE_NAME"):
        monkeypatch.delenv(name, raising=False)
    azureml = ["--target", "azureml", "--subscription", "00000000-0000-0000-0000-000000000001"]
    code = main([*azureml, "share", "show", "-g", RG, "--account-name", "mystorageaccount",
                 "--share-name", "myshare"])
    assert code == EXIT_USAGE and "give -g and -w" in capsys.readouterr().err
    code = main([*azureml, "cluster", "create", "-g", RG, "-w", WS, "-n", "nc6cluster", "--vm-size",
                 "Standard_NC6", "--target", "2", "--ssh-key-file", str(_public_key(tmp_path))])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and "vm_size: 'Standard_NC6' was retired by Azure" in err and "Traceback" not in err


def _public_key(tmp_path: Path) -> Path:
    key = tmp_path / "id_rsa.pub"
    key.write_text("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDWm/4TTHMZdzZVJcob2aFRWDmIyJLxk028 t@h\n", encoding="ascii")
    return key


@pytest.mark.parametrize("verb", [["workspace", "list", "-g", RG], ["local", "start"], ["local", "status"]])
def test_a_state_dir_that_is_a_file_names_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     verb: list[str]) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert main([*verb, "--state-dir", str(a_file)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"--state-dir: '{a_file}' is a file, not a directory (valid: a directory" in err
    assert "Traceback" not in err and a_file.read_text() == "x"
