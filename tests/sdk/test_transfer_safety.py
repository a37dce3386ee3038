"""No reader sees a torn file, nothing leaves the uploaded tree, and Ctrl-C stops a transfer at once.

Uploads are written under a temporary name and renamed into place when complete (Rename File);
these tests interrupt them every way a user can -- an exception from the progress callback,
Ctrl-C on a directory transfer in another process -- and look at the share and the local disk."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from horovod_batchai import FileShare, StoppedError
from horovod_batchai._shared.fileshare import UPLOAD_TEMP_MARK
from horovod_batchai.local import LocalService
from sdk_support import ACCOUNT, RG
from service_support import interruptible

MIB = 1024 * 1024


def _share_files(service: LocalService, share: FileShare) -> dict[str, int]:
    assert service.context is not None
    root = service.context.files_root / ACCOUNT / share.share_name
    return {p.relative_to(root).as_posix(): p.stat().st_size for p in root.rglob("*") if p.is_file()}


class Interrupted(BaseException):
    """What Ctrl-C is to the code under test: not an Exception."""


def test_an_interrupted_upload_leaves_the_old_file_and_no_temporary_one(service: LocalService, share: FileShare,
                                                                        tmp_path: Path) -> None:
    old, new = tmp_path / "old.bin", tmp_path / "new.bin"
    old.write_bytes(b"the previous model")
    new.write_bytes(os.urandom(12 * MIB))
    share.upload_file(old, "cifar/model.bin", progress=False)

    def give_up(done: int, total: int) -> None:
        if done >= 4 * MIB:
            raise Interrupted

    for path in ("cifar/model.bin", "cifar/fresh.bin"):
        with pytest.raises(Interrupted):
            share.upload_file(new, path, progress=give_up, max_concurrency=1)
    assert _share_files(service, share) == {"cifar/model.bin": len(b"the previous model")}
    assert [i.name for i in share.list("cifar")] == ["model.bin"]


def test_a_reader_never_sees_the_name_before_the_upload_is_complete(share: FileShare, tmp_path: Path) -> None:
    source = tmp_path / "weights.bin"
    source.write_bytes(os.urandom(10 * MIB))
    share.create_directory("cifar")
    seen: list[list[str]] = []

    def look(done: int, total: int) -> None:  # runs between the upload's ranges
        seen.append([i.name for i in share.list("cifar")])

    def download_meanwhile(done: int, total: int) -> None:
        look(done, total)
        if len(seen) == 2:  # a directory download during the upload takes what is complete only
            copied = share.download_directory("cifar", tmp_path / "copy", progress=False)
            assert [p.name for p in copied] == []

    share.upload_file(source, "cifar/weights.bin", progress=download_meanwhile, max_concurrency=1)
    assert len(seen) >= 3
    for names in seen:
        assert "weights.bin" not in names
        assert len(names) == 1 and names[0].startswith(".weights.bin" + UPLOAD_TEMP_MARK)
    assert [(i.name, i.size) for i in share.list("cifar")] == [("weights.bin", 10 * MIB)]


def test_upload_directory_keeps_to_its_tree(service: LocalService, share: FileShare, tmp_path: Path) -> None:
    secret = tmp_path / "token-secret"
    secret.write_bytes(b"never upload me")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "x.txt").write_bytes(b"outside")
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "model.h5").write_bytes(b"weights")
    (tree / "sub" / "notes.txt").write_bytes(b"notes")
    (tree / "latest.h5").symlink_to("model.h5")                  # inside the tree: its content is sent
    (tree / "sub" / "leak").symlink_to(secret)                   # out of the tree: skipped
    (tree / "sub" / "sneaky").symlink_to("../../token-secret")   # relative, still out: skipped
    (tree / "dangling").symlink_to("gone.h5")                    # broken: skipped
    (tree / "linked-dir").symlink_to(outside, target_is_directory=True)
    os.mkfifo(tree / "pipe")                                     # would block a reader forever
    with pytest.warns(UserWarning) as caught:
        uploaded = share.upload_directory(tree, "up", progress=False)
    messages = [str(w.message) for w in caught]
    for name, why in (("leak", "out of the uploaded tree"), ("sneaky", "out of the uploaded tree"),
                      ("dangling", "broken"), ("linked-dir", "directory"), ("pipe", "FIFO")):
        assert any(name in m and why in m for m in messages), (name, messages)
    assert sorted(i.path for i in uploaded) == ["up/latest.h5", "up/model.h5", "up/sub/notes.txt"]
    files = _share_files(service, share)
    assert sorted(files) == ["up/latest.h5", "up/model.h5", "up/sub/notes.txt"]
    root = service.context.files_root / ACCOUNT / share.share_name  # type: ignore[union-attr]
    assert (root / "up" / "latest.h5").read_bytes() == b"weights"
    assert not any(b"never upload me" in p.read_bytes() for p in root.rglob("*") if p.is_file())


def test_a_stop_deletes_the_temporary_files_of_uploads_still_busy_after_the_grace(service: LocalService,
                                                                                    share: FileShare,
                                                                                    tmp_path: Path) -> None:
    """The caller's thread gives up on a task the stop grace did not see finish (a slow range on a
    loaded machine) and must delete its temporary file itself: the process may exit under it."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(2):
        (tree / f"part-{i}.bin").write_bytes(os.urandom(8 * MIB))
    stop, release = threading.Event(), threading.Event()

    def busy(done: int, total: int) -> None:  # a range is in: stop, and stay busy past the grace
        if done:
            stop.set()
            release.wait(10)

    before = set(threading.enumerate())
    with pytest.raises(StoppedError):
        share.upload_directory(tree, "big", progress=busy, max_concurrency=1, stop=stop)
    assert not [p for p in _share_files(service, share) if UPLOAD_TEMP_MARK in p]  # deleted before the raise
    release.set()
    for thread in set(threading.enumerate()) - before:
        if thread.name.startswith("transfer-"):
            thread.join(30)
    assert _share_files(service, share) == {}


_CHILD = """
import sys
from pathlib import Path
from horovod_batchai import FileShare, Target
state, direction, local, remote = sys.argv[1:5]
share = FileShare.get(Target.local(state_dir=state), {rg!r}, {account!r}, "myshare")
def started(done, total):
    if done and not getattr(started, "said", False):
        started.said = True
        print("started", flush=True)
if direction == "up":
    share.upload_directory(local, remote, progress=started)
else:
    share.download_directory(remote, local, progress=started)
print("finished", flush=True)
""".format(rg=RG, account=ACCOUNT)


def _interrupt(service: LocalService, *args: str) -> tuple[float, str]:
    """Run a transfer in a child process, Ctrl-C it once bytes flow; (seconds to exit, its stdout)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(service.state_dir), *args], preexec_fn=interruptible,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip() == "started", (line, child.stderr.read() if child.stderr else "")
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        child.wait(timeout=30)
        return time.monotonic() - sent, child.stdout.read()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def _tree_of_parts(tree: Path, count: int) -> Path:
    """A directory of ``count`` files of 16 MiB each (random bytes): big enough to be mid-transfer
    when Ctrl-C comes."""
    tree.mkdir()
    for i in range(count):
        (tree / f"part-{i:02d}.bin").write_bytes(os.urandom(16 * MIB))
    return tree


@pytest.mark.serial
def test_ctrl_c_stops_a_directory_upload_within_a_second(service: LocalService, share: FileShare,
                                                          tmp_path: Path) -> None:
    tree = _tree_of_parts(tmp_path / "tree", 12)
    took, out = _interrupt(service, "up", str(tree), "big")
    assert "finished" not in out
    assert took < 1.5, f"the upload took {took:.2f}s to stop after Ctrl-C"
    files = _share_files(service, share)
    assert not [p for p in files if UPLOAD_TEMP_MARK in p], files
    assert all(size == 16 * MIB for size in files.values()), files  # complete files only
    assert len(files) < 12


@pytest.mark.serial
def test_ctrl_c_stops_a_directory_download_within_a_second(service: LocalService, share: FileShare,
                                                            tmp_path: Path) -> None:
    tree = _tree_of_parts(tmp_path / "tree", 8)
    share.upload_directory(tree, "big", progress=False)
    dest = tmp_path / "copy"
    took, out = _interrupt(service, "down", str(dest), "big")
    assert "finished" not in out
    assert took < 1.5, f"the download took {took:.2f}s to stop after Ctrl-C"
    left = [p for p in dest.rglob("*") if p.is_file()]
    assert all(p.stat().st_size == 16 * MIB and not p.name.endswith(".partial") for p in left), left
    assert len(left) < 8
