"""A job's output files, as ``listOutputFiles`` answers them.

When a job starts, its run records where each of its output directories is
(``runner/output_dirs.py``): the local path, and, when that path lies on an Azure file share or a
mounted blob container, the account, the share or container and the path inside it. For a file
share, listing reads the file system (the truth for which files exist and how large they are)
and makes each file a SAS download URL to the local Files endpoint, signed with the account's
current key1 exactly as Azure Storage signs a service SAS. For a blob container, listing asks the
container itself (after uploading what the job wrote since the last sync), shows name prefixes
as directories, as blobfuse did, and links each blob with a read-only blob SAS (``sr=b&sp=r``) to
the blob endpoint.
"""
from __future__ import annotations

import datetime
import logging
import os
from pathlib import PurePosixPath
from typing import Any, Optional
from urllib.parse import quote

from azure.storage.fileshare import generate_file_sas

from ..storage import accounts
from ..storage.errors import StorageAccountNotFound
from ..core.arm_errors import InvalidParameter
from ..core.context import ServiceContext
from ..files.store import share_path as share_directory
from ..runner.output_dirs import STDOUTERR, StoragePlace, output_dir
from ..core.arm_errors import ShareNotFound
from .errors import BlobStorageUnavailable, DirectoryNotFound, OutputDirectoryNotFound, OutputDirectoryNotOnFileShare
from .records import Job

log = logging.getLogger(__name__)

__all__ = ["list_output_files"]


def _known_ids(job: Job) -> list[str]:
    return [STDOUTERR] + [str(d.get("id")) for d in job.properties.get("outputDirectories") or []]


def _timestamp(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def list_output_files(context: ServiceContext, job: Job, *, output_directory_id: str, directory: str = ".",
                      link_expiry_minutes: int = 60, max_results: int = 1000,
                      skip: int = 0) -> tuple[list[dict[str, Any]], Optional[int]]:
    """The files and directories in ``directory`` of one output directory of a job, sorted by
    name, from ``skip`` on; returns them and the skip of the next page (None when none is left)."""
    known = _known_ids(job)
    if output_directory_id.lower() not in (k.lower() for k in known):
        raise OutputDirectoryNotFound(
            f"The job has no output directory with id {output_directory_id!r}; its output directories "
            f"are {', '.join(repr(k) for k in known)}.", target="outputdirectoryid")
    if not 1 <= max_results <= 1000:
        raise InvalidParameter(f"maxresults must be between 1 and 1000, got {max_results}.",
                               target="maxresults")
    if not 5 <= link_expiry_minutes <= 600:
        raise InvalidParameter(
            f"linkexpiryinminutes must be between 5 and 600, got {link_expiry_minutes}.",
            target="linkexpiryinminutes")
    relative = PurePosixPath(directory.replace("\\", "/") or ".")
    if relative.is_absolute() or ".." in relative.parts:
        raise InvalidParameter(f"directory must be a path inside the output directory, such as "
                               f"'.' or 'logs/epoch1', got {directory!r}.", target="directory")
    location = output_dir(context, job.id, output_directory_id)
    if location is None:
        # The job has not started yet: the directory does not exist, so nothing is in it.
        if relative.parts:
            raise DirectoryNotFound(f"The directory {directory!r} does not exist in output "
                                    f"directory {output_directory_id!r} yet.", target="directory")
        return [], None
    place = location.storage
    if place is None:
        raise OutputDirectoryNotOnFileShare(
            f"Output directory {output_directory_id!r} is not on an Azure file share or blob container, "
            "so its files have no download links; put its path prefix under a mounted Azure file share "
            "or blob container.")
    if place.blob:
        return _list_blob_directory(context, place, output_directory_id, directory, relative,
                                    link_expiry_minutes, max_results, skip)
    # The share itself, not the job's view of it: the job's mounts go when the job ends.
    try:
        share_root = share_directory(context, place.account, place.share)
    except ValueError:
        share_root = None
    if share_root is None:
        raise ShareNotFound(f"The file share {place.share!r} holding output directory "
                            f"{output_directory_id!r} no longer exists.")
    out_root = share_root.joinpath(*[s for s in place.path.split("/") if s])
    folder = out_root.joinpath(*relative.parts)
    # A link the job planted may lead out of the output directory: what it leads to is not listed
    # (downloading it is refused too).
    real_root = os.path.realpath(out_root)

    def inside(path: str) -> bool:
        real = os.path.realpath(path)
        return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)

    if not inside(str(folder)):
        raise DirectoryNotFound(f"The directory {directory!r} does not exist in output "
                                f"directory {output_directory_id!r}.", target="directory")
    if not folder.is_dir():
        if not relative.parts:
            return [], None
        raise DirectoryNotFound(f"The directory {directory!r} does not exist in output "
                                f"directory {output_directory_id!r}.", target="directory")
    try:
        entries = sorted((e for e in os.scandir(folder) if not e.is_symlink() or inside(e.path)), key=lambda e: e.name)
    except OSError:
        entries = []
    page = entries[skip:skip + max_results]
    keys = accounts.account_keys(context.store, place.account)
    if not keys:
        raise StorageAccountNotFound(f"The storage account {place.account!r} holding "
                                     f"output directory {output_directory_id!r} no longer exists.")
    expiry = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=link_expiry_minutes)
    base_segments = [s for s in place.path.split("/") if s] + list(relative.parts)
    items: list[dict[str, Any]] = []
    for entry in page:
        try:
            is_dir = entry.is_dir()
            stat = entry.stat()
        except OSError:
            continue  # removed while we listed
        if is_dir:
            items.append({"name": entry.name, "fileType": "directory"})
            continue
        segments = base_segments + [entry.name]
        sas = generate_file_sas(place.account, place.share, segments, account_key=keys[0],
                                permission="rl", expiry=expiry)
        url = (f"{context.base_url}/{place.account}/{place.share}/"
               + "/".join(quote(s, safe="") for s in segments) + "?" + sas)
        items.append({"name": entry.name, "fileType": "file", "downloadUrl": url,
                      "properties": {"lastModified": _timestamp(stat.st_mtime), "contentLength": stat.st_size}})
    next_skip = skip + max_results if skip + max_results < len(entries) else None
    return items, next_skip


def _list_blob_directory(context: ServiceContext, place: StoragePlace, output_directory_id: str,
                         directory: str, relative: PurePosixPath, link_expiry_minutes: int, max_results: int,
                         skip: int) -> tuple[list[dict[str, Any]], Optional[int]]:
    from azure.core.exceptions import AzureError, ResourceNotFoundError
    from ..blob.azurite import AzuriteError  # imported here: only blob listings need the blob package

    account, container = place.account, place.share
    blob = context.blob
    if blob is None:
        raise BlobStorageUnavailable(f"Output directory {output_directory_id!r} is in blob container "
                                     f"{account}/{container}, and the service runs without blob storage.")
    keys = accounts.account_keys(context.store, account)
    if not keys:
        raise StorageAccountNotFound(f"The storage account {account!r} holding "
                                     f"output directory {output_directory_id!r} no longer exists.")
    segments = [s for s in place.path.split("/") if s] + list(relative.parts)
    prefix = "".join(f"{s}/" for s in segments)
    # What the job wrote since the last sync goes up first, so the listing is current; should that
    # fail, the listing shows the container as the last sync left it (the next one retries).
    for mirror in blob.sync.held():
        if (mirror.container.account_name.lower(), mirror.container.container_name) == (account.lower(), container):
            try:
                mirror.push()
            except AzureError as exc:
                log.warning("uploading %r before listing it failed: %s", mirror, type(exc).__name__)
    try:
        entries = blob.list_directory(account, keys[0], container, prefix)
    except AzuriteError as exc:
        raise BlobStorageUnavailable(f"Output directory {output_directory_id!r} is in blob "
                                     f"container {account}/{container}, and {exc}") from None
    except ResourceNotFoundError:
        raise ShareNotFound(f"The blob container {container!r} holding output directory "
                            f"{output_directory_id!r} no longer exists.") from None
    except AzureError as exc:  # Azurite went away mid-listing, say
        raise BlobStorageUnavailable(f"Output directory {output_directory_id!r} is in blob container "
                                     f"{account}/{container}, and the blob endpoint did not answer "
                                     f"({type(exc).__name__}).") from None
    if not entries and relative.parts:
        raise DirectoryNotFound(f"The directory {directory!r} does not exist in output "
                                f"directory {output_directory_id!r}.", target="directory")
    items: list[dict[str, Any]] = []
    for entry in entries[skip:skip + max_results]:
        if entry["is_directory"]:
            items.append({"name": entry["name"], "fileType": "directory"})
            continue
        url = blob.download_url(account, keys[0], container, prefix + str(entry["name"]),
                                expiry_minutes=link_expiry_minutes)
        modified = entry["last_modified"]
        items.append({"name": entry["name"], "fileType": "file", "downloadUrl": url,
                      "properties": {"lastModified": modified.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                     "contentLength": entry["size"]}})
    next_skip = skip + max_results if skip + max_results < len(entries) else None
    return items, next_skip
