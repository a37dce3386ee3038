"""Copy File and Abort Copy: server-side copies into a file, from a file of any share of any account
the service holds.

A source no larger than ``ServiceSettings.copy_sync_max_bytes`` is copied before the answer
(``x-ms-copy-status: success``); a larger one is answered at once (``pending``) and copied by a thread
of its own, one chunk at a time, each chunk's end recorded in ``files_copies``, where Get File
Properties reads ``x-ms-copy-progress`` (``<bytes copied>/<bytes in all>``). As on Azure the
destination has the source's size, content settings and (unless the request gives its own) metadata
from the start; an aborted copy leaves it empty with its metadata; a source that changed before the
copy ended fails it. A service stopped during a copy leaves it pending, and the next start resumes
it where it was, or fails it when the source has changed meanwhile.

The state of the last copy into a file is answered while the file is the inode copied into and until
the file is written again (Put Range, Set File Properties, Create File), as Azure answers it.
"""
from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from .errors import StorageError
from .store import EntryInfo, shares_for

if TYPE_CHECKING:
    from ..core.context import ServiceContext

__all__ = ["CopyState", "CopySource", "FileCopies", "COPY_CHUNK_BYTES"]

log = logging.getLogger(__name__)

#: what an asynchronous copy moves between two progress records.
COPY_CHUNK_BYTES = 4 * 1024 * 1024
#: seconds an abort waits for the copy's thread to put its pen down.
_ABORT_JOIN_S = 60.0


@dataclass(frozen=True)
class CopySource:
    """The file a copy reads: where it is, and its ETag when the copy began."""

    account: str
    share: str
    parts: tuple[str, ...]
    etag: str

    def to_json(self) -> str:
        return json.dumps({"account": self.account, "share": self.share, "path": "/".join(self.parts),
                           "etag": self.etag})

    @classmethod
    def from_json(cls, text: str) -> "CopySource":
        data = json.loads(text)
        return cls(data["account"], data["share"], tuple(p for p in data["path"].split("/") if p), data["etag"])


@dataclass(frozen=True)
class CopyState:
    """The last copy into a file, as Get File Properties answers it."""

    copy_id: str
    status: str                 # pending | success | aborted | failed
    source: str                 # the source URL, without a SAS signature
    copied: int
    total: int
    completed: Optional[float]
    description: Optional[str]

    @property
    def progress(self) -> str:
        return f"{self.copied}/{self.total}"


@dataclass
class _Running:
    thread: threading.Thread
    stop: threading.Event


class FileCopies:
    """Every copy of one service (``context.provider(FileCopies)``)."""

    def __init__(self, context: "ServiceContext") -> None:
        self.context = context
        self.shares = shares_for(context)
        # Guards the moves out of ``pending``: an abort and a copy's own end never both happen.
        self._lock = threading.Lock()
        self._running: dict[str, _Running] = {}

    # -- reading ----------------------------------------------------------------------------------

    def state(self, account: str, share: str, path: str, inode: int) -> Optional[CopyState]:
        rows = self.context.store.query(
            "SELECT inode, copy_id, status, source, copied, total, completed, description FROM files_copies"
            " WHERE account = ? AND share = ? AND path = ?", (account.lower(), share, path))
        if not rows or rows[0]["inode"] != inode:
            return None
        r = rows[0]
        return CopyState(r["copy_id"], r["status"], r["source"], r["copied"], r["total"], r["completed"],
                         r["description"])

    def check_writable(self, entry: EntryInfo, account: str) -> None:
        """Refuse a write to a file a copy is still filling (409 PendingCopyOperation)."""
        found = self.state(account, entry.share, entry.path, int(entry.file_id))
        if found is not None and found.status == "pending":
            raise StorageError(409, "PendingCopyOperation", "There is currently a pending copy operation.")

    def forget(self, account: str, share: str, path: str) -> None:
        """The file was written after its copy ended: Azure no longer answers the copy's state."""
        with self.context.store.transaction() as db:
            db.execute("DELETE FROM files_copies WHERE account = ? AND share = ? AND path = ? AND status != 'pending'",
                       (account.lower(), share, path))

    # -- starting -------------------------------------------------------------------------------

    def start(self, account: str, share: str, parts: tuple[str, ...], source: EntryInfo, ref: CopySource,
              source_url: str, *, metadata: Optional[dict[str, str]], smb: dict[str, Any]) -> tuple[EntryInfo, CopyState]:
        """Begin copying ``source`` into the file at ``parts`` (made or replaced with the source's
        size, content settings and metadata, or ``metadata`` when given)."""
        rel = "/".join(parts)
        same = (ref.account.lower(), ref.share, ref.parts) == (account.lower(), share, parts)
        try:
            existing: Optional[EntryInfo] = self.shares.get_file(account, share, parts)
        except StorageError:
            existing = None
        if existing is not None:
            self.check_writable(existing, account)
        if same:
            # A file copied onto itself keeps its bytes: only the metadata given changes.
            dest = source if metadata is None else self.shares.set_metadata(account, share, parts, metadata,
                                                                          directory=False)
        else:
            dest = self.shares.create_file(account, share, parts, source.size, content=source.content,
                                           metadata=source.metadata if metadata is None else metadata, smb=smb)
        copy_id = str(uuid.uuid4())
        inode = int(dest.file_id)
        synchronous = same or source.size <= self.context.settings.copy_sync_max_bytes
        with self.context.store.transaction() as db:
            db.execute("INSERT OR REPLACE INTO files_copies (account, share, path, inode, copy_id, status, source,"
                       " source_ref, copied, total, completed, description) VALUES (?, ?, ?, ?, ?, 'pending', ?, ?,"
                       " 0, ?, NULL, NULL)", (account.lower(), share, rel, inode, copy_id, source_url, ref.to_json(),
                                              source.size))
        if synchronous:
            if not same:
                self._copy_range(source, dest, 0, source.size, None)
            self._conclude(copy_id, "success", None, copied=source.size)
            dest = self.shares.get_file(account, share, parts)
        else:
            self._spawn(copy_id, dest, ref, 0, source.size)
        state = self.state(account, share, rel, inode)
        assert state is not None
        return dest, state

    def _spawn(self, copy_id: str, dest: EntryInfo, ref: CopySource, offset: int, total: int) -> None:
        stop = threading.Event()
        thread = threading.Thread(target=self._run, args=(copy_id, dest, ref, offset, total, stop),
                                  name=f"file-copy-{copy_id[:8]}", daemon=True)
        with self._lock:
            self._running[copy_id] = _Running(thread, stop)
        thread.start()

    # -- the copying ----------------------------------------------------------------------------

    def _copy_range(self, source: EntryInfo, dest: EntryInfo, start: int, end: int,
                    stop: Optional[threading.Event], copy_id: Optional[str] = None) -> int:
        """Copy bytes ``start..end`` (exclusive) of ``source`` into ``dest``; with ``stop``, a chunk
        at a time, recording progress under ``copy_id`` and pacing to ``copy_bytes_per_s``.
        Returns where it stopped."""
        rate = self.context.settings.copy_bytes_per_s
        began, offset = time.monotonic(), start
        src_fd = self.shares.open_fd(source)
        try:
            dst_fd = self.shares.open_fd(dest, os.O_WRONLY)
            try:
                while offset < end:
                    if stop is not None and stop.is_set():
                        break
                    data = os.pread(src_fd, min(COPY_CHUNK_BYTES, end - offset), offset)
                    if not data:
                        raise _SourceChanged("The source file became shorter during the copy.")
                    view = memoryview(data)
                    while view:
                        written = os.pwrite(dst_fd, view, offset)
                        view, offset = view[written:], offset + written
                    if copy_id is not None:
                        with self.context.store.transaction() as db:
                            db.execute("UPDATE files_copies SET copied = ? WHERE copy_id = ? AND status = 'pending'",
                                       (offset, copy_id))
                    if stop is not None and rate:
                        # Paced (ServiceSettings.copy_bytes_per_s): wait, but wake for an abort or a stop.
                        stop.wait(max(0.0, began + (offset - start) / rate - time.monotonic()))
            finally:
                os.close(dst_fd)
        finally:
            os.close(src_fd)
        return offset

    def _run(self, copy_id: str, dest: EntryInfo, ref: CopySource, offset: int, total: int,
             stop: threading.Event) -> None:
        try:
            source = self._unchanged_source(ref)
            reached = self._copy_range(source, dest, offset, total, stop, copy_id)
            if reached >= total:
                self._unchanged_source(ref)
                self._conclude(copy_id, "success", None, copied=total)
        except _SourceChanged as exc:
            self._conclude(copy_id, "failed", str(exc))
        except StorageError as exc:  # the source or the destination is gone
            self._conclude(copy_id, "failed", f"The copy could not go on: {exc.message}")
        except OSError as exc:
            self._conclude(copy_id, "failed", f"The copy could not write the destination: {exc.strerror}.")
        except Exception:  # a bug of ours: fail the copy rather than leave it pending for ever
            log.exception("copy %s failed", copy_id)
            self._conclude(copy_id, "failed", "The copy failed: an internal error.")
        finally:
            with self._lock:
                self._running.pop(copy_id, None)

    def _unchanged_source(self, ref: CopySource) -> EntryInfo:
        try:
            source = self.shares.get_file(ref.account, ref.share, ref.parts)
        except StorageError:
            raise _SourceChanged("The source file was deleted during the copy.") from None
        if source.etag != ref.etag:
            raise _SourceChanged("The source file was modified during the copy.")
        return source

    def _conclude(self, copy_id: str, status: str, description: Optional[str], *, copied: Optional[int] = None) -> bool:
        """Move a pending copy to ``status``; False if it was no longer pending (aborted meanwhile)."""
        with self._lock, self.context.store.transaction() as db:
            moved = db.execute("UPDATE files_copies SET status = ?, description = ?, completed = ?,"
                               " copied = COALESCE(?, copied) WHERE copy_id = ? AND status = 'pending'",
                               (status, description, time.time(), copied, copy_id)).rowcount
        return moved > 0

    # -- aborting, stopping, resuming -------------------------------------------------------------

    def abort(self, account: str, share: str, parts: tuple[str, ...], copy_id: str) -> None:
        """Abort Copy File: the pending copy ``copy_id`` into the file stops, and the file is left
        empty with its metadata."""
        dest = self.shares.get_file(account, share, parts)
        found = self.state(account, share, dest.path, int(dest.file_id))
        if found is None or found.status != "pending":
            raise StorageError(409, "NoPendingCopyOperation", "There is currently no pending copy operation.")
        if found.copy_id != copy_id:
            raise StorageError(409, "CopyIdMismatch",
                               "The specified copy ID did not match the copy ID for the pending copy operation.")
        if not self._conclude(copy_id, "aborted", "The copy was aborted."):
            raise StorageError(409, "NoPendingCopyOperation", "There is currently no pending copy operation.")
        with self._lock:
            running = self._running.get(copy_id)
        if running is not None:
            running.stop.set()
            running.thread.join(_ABORT_JOIN_S)
        self.shares.set_properties(account, share, parts, directory=False, size=0)

    def resume(self) -> None:
        """Carry on the copies a stopped service left pending (service start)."""
        rows = self.context.store.query("SELECT account, share, path, inode, copy_id, source_ref, copied, total"
                                        " FROM files_copies WHERE status = 'pending'")
        for r in rows:
            parts = tuple(p for p in r["path"].split("/") if p)
            try:
                dest = self.shares.get_file(r["account"], r["share"], parts)
            except StorageError:
                dest = None
            if dest is None or int(dest.file_id) != r["inode"]:
                self._conclude(r["copy_id"], "failed", "The destination file was replaced while the service was stopped.")
                continue
            self._spawn(r["copy_id"], dest, CopySource.from_json(r["source_ref"]), r["copied"], r["total"])

    def stop(self) -> None:
        """Stop every copy where it is (pending, resumed at the next start) and join its thread."""
        with self._lock:
            running = list(self._running.values())
        for item in running:
            item.stop.set()
        for item in running:
            item.thread.join()


class _SourceChanged(Exception):
    """The source is no longer what the copy began reading."""

