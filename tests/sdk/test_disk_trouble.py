"""A full or read-only disk under the local service: every error names the condition and the path --
in the SDK, in the command-line tool and in a job's errors and execution log -- the service stays
up, works again once the disk does, and its log loses whole lines at worst, never a torn one.

The disks are real: a small tmpfs filled to the last byte, and a read-only bind mount. Mounting
needs root; elsewhere these tests are skipped, saying so.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from horovod_batchai import FileShare, HorovodJob, JobFailedError, ResourceError, Target, Workspace
from horovod_batchai.local import find_running, stop_daemon
from sdk_support import SSH_KEY

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs or a read-only bind mount needs root")

LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ \S+: |\d+ log line\(s\) were dropped: )")


def _mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here ({done.stderr.strip()}): these tests need root in a system that allows mounts")


@contextmanager
def _tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where))
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


@contextmanager
def _read_only(where: Path) -> Iterator[None]:
    """``where`` read-only (a read-only bind mount of itself) for the length of the block."""
    _mount("--bind", str(where), str(where))
    try:
        _mount("-o", "remount,bind,ro", str(where))
        yield
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def _fill(disk: Path) -> Path:
    """Write to ``disk`` until no byte is left; returns the file that holds the space."""
    filler = disk / "filler"
    with open(filler, "wb") as fh:
        chunk = b"\0" * (1 << 20)
        try:
            while True:
                fh.write(chunk)
                fh.flush()
        except OSError:
            pass
        try:
            while True:  # the last bytes, a small write at a time
                os.write(fh.fileno(), b"\0" * 512)
        except OSError:
            pass
    return filler


def _cli(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).parent / "horovod-batchai"), "--state-dir", str(state), *args],
                          capture_output=True, text=True, timeout=300)


def _check_log_whole(state: Path) -> str:
    text = (state / "service.log").read_text()
    torn = [line for line in text.splitlines() if line and not LOG_LINE.match(line)
            and not line.startswith(("  ", "Traceback", "Management endpoint", "Files endpoint", "CA certificate",
                                     "State directory", "Blob endpoint", "Node runtime", "MLflow tracking"))]
    assert not torn, torn
    return text


@needs_root
def test_a_full_disk_is_said_in_the_sdk_and_the_cli_and_the_service_recovers(tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "disk", "48m") as disk:
        state = disk / "state"
        source = tmp_path / "model.bin"
        source.write_bytes(os.urandom(1 << 20))
        try:
            with Target.local(state_dir=state) as target:
                share = FileShare.create(target, "rg", "account1", "share", location="eastus")
                share.upload_file(source, "before.bin")
                filler = _fill(disk)

                with pytest.raises(ResourceError) as info:
                    share.upload_file(source, "full.bin")
                message = str(info.value)
                assert "ShareSizeLimitReached" in message and "no space left on the device" in message
                assert str(state) in message

                cli = _cli(state, "file", "upload", "-g", "rg", "--account-name", "account1", "--share-name", "share",
                           "--source", str(source), "--path", "cli.bin")
                assert cli.returncode != 0 and "Traceback" not in cli.stderr
                assert "ShareSizeLimitReached" in cli.stderr and "no space left on the device" in cli.stderr
                assert str(state) in cli.stderr

                assert find_running(state) is not None  # still up, still answering
                assert [item.name for item in share.list()] == ["before.bin"]
                filler.unlink()
                share.upload_file(source, "after.bin")  # space again: it works again
                assert [item.name for item in share.list()] == ["after.bin", "before.bin"]
            log = _check_log_whole(state)
            assert f"failed: no space left on the device: {state}" in log  # or dropped, whole: see tests/local/core
        finally:
            stop_daemon(state)


@needs_root
def test_a_read_only_share_is_said_in_the_sdk_and_the_cli_and_the_service_recovers(tmp_path: Path) -> None:
    state = tmp_path / "state"
    source = tmp_path / "model.bin"
    source.write_bytes(os.urandom(1 << 20))
    try:
        with Target.local(state_dir=state) as target:
            share = FileShare.create(target, "rg", "account1", "share", location="eastus")
            share_dir = state / "files" / "account1" / "share"
            with _read_only(share_dir):
                with pytest.raises(ResourceError) as info:
                    share.upload_file(source, "ro.bin")
                message = str(info.value)
                assert "ReadOnlyFileSystem" in message and f"the file system is read-only: {share_dir}" in message
                with pytest.raises(ResourceError, match=f"the file system is read-only: {share_dir}/newdir"):
                    share.create_directory("newdir")

                cli = _cli(state, "file", "upload", "-g", "rg", "--account-name", "account1", "--share-name", "share",
                           "--source", str(source), "--path", "cli.bin")
                assert cli.returncode != 0 and "Traceback" not in cli.stderr
                assert "ReadOnlyFileSystem" in cli.stderr and f"the file system is read-only: {share_dir}" in cli.stderr
                assert find_running(state) is not None and share.list() == []
            share.upload_file(source, "rw.bin")  # writable again: it works again
            assert [item.name for item in share.list()] == ["rw.bin"]
        _check_log_whole(state)
    finally:
        stop_daemon(state)


def test_a_state_database_that_cannot_be_written_is_a_507_naming_it(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite keeps its files open, so a disk that fills under it is the one way its writes fail;
    what SQLite then raises is answered as such."""
    import sqlite3
    from horovod_batchai.local import LocalService
    from horovod_batchai.local.core.store import Store
    with LocalService(tmp_path / "state") as service, Target.local(service=service) as target:
        workspace = Workspace.create(target, "rg", "ws", location="eastus")

        def full(*args: object, **kwargs: object) -> None:
            raise sqlite3.OperationalError("database or disk is full")
        monkeypatch.setattr(Store, "put", full)
        with pytest.raises(ResourceError) as info:
            workspace.create_experiment("exp")
        assert info.value.status_code == 507 and "InsufficientStorage" in str(info.value)
        assert f"no space left on the device: {tmp_path / 'state' / 'state.db'}" in str(info.value)


@needs_root
@pytest.mark.slow
@pytest.mark.parametrize("trouble", ["full", "read-only"])
def test_a_job_whose_run_directory_cannot_be_written_fails_saying_why(tmp_path: Path, trouble: str) -> None:
    from horovod_batchai.local.runner.paths import digest
    state = tmp_path / "state"
    script = tmp_path / "hello.py"
    script.write_text("print('hello')\n")
    try:
        with Target.local(state_dir=state) as target:
            workspace = Workspace.create(target, "rg", "ws", location="eastus")
            share = FileShare.create(target, "rg", "account1", "share", location="eastus")
            share.upload_file(script, "scripts/hello.py")
            cluster = workspace.create_cluster("c1", vm_size="Standard_NC6", target_node_count=1,
                                               admin_user_name="demo", ssh_public_key=SSH_KEY)
            cluster.wait_until_ready(timeout=300)
            experiment = workspace.create_experiment("exp")
            # where the job's runs keep their private files (its execution log is on the share)
            runs = state / "jobs" / digest(f"{experiment.id}/jobs/job1") / "runs"
            runs.mkdir(parents=True)
            spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/share/scripts/hello.py", mounts=[share.mount()])
            if trouble == "full":
                with _tmpfs(runs, "1m") as disk:
                    _fill(disk)
                    job = experiment.submit("job1", spec, cluster=cluster)
                    with pytest.raises(JobFailedError) as info:
                        job.wait(timeout=300)
            else:
                with _read_only(runs):
                    job = experiment.submit("job1", spec, cluster=cluster)
                    with pytest.raises(JobFailedError) as info:
                        job.wait(timeout=300)
            said = "no space left on the device: " if trouble == "full" else "the file system is read-only: "
            code = "InsufficientStorage" if trouble == "full" else "StorageReadOnly"
            assert [e.code for e in info.value.errors] == [code]
            message = info.value.errors[0].message
            assert f"could not run the job: {said}{state}" in message and message in str(info.value)
            assert message in "".join(job.stream("execution.log"))  # the job's execution log says it too
            cli = _cli(state, "job", "show", "-g", "rg", "-w", "ws", "-e", "exp", "-n", "job1", "-o", "json")
            assert cli.returncode == 0 and code in cli.stdout and f"{said}{state}" in cli.stdout
    finally:
        stop_daemon(state)
