"""Azure file shares: the storage account (management plane) and the share's files (data plane).

The account key is fetched with ``listKeys`` when first needed and held only by this object
and its ``ShareServiceClient``; it never appears in a log line, ``repr`` or exception.

No reader sees a torn file: uploads are written under a temporary name and renamed into place
when complete and verified; downloads are written to ``<name>.partial`` and renamed. Whatever
fails or is interrupted removes its temporary file.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, List, Optional, Union, cast

from azure.core.exceptions import ResourceExistsError, ResourceNotFoundError

from ._models.constants import DEFAULT_LOCATION, DEFAULT_LRO_TIMEOUT, DEFAULT_SKU
from ._models.errors import LocalServiceDownError, NotFoundError, azure_errors
from ._models.mounts import AzureFileShareMount
from ._models.names import check_share_path, local_destination, local_directory
from ._shared.deprecation import deprecated, positional_options
from ._shared.fileshare import (DEFAULT_FILE_CONCURRENCY, DEFAULT_RANGE_CONCURRENCY, DIRECTORY_RANGE_CONCURRENCY,
                                VERIFY_REPLACEMENT, FileShareBase, ShareItem, add_entries, check_account_options,
                                check_concurrency, check_quota, check_read_back, check_upload_source, finish_download,
                                holds_upload, plan_download_directory, plan_upload_directory, range_md5_refused,
                                upload_temp_path)
from ._shared.lro import DonePoller, background_poller, check_polling, check_timeout, resume_token, wrap_token
from ._shared.parallel import check_stop, run_parallel
from ._shared.polling import check_stop_event
from ._shared.progress import Progress, ProgressArg
from ._shared.resource_ids import names_from_id
from ._shared.transfer_hash import HashingReader, OrderedHashWriter

if TYPE_CHECKING:
    from azure.core.polling import LROPoller
    from azure.storage.fileshare import ShareClient, ShareFileClient, ShareServiceClient

    from ._target import Target

__all__ = ["FileShare"]

log = logging.getLogger(__name__)


def _stoppable(hook: Optional[Callable[[int, Optional[int]], None]],
               stop: Optional[threading.Event]) -> Callable[[int, Optional[int]], None]:
    # azure-storage calls the progress hook after every range: the place to notice a stop request.
    def update(current: int, total: Optional[int] = None) -> None:
        check_stop(stop)
        if hook is not None:
            hook(current, total)
    return update


class FileShare(FileShareBase):
    """A file share in a storage account. Build one with :meth:`create` (get-or-create), :meth:`get`
    or :meth:`from_id`.

    A share may be shared between threads (its key and client are fetched once, under its lock).
    It pickles as a reference, never with its account key: the receiving process fetches the
    key again with ``listKeys`` when it first needs it.
    """

    target: "Target"

    def __init__(self, target: "Target", resource_group: str, account_name: str, share_name: str, *,
                 _account_url: Optional[str] = None) -> None:
        super().__init__(target, resource_group, account_name, share_name, _account_url=_account_url)
        self._service: Optional["ShareServiceClient"] = None
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[Any, ...]:
        # The account URL is an endpoint, not a secret; the key and the client stay behind.
        return (FileShare, (self.target, self.resource_group, self._account_name, self.share_name),
                {"_account_url": self._account_url})

    @classmethod
    def from_id(cls, target: "Target", resource_id: str) -> "FileShare":
        """The existing share whose ARM id is ``resource_id`` (as :attr:`id` gives it:
        ``.../storageAccounts/<account>/fileServices/default/shares/<share>``); an id of another
        form is an :class:`InvalidSpecError` stating the valid one.

        :param Target target: where the share is.
        :param str resource_id: the share's ARM id.
        :returns: the :class:`FileShare`.
        :raises InvalidSpecError: for an id of another form.
        :raises NotFoundError: when the account or the share is missing."""
        names = names_from_id(target, resource_id, "file share")
        return cls.get(target, names["resource group"], names["account"], names["share"])

    # -- create / get / delete ------------------------------------------------------------------
    @classmethod
    def begin_create(cls, target: "Target", resource_group: str, account_name: str, share_name: str, *,
                     location: str = DEFAULT_LOCATION, sku: str = DEFAULT_SKU, quota_gib: Optional[int] = None,
                     continuation_token: Optional[str] = None, polling: bool = True,
                     polling_interval: Optional[float] = None) -> "LROPoller[FileShare]":
        """Start get-or-create of the share ``share_name`` in storage account ``account_name``,
        creating the resource group, the account (``sku``, StorageV2) and the share when missing;
        the poller's result is the :class:`FileShare`. ``continuation_token`` resumes an earlier
        call (``location`` and ``sku`` are then not used).

        :param Target target: where the storage account is.
        :param str resource_group: the account's resource group (created when missing).
        :param str account_name: the storage account (created when missing).
        :param str share_name: the share (created when missing).
        :keyword str location: the Azure region of what is created.
        :keyword str sku: the account's SKU, e.g. Standard_LRS.
        :keyword int quota_gib: the share's quota in GiB (the service's default when None).
        :keyword str continuation_token: a poller's ``continuation_token()``: resume that call.
        :keyword bool polling: False: the poller is done once the account's creation has been
            accepted (its result is the share, which may not exist yet; its token resumes the rest).
        :keyword float polling_interval: seconds between polls (default: the target's).
        :returns: an ``LROPoller`` whose result is the :class:`FileShare`.
        :raises InvalidSpecError: for a bad argument, before anything is sent.
        :raises ConflictError: on Azure ML, when the share's datastore name is other storage."""
        share = cls(target, resource_group, account_name, share_name)
        action, resource = "creating share", share.id
        check_quota(quota_gib)
        interval = check_polling(polling, polling_interval)
        backend = target.backend
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            account = backend.begin_create_storage_account(resource_group, account_name, location, sku,
                                                           continuation_token=inner, polling_interval=interval) if inner else None
        else:
            location = check_account_options(location, sku)
            # Where jobs will find the share must not be other storage: checked before anything is created.
            backend.check_share_datastore(account_name, share_name)
            backend.ensure_resource_group(resource_group, location)
            account = backend.begin_create_storage_account(resource_group, account_name, location, sku, polling_interval=interval)
        if not polling:
            return DonePoller(share, action=action, resource=resource,
                              token=wrap_token(action, resource, account.continuation_token() if account else None))
        running = [account]

        def work() -> "FileShare":
            creating = running[0]
            if creating is not None:
                share._account_url = creating.result(None)
                running[0] = None
            with azure_errors("creating share", share._where()):
                try:
                    share._share_client().create_share(quota=quota_gib)
                    log.info("created share %s", share._where())
                except ResourceExistsError:
                    log.info("share %s exists; using it", share._where())
            share._register()
            return share

        def token() -> Optional[str]:
            creating = running[0]
            return creating.continuation_token() if creating is not None else None

        return background_poller(work, action=action, resource=resource, token=token)

    @classmethod
    def create(cls, target: "Target", resource_group: str, account_name: str, share_name: str, *,
               location: str = DEFAULT_LOCATION, sku: str = DEFAULT_SKU, quota_gib: Optional[int] = None,
               timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> "FileShare":
        """:meth:`begin_create`, waiting at most ``timeout`` seconds (None: no limit). Calling it
        again is harmless.

        :param Target target: where the storage account is.
        :param str resource_group: the account's resource group (created when missing).
        :param str account_name: the storage account (created when missing).
        :param str share_name: the share (created when missing).
        :keyword str location: the Azure region of what is created.
        :keyword str sku: the account's SKU, e.g. Standard_LRS.
        :keyword int quota_gib: the share's quota in GiB (the service's default when None).
        :keyword float timeout: seconds to wait; None: no limit.
        :returns: the :class:`FileShare`.
        :raises InvalidSpecError: for a bad argument, before anything is sent.
        :raises ConflictError: on Azure ML, when the share's datastore name is other storage.
        :raises WaitTimeoutError: when ``timeout`` is spent (the creation goes on)."""
        check_timeout(timeout)
        return cls.begin_create(target, resource_group, account_name, share_name, location=location, sku=sku,
                                quota_gib=quota_gib).result(timeout)

    @classmethod
    def get(cls, target: "Target", resource_group: str, account_name: str, share_name: str) -> "FileShare":
        """The existing share; :class:`NotFoundError` when the account or the share is missing.
        Only reads: on Azure ML it registers no datastore (:meth:`create` does), and a job that
        mounts the share finds its datastore when it is submitted.

        :param Target target: where the storage account is.
        :param str resource_group: the account's resource group.
        :param str account_name: the storage account.
        :param str share_name: the share.
        :returns: the :class:`FileShare`.
        :raises NotFoundError: when the account or the share is missing."""
        share = cls(target, resource_group, account_name, share_name)
        share._read_account()
        share.check_exists()
        return share

    def _register(self) -> None:
        """Make the share known where jobs run. On Azure ML: an AzureFile datastore with the key,
        read first -- one that is already this share is used; one that is other storage is a
        :class:`ConflictError`, raised before anything changes."""
        self.target.backend.register_share(self._account_name, self.share_name, self.get_account_key())

    def check_exists(self) -> None:
        """Raise :class:`NotFoundError` unless the share exists."""
        with azure_errors("reading share", self._where()):
            self._share_client().get_share_properties()

    def _read_account(self) -> None:
        self._account_url = self.target.backend.get_file_endpoint(self.resource_group, self._account_name)

    def begin_delete(self, *, delete_account: bool = False, continuation_token: Optional[str] = None,
                     polling: bool = True, polling_interval: Optional[float] = None) -> "LROPoller[None]":
        """Start deleting the share (and, when asked, its storage account); succeeds when already
        gone. Each delete is one request the service answers at once, so the poller is done when
        this returns; resuming from its token deletes again, which is harmless.

        :keyword bool delete_account: delete the storage account too, with everything in it.
        :keyword str continuation_token: a poller's ``continuation_token()``: resume that call.
        :keyword bool polling: accepted for azure-core's convention; the poller is done either way.
        :keyword float polling_interval: accepted for azure-core's convention (nothing is polled).
        :returns: an ``LROPoller`` whose result is None.
        :raises InvalidSpecError: for a bad option or a token of another operation."""
        check_polling(polling, polling_interval)
        action = "deleting share and storage account" if delete_account else "deleting share"
        if continuation_token is not None:
            resume_token(continuation_token, action=action, resource=self.id)
        self._delete(delete_account)
        return DonePoller(None, action=action, resource=self.id)

    def delete(self, *, delete_account: bool = False, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> None:
        """Delete the share (and, when asked, its storage account); succeeds when already gone.

        :keyword bool delete_account: delete the storage account too, with everything in it.
        :keyword float timeout: seconds to wait at most (None: no limit).
        :raises WaitTimeoutError: when it has not finished by then."""
        check_timeout(timeout)
        self.begin_delete(delete_account=delete_account).result(timeout)

    def _delete(self, delete_account: bool) -> None:
        with azure_errors("deleting share", self._where()):
            try:
                log.info("deleting share %s", self._where())
                self._share_client().delete_share(delete_snapshots=True)
            except ResourceNotFoundError:
                log.debug("share %s was already gone", self._where())
        if delete_account:
            self.target.backend.delete_storage_account(self.resource_group, self._account_name)
            with self._lock:
                self._key = None
            self.close()

    # -- credentials and clients ----------------------------------------------------------------
    def get_account_key(self) -> str:
        """The account's first full-permission key, from ``listKeys`` (cached).

        :returns: the key (a secret: never logged)."""
        with self._lock:
            if self._key is None:
                self._key = self.target.backend.get_account_key(self.resource_group, self._account_name)
            return self._key

    def _service_client(self) -> "ShareServiceClient":
        if self._account_url is None:
            self._read_account()
        key = self.get_account_key()
        backend = self.target.backend
        with self._lock:
            if self._service is not None and not backend.keeps_client(self._service):
                self._service = None  # the target closed it: open another
            if self._service is None:
                assert self._account_url is not None
                self._service = backend.share_service(self._account_url, key)
                backend.keep_client(self._service)
            return self._service

    def close(self) -> None:
        """Close the share's data-plane client (opened again on next use); closing the target
        closes it too."""
        with self._lock:
            service, self._service = self._service, None
        if service is not None:
            self.target.backend.release_client(service)
            service.close()

    def __enter__(self) -> "FileShare":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _share_client(self) -> "ShareClient":
        client = self._service_client().get_share_client(self.share_name)
        if self._leftovers:
            self._remove_leftovers(client)
        return client

    def _remove_leftovers(self, share: "ShareClient") -> None:
        """Delete the temporary files of failed uploads that could not be deleted when they failed;
        the ones still out of reach are kept for the next call."""
        with self._lock:
            pending, self._leftovers = self._leftovers, set()
        for temp in sorted(pending):
            try:
                share.get_file_client(temp).delete_file(timeout=10)
                log.info("deleted the unfinished upload %s", self._where(temp))
            except ResourceNotFoundError:
                pass
            except Exception:  # noqa: BLE001 -- still out of reach: the call that brought us here says why
                with self._lock:
                    self._leftovers.add(temp)

    def _file_client(self, path: str) -> "ShareFileClient":
        return self._share_client().get_file_client(path)

    @positional_options("relative_mount_path")
    def mount(self, *, relative_mount_path: Optional[str] = None) -> AzureFileShareMount:
        """The mount entry a job (or cluster) needs: account name, share URL, key, and where it
        appears under ``$AZ_BATCHAI_JOB_MOUNT_ROOT`` (default: the share's name).

        :keyword str relative_mount_path: the directory under ``$AZ_BATCHAI_JOB_MOUNT_ROOT`` (default: the
            share's name).
        :returns: an :class:`AzureFileShareMount`."""
        return AzureFileShareMount.for_share(self._account_name, self.share_name,
                                             relative_mount_path=relative_mount_path or self.share_name,
                                             account_key=self.get_account_key())

    # -- directories ----------------------------------------------------------------------------
    def create_directory(self, path: str) -> None:
        """Create ``path`` and any missing parents (like ``mkdir -p``).

        :param str path: the directory, relative to the share's root.
        :raises InvalidSpecError: for a bad path."""
        path = check_share_path(path)
        share = self._share_client()
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            with azure_errors("creating directory", self._where(sub)):
                try:
                    share.get_directory_client(sub).create_directory()
                except ResourceExistsError:
                    pass

    def list(self, path: str = "", *, recursive: bool = False) -> List[ShareItem]:
        """Files and directories in ``path`` (the share root by default), sorted by path.

        :param str path: the directory, relative to the share's root.
        :keyword bool recursive: also list what is under its subdirectories.
        :returns: one :class:`ShareItem` per file or directory.
        :raises InvalidSpecError: for a bad path."""
        path = check_share_path(path, allow_root=True)
        share = self._share_client()
        items: list[ShareItem] = []
        pending = [path]
        while pending:
            directory = pending.pop()
            with azure_errors("listing", self._where(directory)):
                entries = list(share.get_directory_client(directory).list_directories_and_files())
            add_entries(items, pending if recursive else None, directory, entries)
        return sorted(items, key=lambda item: item.path)

    def delete_file(self, path: str) -> None:
        """Delete one file; succeeds when already gone.

        :param str path: the file, relative to the share's root.
        :raises InvalidSpecError: for a bad path."""
        path = check_share_path(path)
        with azure_errors("deleting", self._where(path)):
            try:
                self._file_client(path).delete_file()
            except ResourceNotFoundError:
                pass

    def delete_directory(self, path: str, *, recursive: bool = False) -> None:
        """Delete a directory (with its contents when ``recursive``); succeeds when already gone.

        :param str path: the directory, relative to the share's root.
        :keyword bool recursive: also delete what is in it.
        :raises InvalidSpecError: for a bad path."""
        path = check_share_path(path)
        if recursive:
            try:
                items = self.list(path, recursive=True)
            except NotFoundError:
                return  # already gone (or its parent is)
            for item in sorted(items, key=lambda i: -i.path.count("/")):
                if item.is_directory:
                    self.delete_directory(item.path)
                else:
                    self.delete_file(item.path)
        with azure_errors("deleting directory", self._where(path)):
            try:
                self._share_client().get_directory_client(path).delete_directory()
            except ResourceNotFoundError:
                pass

    # -- upload ---------------------------------------------------------------------------------
    def upload_file(self, source: Union[str, Path], path: str, *, max_concurrency: int = DEFAULT_RANGE_CONCURRENCY,
                    progress: ProgressArg = None, validate_content: bool = True, read_back: bool = False,
                    verify: Optional[bool] = None, stop: Optional[threading.Event] = None) -> ShareItem:
        """Upload the local file ``source`` to ``path`` in the share (parent directories are
        created), in ``max_concurrency`` parallel 4 MiB ranges.

        Integrity, the way Azure offers it (AzCopy's ``--put-md5``): with ``validate_content``
        (the default) each range carries its MD5 (``Content-MD5``) and the service refuses a range
        whose bytes changed on the way, which raises :class:`TransferError`; the MD5 of the whole
        file, taken from the bytes as they are read, is stored as the file's ``Content-MD5``, and
        :meth:`download_file` checks it. With ``read_back`` the file is also read back from the
        share and its MD5 compared before it is renamed into place: a second full transfer, for
        when the bytes at rest must be checked too. ``verify`` is deprecated: ``verify=True``
        means ``read_back=True``.

        The file appears at ``path`` complete or not at all: it is written to
        ``.<name>.uploading-<random>`` in the same directory, checked there, and renamed into
        place (Azure Files' Rename File, replacing any file of that name in one step). A reader or
        a job never sees a part-written file under ``path``. If the upload fails or is
        interrupted (an exception, Ctrl-C), the temporary file is deleted and ``path`` keeps what
        it held. When the service cannot be reached to delete it, this FileShare deletes it the
        next time it reaches the share; the local service also deletes such a file once no upload
        has touched it for two minutes (one a crashed process leaves behind, for instance). Setting
        ``stop`` (a ``threading.Event``) from another thread interrupts it the same way, after the
        range in flight, with :class:`StoppedError`.

        :param source: the local file.
        :param str path: where it goes, relative to the share's root.
        :keyword int max_concurrency: ranges sent at once.
        :keyword progress: None: a bar on a terminal or in Jupyter; True: always a bar; False: none; a callable:
            called with ``(bytes_done, bytes_total)``.
        :keyword bool validate_content: send each range's MD5 for the service to check.
        :keyword bool read_back: read the file back and compare its MD5 before renaming it into place.
        :keyword bool verify: deprecated: ``verify=True`` means ``read_back=True``.
        :keyword stop: a ``threading.Event`` that interrupts the upload when set.
        :returns: the uploaded file's :class:`ShareItem`.
        :raises InvalidSpecError: for a bad source, path or option, before anything is sent.
        :raises TransferError: when the service refuses a range or the read-back differs.
        :raises StoppedError: when ``stop`` is set."""
        if verify is not None:
            deprecated("FileShare.upload_file(verify=...)", VERIFY_REPLACEMENT)
            read_back = read_back or verify  # verify=True meant a read-back
        source, path, size = check_upload_source(source, path)
        check_concurrency(max_concurrency)
        stop = check_stop_event(stop)
        with Progress(progress, size, source.name) as bar:
            if "/" in path:
                self.create_directory(path.rsplit("/", 1)[0])
            self._upload_one(source, size, path, max_concurrency=max_concurrency, bar=bar,
                             validate_content=validate_content, read_back=read_back, stop=stop)
        return ShareItem(path=path, is_directory=False, size=size)

    def _upload_one(self, source: Path, size: int, path: str, *, max_concurrency: int, bar: Progress,
                    validate_content: bool, read_back: bool, stop: Optional[threading.Event] = None,
                    in_flight: Optional[set[str]] = None) -> None:
        """Upload to a temporary name beside ``path``, check it there, then rename it into place
        (replacing any file of that name in one step); on any failure or interruption the
        temporary file is deleted, so ``path`` holds either its old content or the new, whole."""
        from azure.storage.fileshare import ContentSettings
        temp = upload_temp_path(path)
        client = self._file_client(temp)
        log.debug("uploading %s (%d bytes) to %s by way of %s", source, size, self._where(path), temp)
        if in_flight is not None:
            in_flight.add(temp)
        try:
            with azure_errors("uploading to", self._where(path)), open(source, "rb") as fh, \
                    HashingReader(fh, size, str(source), stop=stop) as reader:
                # The file's MD5 is computed from the bytes as they are read (one read of the file)
                # and stored on the file once every range is in; each range's own MD5 travels with it.
                with range_md5_refused(source, self._where(path)):
                    client.upload_file(cast(BinaryIO, reader), length=size, max_concurrency=max_concurrency,
                                       validate_content=validate_content,
                                       progress_hook=_stoppable(bar.hook(path), stop))
                md5 = reader.digest()
                client.set_http_headers(content_settings=ContentSettings(content_md5=bytearray(md5)))
            if read_back:
                check_read_back(self._where(path), source, (size, md5),
                                self._hash_remote(client, path, max_concurrency, stop))
            check_stop(stop)
            self._rename_into_place(client, path, size, md5)
        except BaseException as err:
            self._discard(client, temp, err)
            raise
        finally:
            if in_flight is not None:
                in_flight.discard(temp)

    def _rename_into_place(self, client: "ShareFileClient", path: str, size: int, md5: bytes) -> None:
        try:
            with azure_errors("renaming the finished upload to", self._where(path)):
                client.rename_file(path, overwrite=True)
        except NotFoundError:
            # A rename whose answer was lost is retried and finds its source gone: done if the
            # file in place is the one we uploaded.
            try:
                props = self._file_client(path).get_file_properties()
            except Exception:  # noqa: BLE001 -- the rename's own error says more
                raise NotFoundError(f"{self._where(path)}: the upload vanished before it was renamed into "
                                    "place", resource=self._where(path)) from None
            if not holds_upload(props, size, md5):
                raise

    def _discard(self, client: "ShareFileClient", temp: str, failure: BaseException) -> None:
        """Delete a temporary upload; best effort (the caller is already failing or interrupted).
        One that cannot be deleted now is remembered and deleted by the next call that reaches the share
        -- at once when the upload failed because the local service is down (asking it again would
        wait out the restart patience a second time)."""
        if not isinstance(failure, LocalServiceDownError):
            try:
                client.delete_file(timeout=10)
                return
            except ResourceNotFoundError:
                return
            except BaseException as err:  # noqa: B036 -- a second Ctrl-C or a dead connection: say what is left
                failure = err
        with self._lock:
            self._leftovers.add(temp)
        self._left_behind(temp, failure)

    def _hash_remote(self, client: "ShareFileClient", path: str, max_concurrency: int,
                     stop: Optional[threading.Event] = None) -> tuple[int, bytes]:
        with azure_errors("reading back", self._where(path)), OrderedHashWriter(None) as hasher:
            client.download_file(max_concurrency=max_concurrency,
                                 progress_hook=_stoppable(None, stop)).readinto(cast(BinaryIO, hasher))
            return hasher.result()

    def upload_directory(self, source: Union[str, Path], path: str, *,
                         max_concurrency: int = DIRECTORY_RANGE_CONCURRENCY, progress: ProgressArg = None,
                         validate_content: bool = True, read_back: bool = False, verify: Optional[bool] = None,
                         stop: Optional[threading.Event] = None) -> List[ShareItem]:
        """Upload the tree under ``source`` to ``path`` in the share: directories first, then files,
        ``DEFAULT_FILE_CONCURRENCY`` at a time, each in ``max_concurrency`` parallel ranges, each
        appearing under its name only once complete and checked as :meth:`upload_file` says
        (``validate_content``, ``read_back``; ``verify`` is deprecated).

        Only what is inside the tree is sent. A symbolic link to a file inside ``source`` is
        uploaded as that file's content; a link that leads out of the tree, a broken link and a
        link to a directory are skipped, and so are FIFOs, sockets and devices -- each with a
        :class:`UserWarning` naming it. Ctrl-C stops the transfer within about a second: files
        already complete stay, the ones in flight are removed; setting ``stop`` from another thread
        does the same and raises :class:`StoppedError`.

        :param source: the local directory.
        :param str path: where it goes, relative to the share's root.
        :keyword int max_concurrency: ranges sent at once for each file.
        :keyword progress: None: a bar on a terminal or in Jupyter; True: always a bar; False: none; a callable:
            called with ``(bytes_done, bytes_total)``.
        :keyword bool validate_content: send each range's MD5 for the service to check.
        :keyword bool read_back: read each file back and compare its MD5 before renaming it into place.
        :keyword bool verify: deprecated: ``verify=True`` means ``read_back=True``.
        :keyword stop: a ``threading.Event`` that interrupts the upload when set.
        :returns: one :class:`ShareItem` per uploaded file.
        :raises InvalidSpecError: for a bad source, path or option, before anything is sent.
        :raises TransferError: when the service refuses a range or a read-back differs.
        :raises StoppedError: when ``stop`` is set."""
        if verify is not None:
            deprecated("FileShare.upload_directory(verify=...)", VERIFY_REPLACEMENT)
            read_back = read_back or verify
        check_concurrency(max_concurrency)
        source, path, directories, files, sizes = plan_upload_directory(source, path)
        stop = check_stop_event(stop)
        total = sum(sizes.values())
        for directory in directories:
            self.create_directory(directory)
        in_flight: set[str] = set()  # temporary names of the uploads under way
        with Progress(progress, total, source.name) as bar:
            def task(local: Path, remote: str) -> Callable[[threading.Event], None]:
                return lambda stop: self._upload_one(local, sizes[remote], remote, max_concurrency=max_concurrency,
                                                     bar=bar, validate_content=validate_content,
                                                     read_back=read_back, stop=stop, in_flight=in_flight)
            try:
                run_parallel([task(local, remote) for local, remote in files], workers=DEFAULT_FILE_CONCURRENCY,
                             caller_stop=stop)
            except BaseException as err:
                # A task still busy after the stop grace (a slow range under load) is abandoned, and
                # the process may exit under it: its temporary file is deleted from here, all of
                # them at once (one after another, each delete would add its round trip to Ctrl-C).
                deleting = [threading.Thread(target=self._discard, args=(self._file_client(temp), temp, err),
                                             daemon=True)
                            for temp in set(in_flight)]
                for thread in deleting:
                    thread.start()
                for thread in deleting:
                    thread.join(10)
                raise
        log.info("uploaded %d file(s), %d bytes, to %s", len(files), total, self._where(path))
        return [ShareItem(path=remote, is_directory=False, size=sizes[remote]) for _, remote in files]

    # -- download -------------------------------------------------------------------------------
    def download_file(self, path: str, dest: Union[str, Path], *, max_concurrency: int = DEFAULT_RANGE_CONCURRENCY,
                      progress: ProgressArg = None, stop: Optional[threading.Event] = None) -> Path:
        """Download ``path`` to ``dest``: a file path, or a directory to put it in (an existing one,
        or one written with a trailing '/'). The file appears complete or not at all; when the share
        holds an MD5 for it (files this package uploaded do) the download is checked against it.
        A destination that cannot be written is an :class:`InvalidSpecError` before anything is read.
        Setting ``stop`` from another thread ends it after the range in flight with
        :class:`StoppedError`, leaving no partial file.

        :param str path: the file, relative to the share's root.
        :param dest: the local file, or the directory to put it in.
        :keyword int max_concurrency: ranges fetched at once.
        :keyword progress: None: a bar on a terminal or in Jupyter; True: always a bar; False: none; a callable:
            called with ``(bytes_done, bytes_total)``.
        :keyword stop: a ``threading.Event`` that interrupts the download when set.
        :returns: the local path written.
        :raises InvalidSpecError: for a bad path or a destination that cannot be written.
        :raises TransferError: when the download does not match the stored MD5.
        :raises StoppedError: when ``stop`` is set."""
        path = check_share_path(path)
        check_concurrency(max_concurrency)
        stop = check_stop_event(stop)
        dest = local_destination(dest, path.rsplit("/", 1)[-1])
        client = self._file_client(path)
        with azure_errors("reading", self._where(path)):
            properties = client.get_file_properties()
        with Progress(progress, int(properties.size or 0), dest.name) as bar:
            self._download_one(client, path, dest, max_concurrency=max_concurrency, bar=bar,
                               expected_md5=properties.content_settings.content_md5, stop=stop)
        return dest

    def _download_one(self, client: "ShareFileClient", path: str, dest: Path, *, max_concurrency: int,
                      bar: Progress, expected_md5: Optional[Union[bytes, bytearray]],
                      stop: Optional[threading.Event] = None) -> None:
        dest.parent.mkdir(parents=True, exist_ok=True)
        partial = dest.with_name(dest.name + ".partial")
        try:
            with azure_errors("downloading", self._where(path)), open(partial, "w+b") as fh, \
                    OrderedHashWriter(fh.fileno()) as writer:
                # Ranges arrive in parallel, are written at their offsets and hashed in file order.
                client.download_file(max_concurrency=max_concurrency,
                                     progress_hook=_stoppable(bar.hook(path), stop)).readinto(cast(BinaryIO, writer))
                _, md5 = writer.result()
        except BaseException:  # a failed or interrupted download leaves nothing behind
            partial.unlink(missing_ok=True)
            raise
        finish_download(partial, dest, expected_md5, md5, self._where(path), stop=stop)

    def download_directory(self, path: str, dest: Union[str, Path], *,
                           max_concurrency: int = DIRECTORY_RANGE_CONCURRENCY, progress: ProgressArg = None,
                           stop: Optional[threading.Event] = None) -> List[Path]:
        """Download the tree under ``path`` into the local directory ``dest`` (created if missing).
        Each file appears complete or not at all (see :meth:`download_file`); Ctrl-C stops the
        transfer within about a second, leaving the files already complete and no partial one, and
        so does setting ``stop`` from another thread (which raises :class:`StoppedError`).

        :param str path: the directory, relative to the share's root.
        :param dest: the local directory.
        :keyword int max_concurrency: ranges fetched at once for each file.
        :keyword progress: None: a bar on a terminal or in Jupyter; True: always a bar; False: none; a callable:
            called with ``(bytes_done, bytes_total)``.
        :keyword stop: a ``threading.Event`` that interrupts the download when set.
        :returns: the local paths written.
        :raises InvalidSpecError: for a bad path or destination.
        :raises TransferError: when a download does not match its stored MD5.
        :raises StoppedError: when ``stop`` is set."""
        path = check_share_path(path, allow_root=True)
        check_concurrency(max_concurrency)
        stop = check_stop_event(stop)
        dest = local_directory(dest)
        files, targets, total = plan_download_directory(self.list(path, recursive=True), path, dest)
        with Progress(progress, total, dest.name) as bar:
            def task(item: ShareItem, local: Path) -> Callable[[threading.Event], None]:
                def fetch(stop: threading.Event) -> None:
                    client = self._file_client(item.path)
                    with azure_errors("reading", self._where(item.path)):
                        md5 = client.get_file_properties().content_settings.content_md5
                    self._download_one(client, item.path, local, max_concurrency=max_concurrency, bar=bar,
                                       expected_md5=md5, stop=stop)
                return fetch
            try:
                run_parallel([task(item, local) for item, local in zip(files, targets)],
                             workers=DEFAULT_FILE_CONCURRENCY, caller_stop=stop)
            except BaseException:
                # A task still busy after the stop grace is abandoned, and the process may exit under
                # it: its partial file is removed from here (finished files have none).
                for local in targets:
                    local.with_name(local.name + ".partial").unlink(missing_ok=True)
                raise
        return targets


