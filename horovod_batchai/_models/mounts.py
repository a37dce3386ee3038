"""What a job or cluster mounts: Azure file shares, blob containers, file servers, other file systems.

Mount specs are frozen values. Account keys and the mount command of an unmanaged file system
(which commonly carries a password: ``mount -t cifs ... -o password=...``) are held, because the
service needs them in the request, but never shown: they are left out of ``repr`` and replaced by
placeholders in ``HorovodJob.to_dict()``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional, Union
from urllib.parse import urlparse

from .errors import InvalidSpecError
from .names import (check_command_text, check_container_name, check_relative_mount_path, check_share_name,
                    check_storage_account, check_text)
from .pickling import PicklesWithoutSecrets

__all__ = ["AzureFileShareMount", "AzureBlobMount", "FileServerMount", "UnmanagedMount", "Mount",
           "ACCOUNT_PLACEHOLDER", "KEY_PLACEHOLDER", "azure_file_url", "share_url_parts", "split_read_only"]

#: placeholders that a tutorial-style job.json carries and :meth:`HorovodJob.with_storage` fills.
ACCOUNT_PLACEHOLDER = "<AZURE_BATCHAI_STORAGE_ACCOUNT>"
KEY_PLACEHOLDER = "<AZURE_BATCHAI_STORAGE_KEY>"

_MODE_DIGITS = set("01234567")
_FILE_SERVER_ID = re.compile(r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.BatchAI/workspaces/"
                             r"[^/]+/fileServers/[^/]+\Z", re.IGNORECASE)
_SHARE_URL_FORM = "https://<account>.file.core.windows.net/<share>"
_FILE_SERVER_FORM = ("/subscriptions/<sub>/resourceGroups/<rg>/providers/Microsoft.BatchAI/workspaces/<ws>/"
                     "fileServers/<name>")


def azure_file_url(account_name: str, share_name: str) -> str:
    """The share URL a mount names: ``https://<account>.file.core.windows.net/<share>``, for both
    targets (the local service resolves it by account and share)."""
    return f"https://{account_name}.file.core.windows.net/{share_name}"


def _check_mode(value: str, field_name: str) -> str:
    if not (isinstance(value, str) and len(value) == 4 and set(value) <= _MODE_DIGITS):
        raise InvalidSpecError(field_name, f"{value!r} is not a file mode", "four octal digits like '0777'")
    return value


def _check_account(name: str, field_name: str) -> str:
    return name if name == ACCOUNT_PLACEHOLDER else check_storage_account(name, field_name)


def _check_key(key: Optional[str], field_name: str) -> None:
    if key is not None:
        check_text(key, field_name, valid_form="the storage account's key (FileShare.mount() fetches it)",
                   max_bytes=1024, secret=True)


def _check_options(options: Optional[str], field_name: str) -> None:
    if options is not None:
        check_text(options, field_name, valid_form="mount options like 'vers=4,ro', or leave it out", max_bytes=4096)


def share_url_parts(url: object, field_name: str) -> tuple[str, str]:
    """(account, share) of ``https://<account>.file.<endpoint suffix>/<share>`` (the account may be
    the storage placeholder)."""
    check_text(url, field_name, valid_form=_SHARE_URL_FORM, max_bytes=2048)
    assert isinstance(url, str)
    parsed = urlparse(url.replace(ACCOUNT_PLACEHOLDER, "placeholder"))
    segments = [s for s in parsed.path.split("/") if s]
    try:
        port = parsed.port
    except ValueError:
        port = -1
    host = parsed.hostname or ""
    account, _, suffix = host.partition(".")
    if (parsed.scheme != "https" or not suffix.startswith("file.") or len(segments) != 1 or port == -1
            or parsed.query or parsed.fragment or "@" in parsed.netloc):
        shown = url[:200] if "@" not in parsed.netloc and not parsed.query else "the URL"
        raise InvalidSpecError(field_name, f"{shown!r} is not a file share URL", _SHARE_URL_FORM)
    account = ACCOUNT_PLACEHOLDER if url.split("://", 1)[-1].startswith(ACCOUNT_PLACEHOLDER) else account
    for part, check in (("share", check_share_name), ("storage account", check_storage_account)):
        name = segments[0] if part == "share" else account
        if name == ACCOUNT_PLACEHOLDER:
            continue
        try:
            check(name, field_name)
        except InvalidSpecError as err:
            raise InvalidSpecError(field_name, f"names the {part} {name[:100]!r}, which {err.problem.split(' ', 1)[1]}",
                                   f"{_SHARE_URL_FORM} where <{part.split()[-1]}> is {err.valid_form}") from None
    return account, segments[0]


_MOUNT_PICKLE_HINT = ("the mount without its key (pickle spec.without_secrets(); the receiving process fills the key "
                      "with spec.with_storage(share), or makes the mount with share.mount())")


@dataclass(frozen=True, kw_only=True)
class AzureFileShareMount(PicklesWithoutSecrets):
    """An Azure file share mounted at ``$AZ_BATCHAI_JOB_MOUNT_ROOT/<relative_mount_path>`` (or
    ``$AZ_BATCHAI_MOUNT_ROOT/...`` on a cluster). Pickles without a key only."""

    _pickle_prefix = "mount."
    _pickle_hint = _MOUNT_PICKLE_HINT

    account_name: str
    azure_file_url: str
    relative_mount_path: str
    account_key: Optional[str] = field(default=None, repr=False)
    file_mode: str = "0777"
    directory_mode: str = "0777"

    def __post_init__(self) -> None:
        url_account, _ = share_url_parts(self.azure_file_url, "mount.azure_file_url")
        _check_account(self.account_name, "mount.account_name")
        if ACCOUNT_PLACEHOLDER not in (url_account, self.account_name) and url_account != self.account_name:
            raise InvalidSpecError("mount.account_name", f"{self.account_name!r} is not the account of "
                                   f"azure_file_url ({url_account!r})", "the storage account the share URL names")
        check_relative_mount_path(self.relative_mount_path, "mount.relative_mount_path")
        _check_key(self.account_key, "mount.account_key")
        _check_mode(self.file_mode, "mount.file_mode")
        _check_mode(self.directory_mode, "mount.directory_mode")

    @property
    def share_name(self) -> str:
        """The share's name, read from :attr:`azure_file_url`."""
        return urlparse(self.azure_file_url.replace(ACCOUNT_PLACEHOLDER, "placeholder")).path.strip("/")

    @property
    def url_account_name(self) -> str:
        """The account the URL names (its host's first label)."""
        host = self.azure_file_url.split("://", 1)[-1].split("/", 1)[0]
        return host.split(".", 1)[0]

    @property
    def is_resolved(self) -> bool:
        """True when no storage placeholder is left and a key is present."""
        return (ACCOUNT_PLACEHOLDER not in self.account_name + self.azure_file_url
                and bool(self.account_key) and self.account_key != KEY_PLACEHOLDER)

    @classmethod
    def for_share(cls, account_name: str, share_name: str, *, relative_mount_path: Optional[str] = None,
                  account_key: Optional[str] = None) -> "AzureFileShareMount":
        """The mount of share ``share_name`` of account ``account_name``, at its Files endpoint on Azure.

        :param str account_name: the storage account.
        :param str share_name: the share.
        :keyword str relative_mount_path: where it appears under the mount root (default: ``share_name``).
        :keyword str account_key: the account's key (None: filled later, e.g. by :meth:`HorovodJob.with_storage`).
        :returns: an :class:`AzureFileShareMount`.
        :raises InvalidSpecError: for a bad name or path."""
        return cls(account_name=account_name, azure_file_url=azure_file_url(account_name, share_name),
                   relative_mount_path=relative_mount_path or share_name, account_key=account_key)


@dataclass(frozen=True, kw_only=True)
class AzureBlobMount(PicklesWithoutSecrets):
    """An Azure blob container, mounted with blobfuse on Batch AI and as an AzureBlob datastore
    on Azure ML.

    Credentials: ``account_key``; or ``sas_token`` (Azure ML only); or neither, which on Azure ML
    is an identity-based datastore (the job's identity reads the container; Batch AI needs the
    key). ``read_only`` mounts it read-only: blobfuse's ``-o ro`` on Batch AI (``mount_options``
    holding ``-o ro`` means the same), a job input mounted ``ro_mount`` on Azure ML; otherwise it
    is mounted read-write (an Azure ML job output, ``rw_mount``). It pickles without a key or SAS
    token only.
    """

    _pickle_prefix = "mount."
    _pickle_hint = _MOUNT_PICKLE_HINT

    account_name: str
    container_name: str
    relative_mount_path: str
    account_key: Optional[str] = field(default=None, repr=False)
    mount_options: Optional[str] = None
    sas_token: Optional[str] = field(default=None, repr=False)
    read_only: bool = False

    def __post_init__(self) -> None:
        _check_account(self.account_name, "mount.account_name")
        check_container_name(self.container_name, "mount.container_name")
        check_relative_mount_path(self.relative_mount_path, "mount.relative_mount_path")
        _check_key(self.account_key, "mount.account_key")
        _check_options(self.mount_options, "mount.mount_options")
        if self.sas_token is not None:
            check_text(self.sas_token, "mount.sas_token", max_bytes=4096, secret=True,
                       valid_form="a SAS token for the container, like 'sv=...&sig=...'")
            if self.account_key is not None:
                raise InvalidSpecError("mount.sas_token", "is given with an account key",
                                       "one credential: account_key, sas_token, or neither (identity-based)")
        if not isinstance(self.read_only, bool):
            raise InvalidSpecError("mount.read_only", f"{self.read_only!r} is not True or False", "True or False")
        read_only, options = split_read_only(self.mount_options)
        if read_only:  # one meaning, one field: '-o ro' is read_only
            object.__setattr__(self, "read_only", True)
            object.__setattr__(self, "mount_options", options)

    @property
    def is_resolved(self) -> bool:
        """The account is named and no key placeholder is left (no credential at all is an
        identity-based mount, which only Azure ML accepts)."""
        return self.account_name != ACCOUNT_PLACEHOLDER and self.account_key != KEY_PLACEHOLDER

    @property
    def blobfuse_options(self) -> Optional[str]:
        """``mount_options`` with ``-o ro`` added for a read-only mount, as Batch AI takes them."""
        return " ".join(part for part in (self.mount_options, "-o ro" if self.read_only else None) if part) or None


def split_read_only(options: Optional[str]) -> tuple[bool, Optional[str]]:
    """(whether blobfuse ``options`` hold ``ro``, the options without it)."""
    if not options:
        return False, options
    tokens, kept, found = options.split(), [], False
    i = 0
    while i < len(tokens):
        if tokens[i] == "-o" and i + 1 < len(tokens):
            items = tokens[i + 1].split(",")
            rest = [item for item in items if item != "ro"]
            found = found or len(rest) != len(items)
            kept += ["-o", ",".join(rest)] if rest else []
            i += 2
        else:
            kept.append(tokens[i])
            i += 1
    return (True, " ".join(kept) or None) if found else (False, options)


@dataclass(frozen=True, kw_only=True)
class FileServerMount:
    """A Batch AI file server of the workspace (by resource id)."""

    file_server_id: str
    relative_mount_path: str
    source_directory: Optional[str] = None
    mount_options: Optional[str] = None

    def __post_init__(self) -> None:
        check_text(self.file_server_id, "mount.file_server_id", valid_form=_FILE_SERVER_FORM, max_bytes=2048)
        if not _FILE_SERVER_ID.match(self.file_server_id):
            raise InvalidSpecError("mount.file_server_id", f"{self.file_server_id[:200]!r} is not a file server id",
                                   _FILE_SERVER_FORM)
        check_relative_mount_path(self.relative_mount_path, "mount.relative_mount_path")
        if self.source_directory is not None:
            check_text(self.source_directory, "mount.source_directory", max_bytes=4096,
                       valid_form="a directory of the file server like '/data', or leave it out for all of it")
        _check_options(self.mount_options, "mount.mount_options")

    is_resolved = True


@dataclass(frozen=True, kw_only=True)
class UnmanagedMount(PicklesWithoutSecrets):
    """Any other file system, mounted by ``mount_command`` (the service appends the mount path).
    The command is sent to the service as given but treated as a secret: it is not in ``repr``,
    ``HorovodJob.to_dict()`` shows ``<SECRET>`` in its place, and it is never pickled."""

    _pickle_prefix = "mount."
    _pickle_hint = "a spec without this mount; build the mount in the receiving process"

    mount_command: str = field(repr=False)
    relative_mount_path: str

    def __post_init__(self) -> None:
        check_command_text(self.mount_command, "mount.mount_command",
                           valid_form="a mount command like 'mount -t nfs 10.0.0.4:/data' (the service appends "
                           "the mount path)")
        check_relative_mount_path(self.relative_mount_path, "mount.relative_mount_path")

    is_resolved = True


Mount = Union[AzureFileShareMount, AzureBlobMount, FileServerMount, UnmanagedMount]


def describe(mount: Any) -> str:
    """A short, secret-free description for messages."""
    if isinstance(mount, AzureFileShareMount):
        return f"file share {mount.azure_file_url} at {mount.relative_mount_path}"
    if isinstance(mount, AzureBlobMount):
        access = " (read-only)" if mount.read_only else ""
        return f"blob container {mount.account_name}/{mount.container_name} at {mount.relative_mount_path}{access}"
    if isinstance(mount, FileServerMount):
        return f"file server {mount.file_server_id.rsplit('/', 1)[-1]} at {mount.relative_mount_path}"
    return f"file system at {mount.relative_mount_path}"
