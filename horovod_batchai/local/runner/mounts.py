"""Volumes as a local node mounts them: Azure file shares and file servers become symlinks to their
directories, blob containers symlinks to mirror directories kept in step with the container.

:func:`plan_mounts` checks every volume the way Batch AI's mount would have failed (unknown account,
share or container, a key that is not the account's, ...) and says where each appears;
:func:`apply_mounts` makes the links."""
from __future__ import annotations

import os
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from ..core.context import ServiceContext
from ..storage import accounts

__all__ = ["MountError", "Mount", "parse_share_url", "plan_mounts", "apply_mounts", "remove_mounts", "hold_mirrors",
           "release_mirrors"]


class MountError(Exception):
    """A volume could not be mounted; the message names it and never holds a key."""


@dataclass(frozen=True)
class Mount:
    kind: str            # azureFileShare | azureBlobFileSystem | fileServer
    mount_point: Path    # where the job sees it
    target: Path         # the directory behind it
    description: str     # for the execution log
    #: a blob container's mirror (blob/mirror.py), filled before the job and kept in step while it runs.
    mirror: Optional[Any] = field(default=None, compare=False)

    def __str__(self) -> str:
        return f"{self.description} at {self.mount_point}"


def _relative_mount_path(entry: dict[str, Any], where: str) -> str:
    rel = str(entry.get("relativeMountPath") or "").strip("/")
    if not rel or any(part in ("..", ".") for part in rel.split("/")):
        raise MountError(f"{where}.relativeMountPath must be a relative path such as 'myshare', "
                         f"got {entry.get('relativeMountPath')!r}")
    return rel


def _share_dir(context: ServiceContext, account: str, share: str) -> Optional[Path]:
    from ..files import store as files_store
    try:
        found = files_store.share_path(context, account, share)
    except ValueError as exc:  # a name Azure would refuse
        raise MountError(f"file share {account}/{share}: {exc}") from None
    return Path(found) if found is not None and Path(found).is_dir() else None


def _mount_key(private: dict[str, Any], account: str, name: str) -> Optional[str]:
    wanted = f"{account}/{name}".lower()
    for key, value in (private.get("mountKeys") or {}).items():
        if key.lower() == wanted:
            return value
    return None


def plan_mounts(context: ServiceContext, volumes: Optional[dict[str, Any]], private: dict[str, Any], root: Path,
                *, where: str) -> list[Mount]:
    """Check every volume of a ``mountVolumes`` and say where each would appear under ``root``.

    Raises :class:`MountError` for what Azure would have failed to mount: an unknown account,
    share or blob container, an account key that is not one of the account's current keys (or that
    the blob endpoint refuses), blob storage unavailable, an unknown file server, an unmanaged file
    system.
    """
    mounts: list[Mount] = []
    volumes = volumes or {}
    for i, entry in enumerate(volumes.get("azureFileShares") or []):
        field_name = f"{where}.azureFileShares[{i}]"
        rel = _relative_mount_path(entry, field_name)
        url = str(entry.get("azureFileUrl") or "")
        if "<" in url:
            raise MountError(f"{field_name}.azureFileUrl {url!r} still holds a placeholder; put the storage "
                             "account name in it")
        account, share = parse_share_url(url, context.base_url)
        if accounts.find_account(context.store, account) is None:
            raise MountError(f"{field_name}: storage account {account!r} does not exist")
        key = _mount_key(private, entry.get("accountName") or account, share) or _mount_key(private, account, share)
        if key is None:
            raise MountError(f"{field_name}: no account key was given for {account}/{share} "
                             "(credentials.accountKey)")
        if key not in accounts.account_keys(context.store, account):
            raise MountError(f"{field_name}: the account key given for {account}/{share} is not a current "
                             f"key of storage account {account!r}; mount error (access denied)")
        target = _share_dir(context, account, share)
        if target is None:
            raise MountError(f"{field_name}: file share {share!r} does not exist in storage account {account!r}")
        mounts.append(Mount("azureFileShare", root / rel, target, f"Azure file share {account}/{share}"))
    for i, entry in enumerate(volumes.get("azureBlobFileSystems") or []):
        field_name = f"{where}.azureBlobFileSystems[{i}]"
        rel = _relative_mount_path(entry, field_name)
        account, container = str(entry.get("accountName") or ""), str(entry.get("containerName") or "")
        if not account or not container or "/" in account + container or ".." in account + container:
            raise MountError(f"{field_name} needs accountName and containerName")
        if accounts.find_account(context.store, account) is None:
            raise MountError(f"{field_name}: storage account {account!r} does not exist")
        key = _mount_key(private, account, container)
        if key is None:
            raise MountError(f"{field_name}: no account key was given for {account}/{container} "
                             "(credentials.accountKey)")
        if key not in accounts.account_keys(context.store, account):
            raise MountError(f"{field_name}: the account key given for {account}/{container} is not a current "
                             f"key of storage account {account!r}; mount error (access denied)")
        mirror = _blob_mirror(context, field_name, account, key, container)
        mounts.append(Mount("azureBlobFileSystem", root / rel, mirror.directory,
                            f"blob container {account}/{container}", mirror))
    for i, entry in enumerate(volumes.get("fileServers") or []):
        field_name = f"{where}.fileServers[{i}]"
        rel = _relative_mount_path(entry, field_name)
        server_id = str((entry.get("fileServer") or {}).get("id") or "")
        if not server_id or context.store.get(server_id) is None:
            raise MountError(f"{field_name}.fileServer.id: file server {server_id!r} does not exist")
        data = Path(context.fileserver_dir(server_id))
        source = str(entry.get("sourceDirectory") or "").strip("/")
        if ".." in source.split("/"):
            raise MountError(f"{field_name}.sourceDirectory must stay inside the file server, got {source!r}")
        target = data / source if source else data
        if not target.is_dir():
            raise MountError(f"{field_name}: directory {source or '/'!r} does not exist on file server "
                             f"{server_id.rsplit('/', 1)[-1]!r}")
        mounts.append(Mount("fileServer", root / rel, target,
                            f"file server {server_id.rsplit('/', 1)[-1]}:/{source}"))
    if volumes.get("unmanagedFileSystems"):
        raise MountError(f"{where}.unmanagedFileSystems cannot be mounted by the local service (it runs no "
                         "mount commands on this machine); use azureFileShares or fileServers")
    return mounts


def _blob_mirror(context: ServiceContext, field_name: str, account: str, key: str, container: str) -> Any:
    """The mirror of a container that exists and opens with ``key``, as blobfuse would have found it."""
    from ..blob.azurite import AzuriteError
    from ..blob.endpoint import BlobCheckFailed
    if context.blob is None:
        raise MountError(f"{field_name}: the local service has no blob endpoint")
    try:
        context.blob.check_container(account, key, container)
        return context.blob.mirror(account, key, container)
    except BlobCheckFailed as exc:
        raise MountError(f"{field_name}: {exc}") from None
    except AzuriteError as exc:
        raise MountError(f"{field_name}: blob storage is not available: {exc}") from None


#: the nodes of a cluster share its mount root and are set up in parallel threads: one at a time
#: may look at a mount point and change it, or two would each find the other's fresh link "in the way".
_MOUNT_LOCK = threading.Lock()


def apply_mounts(mounts: Iterable[Mount]) -> None:
    """Make each mount point a symlink to its target (atomically replacing an older link)."""
    with _MOUNT_LOCK:
        _apply_mounts(mounts)


def _apply_mounts(mounts: Iterable[Mount]) -> None:
    for mount in mounts:
        if mount.mirror is not None:
            _fill_mirror(mount)
        point = mount.mount_point
        point.parent.mkdir(parents=True, exist_ok=True)
        if point.is_symlink():
            if Path(os.readlink(point)) == mount.target:
                continue
        elif point.is_dir():
            try:
                point.rmdir()  # an empty directory left where nothing was mounted yet
            except OSError:
                raise MountError(f"cannot mount {mount.description}: {point} already exists and is not "
                                 "empty") from None
        elif point.exists():
            raise MountError(f"cannot mount {mount.description}: {point} already exists")
        tmp = point.with_name(f".{point.name}.{uuid.uuid4().hex[:8]}")
        os.symlink(mount.target, tmp, target_is_directory=True)
        os.replace(tmp, point)


def remove_mounts(mounts: Iterable[Mount]) -> None:
    """Unmount: remove each mount point's link (what it pointed at stays)."""
    with _MOUNT_LOCK:
        for mount in mounts:
            if mount.mount_point.is_symlink():
                mount.mount_point.unlink()


def _fill_mirror(mount: Mount) -> None:
    """Download the container's current content into its mirror before anyone reads it."""
    from azure.core.exceptions import AzureError
    if mount.mirror is None:
        return
    try:
        mount.mirror.pull()
    except AzureError as exc:
        raise MountError(f"cannot mount {mount.description}: downloading it failed "
                         f"({type(exc).__name__}: {getattr(exc, 'reason', None) or 'see the service log'})") from None


def hold_mirrors(context: ServiceContext, mounts: Iterable[Mount]) -> list[Any]:
    """Keep the mounted containers in step while a job or a setup task uses them; returns what to release."""
    held = [m.mirror for m in mounts if m.mirror is not None]
    for mirror in held:
        assert context.blob is not None  # only the blob endpoint makes mirrors
        context.blob.sync.hold(mirror)
    return held


def release_mirrors(context: ServiceContext, held: Iterable[Any], report: Callable[[str], None]) -> None:
    """The last upload of each held mirror; a failure is reported, never raised (the job is over)."""
    for mirror in held:
        try:
            assert context.blob is not None  # only the blob endpoint makes mirrors
            context.blob.sync.release(mirror)
        except Exception as exc:
            report(f"uploading the job's changes to blob container {mirror.container.container_name} failed: "
                   f"{type(exc).__name__}")


def parse_share_url(url: str, base_url: str = "") -> tuple[str, str]:
    """(account, share) of a share URL (see :func:`accounts.parse_share_url`); MountError if it is none."""
    try:
        return accounts.parse_share_url(url, base_url)
    except ValueError as exc:
        raise MountError(str(exc)) from None


