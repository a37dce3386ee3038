"""A Target that found or started the local daemon follows it when it comes back on another port:
its clients, a FileShare made before, and the next call of each, work without a new Target."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from horovod_batchai import FileShare, Target, Workspace
from horovod_batchai.local import ensure_running, find_running, stop_daemon


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        try:  # a daemon started by this process is our child: reap it, or it lingers as a zombie
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"process {pid} did not die")


@pytest.mark.parametrize("restarted_by", ["someone else", "the target"])
def test_a_target_follows_its_daemon_to_a_new_port(tmp_path: Path, restarted_by: str) -> None:
    state = tmp_path / "state"
    source = tmp_path / "hello.txt"
    source.write_text("hello")
    try:
        with Target.local(state_dir=state) as target:
            workspace = Workspace.create(target, "rg", "ws", location="eastus")
            share = FileShare.create(target, "rg", "account1", "share", location="eastus")
            share.upload_file(source, "hello.txt")
            first = find_running(state)
            assert first is not None and first.endpoint == target.management_endpoint

            _kill(first.pid)
            if restarted_by == "someone else":
                second = ensure_running(state)
                assert second.endpoint != first.endpoint
            # the same objects, no new Target: management and data plane calls reach the new daemon
            assert [w.name for w in Workspace.list(target)] == ["ws"]
            assert workspace.list_experiments() == []
            assert [f.name for f in share.list("")] == ["hello.txt"]
            assert share.download_file("hello.txt", tmp_path / "out").read_text() == "hello"
            now = find_running(state)
            assert now is not None and now.pid != first.pid and target.management_endpoint == now.endpoint
            if restarted_by == "someone else":
                assert now.pid == second.pid  # found, not started again
    finally:
        stop_daemon(state)
