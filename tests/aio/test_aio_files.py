"""horovod_batchai.aio file shares against the local service: create/get/list/delete, transfers
with MD5 integrity and progress, and a cancelled upload leaving nothing behind."""
from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from horovod_batchai import NotFoundError, TransferError
from horovod_batchai.aio import FileShare, Target

from aio_support import ACCOUNT, RG, run


def test_shares_create_get_list_delete(service: Any) -> None:
    async def scenario(target: Target) -> None:
        poller = await FileShare.begin_create(target, RG, ACCOUNT, "myshare", location="eastus")
        share = await poller.result(60)
        assert share.url == f"https://{ACCOUNT}.file.core.windows.net/myshare"
        again = await FileShare.get(target, RG, ACCOUNT, "myshare")
        await again.create_directory("a/b/c")
        assert [i.path for i in await share.list(recursive=True)] == ["a", "a/b", "a/b/c"]
        mount = await share.mount()
        assert mount.account_name == ACCOUNT and mount.account_key == await share.get_account_key()
        assert mount.account_key not in repr(share)
        await share.delete_directory("a", recursive=True)
        assert await share.list() == []
        await share.delete()
        with pytest.raises(NotFoundError):
            await FileShare.get(target, RG, ACCOUNT, "myshare")
        await share.delete()  # already gone: succeeds

    run(service, scenario)


def test_upload_and_download_keep_every_byte(service: Any, tmp_path: Path) -> None:
    payload = os.urandom(9 * 1024 * 1024 + 5)  # three ranges, the last one short
    source = tmp_path / "weights.bin"
    source.write_bytes(payload)
    tree = tmp_path / "tree"
    (tree / "nested").mkdir(parents=True)
    (tree / "nested" / "labels.txt").write_bytes("ünïcode ✓\n".encode() * 1000)
    (tree / "empty.bin").write_bytes(b"")
    seen: list[tuple[int, int]] = []

    async def scenario(target: Target) -> None:
        async with await FileShare.create(target, RG, ACCOUNT, "myshare", location="eastus") as share:
            item = await share.upload_file(source, "data/weights.bin", progress=lambda done, total: seen.append(
                (done, total)))
            assert item.size == len(payload) and seen[-1] == (len(payload), len(payload))
            client = await share._file_client("data/weights.bin")
            held = (await client.get_file_properties()).content_settings.content_md5
            assert bytes(held) == hashlib.md5(payload).digest()  # stored with the file
            assert [i.name for i in await share.list("data")] == ["weights.bin"]  # no temporary name left

            back = await share.download_file("data/weights.bin", tmp_path / "back/", progress=False)
            assert back.read_bytes() == payload

            # A file changed behind the package's back no longer matches its stored MD5: refused.
            await client.upload_range(b"X" * 16, offset=0, length=16)
            with pytest.raises(TransferError, match="MD5"):
                await share.download_file("data/weights.bin", tmp_path / "tampered.bin", progress=False)
            assert not (tmp_path / "tampered.bin").exists() and not (tmp_path / "tampered.bin.partial").exists()

            items = await share.upload_directory(tree, "tree", progress=False)
            assert sorted(i.path for i in items) == ["tree/empty.bin", "tree/nested/labels.txt"]
            paths = await share.download_directory("tree", tmp_path / "tree-back", progress=False)
            assert sorted(p.relative_to(tmp_path / "tree-back").as_posix() for p in paths) == [
                "empty.bin", "nested/labels.txt"]
            assert (tmp_path / "tree-back" / "nested" / "labels.txt").read_bytes() == (
                tree / "nested" / "labels.txt").read_bytes()
        assert share._service is None  # closed by the async with

    run(service, scenario)


def test_a_cancelled_upload_leaves_nothing_behind(service: Any, tmp_path: Path) -> None:
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(32 * 1024 * 1024))

    async def scenario(target: Target) -> None:
        share = await FileShare.create(target, RG, ACCOUNT, "myshare", location="eastus")
        started = asyncio.Event()
        upload = asyncio.ensure_future(share.upload_file(
            source, "big.bin", max_concurrency=1, progress=lambda done, total: started.set()))
        await started.wait()
        upload.cancel()
        with pytest.raises(asyncio.CancelledError):
            await upload
        assert await share.list() == []  # the temporary file was deleted before the cancellation went on

    run(service, scenario)
