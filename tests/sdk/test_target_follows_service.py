"""A Target that found or started the local daemon follows it when it comes back on another port:
its clients, a FileShare made before, and the next call of each, work without a new Target."""
from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path
from typing import Optional

import pytest

from horovod_batchai import FileShare, Target, Workspace
from horovod_batchai.local import ensure_running, find_running, stop_daemon


def _kill(state: Path, pid: int) -> None:
    """SIGKILL, and no reaping: the daemon a Target started is this process's child, and nobody
    reaps it in a user's program either, so it lingers as a zombie (which still answers kill 0).
    Returns once its port is closed."""
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while find_running(state) is not None:
        assert time.monotonic() < deadline, f"process {pid} did not die"
        time.sleep(0.05)


def _hold(endpoint: str) -> Optional[socket.socket]:
    """Bind the port of ``endpoint``, which its killed daemon freed, without listening (a
    connection there is refused, as after the kill); None when another process took it first
    (it is taken either way)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # its old connections may linger in TIME_WAIT
    try:
        sock.bind(("127.0.0.1", int(endpoint.rsplit(":", 1)[1])))
    except OSError:
        sock.close()
        return None
    return sock


@pytest.mark.parametrize("restarted_by", ["someone else", "the target"])
def test_a_target_follows_its_daemon_to_a_new_port(tmp_path: Path, restarted_by: str) -> None:
    state = tmp_path / "state"
    source = tmp_path / "hello.txt"
    source.write_text("hello")
    held: Optional[socket.socket] = None
    try:
        with Target.local(state_dir=state) as target:
            workspace = Workspace.create(target, "rg", "ws", location="eastus")
            share = FileShare.create(target, "rg", "account1", "share", location="eastus")
            share.upload_file(source, "hello.txt")
            first = find_running(state)
            assert first is not None and first.endpoint == target.management_endpoint

            _kill(state, first.pid)
            # the port it had stays taken (as another process may take it): the daemon comes back elsewhere
            held = _hold(first.endpoint)
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
        if held is not None:
            held.close()
