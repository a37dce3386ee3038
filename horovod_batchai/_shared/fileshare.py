"""What a file share is, and the plans and checks of its transfers, without a request: the sync and
the aio FileShare share them (the transfers themselves are each class's own)."""
from __future__ import annotations

import logging
import os
import re
import secrets
import stat
import threading
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Union

from azure.core.exceptions import HttpResponseError

from .._models.errors import InvalidSpecError, TransferError
from .._models.mounts import azure_file_url
from .._models.names import (check_count, check_location, check_resource_group, check_share_name, check_share_path,
                             check_storage_account)
from .parallel import check_stop
from .paths import local_path_under

if TYPE_CHECKING:

    pass

__all__ = ["DEFAULT_FILE_CONCURRENCY", "DEFAULT_RANGE_CONCURRENCY", "DIRECTORY_RANGE_CONCURRENCY", "FileShareBase",
           "SKUS", "ShareItem", "UPLOAD_TEMP_MARK", "UPLOAD_TEMP_RE", "VERIFY_REPLACEMENT", "add_entries",
           "check_account_options", "check_concurrency", "check_quota", "check_read_back", "check_upload_source",
           "finish_download", "holds_upload", "plan_download_directory", "plan_upload_directory",
           "range_md5_refused", "upload_temp_path", "walk_tree"]

log = logging.getLogger(__name__)


SKUS = ("Standard_LRS", "Standard_GRS", "Standard_RAGRS", "Standard_ZRS", "Premium_LRS")


#: files uploaded or downloaded side by side by the directory methods (each in parallel ranges)
DEFAULT_FILE_CONCURRENCY = 4


#: 4 MiB ranges of one file in flight at once (``max_concurrency``), chosen by measurement
#: (benchmarks/bench_files.py; see docs/local_service.rst, "Speed of the Files plane").
DEFAULT_RANGE_CONCURRENCY = 8


#: ranges in flight for each file of a directory transfer: the same requests in flight in all as
#: for one file (and a Ctrl-C waits for no more of them to finish).
DIRECTORY_RANGE_CONCURRENCY = DEFAULT_RANGE_CONCURRENCY // DEFAULT_FILE_CONCURRENCY


#: an upload is written to ``.<name>.uploading-<random>`` beside its final name and renamed into
#: place once complete and verified, so no reader ever sees a part-written file under its name.
#: (A leftover the FileShare could not delete is deleted when it next reaches the share; the local
#: service deletes one no upload has touched for a while; keep in step with ``STALE_UPLOAD_RE`` in
#: horovod_batchai/local/files/store.py.)
UPLOAD_TEMP_MARK = ".uploading-"


UPLOAD_TEMP_RE = re.compile(r"\..+\.uploading-[0-9a-f]{12}", re.DOTALL)


@dataclass(frozen=True)
class ShareItem:
    """A file or directory in a share; ``path`` is relative to the share root."""

    path: str
    is_directory: bool
    size: Optional[int] = None

    @property
    def name(self) -> str:
        """The last part of :attr:`path`: the file's or directory's own name."""
        return self.path.rsplit("/", 1)[-1]


def upload_temp_path(path: str) -> str:
    """Where an upload to ``path`` is written before it is renamed into place (same directory)."""
    directory, _, name = path.rpartition("/")
    # Cut long names so the temporary one stays within Azure's 255 characters.
    temp = f".{name[:200]}{UPLOAD_TEMP_MARK}{secrets.token_hex(6)}"
    return f"{directory}/{temp}" if directory else temp


#: what replaces ``verify=`` (deprecated) in the upload methods
VERIFY_REPLACEMENT = ("read_back=True for a full read-back; every range's MD5 is now checked by the service as it "
                       "arrives, and the file's MD5 stored with it, by default")


class FileShareBase:
    """What a share is, with no request: the sync and the aio FileShare share it."""

    def __init__(self, target: Any, resource_group: str, account_name: str, share_name: str, *,
                 _account_url: Optional[str] = None) -> None:
        self.target = target
        self.resource_group = check_resource_group(resource_group)
        self._account_name = check_storage_account(account_name)
        self.share_name = check_share_name(share_name)
        self._account_url = _account_url
        self._key: Optional[str] = None
        #: temporary names of failed uploads that could not be deleted then (the service was down)
        self._leftovers: set[str] = set()

    def __repr__(self) -> str:
        return f"FileShare(account_name={self._account_name!r}, share_name={self.share_name!r})"

    @property
    def id(self) -> str:
        """The share's ARM resource id."""
        return f"{self.account_id}/fileServices/default/shares/{self.share_name}"

    @property
    def account_name(self) -> str:
        """The storage account's name."""
        return self._account_name

    @property
    def account_id(self) -> str:
        """The storage account's ARM id."""
        return (f"/subscriptions/{self.target.subscription_id}/resourceGroups/{self.resource_group}"
                f"/providers/Microsoft.Storage/storageAccounts/{self._account_name}")

    @property
    def url(self) -> str:
        """The share's URL as a job mount names it: ``https://<account>.file.core.windows.net/<share>``."""
        return azure_file_url(self._account_name, self.share_name)

    def _left_behind(self, temp: str, why: BaseException) -> None:
        """Say that the unfinished upload ``temp`` could not be deleted, and who deletes it."""
        later = ("the local service deletes it after two minutes without an upload touching it"
                 if self.target.is_local else "otherwise delete it by hand")
        log.warning("could not delete the unfinished upload %s (%s); this FileShare deletes it the next time it "
                    "reaches the share, and %s", self._where(temp), type(why).__name__, later)

    def _where(self, path: str = "") -> str:
        return f"{self._account_name}/{self.share_name}" + (f"/{path}" if path else "")


def check_upload_source(source: Union[str, Path], path: str) -> tuple[Path, str, int]:
    """``upload_file``'s arguments checked: (the local file, the share path, the file's size)."""
    source = Path(source)
    path = check_share_path(path)
    if not source.is_file():
        raise InvalidSpecError("source", f"{str(source)!r} is not a file", "the path of an existing local file")
    return source, path, source.stat().st_size


def plan_upload_directory(source: Union[str, Path], path: str
                          ) -> tuple[Path, str, list[str], list[tuple[Path, str]], dict[str, int]]:
    """``upload_directory``'s arguments checked and its tree walked: (the local directory, the
    share path, share directories to create, (local file, share path) pairs, size by share path)."""
    source = Path(source)
    path = check_share_path(path, allow_root=True)
    if not source.is_dir():
        raise InvalidSpecError("source", f"{str(source)!r} is not a directory", "an existing local directory")
    directories, files = walk_tree(source, path)
    for _, remote in files:
        check_share_path(remote, "source (a file name in the tree)")
    return source, path, directories, files, {remote: local.stat().st_size for local, remote in files}


def plan_download_directory(items: List[ShareItem], path: str, dest: Path
                            ) -> tuple[List[ShareItem], List[Path], int]:
    """The files of the tree ``items`` (listed under ``path``) to fetch, where each goes under
    ``dest``, and their total size; the tree's directories are made under ``dest`` on the way."""
    prefix = f"{path}/" if path else ""
    for item in items:
        if item.is_directory:
            local_path_under(dest, item.path[len(prefix):]).mkdir(parents=True, exist_ok=True)
    # Another client's uploads in flight are not content yet (they appear under their name when done).
    files = [item for item in items if not item.is_directory and not UPLOAD_TEMP_RE.fullmatch(item.name)]
    return files, [local_path_under(dest, item.path[len(prefix):]) for item in files], sum(item.size or 0 for item in files)


def check_concurrency(max_concurrency: object) -> None:
    """Refuse a ``max_concurrency`` that is not a positive integer (azure-storage would take 0 as 1)."""
    check_count(max_concurrency, "max_concurrency", valid_form="an integer >= 1: the ranges of a file in flight at once")


def check_quota(quota_gib: object) -> None:
    if quota_gib is not None and (isinstance(quota_gib, bool) or not isinstance(quota_gib, int)
                                  or not 1 <= quota_gib <= 102400):
        raise InvalidSpecError("quota_gib", f"{quota_gib!r} is not a share quota", "1..102400 GiB")


def check_account_options(location: str, sku: str) -> str:
    """Refuse a new account's options before anything is sent; the location as checked."""
    location = check_location(location)
    if sku not in SKUS:
        raise InvalidSpecError("sku", f"{sku!r} is not a storage SKU", " | ".join(SKUS))
    return location


def add_entries(items: List[ShareItem], pending: Optional[List[str]], directory: str, entries: List[Any]) -> None:
    """Add a directory listing's entries to ``items`` (and its subdirectories to ``pending``, when walking)."""
    for entry in entries:
        full = f"{directory}/{entry['name']}" if directory else entry["name"]
        is_dir = bool(entry.get("is_directory"))
        items.append(ShareItem(path=full, is_directory=is_dir, size=None if is_dir else entry.get("size")))
        if is_dir and pending is not None:
            pending.append(full)


@contextmanager
def range_md5_refused(source: Path, where: str) -> Iterator[None]:
    """A range the service refused for its MD5 (``Md5Mismatch``) as the TransferError it is."""
    try:
        yield
    except HttpResponseError as err:
        if getattr(err, "error_code", None) != "Md5Mismatch":
            raise
        raise TransferError(f"a range of {source} changed on its way to {where} and the service refused it "
                            "(Md5Mismatch); nothing was replaced") from err


def check_read_back(where: str, source: Path, sent: tuple[int, bytes], held: tuple[int, bytes]) -> None:
    """TransferError unless the share holds what was sent: (size, MD5) both ways."""
    if held != sent:
        raise TransferError(f"{where} differs from {source} after upload ({held[0]} bytes in the share, "
                            f"{sent[0]} locally); nothing was replaced")


def holds_upload(props: Any, size: int, md5: bytes) -> bool:
    """Whether a file's properties are those of the upload of ``size`` bytes with ``md5``."""
    held = props.content_settings.content_md5
    return bool(props.size == size and held and bytes(held) == md5)


def finish_download(partial: Path, dest: Path, expected_md5: Optional[Union[bytes, bytearray]], md5: bytes,
                    where: str, *, stop: Optional[threading.Event] = None) -> None:
    """Rename a complete download into place, unless it differs from the MD5 the share holds (or
    the caller's stop event was set during its last range: the caller asked for nothing)."""
    if expected_md5 and bytes(expected_md5) != md5:
        partial.unlink()
        raise TransferError(f"{where} does not match the MD5 the share holds for it")
    if stop is not None and stop.is_set():
        partial.unlink()
        check_stop(stop)
    partial.replace(dest)


def walk_tree(source: Path, path: str) -> tuple[list[str], list[tuple[Path, str]]]:
    """(share directories to create, (local file, share path) pairs) for the tree under ``source``.
    Links are followed only to files inside the tree; anything else that is not a regular file or
    a directory is skipped with a warning naming it."""
    root = os.path.realpath(source)
    directories: list[str] = []
    files: list[tuple[Path, str]] = []

    def skip(local: Path, why: str) -> None:
        warnings.warn(f"upload_directory: skipped {str(local)!r}: {why}", UserWarning, stacklevel=4)

    for current, dirnames, filenames in os.walk(source):  # never descends into linked directories
        rel = Path(current).relative_to(source).as_posix()
        remote_root = "/".join(p for p in (path, "" if rel == "." else rel) if p)
        if remote_root:
            directories.append(remote_root)
        for name in [d for d in dirnames if os.path.islink(os.path.join(current, d))]:
            dirnames.remove(name)
            skip(Path(current) / name, "it is a symbolic link to a directory (links to directories are not followed)")
        dirnames.sort()
        for name in sorted(filenames):
            local = Path(current) / name
            try:
                mode = os.lstat(local).st_mode
            except OSError:
                continue  # removed while we walked
            if stat.S_ISLNK(mode):
                real = os.path.realpath(local)
                if not real.startswith(root + os.sep):
                    skip(local, "it is a symbolic link that leads out of the uploaded tree")
                    continue
                if not os.path.isfile(real):
                    skip(local, "it is a broken symbolic link, or one to something other than a regular file")
                    continue
                local, mode = Path(real), os.stat(real).st_mode
            if not stat.S_ISREG(mode):
                kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                        else "a device" if stat.S_ISBLK(mode) or stat.S_ISCHR(mode) else "not a regular file")
                skip(local, f"it is {kind}")
                continue
            files.append((local, f"{remote_root}/{name}" if remote_root else name))
    return directories, files


