"""File shares against the local service: account + share, directories, uploads, downloads, delete."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from azure.core.exceptions import ResourceNotFoundError

from horovod_batchai import FileShare, InvalidSpecError, NotFoundError, ShareItem, Target, TransferError
from horovod_batchai.local import LocalService
from sdk_support import ACCOUNT, RG


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_create_is_get_or_create_with_standard_lrs(target: Target) -> None:
    share = FileShare.create(target, RG, ACCOUNT, "myshare", location="eastus")
    again = FileShare.create(target, RG, ACCOUNT, "myshare", location="eastus")
    assert again.url == share.url == f"https://{ACCOUNT}.file.core.windows.net/myshare"
    accounts = list(target.storage().storage_accounts.list_by_resource_group(RG))
    assert [a.name for a in accounts] == [ACCOUNT] and accounts[0].sku.name == "Standard_LRS"
    assert FileShare.get(target, RG, ACCOUNT, "myshare").share_name == "myshare"
    with pytest.raises(NotFoundError) as info:
        FileShare.get(target, RG, ACCOUNT, "othershare")
    assert isinstance(info.value, ResourceNotFoundError)


def test_mount_entry_carries_the_listed_key(target: Target, share: FileShare) -> None:
    mount = share.mount()
    keys = target.storage().storage_accounts.list_keys(RG, ACCOUNT).keys_property
    assert mount.account_key == keys[0].value
    assert mount.account_name == ACCOUNT and mount.relative_mount_path == "myshare"
    assert mount.azure_file_url == f"https://{ACCOUNT}.file.core.windows.net/myshare"
    assert keys[0].value not in repr(mount) and keys[0].value not in repr(share)
    assert share.mount(relative_mount_path="data").relative_mount_path == "data"


def test_upload_and_download_file(share: FileShare, tmp_path: Path) -> None:
    payload = os.urandom(9 * 1024 * 1024 + 123)  # three ranges, the last one short
    source = tmp_path / "model.bin"
    source.write_bytes(payload)
    progress: list[tuple[int, int]] = []
    item = share.upload_file(source, "cifar/saved_models/model.bin", progress=lambda done, total: progress.append((done, total)))
    assert item == ShareItem(path="cifar/saved_models/model.bin", is_directory=False, size=len(payload))
    assert progress[-1] == (len(payload), len(payload))
    assert share.list("cifar") == [ShareItem(path="cifar/saved_models", is_directory=True)]
    dest = share.download_file("cifar/saved_models/model.bin", tmp_path / "out")
    assert dest.read_bytes() == payload
    (tmp_path / "dir").mkdir()
    assert share.download_file("cifar/saved_models/model.bin", tmp_path / "dir").name == "model.bin"
    share.delete_file("cifar/saved_models/model.bin")
    share.delete_file("cifar/saved_models/model.bin")
    assert share.list("cifar/saved_models") == []


def test_upload_and_download_directory_tree(share: FileShare, tmp_path: Path) -> None:
    source = tmp_path / "data"
    for rel, size in {"a.txt": 10, "sub/b.bin": 5 * 1024 * 1024, "sub/deeper/c.bin": 1, "empty.txt": 0,
                      "sub/ünïcode name.txt": 100}.items():
        path = source / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))
    (source / "emptydir").mkdir()
    uploaded = share.upload_directory(source, "cifar/data", progress=False)
    assert sorted(i.path for i in uploaded) == sorted(f"cifar/data/{p}" for p in _tree(source))
    listed = share.list("cifar/data", recursive=True)
    assert "cifar/data/emptydir" in [i.path for i in listed if i.is_directory]
    assert {i.path: i.size for i in listed if not i.is_directory} == {
        f"cifar/data/{p}": len(b) for p, b in _tree(source).items()}
    dest = tmp_path / "copy"
    share.download_directory("cifar/data", dest)
    assert _tree(dest) == _tree(source) and (dest / "emptydir").is_dir()
    share.delete_directory("cifar", recursive=True)
    assert share.list() == []


def test_create_directory_is_idempotent_and_makes_parents(share: FileShare) -> None:
    share.create_directory("a/b/c")
    share.create_directory("a/b/c")
    assert [i.path for i in share.list(recursive=True)] == ["a", "a/b", "a/b/c"]


def test_mistakes_raise_before_any_request(share: FileShare, tmp_path: Path) -> None:
    with pytest.raises(InvalidSpecError, match="source"):
        share.upload_file(tmp_path / "missing.py", "cifar/x.py")
    (tmp_path / "x.py").write_text("print(1)")
    with pytest.raises(InvalidSpecError, match="path"):
        share.upload_file(tmp_path / "x.py", "cifar/../x.py")
    with pytest.raises(InvalidSpecError, match="source"):
        share.upload_directory(tmp_path / "x.py", "cifar")
    with pytest.raises(InvalidSpecError, match=r"path: '/etc/passwd' is absolute; .* \(valid: a path inside the "
                                               r"share like 'etc/passwd'\)"):
        share.upload_file(tmp_path / "x.py", "/etc/passwd")
    with pytest.raises(InvalidSpecError, match="is absolute"):
        share.download_file("/x.py", tmp_path / "out")
    assert share.list() == [] and share.list("/") == []


def test_bad_account_and_share_names(offline_target: Target) -> None:
    with pytest.raises(InvalidSpecError, match="account_name"):
        FileShare.create(offline_target, RG, "My_Account", "myshare")
    with pytest.raises(InvalidSpecError, match="share_name"):
        FileShare.create(offline_target, RG, ACCOUNT, "My--Share")
    with pytest.raises(InvalidSpecError, match="sku"):
        FileShare.create(offline_target, RG, ACCOUNT, "myshare", sku="Cheap_LRS")
    with pytest.raises(InvalidSpecError, match="quota_gib"):
        FileShare.create(offline_target, RG, ACCOUNT, "myshare", quota_gib=True)


@pytest.mark.parametrize("max_concurrency", [0, -4, "8", 2.0, True])
def test_a_bad_max_concurrency_is_refused_naming_it(offline_target: Target, tmp_path: Path,
                                                    max_concurrency: object) -> None:
    """Before any request (the offline target refuses connections), not taken as 1 nor a TypeError."""
    share = FileShare(offline_target, RG, ACCOUNT, "myshare")
    (tmp_path / "x.py").write_text("print(1)")
    for call in (lambda: share.upload_file(tmp_path / "x.py", "x.py", max_concurrency=max_concurrency),
                 lambda: share.upload_directory(tmp_path, "tree", max_concurrency=max_concurrency),
                 lambda: share.download_file("x.py", tmp_path / "out.py", max_concurrency=max_concurrency),
                 lambda: share.download_directory("tree", tmp_path / "out", max_concurrency=max_concurrency)):
        with pytest.raises(InvalidSpecError) as info:
            call()  # type: ignore[arg-type]
        assert info.value.field == "max_concurrency" and "integer >= 1" in info.value.valid_form


def test_delete_share_and_account(target: Target, share: FileShare) -> None:
    share.delete()
    share.delete()
    with pytest.raises(NotFoundError):
        FileShare.get(target, RG, ACCOUNT, "myshare")
    again = FileShare.create(target, RG, ACCOUNT, "myshare")
    again.delete(delete_account=True)
    assert list(target.storage().storage_accounts.list_by_resource_group(RG)) == []


def test_downloads_report_progress(share: FileShare, tmp_path: Path) -> None:
    payload = os.urandom(5 * 1024 * 1024 + 7)
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.bin").write_bytes(payload)
    (tmp_path / "tree" / "b.bin").write_bytes(payload[:1000])
    share.upload_directory(tmp_path / "tree", "progress", progress=False)
    seen: list[tuple[int, int]] = []
    share.download_file("progress/a.bin", tmp_path / "a.bin", progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (len(payload), len(payload))
    seen.clear()
    share.download_directory("progress", tmp_path / "copy", progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (len(payload) + 1000, len(payload) + 1000)


def test_an_interrupted_download_leaves_no_partial_file(share: FileShare, tmp_path: Path) -> None:
    source = tmp_path / "model.h5"
    source.write_bytes(os.urandom(3 * 1024 * 1024))
    share.upload_file(source, "cifar/model.h5", progress=False)

    class Interrupted(Exception):
        pass

    def stop(done: int, total: int) -> None:  # the caller's progress callback gives up mid-way
        raise Interrupted

    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(Interrupted):
        share.download_file("cifar/model.h5", dest, progress=stop)
    assert list(dest.iterdir()) == []


@pytest.mark.parametrize("name", ["..", "../evil", "a/../../evil", "/etc/passwd", "", "a//b", "a\\..\\b"])
def test_downloads_refuse_names_that_leave_the_destination(tmp_path: Path, name: str) -> None:
    from horovod_batchai import TransferError
    from horovod_batchai._shared.paths import local_path_under
    with pytest.raises(TransferError, match="outside"):
        local_path_under(tmp_path, name)
    assert local_path_under(tmp_path, "cifar/saved_models/m.h5") == tmp_path / "cifar" / "saved_models" / "m.h5"


def test_upload_stores_the_md5_of_what_it_sent_and_download_checks_it(share: FileShare, tmp_path: Path) -> None:
    # Past the client's first 32 MiB GET, so the rest arrives as parallel 4 MiB ranges in any order.
    payload = os.urandom(41 * 1024 * 1024 + 5)
    source = tmp_path / "big.bin"
    source.write_bytes(payload)
    share.upload_file(source, "big.bin", progress=False)
    held = share._file_client("big.bin").get_file_properties().content_settings.content_md5
    assert bytes(held) == hashlib.md5(payload).digest()
    assert share.download_file("big.bin", tmp_path / "copy.bin", progress=False).read_bytes() == payload

    # The share's bytes change behind the MD5 it holds: the download says so and leaves nothing.
    share._file_client("big.bin").upload_range(b"x" * 512, offset=37 * 1024 * 1024, length=512)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(TransferError, match="does not match the MD5"):
        share.download_file("big.bin", out, progress=False)
    assert list(out.iterdir()) == []



def _closed(client: object) -> bool:
    """Whether an azure-storage client's transport was closed: azure-core then refuses to send."""
    try:
        list(client.list_shares(timeout=5))  # type: ignore[attr-defined]
    except ValueError as err:
        return "closed" in str(err)
    return False


def test_closing_the_target_closes_the_shares_data_plane_clients(service: LocalService, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"x" * 1000)
    with Target.local(service=service) as target:
        share = FileShare.create(target, RG, ACCOUNT, "myshare", location="eastus")
        share.upload_file(tmp_path / "a.txt", "a.txt", progress=False)
        first = share._service
        assert first is not None and not _closed(first)
    assert _closed(first)  # `with` closed every client of the target, the share's one too
    # the target may be used again: the share opens a new client, which the next close() closes
    assert share.download_file("a.txt", tmp_path / "b.txt", progress=False).read_bytes() == b"x" * 1000
    second = share._service
    assert second is not first and second is not None and not _closed(second)
    target.close()
    assert _closed(second)
    # a share alone: `with share:` (FileShare.close()) closes its own client, and it reopens on use
    with FileShare.get(target, RG, ACCOUNT, "myshare") as other:
        assert [i.name for i in other.list()] == ["a.txt"]
        third = other._service
    assert third is not None and _closed(third) and other._service is None
    # deleting the account drops the share's client: closed, not left to the garbage collector
    other.list()
    fourth = other._service
    other.delete(delete_account=True)
    assert _closed(fourth)
    target.close()


def test_a_progress_callback_is_called_by_one_thread_at_a_time_and_never_goes_back() -> None:
    """Transfers report from several threads at once; the caller's callback (a print, say) must
    not be entered by two of them together, and the counts it sees only grow."""
    import threading as _threading
    import time as _time

    from horovod_batchai._shared.progress import Progress

    inside, overlaps, seen = [0], [0], []

    def callback(done: int, total: int) -> None:
        inside[0] += 1
        if inside[0] > 1:
            overlaps[0] += 1
        seen.append(done)
        _time.sleep(0.0005)  # long enough for another thread to arrive while this one prints
        inside[0] -= 1

    progress = Progress(callback, 8 * 200, "upload")

    def transfer(key: str) -> None:
        for current in range(1, 201):
            progress.set(key, current)

    threads = [_threading.Thread(target=transfer, args=(f"file{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps[0] == 0
    assert seen == sorted(seen) and seen[-1] == 8 * 200
