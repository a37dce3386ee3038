"""Azure Files shares as ordinary directories, plus what a filesystem cannot hold.

Share contents live at ``<state>/files/<account lower>/<share>/<path>`` as real files, so a user can
look at them and a job can write its outputs straight into a mounted share. That makes the
filesystem the truth for which shares, directories and files exist and how large files are: a
share exists iff its directory does, and a file a job wrote is as real as one uploaded through the
REST API (it simply has no metadata row and is answered with defaults).

SQLite (tables of our own in the service's store) keeps only what the filesystem cannot: share
quota, metadata, access tier, protocol and root squash, and per file/directory the user metadata, content settings (Content-Type,
Cache-Control, ...) and SMB times the caller set. A row is trusted only while the inode it was
written for is still at that path, so a file replaced behind our back never inherits stale
properties. ETag and Last-Modified of files and directories come from the file's own mtime, which
every change through the API bumps.

Every path is checked twice: names are validated before anything is touched (no ``..``, no
separators, no control characters, bounded lengths), and the resolved real path must lie inside
the share's directory, so neither a crafted name nor a symlink a job left behind reaches outside.
Errors are raised as :class:`StorageError` with the codes Azure Files answers.
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import re
import shutil
import stat
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional

from .errors import StorageError
from ..core.disk import disk_problem
from ..core.store import Store

if TYPE_CHECKING:
    from ..core.context import ServiceContext

__all__ = [
    "DEFAULT_QUOTA_GIB", "MAX_QUOTA_GIB", "MAX_FILE_SIZE", "MAX_RANGE_BYTES",
    "ShareInfo", "EntryInfo", "ContentSettings", "FileShares", "FileBody",
    "validate_account_name", "validate_share_name", "validate_entry_name", "validate_metadata",
    "share_path", "delete_account_data", "shares_for", "content_md5",
    "STALE_UPLOAD_RE", "STALE_UPLOAD_AGE_S", "STALE_UPLOAD_SWEEP_S", "note_upload_activity", "forget_upload_activity",
    "remove_stale_uploads",
]

#: quota of a share created without x-ms-share-quota, in GiB (a standard share's default).
DEFAULT_QUOTA_GIB = 5120
#: the largest quota a share may have, in GiB (a large-file-share standard account).
MAX_QUOTA_GIB = 102400
#: the largest file Azure Files holds: 4 TiB.
MAX_FILE_SIZE = 4 * 1024 ** 4
#: the largest range one Put Range may write.
MAX_RANGE_BYTES = 4 * 1024 * 1024
#: limits on names, as Azure Files documents them.
MAX_NAME_CHARS = 255
MAX_PATH_CHARS = 2048
MAX_DEPTH = 250
MAX_METADATA_BYTES = 8 * 1024

_ACCOUNT_RE = re.compile(r"^[a-z0-9]{3,24}\Z")
# DNS-style: 3-63 chars, lower-case letters, digits and single hyphens between them.
_SHARE_RE = re.compile(r"^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}\Z")
# Characters Azure Files refuses in file and directory names (besides control characters).
_BAD_NAME_CHARS = set('"\\/:|<>*?')
_METADATA_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
#: the temporary name horovod_batchai's uploads are written under before Rename File puts them in
#: place (``.<name>.uploading-<12 hex digits>``, see UPLOAD_TEMP_MARK in horovod_batchai/_fileshare.py).
STALE_UPLOAD_RE = re.compile(r"^\..+\.uploading-[0-9a-f]{12}\Z", re.DOTALL)
#: seconds without a write (or, while the service runs, any request) after which such a file is a
#: leftover, not an upload in progress: a client writes, reads back and renames its upload without
#: long pauses, and one retrying across a service restart is back within seconds.
STALE_UPLOAD_AGE_S = 120.0
#: seconds between two sweeps for such files while the service runs
STALE_UPLOAD_SWEEP_S = 30.0

# When a request last named each temporary upload, by its path on disk (reading one back does not
# change its mtime, and must not: Last-Modified and the ETag come from it).
_upload_seen: dict[str, float] = {}
_upload_seen_lock = threading.Lock()

# Range bookkeeping reads a file's ranges, writes its bytes and stores the new ranges as one step,
# so that concurrent Put Ranges of one file neither lose a range nor leave the ranges unpinned.
_ranges_lock = threading.Lock()

# Stores whose schema this module has ensured (checked on every request, so kept cheap).


# -- names ------------------------------------------------------------------------------------

def validate_account_name(name: str) -> str:
    if not _ACCOUNT_RE.match(name):
        raise StorageError(400, "InvalidUri",
                           f"The account name {name[:40]!r} is not valid: a storage account name is 3-24 "
                           "lower-case letters and digits, and the URL must be https://HOST:PORT/<account>/...")
    return name


def validate_share_name(name: str) -> str:
    if not _SHARE_RE.match(name) or "--" in name:
        raise StorageError(400, "InvalidResourceName",
                           f"The share name {name[:80]!r} is not valid: use 3-63 lower-case letters, digits "
                           "and single hyphens, starting and ending with a letter or digit.")
    return name


def validate_entry_name(name: str) -> str:
    """One path segment of a file or directory (already percent-decoded)."""
    problem = None
    if name in ("", ".", ".."):
        problem = "empty segments, '.' and '..' are not allowed"
    elif len(name) > MAX_NAME_CHARS:
        problem = f"a name is at most {MAX_NAME_CHARS} characters"
    elif any(ch in _BAD_NAME_CHARS or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in name):
        problem = 'names may not contain control characters or any of " \\ / : | < > * ?'
    if problem:
        raise StorageError(400, "InvalidResourceName",
                           f"The file or directory name {name[:80]!r} is not valid: {problem}.")
    return name


def validate_parts(parts: tuple[str, ...]) -> tuple[str, ...]:
    for part in parts:
        validate_entry_name(part)
    if len(parts) > MAX_DEPTH:
        raise StorageError(400, "InvalidResourceName", f"A path may be at most {MAX_DEPTH} levels deep.")
    if len("/".join(parts)) > MAX_PATH_CHARS:
        raise StorageError(400, "InvalidResourceName", f"A path may be at most {MAX_PATH_CHARS} characters.")
    return parts


def validate_metadata(metadata: dict[str, str]) -> dict[str, str]:
    """Metadata names are C# identifiers, compared case-insensitively; 8 KiB in all."""
    seen: set[str] = set()
    total = 0
    for name, value in metadata.items():
        if not name:
            raise StorageError(400, "EmptyMetadataKey", "A metadata name (x-ms-meta-<name>) may not be empty.")
        if not _METADATA_NAME_RE.match(name):
            raise StorageError(400, "InvalidMetadata",
                               f"The metadata name {name[:80]!r} is not valid: names must be C# identifiers "
                               "(a letter or '_' followed by letters, digits or '_').")
        if name.lower() in seen:
            raise StorageError(400, "InvalidMetadata", f"The metadata name {name!r} is given twice.")
        seen.add(name.lower())
        if any(ord(ch) < 0x20 and ch != "\t" or ord(ch) > 0x7E for ch in value):
            raise StorageError(400, "InvalidMetadata",
                               f"The value of metadata {name!r} must be printable ASCII.")
        total += len(name) + len(value)
    if total > MAX_METADATA_BYTES:
        raise StorageError(400, "MetadataTooLarge",
                           f"Metadata names and values may hold at most {MAX_METADATA_BYTES} bytes in all.")
    return dict(metadata)


# -- what handlers get back -------------------------------------------------------------------

@dataclass(frozen=True)
class ContentSettings:
    content_type: str = "application/octet-stream"
    content_encoding: str = ""
    content_language: str = ""
    cache_control: str = ""
    content_disposition: str = ""
    content_md5: str = ""   # base64, as the caller stored it

    def to_json(self) -> dict[str, str]:
        # An empty content type is kept: it was cleared, which is not the same as never set.
        return {k: v for k, v in self.__dict__.items() if v or k == "content_type"}

    @classmethod
    def from_json(cls, data: dict[str, str]) -> "ContentSettings":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass(frozen=True)
class ShareInfo:
    account: str
    name: str
    quota_gib: int
    metadata: dict[str, str]
    etag: str
    last_modified: float
    #: TransactionOptimized | Hot | Cool | Premium, fixed when the share is made (see create_share).
    access_tier: str = "TransactionOptimized"
    #: when the tier was last set (creation included); None for a share made by hand.
    access_tier_changed: Optional[float] = None
    #: SMB or NFS, fixed when the share is made.
    protocols: str = "SMB"
    #: an NFS share's root squash (NoRootSquash | RootSquash | AllSquash); None for SMB.
    root_squash: Optional[str] = None


@dataclass(frozen=True)
class EntryInfo:
    """A file or directory as the REST API describes it."""

    share: str
    path: str                       # '/'-joined inside the share; '' for the root directory
    is_directory: bool
    size: int
    etag: str
    last_modified: float
    metadata: dict[str, str]
    content: ContentSettings
    attributes: str
    creation_time_ns: int
    last_write_time_ns: int
    change_time_ns: int
    file_id: str
    parent_id: str
    #: where it is in the share directory (a link that stays inside the share is not resolved).
    disk_path: Path = field(repr=False)

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def _etag(st: os.stat_result) -> str:
    # Changes whenever the bytes, the size or (via utime on property changes) the properties do.
    digest = hashlib.blake2b(f"{st.st_ino}:{st.st_mtime_ns}:{st.st_size}".encode(), digest_size=7).hexdigest()
    return f'"0x8{digest.upper()}"'


def _new_share_etag() -> str:
    return f'"0x8{uuid.uuid4().hex[:14].upper()}"'


def _last_write_ns(smb: dict[str, Any], st: os.stat_result) -> int:
    # A last-write time the caller set holds until the bytes change (mtime moves on, e.g. a Put
    # Range or a job writing the file); from then on the file's own mtime is the last write.
    if "last_write" in smb and smb.get("last_write_mtime") == st.st_mtime_ns:
        return int(smb["last_write"])
    return st.st_mtime_ns


def _smb_row(smb: dict[str, Any], st: os.stat_result, last_write_ns: int) -> dict[str, Any]:
    """What is kept of SMB properties: attributes and creation time as set, and the last-write
    time pinned to the mtime it belongs to."""
    kept: dict[str, Any] = {k: smb[k] for k in ("attributes", "creation") if k in smb}
    return {**kept, "last_write": last_write_ns, "last_write_mtime": st.st_mtime_ns}


def _with_span(spans: list[tuple[int, int]], start: int, end: int, *, written: bool) -> list[tuple[int, int]]:
    """``spans`` (inclusive, sorted, apart) with ``start..end`` added (written) or taken out (cleared)."""
    kept: list[tuple[int, int]] = []
    for s, e in spans:
        if e < start or s > end:
            kept.append((s, e))
            continue
        if s < start:
            kept.append((s, start - 1))
        if e > end:
            kept.append((end + 1, e))
    if written:
        kept.append((start, end))
    merged: list[tuple[int, int]] = []
    for s, e in sorted(kept):
        if merged and s <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def _clipped(spans: list[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    return [(s, min(e, size - 1)) for s, e in spans if s < size]


def _extents(fd: int, start: int, end: int) -> list[tuple[int, int]]:
    """Ranges (inclusive) inside ``start..end`` that the file open at ``fd`` holds data in."""
    ranges: list[tuple[int, int]] = []
    offset = start
    try:
        while offset <= end:
            try:
                data = os.lseek(fd, offset, os.SEEK_DATA)
            except OSError:  # ENXIO: no data after offset
                break
            if data > end:
                break
            hole = os.lseek(fd, data, os.SEEK_HOLE)
            ranges.append((data, min(hole, end + 1) - 1))
            offset = hole
    except (AttributeError, OSError):
        return [(start, end)]  # no SEEK_DATA here: report the whole span as written
    return ranges


# -- the store --------------------------------------------------------------------------------

class FileShares:
    """Shares, directories and files of every account, on disk under ``context.files_root``."""

    def __init__(self, files_root: Path, store: Store) -> None:
        self.root = Path(files_root)
        self.store = store

    # -- paths ----------------------------------------------------------------------------------

    def account_dir(self, account: str) -> Path:
        return self.root / validate_account_name(account.lower())

    def share_dir(self, account: str, share: str) -> Path:
        return self.account_dir(account) / validate_share_name(share)

    def _existing_share_dir(self, account: str, share: str) -> Path:
        path = self.share_dir(account, share)
        if not path.is_dir() or path.is_symlink():
            raise StorageError(404, "ShareNotFound", "The specified share does not exist.")
        return path

    def _locate(self, account: str, share: str, parts: tuple[str, ...]) -> tuple[Path, Path]:
        """(share dir, path inside it) for validated ``parts``; the share must exist."""
        base = self._existing_share_dir(account, share)
        validate_parts(parts)
        return base, base.joinpath(*parts) if parts else base

    @staticmethod
    def _contained(base: Path, path: Path) -> bool:
        """True if ``path`` (following any symlinks) resolves to ``base`` or inside it."""
        real_base = os.path.realpath(base)
        real = os.path.realpath(path)
        return real == real_base or real.startswith(real_base + os.sep)

    def _stat_inside(self, base: Path, path: Path) -> Optional[os.stat_result]:
        """stat of ``path`` if it exists and stays inside the share, else None."""
        if not self._contained(base, path):
            return None
        try:
            return os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def _parent_ok(self, base: Path, path: Path) -> None:
        parent = path.parent
        st = self._stat_inside(base, parent)
        if st is None or not stat.S_ISDIR(st.st_mode):
            raise StorageError(404, "ParentNotFound", "The specified parent path does not exist.")

    def _file_slot(self, account: str, share: str, parts: tuple[str, ...],
                   where: str) -> tuple[Path, Path, Optional[os.stat_result]]:
        """(share base, path, what is there now) for a file about to be written at ``parts``:
        its parent must exist, and no directory may stand at its name (``where`` says which
        name, in the error)."""
        base, path = self._locate(account, share, parts)
        self._parent_ok(base, path)
        existing = self._stat_inside(base, path)
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            raise StorageError(409, "ResourceTypeMismatch", f"A directory with the same name already exists {where}.")
        return base, path, existing

    # -- rows -----------------------------------------------------------------------------------

    def _row(self, account: str, share: str, rel: str, inode: int) -> Optional[dict[str, Any]]:
        rows = self.store.query("SELECT inode, metadata, content, smb FROM files_entries"
                                " WHERE account = ? AND share = ? AND path = ?", (account.lower(), share, rel))
        if not rows or rows[0]["inode"] != inode:
            return None
        return {"metadata": json.loads(rows[0]["metadata"]), "content": json.loads(rows[0]["content"]),
                "smb": json.loads(rows[0]["smb"])}

    def _put_row(self, account: str, share: str, rel: str, inode: int, *, metadata: dict[str, str],
                 content: dict[str, str], smb: dict[str, Any]) -> None:
        with self.store.transaction() as db:
            db.execute("INSERT OR REPLACE INTO files_entries (account, share, path, inode, metadata, content, smb)"
                       " VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (account.lower(), share, rel, inode, json.dumps(metadata), json.dumps(content),
                        json.dumps(smb)))

    def _drop_rows(self, account: str, share: str, rel: str, *, recursive: bool) -> None:
        with self.store.transaction() as db:
            for table in ("files_entries", "files_copies"):
                db.execute(f"DELETE FROM {table} WHERE account = ? AND share = ? AND path = ?",
                           (account.lower(), share, rel))
                if recursive:
                    prefix = rel + "/" if rel else ""
                    db.execute(f"DELETE FROM {table} WHERE account = ? AND share = ?"
                               " AND substr(path, 1, ?) = ?", (account.lower(), share, len(prefix), prefix))
            key = f"{account.lower()}/{share}/{rel}" if rel else f"{account.lower()}/{share}"
            db.execute("DELETE FROM files_ranges WHERE path = ? OR substr(path, 1, ?) = ?",
                       (key, len(key) + 1, key + "/"))

    def _entry(self, account: str, share: str, path: Path, rel: str, st: os.stat_result) -> EntryInfo:
        row = self._row(account, share, rel, st.st_ino) or {"metadata": {}, "content": {}, "smb": {}}
        smb = row["smb"]
        is_dir = stat.S_ISDIR(st.st_mode)
        try:
            parent_id = str(os.stat(path.parent).st_ino) if rel else "0"
        except OSError:
            parent_id = "0"
        return EntryInfo(
            share=share, path=rel, is_directory=is_dir, size=0 if is_dir else st.st_size,
            etag=_etag(st), last_modified=st.st_mtime, metadata=row["metadata"],
            content=ContentSettings.from_json(row["content"]),
            attributes=smb.get("attributes") or ("Directory" if is_dir else "Archive"),
            creation_time_ns=int(smb.get("creation", st.st_ctime_ns)),
            last_write_time_ns=_last_write_ns(smb, st),
            change_time_ns=st.st_ctime_ns, file_id=str(st.st_ino), parent_id=parent_id, disk_path=path)

    # -- written ranges (Get Ranges) ----------------------------------------------------------------

    def _ranges_key(self, path: Path) -> str:
        return os.path.relpath(path, self.root)

    def _tracked_ranges(self, path: Path, st: os.stat_result) -> Optional[list[tuple[int, int]]]:
        """The ranges written through the API to the file at ``path`` as ``st`` describes it, or
        None where they are not known (a file a job wrote or changed since)."""
        rows = self.store.query("SELECT inode, mtime_ns, spans FROM files_ranges WHERE path = ?",
                                (self._ranges_key(path),))
        if not rows or rows[0]["inode"] != st.st_ino or rows[0]["mtime_ns"] != st.st_mtime_ns:
            return None
        return [(int(s), int(e)) for s, e in json.loads(rows[0]["spans"])]

    def _track_ranges(self, path: Path, st: os.stat_result, spans: list[tuple[int, int]]) -> None:
        with self.store.transaction() as db:
            db.execute("INSERT OR REPLACE INTO files_ranges (path, inode, mtime_ns, spans) VALUES (?, ?, ?, ?)",
                       (self._ranges_key(path), st.st_ino, st.st_mtime_ns, json.dumps(spans)))

    @staticmethod
    def _touch(path: Path) -> None:
        # A property change is a change: a new ETag and Last-Modified, as Azure gives.
        now = time.time_ns()
        os.utime(path, ns=(now, now), follow_symlinks=True)

    # -- shares ---------------------------------------------------------------------------------

    def create_share(self, account: str, share: str, *, quota_gib: Optional[int] = None,
                     metadata: Optional[dict[str, str]] = None, access_tier: str = "TransactionOptimized",
                     protocols: str = "SMB", root_squash: Optional[str] = None) -> ShareInfo:
        """A new share; the caller (either plane) has checked the tier and protocol against the account."""
        quota = DEFAULT_QUOTA_GIB if quota_gib is None else quota_gib
        metadata = validate_metadata(metadata or {})
        path = self.share_dir(account, share)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            path.mkdir(mode=0o700)  # users' files: this user's only, as the whole state directory
        except FileExistsError:
            raise StorageError(409, "ShareAlreadyExists", "The specified share already exists.") from None
        now = time.time()
        info = ShareInfo(account.lower(), share, quota, metadata, _new_share_etag(), now, access_tier, now, protocols,
                         root_squash)
        with self.store.transaction() as db:
            self._write_share(db, info)
            # Rows of an earlier share of that name that vanished from disk are not this share's.
            db.execute("DELETE FROM files_entries WHERE account = ? AND share = ?", (account.lower(), share))
            db.execute("DELETE FROM files_copies WHERE account = ? AND share = ?", (account.lower(), share))
        return info

    @staticmethod
    def _write_share(db: Any, info: ShareInfo) -> None:
        db.execute("INSERT OR REPLACE INTO files_shares (account, share, quota, metadata, etag, last_modified,"
                   " access_tier, access_tier_changed, protocols, root_squash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (info.account, info.name, info.quota_gib, json.dumps(info.metadata), info.etag,
                    info.last_modified, info.access_tier, info.access_tier_changed, info.protocols,
                    info.root_squash))

    def get_share(self, account: str, share: str) -> ShareInfo:
        path = self._existing_share_dir(account, share)
        rows = self.store.query("SELECT quota, metadata, etag, last_modified, access_tier, access_tier_changed,"
                                " protocols, root_squash FROM files_shares WHERE account = ? AND share = ?",
                                (account.lower(), share))
        if rows:
            r = rows[0]
            return ShareInfo(account.lower(), share, r["quota"], json.loads(r["metadata"]), r["etag"],
                             r["last_modified"], r["access_tier"] or "TransactionOptimized",
                             r["access_tier_changed"], r["protocols"] or "SMB", r["root_squash"])
        # A share directory made outside the API (by hand): answer with defaults.
        st = path.stat()
        return ShareInfo(account.lower(), share, DEFAULT_QUOTA_GIB, {}, _etag(st), st.st_mtime)

    def list_shares(self, account: str) -> list[ShareInfo]:
        try:
            names = sorted(entry.name for entry in os.scandir(self.account_dir(account))
                           if entry.is_dir(follow_symlinks=False) and _SHARE_RE.match(entry.name))
        except FileNotFoundError:
            return []
        shares = []
        for name in names:
            try:
                shares.append(self.get_share(account, name))
            except StorageError:  # deleted while we listed
                continue
        return shares

    def update_share(self, account: str, share: str, *, quota_gib: Optional[int] = None,
                     metadata: Optional[dict[str, str]] = None, access_tier: Optional[str] = None,
                     root_squash: Optional[str] = None) -> ShareInfo:
        """Change what is given (None: unchanged); any change gives the share a new ETag."""
        current = self.get_share(account, share)
        changes: dict[str, Any] = {"etag": _new_share_etag(), "last_modified": time.time()}
        if quota_gib is not None:
            changes["quota_gib"] = quota_gib
        if metadata is not None:
            changes["metadata"] = validate_metadata(metadata)
        if access_tier is not None and access_tier != current.access_tier:
            changes.update(access_tier=access_tier, access_tier_changed=time.time())
        if root_squash is not None:
            changes["root_squash"] = root_squash
        info = dataclasses.replace(current, **changes)
        with self.store.transaction() as db:
            self._write_share(db, info)
        return info

    def set_share_metadata(self, account: str, share: str, metadata: dict[str, str]) -> ShareInfo:
        return self.update_share(account, share, metadata=metadata)

    def set_share_quota(self, account: str, share: str, quota_gib: int) -> ShareInfo:
        return self.update_share(account, share, quota_gib=quota_gib)

    def delete_share(self, account: str, share: str) -> None:
        path = self._existing_share_dir(account, share)
        # Rename first so the share disappears at once, then remove its contents at leisure.
        trash = path.parent / f".deleting-{share}-{uuid.uuid4().hex[:8]}"
        try:
            path.rename(trash)
        except FileNotFoundError:
            raise StorageError(404, "ShareNotFound", "The specified share does not exist.") from None
        with self.store.transaction() as db:
            for table in ("files_shares", "files_entries", "files_copies"):
                db.execute(f"DELETE FROM {table} WHERE account = ? AND share = ?", (account.lower(), share))
        shutil.rmtree(trash, ignore_errors=True)

    def share_usage_bytes(self, account: str, share: str) -> int:
        base = self._existing_share_dir(account, share)
        total = 0
        for dirpath, _dirs, files in os.walk(base):
            for name in files:
                try:
                    total += os.lstat(os.path.join(dirpath, name)).st_size
                except OSError:
                    continue
        return total

    # -- files and directories -------------------------------------------------------------------

    def get_entry(self, account: str, share: str, parts: tuple[str, ...]) -> EntryInfo:
        """The file or directory at ``parts`` (the root directory for ``()``)."""
        base, path = self._locate(account, share, parts)
        st = self._stat_inside(base, path)
        if st is None or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            if len(parts) > 1:
                self._parent_ok(base, path)  # a missing parent is ParentNotFound, as Azure answers
            raise StorageError(404, "ResourceNotFound", "The specified resource does not exist.")
        return self._entry(account, share, path, "/".join(parts), st)

    def get_file(self, account: str, share: str, parts: tuple[str, ...]) -> EntryInfo:
        entry = self.get_entry(account, share, parts)
        if entry.is_directory:
            raise StorageError(404, "ResourceNotFound",
                               "The specified resource does not exist: the path names a directory, not a file.")
        return entry

    def get_directory(self, account: str, share: str, parts: tuple[str, ...]) -> EntryInfo:
        entry = self.get_entry(account, share, parts)
        if not entry.is_directory:
            raise StorageError(404, "ResourceNotFound",
                               "The specified resource does not exist: the path names a file, not a directory.")
        return entry

    def create_directory(self, account: str, share: str, parts: tuple[str, ...], *,
                         metadata: Optional[dict[str, str]] = None, smb: Optional[dict[str, Any]] = None
                         ) -> EntryInfo:
        if not parts:
            raise StorageError(409, "ResourceAlreadyExists", "The root directory of a share always exists.")
        metadata = validate_metadata(metadata or {})
        base, path = self._locate(account, share, parts)
        self._parent_ok(base, path)
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            if path.is_dir():
                raise StorageError(409, "ResourceAlreadyExists", "The specified resource already exists.") from None
            raise StorageError(409, "ResourceTypeMismatch",
                               "A file with the same name already exists at this path.") from None
        st = os.stat(path)
        smb = smb or {}
        self._put_row(account, share, "/".join(parts), st.st_ino, metadata=metadata, content={},
                      smb=_smb_row(smb, st, int(smb.get("last_write", st.st_mtime_ns))))
        return self._entry(account, share, path, "/".join(parts), st)

    def delete_directory(self, account: str, share: str, parts: tuple[str, ...]) -> None:
        if not parts:
            raise StorageError(400, "InvalidUri", "The root directory of a share cannot be deleted.")
        entry = self.get_directory(account, share, parts)
        try:
            if os.path.islink(entry.disk_path):
                os.unlink(entry.disk_path)  # a link to another directory of the share: remove the link
            else:
                os.rmdir(entry.disk_path)
        except OSError as exc:
            if exc.errno in (39, 66):  # ENOTEMPTY (Linux, BSD)
                raise StorageError(409, "DirectoryNotEmpty", "The specified directory is not empty.") from None
            if isinstance(exc, FileNotFoundError):
                raise StorageError(404, "ResourceNotFound", "The specified resource does not exist.") from None
            raise
        self._drop_rows(account, share, "/".join(parts), recursive=True)

    def list_directory(self, account: str, share: str, parts: tuple[str, ...], *, prefix: str = "",
                       marker: str = "", max_results: int = 5000) -> tuple[EntryInfo, list[EntryInfo], str]:
        """(the directory, up to ``max_results`` entries from ``marker`` on, next marker or '')."""
        directory = self.get_directory(account, share, parts)
        base = self._existing_share_dir(account, share)
        names = sorted(name for name in os.listdir(directory.disk_path)
                       if name.startswith(prefix) and name >= marker and not name.startswith(".deleting-"))
        entries: list[EntryInfo] = []
        next_marker = ""
        for name in names:
            path = directory.disk_path / name
            st = self._stat_inside(base, path)
            if st is None or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                continue  # a dangling or escaping symlink, a socket...: not part of the share
            if len(entries) == max_results:
                next_marker = name
                break
            rel = "/".join((*parts, name))
            entries.append(self._entry(account, share, path, rel, st))
        return directory, entries, next_marker

    def create_file(self, account: str, share: str, parts: tuple[str, ...], size: int, *,
                    content: ContentSettings, metadata: Optional[dict[str, str]] = None,
                    smb: Optional[dict[str, Any]] = None) -> EntryInfo:
        if not parts:
            raise StorageError(400, "InvalidUri", "A file path is needed to create a file.")
        metadata = validate_metadata(metadata or {})
        _, path, existing = self._file_slot(account, share, parts, "at this path")
        if os.path.islink(path):
            # Creating replaces the file; never write through a link a job left at this name.
            os.unlink(path)
        # Create File replaces any file at the path with a new one of the declared size (sparse).
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.ftruncate(fd, size)
            st = os.fstat(fd)
        finally:
            os.close(fd)
        smb = smb or {}
        self._put_row(account, share, "/".join(parts), st.st_ino, metadata=metadata,
                      content=content.to_json(), smb=_smb_row(smb, st, int(smb.get("last_write", st.st_mtime_ns))))
        self._track_ranges(path, st, [])  # a new file holds no written range, however large
        return self._entry(account, share, path, "/".join(parts), st)

    def delete_file(self, account: str, share: str, parts: tuple[str, ...]) -> None:
        entry = self.get_file(account, share, parts)
        try:
            os.unlink(entry.disk_path)
        except FileNotFoundError:
            raise StorageError(404, "ResourceNotFound", "The specified resource does not exist.") from None
        self._drop_rows(account, share, "/".join(parts), recursive=False)

    def set_metadata(self, account: str, share: str, parts: tuple[str, ...], metadata: dict[str, str], *,
                     directory: bool) -> EntryInfo:
        metadata = validate_metadata(metadata)
        entry = self.get_directory(account, share, parts) if directory else self.get_file(account, share, parts)
        return self._rewrite_row(account, share, entry, metadata=metadata)

    def set_properties(self, account: str, share: str, parts: tuple[str, ...], *, directory: bool,
                       size: Optional[int] = None, content: Optional[ContentSettings] = None,
                       smb: Optional[dict[str, Any]] = None) -> EntryInfo:
        entry = self.get_directory(account, share, parts) if directory else self.get_file(account, share, parts)
        spans = None
        if size is not None and not directory:
            fd = self.open_fd(entry, os.O_WRONLY)
            try:
                with _ranges_lock:
                    spans = self._tracked_ranges(entry.disk_path, os.fstat(fd))
                    os.ftruncate(fd, size)
            finally:
                os.close(fd)
        return self._rewrite_row(account, share, entry, content=content, smb=smb, spans=spans)

    def _rewrite_row(self, account: str, share: str, entry: EntryInfo, *,
                     metadata: Optional[dict[str, str]] = None, content: Optional[ContentSettings] = None,
                     smb: Optional[dict[str, Any]] = None,
                     spans: Optional[list[tuple[int, int]]] = None) -> EntryInfo:
        st = os.stat(entry.disk_path)
        if spans is None and not entry.is_directory:
            spans = self._tracked_ranges(entry.disk_path, st)
        row = self._row(account, share, entry.path, st.st_ino) or {"metadata": {}, "content": {}, "smb": {}}
        smb = smb or {}
        # A property change keeps the last-write time (unless it sets one) though it moves mtime.
        last_write = int(smb.get("last_write", _last_write_ns(row["smb"], st)))
        self._touch(entry.disk_path)
        st = os.stat(entry.disk_path)
        self._put_row(account, share, entry.path, st.st_ino,
                      metadata=row["metadata"] if metadata is None else metadata,
                      content=row["content"] if content is None else content.to_json(),
                      smb=_smb_row({**row["smb"], **smb}, st, last_write))
        if spans is not None:  # the touch moved mtime: the ranges still hold, pinned to the new one
            self._track_ranges(entry.disk_path, st, _clipped(spans, st.st_size))
        return self._entry(account, share, entry.disk_path, entry.path, st)

    def rename_file(self, account: str, share: str, source: tuple[str, ...], dest: tuple[str, ...], *,
                    replace: bool, ignore_readonly: bool = False, metadata: Optional[dict[str, str]] = None,
                    content_type: Optional[str] = None, smb: Optional[dict[str, Any]] = None) -> EntryInfo:
        """Rename File: move the file at ``source`` to ``dest`` in the same share, in one step, so
        a reader sees the old name or the new one, never a half-moved file. An existing file at
        ``dest`` is replaced only with ``replace`` (and, if it is ReadOnly, ``ignore_readonly``);
        metadata, Content-Type and SMB properties given with the rename replace the file's."""
        if not dest:
            raise StorageError(400, "InvalidUri", "A file path is needed to rename a file to.")
        old = self.get_entry(account, share, source)
        if old.is_directory:
            raise StorageError(409, "ResourceTypeMismatch",
                               "The rename source is a directory: use Rename Directory (restype=directory).")
        if metadata is not None:
            metadata = validate_metadata(metadata)
        base, path, existing = self._file_slot(account, share, dest, "at the rename destination")
        src_rel, dst_rel = "/".join(source), "/".join(dest)
        if src_rel == dst_rel:
            return old
        if existing is not None or os.path.islink(path):
            if not replace:
                raise StorageError(409, "ResourceAlreadyExists",
                                   "The rename destination already exists; set x-ms-file-rename-replace-if-exists: "
                                   "true to replace it.")
            if not ignore_readonly and existing is not None and "ReadOnly" in self._entry(
                    account, share, path, dst_rel, existing).attributes.split("|"):
                raise StorageError(409, "ReadOnlyAttribute",
                                   "The rename destination is ReadOnly; set x-ms-file-rename-ignore-readonly: true "
                                   "to replace it.")
            # rename(2) replaces in one step (a link at the name is replaced, never written through).
            os.rename(old.disk_path, path)
        else:
            # link + unlink, not rename: a file that appears at the name meanwhile is not replaced.
            try:
                os.link(old.disk_path, path, follow_symlinks=False)
            except FileExistsError:
                raise StorageError(409, "ResourceAlreadyExists", "The rename destination already exists.") from None
            os.unlink(old.disk_path)
        st = os.lstat(path) if os.path.islink(path) else os.stat(path)
        row = self._row(account, share, src_rel, st.st_ino) or {"metadata": {}, "content": {}, "smb": {}}
        content = dict(row["content"])
        if content_type is not None:
            content["content_type"] = content_type
        kept = {**row["smb"], **(smb or {})}
        spans = self._tracked_ranges(old.disk_path, st)  # same inode and mtime: a move changes neither
        if spans is not None:
            self._track_ranges(path, st, spans)
        with self.store.transaction() as db:
            db.execute("DELETE FROM files_entries WHERE account = ? AND share = ? AND path IN (?, ?)",
                       (account.lower(), share, src_rel, dst_rel))
        self._put_row(account, share, dst_rel, st.st_ino,
                      metadata=row["metadata"] if metadata is None else metadata, content=content,
                      smb=_smb_row(kept, st, int((smb or {}).get("last_write", _last_write_ns(row["smb"], st)))))
        return self._entry(account, share, path, dst_rel, self._stat_inside(base, path) or st)

    # -- bytes ----------------------------------------------------------------------------------

    @staticmethod
    def open_fd(entry: EntryInfo, flags: int = os.O_RDONLY) -> int:
        """An open descriptor on the entry's file. Links were checked to stay inside the share when
        the entry was looked up; the resolved path is opened without following any further link."""
        try:
            return os.open(os.path.realpath(entry.disk_path), flags | os.O_NOFOLLOW)
        except (FileNotFoundError, NotADirectoryError):
            raise StorageError(404, "ResourceNotFound", "The specified resource does not exist.") from None
        except OSError as exc:
            if disk_problem(exc, entry.disk_path) is not None:
                raise  # a full or read-only disk: said as such (see app.py)
            raise StorageError(409, "SharingViolation",
                               "The file cannot be opened: it changed while the request was served.") from None

    def write_range(self, entry: EntryInfo, offset: int, data: bytes | memoryview) -> EntryInfo:
        fd = self.open_fd(entry, os.O_WRONLY)
        start, end = offset, offset + len(data) - 1
        try:
            with _ranges_lock:
                spans = self._tracked_ranges(entry.disk_path, os.fstat(fd))
                view = memoryview(data)
                while view:
                    written = os.pwrite(fd, view, offset)
                    view, offset = view[written:], offset + written
                st = os.fstat(fd)
                if spans is not None:
                    self._track_ranges(entry.disk_path, st, _with_span(spans, start, end, written=True))
        finally:
            os.close(fd)
        return self._refreshed(entry, st)

    def clear_range(self, entry: EntryInfo, start: int, end: int) -> EntryInfo:
        zeros = bytes(min(1024 * 1024, end - start + 1))
        fd = self.open_fd(entry, os.O_WRONLY)
        try:
            with _ranges_lock:
                spans = self._tracked_ranges(entry.disk_path, os.fstat(fd))
                offset = start
                while offset <= end:
                    n = min(len(zeros), end - offset + 1)
                    offset += os.pwrite(fd, zeros[:n], offset)
                st = os.fstat(fd)
                if spans is not None:
                    self._track_ranges(entry.disk_path, st, _with_span(spans, start, end, written=False))
        finally:
            os.close(fd)
        return self._refreshed(entry, st)

    @staticmethod
    def _refreshed(entry: EntryInfo, st: os.stat_result) -> EntryInfo:
        from dataclasses import replace
        return replace(entry, size=st.st_size, etag=_etag(st), last_modified=st.st_mtime,
                       change_time_ns=st.st_ctime_ns)

    def read_range(self, entry: EntryInfo, start: int, end: int) -> bytes:
        with FileBody(self.open_fd(entry), start, end) as body:
            return b"".join(body)

    def data_ranges(self, entry: EntryInfo, start: int, end: int) -> list[tuple[int, int]]:
        """Ranges (inclusive) inside ``start..end`` that hold data: the ranges written (and not
        cleared) through the API where they are known, else the file's own (block-sized) extents."""
        fd = self.open_fd(entry)
        try:
            st = os.fstat(fd)
            end = min(end, st.st_size - 1)
            if end < start:
                return []
            spans = self._tracked_ranges(entry.disk_path, st)
            if spans is not None:
                return [(max(s, start), min(e, end)) for s, e in spans if s <= end and e >= start]
            return _extents(fd, start, end)
        finally:
            os.close(fd)

    # -- accounts -------------------------------------------------------------------------------

    def delete_account(self, account: str) -> None:
        path = self.account_dir(account)
        if path.exists():
            trash = path.parent / f".deleting-{account.lower()}-{uuid.uuid4().hex[:8]}"
            path.rename(trash)
            shutil.rmtree(trash, ignore_errors=True)
        with self.store.transaction() as db:
            for table in ("files_shares", "files_entries", "files_copies"):
                db.execute(f"DELETE FROM {table} WHERE account = ?", (account.lower(),))


class FileBody:
    """Bytes ``start..end`` (inclusive) of an open file, read lazily so large downloads stream.

    A WSGI response body: the server iterates it and then calls :meth:`close`, which closes the
    descriptor even if the body was never read (a HEAD, a client that went away)."""

    def __init__(self, fd: int, start: int, end: int, chunk: int = 1024 * 1024) -> None:
        self._fd: Optional[int] = fd
        self._offset = start
        self._end = end
        self._chunk = chunk

    def __iter__(self) -> Iterator[bytes]:
        while self._fd is not None and self._offset <= self._end:
            data = os.pread(self._fd, min(self._chunk, self._end - self._offset + 1), self._offset)
            if not data:  # the file shrank under us: end the body early rather than hang
                break
            self._offset += len(data)
            yield data
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "FileBody":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# -- what other parts of the service use --------------------------------------------------------

def shares_for(context: "ServiceContext") -> FileShares:
    return FileShares(context.files_root, context.store)


def share_path(context: "ServiceContext", account: str, share: str) -> Optional[Path]:
    """The directory holding share ``share`` of ``account`` (what a job mounts), or None if there
    is no such share. Raises ``ValueError`` for names Azure would refuse."""
    try:
        path = shares_for(context).share_dir(account, share)
    except StorageError as exc:
        raise ValueError(exc.message) from None
    return path if path.is_dir() and not path.is_symlink() else None


def delete_account_data(context: "ServiceContext", account_name: str) -> None:
    """Remove every share of a storage account and what is kept about them (the account is being
    deleted). Harmless if the account has no shares."""
    try:
        shares_for(context).delete_account(account_name)
    except StorageError:
        return  # a name no account can have holds no data


def note_upload_activity(path: Path) -> None:
    """Record that a request named the temporary upload at ``path`` (on disk) just now."""
    with _upload_seen_lock:
        _upload_seen[str(path)] = time.time()


def forget_upload_activity(files_root: Path) -> None:
    """Forget the requests recorded under ``files_root``: a service starting knows nothing of its
    predecessor's (a service in a test may follow another in the same process)."""
    prefix = str(files_root).rstrip(os.sep) + os.sep
    with _upload_seen_lock:
        for key in [k for k in _upload_seen if k.startswith(prefix)]:
            del _upload_seen[key]


def remove_stale_uploads(files_root: Path, *, older_than_s: Optional[float] = None,
                         now: Optional[float] = None) -> list[Path]:
    """Delete the temporary files of uploads a client never finished (it crashed or lost its
    connection before renaming them into place, and could not delete them): every file of every
    share named like :data:`STALE_UPLOAD_RE` that neither a write nor a request has touched for
    ``older_than_s``. Returns what was removed. Links are not followed, so nothing outside the
    shares is touched."""
    cutoff = (time.time() if now is None else now) - (STALE_UPLOAD_AGE_S if older_than_s is None else older_than_s)
    with _upload_seen_lock:
        for key in [k for k, when in _upload_seen.items() if when < cutoff]:
            del _upload_seen[key]
        seen = dict(_upload_seen)
    removed: list[Path] = []
    for directory, dirnames, filenames in os.walk(files_root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".deleting-")]
        for name in filenames:
            if not STALE_UPLOAD_RE.match(name):
                continue
            path = Path(directory) / name
            try:
                st = os.lstat(path)
                if stat.S_ISREG(st.st_mode) and st.st_mtime < cutoff and str(path) not in seen:
                    os.unlink(path)  # its metadata row names this inode, so no later file inherits it
                    removed.append(path)
            except OSError:
                continue  # renamed or removed meanwhile
    return removed


def content_md5(data: bytes | memoryview) -> str:
    return base64.b64encode(hashlib.md5(data).digest()).decode("ascii")

