"""Work in flight rides over a daemon killed with SIGKILL and back within seconds: an upload and a
long-running operation's poller complete; a Target in another process follows the new daemon;
``stop`` sees an exited daemon at once; a target whose service stays down says how to start it."""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from horovod_batchai import FileShare, LocalServiceDownError, Target, Workspace
from horovod_batchai.local import ServiceInfo, find_running, stop_daemon
from sdk_support import SSH_KEY

_HOLD = ("import sys, time\n"
         "from horovod_batchai.local import ensure_running\n"
         "info = ensure_running(sys.argv[1])\n"
         "print(info.pid, flush=True)\n"
         "time.sleep(600)\n")


@pytest.fixture
def held_daemon(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A daemon started by another process that then sleeps and never reaps it (as a notebook
    kernel that started it does): killed, it stays a zombie. Yields (state dir, daemon pid)."""
    state = tmp_path / "state"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(state)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        yield state, int(holder.stdout.readline())
    finally:
        holder.kill()
        holder.wait()
        stop_daemon(state)


def _restart_from_another_process(state: Path, after: float) -> threading.Thread:
    def restart() -> None:
        time.sleep(after)
        subprocess.run([sys.executable, "-m", "horovod_batchai.local", "start", "--state-dir", str(state)],
                       check=True, capture_output=True)
    thread = threading.Thread(target=restart)
    thread.start()
    return thread


def test_an_upload_in_flight_completes_over_a_kill_and_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    source = tmp_path / "big.bin"
    with open(source, "wb") as fh:
        for i in range(48):
            fh.write(hashlib.sha256(str(i).encode()).digest() * (1024 * 1024 // 32))
    sent = threading.Event()
    try:
        with Target.local(state_dir=state) as target:
            share = FileShare.create(target, "rg", "account1", "share", location="eastus")
            first = find_running(state)
            assert first is not None
            outcome: list[object] = []

            def upload() -> None:
                try:
                    outcome.append(share.upload_file(source, "data/big.bin", max_concurrency=2,
                                                     progress=lambda done, total: done >= 4 << 20 and sent.set()))
                except BaseException as err:  # noqa: BLE001 -- the test reports it
                    outcome.append(err)

            uploading = threading.Thread(target=upload)
            uploading.start()
            assert sent.wait(60), "the upload never got going"
            assert not outcome, "the upload ended before the kill"
            os.kill(first.pid, signal.SIGKILL)  # not reaped here: the target notices on its own
            restarter = _restart_from_another_process(state, after=1.0)
            uploading.join(120)
            restarter.join(60)
            assert len(outcome) == 1 and not isinstance(outcome[0], BaseException), outcome
            now = find_running(state)
            assert now is not None and now.pid != first.pid
            back = share.download_file("data/big.bin", tmp_path / "back.bin")
            assert hashlib.md5(back.read_bytes()).digest() == hashlib.md5(source.read_bytes()).digest()
            # nothing left under a temporary name
            assert [item.name for item in share.list("data")] == ["big.bin"]
    finally:
        stop_daemon(state)


def test_a_long_running_operation_completes_over_a_kill_and_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    try:
        with Target.local(state_dir=state) as target:
            workspace = Workspace.create(target, "rg", "ws", location="eastus")
            first = find_running(state)
            assert first is not None
            poller = workspace.begin_create_cluster("c1", vm_size="Standard_NC6", target_node_count=0,
                                                    admin_user_name="demo", ssh_public_key=SSH_KEY)
            # the service asked for a poll after a second: the poll finds the daemon gone
            os.kill(first.pid, signal.SIGKILL)
            assert not poller.done()
            restarter = _restart_from_another_process(state, after=1.0)
            cluster = poller.result(timeout=120)
            restarter.join(60)
            assert cluster.name == "c1" and [c.name for c in workspace.list_clusters()] == ["c1"]
            assert find_running(state).pid != first.pid
    finally:
        stop_daemon(state)


_CALLER = ("import sys, time\n"
           "from horovod_batchai import Target, Workspace\n"
           "with Target.local(state_dir=sys.argv[1]) as target:\n"
           "    Workspace.create(target, 'rg', 'ws', location='eastus')\n"
           "    print('ready', flush=True)\n"
           "    sys.stdin.readline()\n"
           "    started = time.monotonic()\n"
           "    names = [w.name for w in Workspace.list(target)]\n"
           "    print(names, round(time.monotonic() - started, 1), flush=True)\n")


def test_a_target_in_another_process_follows_a_restarted_daemon(held_daemon: tuple[Path, int]) -> None:
    state, pid = held_daemon
    caller = subprocess.Popen([sys.executable, "-c", _CALLER, str(state)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert caller.stdout is not None and caller.stdin is not None
        assert caller.stdout.readline().strip() == "ready"
        os.kill(pid, signal.SIGKILL)  # its parent sleeps: it stays a zombie
        caller.stdin.write("\n")
        caller.stdin.flush()
        names, seconds = caller.stdout.readline().rsplit(" ", 1)
        assert names == "['ws']"
        assert float(seconds) < 30  # the time it takes to start a daemon on a loaded machine
        assert caller.wait(60) == 0
        now = find_running(state)
        assert now is not None and now.pid != pid
    finally:
        caller.kill()
        caller.wait()


def test_stop_sees_an_exited_daemon_at_once(held_daemon: tuple[Path, int]) -> None:
    state, pid = held_daemon
    started = time.monotonic()
    assert stop_daemon(state) is True  # exits on SIGTERM; its parent never reaps it
    assert time.monotonic() - started < 15
    assert find_running(state) is None
    with open(f"/proc/{pid}/stat") as fh:
        assert fh.read().rsplit(")", 1)[1].split()[0] == "Z"  # still a zombie, and known to be gone
    started = time.monotonic()
    assert stop_daemon(state) is False
    assert time.monotonic() - started < 1


def test_a_target_given_a_service_that_stays_down_says_how_to_start_it(tmp_path: Path) -> None:
    from horovod_batchai._places.local_endpoint import RESTART_PATIENCE_S
    import certifi
    gone = ServiceInfo("https://127.0.0.1:9", Path(certifi.where()), tmp_path, 0)
    with Target.local(service=gone) as target:
        started = time.monotonic()
        with pytest.raises(LocalServiceDownError, match="local service .* is down: 127.0.0.1:9 refused connections "
                                                        "for 10s; start it again") as info:
            Workspace.list(target)
        assert RESTART_PATIENCE_S <= time.monotonic() - started < RESTART_PATIENCE_S + 10
        assert isinstance(info.value, ConnectionError)


def test_a_failed_uploads_temporary_file_is_deleted_once_the_service_is_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from horovod_batchai._places import local_endpoint as _local_endpoint
    from horovod_batchai.local import LocalService
    monkeypatch.setattr(_local_endpoint, "RESTART_PATIENCE_S", 2.0)
    state = tmp_path / "state"
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(16 << 20))
    service = LocalService(state).start()
    with service, Target.local(service=service) as target:
        share = FileShare.create(target, "rg", "account1", "share", location="eastus")

        stopped: list[float] = []

        def stop_midway(done: int, total: int) -> None:
            if done >= 4 << 20 and service.context is not None:
                service.stop()  # down for good, as far as this upload can tell
                stopped.append(time.monotonic())

        with pytest.raises(LocalServiceDownError, match="refused connections for 2s; start it again "
                                                        r"\(service.start\(\)\) and try again: this target follows it"):
            share.upload_file(source, "big.bin", max_concurrency=1, progress=stop_midway)
        # the patience is waited out once: the temporary file is not asked for again while the service is down
        assert time.monotonic() - stopped[0] < 2.0 * 1.75
        warning = [r.getMessage() for r in caplog.records if "could not delete the unfinished upload" in r.getMessage()]
        assert len(warning) == 1 and "this FileShare deletes it the next time it reaches the share" in warning[0]
        assert "the local service deletes it after two minutes" in warning[0]
        left = [p.name for p in (state / "files" / "account1" / "share").iterdir()]
        assert len(left) == 1 and ".big.bin.uploading-" in left[0]
        service.start()  # back, on another port: the target follows it
        try:
            assert share.list() == []
            assert list((state / "files" / "account1" / "share").iterdir()) == []
        finally:
            service.stop()
