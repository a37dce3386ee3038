"""Every problem the command line reports is one line on stderr: argparse's own mistakes, warnings
of the SDK a command calls, and a state directory the local service cannot write."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from horovod_batchai.cli import EXIT_FAILED, EXIT_USAGE, main

from cli_support import STORAGE, CliRun

Cli = Callable[..., CliRun]


def test_a_bad_option_value_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["--state-dir", str(tmp_path / "state"), "job", "create", "-g", "rg", "-w", "ws", "-e", "exp",
                 "-n", "j", "-c", "cluster", "-f", "job.json", "--node-count", "0"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert err.splitlines() == ["horovod-batchai job create: error: argument --node-count: expected a number >= 1, "
                                "got 0 (see horovod-batchai job create --help)"]


def test_a_skipped_file_of_a_directory_upload_is_one_line(cli: Cli, tmp_path: Path) -> None:
    assert cli("share", "create", *STORAGE).code == 0
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "train.py").write_text("print('hi')\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("not part of the tree\n")
    (tree / "link.txt").symlink_to(outside)  # a link out of the tree: skipped, with a warning
    up = cli("file", "upload", *STORAGE, "--source", str(tree), "--path", "code", "-o", "json")
    assert up.code == 0, up.err
    [line] = up.err.splitlines()
    assert line.startswith("horovod-batchai: warning: upload_directory: skipped ") and "link.txt" in line
    assert ".py:" not in up.err and "UserWarning" not in up.err  # no source file, line or category
    assert [item["path"] for item in up.json() if item["type"] == "file"] == ["code/train.py"]


@pytest.mark.skipif(os.geteuid() != 0, reason="a read-only bind mount needs root")
def test_local_start_on_a_read_only_state_directory_says_what_to_do(capsys: pytest.CaptureFixture[str],
                                                                      tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    done = subprocess.run(["mount", "--bind", str(state), str(state)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here ({done.stderr.strip()})")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(state)], check=True)
        code = main(["--state-dir", str(state), "local", "start"])
    finally:
        subprocess.run(["umount", "-l", str(state)], check=True)
    out, err = capsys.readouterr()
    assert code == EXIT_FAILED and out == ""
    [line] = err.splitlines()
    assert line.startswith(f"horovod-batchai: error: cannot start the local service: its state directory {state} "
                           "is on a read-only file system")
    assert "--state-dir" in line and "Errno" not in line
