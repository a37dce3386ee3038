"""A container "mounted" as a mirror directory, synchronised both ways with a real Azurite."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Iterator

import pytest
from azure.storage.blob import ContainerClient

from horovod_batchai.local.storage.accounts import new_key
from horovod_batchai.local.blob.azurite import Azurite, find_azurite
from horovod_batchai.local.blob.mirror import ContainerMirror
from horovod_batchai.local.core.tls import ensure_certificate

from blob_support import blob_client, needs_node

pytestmark = needs_node
KEY = new_key()


@pytest.fixture(scope="module")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Azurite, Path]]:
    cert, key = ensure_certificate(tmp_path_factory.mktemp("tls"))
    with Azurite(find_azurite(), cert=cert, key=key, location=tmp_path_factory.mktemp("azurite")) as server:
        server.start({"acct1": [KEY]})
        yield server, cert


@pytest.fixture
def container(azurite: tuple[Azurite, Path], request: pytest.FixtureRequest) -> Iterator[ContainerClient]:
    server, cert = azurite
    name = "c" + str(abs(hash(request.node.name)) % 10**12)
    with blob_client(server.account_url("acct1"), "acct1", KEY, cert) as blobs:
        client = blobs.create_container(name)
        yield client
        blobs.delete_container(name)


def mirror_of(container: ContainerClient, tmp_path: Path) -> ContainerMirror:
    return ContainerMirror(container, tmp_path / "files", tmp_path / "meta" / "record.json")


def touch_later(path: Path, data: bytes) -> None:
    """Rewrite a file so that its modification time surely moves (same-size rewrites included)."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_bytes(data)
    if path.stat().st_mtime_ns == before:
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))


def test_pull_downloads_the_container_as_files_and_directories(container: ContainerClient, tmp_path: Path) -> None:
    container.upload_blob("train.py", b"print('hi')\n")
    container.upload_blob("data/cifar/batch_1.bin", b"\x01" * 3000)
    mirror = mirror_of(container, tmp_path)
    counts = mirror.pull()
    assert counts.downloaded == 2
    assert (tmp_path / "files" / "train.py").read_bytes() == b"print('hi')\n"
    assert (tmp_path / "files" / "data" / "cifar" / "batch_1.bin").stat().st_size == 3000
    assert mirror.pull().downloaded == 0, "nothing changed, nothing to download"
    assert mirror.push().uploaded == 0, "downloaded files are not changes to upload"
    assert not (tmp_path / "files" / "record.json").exists(), "the record stays out of the job's directory"


def test_push_uploads_changes_and_deletions(container: ContainerClient, tmp_path: Path) -> None:
    mirror = mirror_of(container, tmp_path)
    mirror.pull()
    out = tmp_path / "files" / "outputs"
    out.mkdir()
    (out / "model.h5").write_bytes(b"weights-1")
    (out / "log.txt").write_bytes(b"epoch 1\n")
    assert mirror.push().uploaded == 2
    assert container.download_blob("outputs/model.h5").readall() == b"weights-1"
    touch_later(out / "model.h5", b"weights-2")
    (out / "log.txt").unlink()
    counts = mirror.push()
    assert (counts.uploaded, counts.deleted_remote) == (1, 1)
    assert container.download_blob("outputs/model.h5").readall() == b"weights-2"
    assert [b.name for b in container.list_blobs()] == ["outputs/model.h5"]


def test_changes_made_in_the_container_reach_the_directory(container: ContainerClient, tmp_path: Path) -> None:
    container.upload_blob("a.txt", b"one")
    container.upload_blob("b.txt", b"bee")
    mirror = mirror_of(container, tmp_path)
    mirror.pull()
    container.upload_blob("a.txt", b"two", overwrite=True)
    container.delete_blob("b.txt")
    container.upload_blob("new/c.txt", b"sea")
    counts = mirror.pull()
    assert (counts.downloaded, counts.deleted_local) == (2, 1)
    files = tmp_path / "files"
    assert (files / "a.txt").read_bytes() == b"two"
    assert not (files / "b.txt").exists()
    assert (files / "new" / "c.txt").read_bytes() == b"sea"


def test_a_file_a_job_keeps_writing_is_not_replaced_by_its_own_upload(container: ContainerClient,
                                                                      tmp_path: Path) -> None:
    mirror = mirror_of(container, tmp_path)
    mirror.pull()
    stdout = tmp_path / "files" / "stdout.txt"
    with open(stdout, "ab", buffering=0) as job:  # as a job's stdout: one open file, appended to
        job.write(b"first\n")
        assert mirror.push().uploaded == 1
        inode = stdout.stat().st_ino
        assert mirror.pull().downloaded == 0, "what was just uploaded is no change in the container"
        assert stdout.stat().st_ino == inode, "the file the job writes to is still the mirror's"
        job.write(b"second\n")
    assert mirror.push().uploaded == 1
    assert container.download_blob("stdout.txt").readall() == b"first\nsecond\n"


def test_a_local_write_during_a_download_wins(container: ContainerClient, tmp_path: Path) -> None:
    container.upload_blob("log.txt", b"v1")
    mirror = mirror_of(container, tmp_path)
    mirror.pull()
    container.upload_blob("log.txt", b"v2 from outside", overwrite=True)
    log_file = tmp_path / "files" / "log.txt"
    download = container.download_blob

    def download_while_the_job_writes(*args, **kwargs):  # the job appends after pull() looked
        answer = download(*args, **kwargs)
        with open(log_file, "ab") as job:
            job.write(b" and the job's line")
        return answer

    container.download_blob = download_while_the_job_writes  # type: ignore[method-assign]
    assert mirror.pull().downloaded == 0
    del container.download_blob
    assert log_file.read_bytes() == b"v1 and the job's line"
    mirror.push()
    assert container.download_blob("log.txt").readall() == b"v1 and the job's line"


def test_a_file_written_while_a_pull_downloads_is_not_deleted(container: ContainerClient, tmp_path: Path) -> None:
    container.upload_blob("a.txt", b"a1")
    container.upload_blob("b.txt", b"b1")
    mirror = mirror_of(container, tmp_path)
    mirror.pull()
    container.upload_blob("a.txt", b"a2", overwrite=True)
    container.delete_blob("b.txt")
    b_file = tmp_path / "files" / "b.txt"
    download = container.download_blob

    def download_while_the_job_writes(*args, **kwargs):  # a.txt downloads; the job appends to b.txt
        answer = download(*args, **kwargs)
        with open(b_file, "ab") as job:
            job.write(b" and the job's line")
        return answer

    container.download_blob = download_while_the_job_writes  # type: ignore[method-assign]
    counts = mirror.pull()
    del container.download_blob
    assert (counts.downloaded, counts.deleted_local) == (1, 0)
    assert b_file.read_bytes() == b"b1 and the job's line"
    mirror.push()
    assert container.download_blob("b.txt").readall() == b"b1 and the job's line"


def test_a_change_on_both_sides_keeps_the_local_one(container: ContainerClient, tmp_path: Path) -> None:
    container.upload_blob("result.txt", b"base")
    container.upload_blob("notes.txt", b"base")
    mirror = mirror_of(container, tmp_path)
    mirror.pull()
    files = tmp_path / "files"
    touch_later(files / "result.txt", b"local")
    container.upload_blob("result.txt", b"remote", overwrite=True)
    touch_later(files / "notes.txt", b"local notes")
    container.delete_blob("notes.txt")
    mirror.pull()
    assert (files / "result.txt").read_bytes() == b"local"
    assert (files / "notes.txt").read_bytes() == b"local notes"
    mirror.push()
    assert container.download_blob("result.txt").readall() == b"local"
    assert container.download_blob("notes.txt").readall() == b"local notes"


def test_a_local_deletion_does_not_remove_a_blob_changed_meanwhile(container: ContainerClient, tmp_path: Path) -> None:
    container.upload_blob("shared.txt", b"v1")
    mirror = mirror_of(container, tmp_path)
    mirror.pull()
    (tmp_path / "files" / "shared.txt").unlink()
    container.upload_blob("shared.txt", b"v2", overwrite=True)
    assert mirror.push().deleted_remote == 0
    assert container.download_blob("shared.txt").readall() == b"v2"
    mirror.pull()
    assert (tmp_path / "files" / "shared.txt").read_bytes() == b"v2"


def test_names_that_cannot_be_paths_are_skipped_and_reported(container: ContainerClient, tmp_path: Path) -> None:
    container.upload_blob("logs", b"a file named like a directory")
    container.upload_blob("logs/epoch1.txt", b"inside")
    container.upload_blob("ok.txt", b"fine")
    mirror = mirror_of(container, tmp_path)
    mirror.pull()
    files = tmp_path / "files"
    assert (files / "logs").is_file() and (files / "ok.txt").is_file()
    assert mirror.skipped == ["logs/epoch1.txt"]


def test_the_record_survives_a_new_mirror_object(container: ContainerClient, tmp_path: Path) -> None:
    container.upload_blob("big.bin", b"\x00" * 100_000)
    mirror_of(container, tmp_path).pull()
    again = mirror_of(container, tmp_path)  # as after a service restart
    assert again.pull().downloaded == 0 and again.push().uploaded == 0
    (tmp_path / "files" / "big.bin").unlink()
    assert again.push().deleted_remote == 1
    assert list(container.list_blobs()) == []


def test_held_mirrors_are_kept_in_step(container: ContainerClient, tmp_path: Path) -> None:
    from horovod_batchai.local.blob.sync import MirrorSync
    mirror = mirror_of(container, tmp_path)
    mirror.pull()
    sync = MirrorSync(interval=0.1)
    try:
        sync.hold(mirror)
        (tmp_path / "files" / "stdout.txt").write_bytes(b"epoch 1\n")
        container.upload_blob("input.txt", b"from outside")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not ((tmp_path / "files" / "input.txt").exists()
                                                   and "stdout.txt" in {b.name for b in container.list_blobs()}):
            time.sleep(0.05)
        assert (tmp_path / "files" / "input.txt").read_bytes() == b"from outside"
        assert container.download_blob("stdout.txt").readall() == b"epoch 1\n"
    finally:
        sync.stop()


def test_the_last_release_pushes_at_once(container: ContainerClient, tmp_path: Path) -> None:
    from horovod_batchai.local.blob.sync import MirrorSync
    mirror = mirror_of(container, tmp_path)
    mirror.pull()
    sync = MirrorSync(interval=3600)  # no periodic round during this test
    try:
        sync.hold(mirror)
        sync.hold(mirror)  # two jobs use it
        (tmp_path / "files" / "model.h5").write_bytes(b"weights")
        assert sync.release(mirror).uploaded == 1
        assert sync.held() == [mirror], "still used by the other job"
        touch_later(tmp_path / "files" / "model.h5", b"better weights")
        assert sync.release(mirror).uploaded == 1
        assert sync.held() == []
        assert container.download_blob("model.h5").readall() == b"better weights"
    finally:
        sync.stop()
