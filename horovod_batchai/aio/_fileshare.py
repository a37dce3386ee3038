"""Azure file shares, for asyncio: :class:`horovod_batchai.FileShare`'s methods, awaited, on
``azure.mgmt.storage.aio`` and ``azure.storage.fileshare.aio``.

Transfers keep the sync guarantees, from the same helpers: an upload is written under a temporary
name, its MD5 computed from the bytes as they are read (the reads and their hashing run in a worker
thread), stored on the file, checked by reading the file back, and the file renamed into place;
a download is written to ``<name>.partial``, hashed in file order and checked against the MD5 the
share holds. Progress is reported as by the sync methods. Cancelling a transfer (``CancelledError``)
removes what it half-wrote, as an error or Ctrl-C does in the sync API.
"""
from __future__ import annotations

import asyncio
import logging
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, BinaryIO, Callable, List, Optional, Union, cast

from azure.core.exceptions import ResourceExistsError, ResourceNotFoundError

from .._models.constants import DEFAULT_LOCATION, DEFAULT_LRO_TIMEOUT, DEFAULT_SKU
from .._models.errors import LocalServiceDownError, NotFoundError, azure_errors
from .._models.mounts import AzureFileShareMount
from .._models.names import check_share_path, local_destination, local_directory
from .._shared.deprecation import deprecated, positional_options
from .._shared.fileshare import (DEFAULT_FILE_CONCURRENCY, DEFAULT_RANGE_CONCURRENCY, DIRECTORY_RANGE_CONCURRENCY,
                                 VERIFY_REPLACEMENT, FileShareBase, ShareItem, add_entries, check_account_options,
                                 check_concurrency, check_quota, check_read_back, check_upload_source, finish_download,
                                 holds_upload, plan_download_directory, plan_upload_directory, range_md5_refused,
                                 upload_temp_path)
from .._shared.lro import check_polling, check_timeout, resume_token, wrap_token
from .._shared.lro_async import AsyncDonePoller, AsyncPoller, async_background_poller
from .._shared.progress import Progress, ProgressArg
from .._shared.resource_ids import names_from_id
from .._shared.transfer_hash import HashingReader, OrderedHashWriter, PositionedWriter

if TYPE_CHECKING:
    from azure.storage.fileshare.aio import ShareClient, ShareFileClient, ShareServiceClient

    from ._target import Target

__all__ = ["FileShare"]

log = logging.getLogger(__name__)


class _ReadInThread:
    """The upload's source for the aio client, which awaits ``read``: each read of the local file,
    and its hashing, runs in a worker thread."""

    def __init__(self, reader: HashingReader) -> None:
        self._reader = reader

    async def read(self, n: int = -1) -> bytes:
        return await asyncio.to_thread(self._reader.read, n)


class _WriteInThread(PositionedWriter):
    """What the aio client's parallel download writes into: an :class:`OrderedHashWriter` whose
    writes (``pwrite`` and MD5, 4 MiB at a time) run in a worker thread of their own, in the order
    they were handed over, instead of on the event loop, where the client calls ``write``.

    The writer holds its own descriptor of the file (``path``; None: only hash), so a write still
    running when a cancelled download closes its file cannot land in another file. The progress
    hook awaits :meth:`drain`, so no more than a few ranges wait in memory."""

    def __init__(self, path: Optional[Path]) -> None:
        # read and write: the writer's hash reads the ranges back
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o666) if path is not None else None
        self._writer = OrderedHashWriter(self._fd)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="horovod-batchai-write")
        self._pending: list["Future[int]"] = []
        self._position = 0

    def write(self, data: bytes) -> int:
        data = bytes(data)  # the client may reuse its buffer once this returns
        offset, self._position = self._position, self._position + len(data)
        self._pending.append(self._worker.submit(self._write_at, offset, data))
        return len(data)

    def _write_at(self, offset: int, data: bytes) -> int:
        # the one worker runs the writes in order: a seek and its write are never split
        self._writer.seek(offset)
        return self._writer.write(data)

    async def drain(self, limit: int) -> None:
        """Wait until at most ``limit`` writes are waiting (raising the first that failed)."""
        while len(self._pending) > limit:
            await asyncio.wrap_future(self._pending.pop(0))

    async def result(self) -> tuple[int, bytes]:
        await self.drain(0)
        return await asyncio.to_thread(self._writer.result)  # waits for the hashing thread

    async def close(self) -> None:
        """Drop the writes not started, wait for the one running, close the descriptor."""
        for future in self._pending:
            future.cancel()
        await asyncio.to_thread(self._worker.shutdown, wait=True)
        self._pending = []
        await asyncio.to_thread(self._writer.close)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _progress_hook(bar: Optional[Progress], key: str,
                   writer: Optional[_WriteInThread] = None) -> Callable[[int, Optional[int]], Awaitable[None]]:
    # the aio clients await their progress hook, after each range they wrote: where a download
    # waits for its writer to keep up
    async def update(current: int, total: Optional[int] = None) -> None:
        if bar is not None:
            bar.set(key, current)
        if writer is not None:
            await writer.drain(2)
    return update


async def _run_limited(tasks: List[Callable[[], Awaitable[None]]], workers: int) -> None:
    """Await ``tasks``, ``workers`` at a time; the first failure (or a cancellation) cancels the
    others, whose own cleanup runs before this returns or raises."""
    limit = asyncio.Semaphore(max(1, workers))

    async def one(task: Callable[[], Awaitable[None]]) -> None:
        async with limit:
            await task()

    running = [asyncio.ensure_future(one(task)) for task in tasks]
    try:
        await asyncio.gather(*running)
    except BaseException:
        for future in running:
            future.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        raise


class FileShare(FileShareBase):
    """A file share in a storage account (see :class:`horovod_batchai.FileShare`). Build one with
    ``await`` :meth:`create` or :meth:`get`; ``async with share`` (or ``await share.close()``)
    closes its data-plane client, and so does closing its target."""

    target: "Target"

    def __init__(self, target: "Target", resource_group: str, account_name: str, share_name: str, *,
                 _account_url: Optional[str] = None) -> None:
        super().__init__(target, resource_group, account_name, share_name, _account_url=_account_url)
        self._service: Optional["ShareServiceClient"] = None
        self._lock = asyncio.Lock()

    # -- create / get / delete ------------------------------------------------------------------
    @classmethod
    async def begin_create(cls, target: "Target", resource_group: str, account_name: str, share_name: str, *,
                           location: str = DEFAULT_LOCATION, sku: str = DEFAULT_SKU, quota_gib: Optional[int] = None,
                           continuation_token: Optional[str] = None, polling: bool = True,
                           polling_interval: Optional[float] = None) -> "AsyncPoller[FileShare]":
        """Start get-or-create of the share (see :meth:`horovod_batchai.FileShare.begin_create`)."""
        share = cls(target, resource_group, account_name, share_name)
        action, resource = "creating share", share.id
        check_quota(quota_gib)
        interval = check_polling(polling, polling_interval)
        backend = target.backend
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            account = await backend.begin_create_storage_account(resource_group, account_name, location, sku,
                                                                 continuation_token=inner, polling_interval=interval) if inner else None
        else:
            location = check_account_options(location, sku)
            # Where jobs will find the share must not be other storage: checked before anything is created.
            await backend.check_share_datastore(account_name, share_name)
            await backend.ensure_resource_group(resource_group, location)
            account = await backend.begin_create_storage_account(resource_group, account_name, location, sku,
                                                                 polling_interval=interval)
        if not polling:
            return AsyncDonePoller(share, action=action, resource=resource,
                                   token=wrap_token(action, resource, account.continuation_token() if account else None))
        running = [account]

        async def work() -> "FileShare":
            creating = running[0]
            if creating is not None:
                share._account_url = await creating.result(None)
                running[0] = None
            with azure_errors("creating share", share._where()):
                try:
                    await (await share._share_client()).create_share(quota=quota_gib)
                    log.info("created share %s", share._where())
                except ResourceExistsError:
                    log.info("share %s exists; using it", share._where())
            await target.backend.register_share(account_name, share_name, await share.get_account_key())
            return share

        def token() -> Optional[str]:
            creating = running[0]
            return creating.continuation_token() if creating is not None else None

        return async_background_poller(work, action=action, resource=resource, token=token)

    @classmethod
    async def create(cls, target: "Target", resource_group: str, account_name: str, share_name: str, *,
                     location: str = DEFAULT_LOCATION, sku: str = DEFAULT_SKU, quota_gib: Optional[int] = None,
                     timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> "FileShare":
        """:meth:`begin_create`, awaited for at most ``timeout`` seconds; calling it again is harmless."""
        check_timeout(timeout)
        poller = await cls.begin_create(target, resource_group, account_name, share_name, location=location,
                                        sku=sku, quota_gib=quota_gib)
        return await poller.result(timeout)

    @classmethod
    async def get(cls, target: "Target", resource_group: str, account_name: str, share_name: str) -> "FileShare":
        """The existing share; :class:`NotFoundError` when the account or the share is missing."""
        share = cls(target, resource_group, account_name, share_name)
        await share._read_account()
        await share.check_exists()
        return share

    @classmethod
    async def from_id(cls, target: "Target", resource_id: str) -> "FileShare":
        """The existing share whose ARM id is ``resource_id`` (as :attr:`id` gives it:
        ``.../storageAccounts/<account>/fileServices/default/shares/<share>``); an id of another
        form, or a target that is not an aio :class:`Target`, is an :class:`InvalidSpecError`
        stating the valid one."""
        names = names_from_id(target, resource_id, "file share", aio=True)
        return await cls.get(target, names["resource group"], names["account"], names["share"])

    async def check_exists(self) -> None:
        """Raise :class:`NotFoundError` unless the share exists."""
        with azure_errors("reading share", self._where()):
            await (await self._share_client()).get_share_properties()

    async def _read_account(self) -> None:
        self._account_url = await self.target.backend.get_file_endpoint(self.resource_group, self._account_name)

    async def begin_delete(self, *, delete_account: bool = False, continuation_token: Optional[str] = None,
                           polling: bool = True, polling_interval: Optional[float] = None) -> "AsyncPoller[None]":
        """Start deleting the share (and, when asked, its storage account); the deletes are
        answered at once, so the poller is done when this returns (see
        :meth:`horovod_batchai.FileShare.begin_delete`)."""
        check_polling(polling, polling_interval)
        action = "deleting share and storage account" if delete_account else "deleting share"
        if continuation_token is not None:
            resume_token(continuation_token, action=action, resource=self.id)
        await self._delete(delete_account)
        return AsyncDonePoller(None, action=action, resource=self.id)

    async def delete(self, *, delete_account: bool = False, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> None:
        """Delete the share (and, when asked, its storage account); succeeds when already gone."""
        check_timeout(timeout)
        await (await self.begin_delete(delete_account=delete_account)).result(timeout)

    async def _delete(self, delete_account: bool) -> None:
        with azure_errors("deleting share", self._where()):
            try:
                log.info("deleting share %s", self._where())
                await (await self._share_client()).delete_share(delete_snapshots=True)
            except ResourceNotFoundError:
                log.debug("share %s was already gone", self._where())
        if delete_account:
            await self.target.backend.delete_storage_account(self.resource_group, self._account_name)
            await self.close()
            self._key = None

    # -- credentials and clients ----------------------------------------------------------------
    async def get_account_key(self) -> str:
        """The account's first full-permission key, from ``listKeys`` (cached)."""
        if self._key is None:
            self._key = await self.target.backend.get_account_key(self.resource_group, self._account_name)
        return self._key

    async def _service_client(self) -> "ShareServiceClient":
        backend = self.target.backend
        if self._service is not None and not backend.keeps_client(self._service):
            self._service = None  # the target closed it: open another
        if self._service is None:
            if self._account_url is None:
                await self._read_account()
            key = await self.get_account_key()
            async with self._lock:
                if self._service is None:
                    assert self._account_url is not None
                    self._service = await backend.share_service(self._account_url, key)
                    backend.keep_client(self._service)
        return self._service

    async def _share_client(self) -> "ShareClient":
        client = (await self._service_client()).get_share_client(self.share_name)
        if self._leftovers:
            await self._remove_leftovers(client)
        return client

    async def _remove_leftovers(self, share: "ShareClient") -> None:
        """Delete the temporary files of failed uploads that could not be deleted when they failed
        (see the sync FileShare); the ones still out of reach are kept for the next call."""
        pending, self._leftovers = self._leftovers, set()
        for temp in sorted(pending):
            try:
                await share.get_file_client(temp).delete_file(timeout=10)
                log.info("deleted the unfinished upload %s", self._where(temp))
            except ResourceNotFoundError:
                pass
            except Exception:  # noqa: BLE001 -- still out of reach: the call that brought us here says why
                self._leftovers.add(temp)

    async def _file_client(self, path: str) -> "ShareFileClient":
        return (await self._share_client()).get_file_client(path)

    @positional_options("relative_mount_path")
    async def mount(self, *, relative_mount_path: Optional[str] = None) -> AzureFileShareMount:
        """The mount entry a job (or cluster) needs, with the account key."""
        return AzureFileShareMount.for_share(self._account_name, self.share_name,
                                             relative_mount_path=relative_mount_path or self.share_name,
                                             account_key=await self.get_account_key())

    async def close(self) -> None:
        """Close the share's data-plane client (opened again on next use)."""
        service, self._service = self._service, None
        if service is not None:
            self.target.backend.release_client(service)
            await service.close()

    async def __aenter__(self) -> "FileShare":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # -- directories ----------------------------------------------------------------------------
    async def create_directory(self, path: str) -> None:
        """Create ``path`` and any missing parents (like ``mkdir -p``)."""
        path = check_share_path(path)
        share = await self._share_client()
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            with azure_errors("creating directory", self._where(sub)):
                try:
                    await share.get_directory_client(sub).create_directory()
                except ResourceExistsError:
                    pass

    async def list(self, path: str = "", *, recursive: bool = False) -> List[ShareItem]:
        """Files and directories in ``path`` (the share root by default), sorted by path."""
        path = check_share_path(path, allow_root=True)
        share = await self._share_client()
        items: list[ShareItem] = []
        pending = [path]
        while pending:
            directory = pending.pop()
            with azure_errors("listing", self._where(directory)):
                entries = [e async for e in share.get_directory_client(directory).list_directories_and_files()]
            add_entries(items, pending if recursive else None, directory, entries)
        return sorted(items, key=lambda item: item.path)

    async def delete_file(self, path: str) -> None:
        """Delete one file; succeeds when already gone."""
        path = check_share_path(path)
        with azure_errors("deleting", self._where(path)):
            try:
                await (await self._file_client(path)).delete_file()
            except ResourceNotFoundError:
                pass

    async def delete_directory(self, path: str, *, recursive: bool = False) -> None:
        """Delete a directory (with its contents when ``recursive``); succeeds when already gone."""
        path = check_share_path(path)
        if recursive:
            try:
                items = await self.list(path, recursive=True)
            except NotFoundError:
                return  # already gone (or its parent is)
            for item in sorted(items, key=lambda i: -i.path.count("/")):
                if item.is_directory:
                    await self.delete_directory(item.path)
                else:
                    await self.delete_file(item.path)
        with azure_errors("deleting directory", self._where(path)):
            try:
                await (await self._share_client()).get_directory_client(path).delete_directory()
            except ResourceNotFoundError:
                pass

    # -- upload ---------------------------------------------------------------------------------
    async def upload_file(self, source: Union[str, Path], path: str, *,
                          max_concurrency: int = DEFAULT_RANGE_CONCURRENCY, progress: ProgressArg = None,
                          validate_content: bool = True, read_back: bool = False,
                          verify: Optional[bool] = None) -> ShareItem:
        """Upload the local file ``source`` to ``path`` (see :meth:`horovod_batchai.FileShare.upload_file`:
        parallel ranges, each range's MD5 checked by the service with ``validate_content``, the
        file's MD5 stored, with ``read_back`` the file read back and compared; it appears complete
        or not at all). ``verify`` is deprecated: ``verify=True`` means ``read_back=True``."""
        if verify is not None:
            deprecated("FileShare.upload_file(verify=...)", VERIFY_REPLACEMENT)
            read_back = read_back or verify
        source, path, size = check_upload_source(source, path)
        check_concurrency(max_concurrency)
        with Progress(progress, size, source.name) as bar:
            if "/" in path:
                await self.create_directory(path.rsplit("/", 1)[0])
            await self._upload_one(source, size, path, max_concurrency=max_concurrency, bar=bar,
                                   validate_content=validate_content, read_back=read_back)
        return ShareItem(path=path, is_directory=False, size=size)

    async def _upload_one(self, source: Path, size: int, path: str, *, max_concurrency: int, bar: Progress,
                          validate_content: bool, read_back: bool) -> None:
        from azure.storage.fileshare import ContentSettings
        temp = upload_temp_path(path)
        client = await self._file_client(temp)
        log.debug("uploading %s (%d bytes) to %s by way of %s", source, size, self._where(path), temp)
        try:
            with azure_errors("uploading to", self._where(path)), open(source, "rb") as fh, \
                    HashingReader(fh, size, str(source)) as reader:
                with range_md5_refused(source, self._where(path)):
                    await client.upload_file(cast(BinaryIO, _ReadInThread(reader)), length=size,
                                             max_concurrency=max_concurrency, validate_content=validate_content,
                                             progress_hook=_progress_hook(bar, path))
                md5 = await asyncio.to_thread(reader.digest)
                await client.set_http_headers(content_settings=ContentSettings(content_md5=bytearray(md5)))
            if read_back:
                check_read_back(self._where(path), source, (size, md5),
                                await self._hash_remote(client, path, max_concurrency))
            await self._rename_into_place(client, path, size, md5)
        except BaseException as err:
            # awaited before the error (or the cancellation) goes on, so that the caller who
            # awaits the cancelled upload finds nothing left behind
            await self._discard(client, temp, err)
            raise

    async def _rename_into_place(self, client: "ShareFileClient", path: str, size: int, md5: bytes) -> None:
        try:
            with azure_errors("renaming the finished upload to", self._where(path)):
                await client.rename_file(path, overwrite=True)
        except NotFoundError:
            # A rename whose answer was lost is retried and finds its source gone: done if the
            # file in place is the one we uploaded.
            try:
                props = await (await self._file_client(path)).get_file_properties()
            except Exception:  # noqa: BLE001 -- the rename's own error says more
                raise NotFoundError(f"{self._where(path)}: the upload vanished before it was renamed into "
                                    "place", resource=self._where(path)) from None
            if not holds_upload(props, size, md5):
                raise

    async def _discard(self, client: "ShareFileClient", temp: str, failure: BaseException) -> None:
        """Delete a temporary upload; best effort (the caller is already failing or cancelled).
        One that cannot be deleted now -- or at all, when the local service is down -- is deleted
        by the next call that reaches the share."""
        if not isinstance(failure, LocalServiceDownError):
            try:
                await client.delete_file(timeout=10)
                return
            except ResourceNotFoundError:
                return
            except BaseException as err:  # noqa: B036 -- a second cancellation or a dead connection
                failure = err
        self._leftovers.add(temp)
        self._left_behind(temp, failure)

    async def _hash_remote(self, client: "ShareFileClient", path: str, max_concurrency: int) -> tuple[int, bytes]:
        hasher = _WriteInThread(None)
        try:
            with azure_errors("reading back", self._where(path)):
                downloader = await client.download_file(max_concurrency=max_concurrency,
                                                        progress_hook=_progress_hook(None, path, hasher))
                await downloader.readinto(cast(BinaryIO, hasher))
                return await hasher.result()
        finally:
            await hasher.close()

    async def upload_directory(self, source: Union[str, Path], path: str, *,
                               max_concurrency: int = DIRECTORY_RANGE_CONCURRENCY, progress: ProgressArg = None,
                               validate_content: bool = True, read_back: bool = False,
                               verify: Optional[bool] = None) -> List[ShareItem]:
        """Upload the tree under ``source`` to ``path`` (see
        :meth:`horovod_batchai.FileShare.upload_directory`), ``DEFAULT_FILE_CONCURRENCY`` files at a
        time; a failure or a cancellation removes the uploads in flight."""
        if verify is not None:
            deprecated("FileShare.upload_directory(verify=...)", VERIFY_REPLACEMENT)
            read_back = read_back or verify
        check_concurrency(max_concurrency)
        source, path, directories, files, sizes = plan_upload_directory(source, path)
        for directory in directories:
            await self.create_directory(directory)
        total = sum(sizes.values())
        with Progress(progress, total, source.name) as bar:
            def task(local: Path, remote: str) -> Callable[[], Awaitable[None]]:
                return lambda: self._upload_one(local, sizes[remote], remote, max_concurrency=max_concurrency,
                                                bar=bar, validate_content=validate_content, read_back=read_back)
            await _run_limited([task(local, remote) for local, remote in files], DEFAULT_FILE_CONCURRENCY)
        log.info("uploaded %d file(s), %d bytes, to %s", len(files), total, self._where(path))
        return [ShareItem(path=remote, is_directory=False, size=sizes[remote]) for _, remote in files]

    # -- download -------------------------------------------------------------------------------
    async def download_file(self, path: str, dest: Union[str, Path], *,
                            max_concurrency: int = DEFAULT_RANGE_CONCURRENCY,
                            progress: ProgressArg = None) -> Path:
        """Download ``path`` to ``dest`` (see :meth:`horovod_batchai.FileShare.download_file`:
        complete or not at all, checked against the MD5 the share holds)."""
        path = check_share_path(path)
        check_concurrency(max_concurrency)
        dest = local_destination(dest, path.rsplit("/", 1)[-1])
        client = await self._file_client(path)
        with azure_errors("reading", self._where(path)):
            properties = await client.get_file_properties()
        with Progress(progress, int(properties.size or 0), dest.name) as bar:
            await self._download_one(client, path, dest, max_concurrency=max_concurrency, bar=bar,
                                     expected_md5=properties.content_settings.content_md5)
        return dest

    async def _download_one(self, client: "ShareFileClient", path: str, dest: Path, *, max_concurrency: int,
                            bar: Progress, expected_md5: Optional[Union[bytes, bytearray]]) -> None:
        dest.parent.mkdir(parents=True, exist_ok=True)
        partial = dest.with_name(dest.name + ".partial")
        writer = _WriteInThread(partial)
        try:
            with azure_errors("downloading", self._where(path)):
                # Ranges arrive in parallel, are written at their offsets and hashed in file order.
                downloader = await client.download_file(max_concurrency=max_concurrency,
                                                        progress_hook=_progress_hook(bar, path, writer))
                await downloader.readinto(cast(BinaryIO, writer))
                _, md5 = await writer.result()
        except BaseException:  # a failed, interrupted or cancelled download leaves nothing behind
            await writer.close()
            partial.unlink(missing_ok=True)
            raise
        await writer.close()
        finish_download(partial, dest, expected_md5, md5, self._where(path))

    async def download_directory(self, path: str, dest: Union[str, Path], *,
                                 max_concurrency: int = DIRECTORY_RANGE_CONCURRENCY,
                                 progress: ProgressArg = None) -> List[Path]:
        """Download the tree under ``path`` into the local directory ``dest`` (see
        :meth:`horovod_batchai.FileShare.download_directory`)."""
        path = check_share_path(path, allow_root=True)
        check_concurrency(max_concurrency)
        dest = local_directory(dest)
        files, targets, total = plan_download_directory(await self.list(path, recursive=True), path, dest)
        with Progress(progress, total, dest.name) as bar:
            def task(item: ShareItem, local: Path) -> Callable[[], Awaitable[None]]:
                async def fetch() -> None:
                    client = await self._file_client(item.path)
                    with azure_errors("reading", self._where(item.path)):
                        md5 = (await client.get_file_properties()).content_settings.content_md5
                    await self._download_one(client, item.path, local, max_concurrency=max_concurrency, bar=bar,
                                             expected_md5=md5)
                return fetch
            await _run_limited([task(item, local) for item, local in zip(files, targets)], DEFAULT_FILE_CONCURRENCY)
        return targets

