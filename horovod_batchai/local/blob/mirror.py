"""A blob container "mounted" on a local node: a directory kept in step with the container.

On Batch AI a container was mounted with blobfuse, a FUSE file system in which every blob is a
file, a ``/`` in a blob name makes (virtual) directories, a file is downloaded whole when opened
and uploaded whole when it is closed after a write. The local service runs no FUSE: it keeps a
mirror directory per container, which the mount points link to, and moves whole files:

- :meth:`ContainerMirror.pull` downloads the blobs that changed in the container since the last
  sync and removes files whose blobs were deleted there, unless the local copy changed meanwhile.
- :meth:`ContainerMirror.push` uploads the files that changed locally since the last sync and
  deletes the blobs of files that were deleted locally; a change on both sides keeps the local one
  (the job's writes win, as they would under blobfuse, which uploads on close).

What is remembered between syncs (each file's etag, size and modification time as of the last
sync) lives beside the directory, not in it, so a job never sees it. Empty directories are not
kept in the container (no blob carries them), symbolic links are not followed, and a blob whose
name cannot be a path here (``..``, an empty segment, a name that is both a file and a directory)
is skipped and reported in :attr:`ContainerMirror.skipped`.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Optional

from azure.core import MatchConditions
from azure.core.exceptions import ResourceModifiedError, ResourceNotFoundError
from azure.storage.blob import ContainerClient

__all__ = ["ContainerMirror", "SyncCounts"]

log = logging.getLogger(__name__)


@dataclass
class SyncCounts:
    """What one pull or push did."""

    downloaded: int = 0
    uploaded: int = 0
    deleted_local: int = 0
    deleted_remote: int = 0


def _etag(value: str) -> str:
    """An ETag as the record keeps it. An upload's ``ETag`` header is quoted (``"0x8D..."``), a
    listing's ``<Etag>`` is not: compared as they come, every file pushed would look changed in the
    container and the next pull would download it over the file a job is still writing."""
    return value.strip('"')


def _identity_of(st: Optional[os.stat_result]) -> Optional[tuple[int, int, int]]:
    return None if st is None else (st.st_ino, st.st_size, st.st_mtime_ns)


def _identity(path: Path) -> Optional[tuple[int, int, int]]:
    try:
        return _identity_of(os.lstat(path))
    except FileNotFoundError:
        return None


def _blob_path(name: str) -> Optional[PurePosixPath]:
    """The relative path a blob name maps to, or None if it cannot be one."""
    if not name or name.startswith("/") or name.endswith("/") or "\\" in name or "\0" in name:
        return None
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    return PurePosixPath(*parts)


class ContainerMirror:
    """``directory`` mirrors the container behind ``container``; ``record_file`` remembers the last sync.

    Thread-safe: pull and push of one mirror never overlap.
    """

    def __init__(self, container: ContainerClient, directory: Path, record_file: Path) -> None:
        self.container = container
        self.directory = Path(directory)
        self.record_file = Path(record_file)
        self.skipped: list[str] = []
        self._lock = threading.Lock()
        self._record: dict[str, dict[str, Any]] = self._load_record()

    def __repr__(self) -> str:
        return f"ContainerMirror(container={self.container.container_name!r}, directory={str(self.directory)!r})"

    def use_client(self, container: ContainerClient) -> None:
        """Reach the container through ``container`` from now on (say, signed with another key)."""
        with self._lock:
            self.container = container

    # -- the record of the last sync ------------------------------------------------------------

    def _load_record(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.record_file.read_text(encoding="utf-8"))
            return {str(k): dict(v) for k, v in data.items()} if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def _save_record(self) -> None:
        self.record_file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=str(self.record_file.parent), prefix=".record.")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(self._record, fh)
        os.replace(tmp, self.record_file)

    def _local_changed(self, name: str, st: os.stat_result) -> bool:
        entry = self._record.get(name)
        return entry is None or entry["size"] != st.st_size or entry["mtime_ns"] != st.st_mtime_ns

    def _local_files(self) -> dict[str, os.stat_result]:
        files: dict[str, os.stat_result] = {}
        for root, dirs, names in os.walk(self.directory):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
            for file_name in names:
                path = os.path.join(root, file_name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue  # removed while we looked
                if not os.path.isfile(path) or os.path.islink(path):
                    continue
                files[Path(path).relative_to(self.directory).as_posix()] = st
        return files

    # -- the two directions ---------------------------------------------------------------------

    def pull(self) -> SyncCounts:
        """Bring the directory up to the container. Raises ResourceNotFoundError if the container is gone."""
        with self._lock:
            counts = SyncCounts()
            self.directory.mkdir(parents=True, exist_ok=True)
            remote = {b.name: b for b in self.container.list_blobs()}
            local = self._local_files()
            skipped: list[str] = []
            wanted: dict[str, Any] = {}
            for name, blob in remote.items():
                path = _blob_path(name)
                if path is None:
                    skipped.append(name)
                    continue
                wanted[path.as_posix()] = blob
            for name in sorted(wanted):
                # A name that is also a directory of another blob ("a" and "a/b") cannot be both here.
                if any(parent.as_posix() in wanted for parent in PurePosixPath(name).parents
                       if parent != PurePosixPath(".")):
                    skipped.append(name)
                    continue
                blob = wanted[name]
                entry = self._record.get(name)
                if entry is not None and _etag(entry["etag"]) == _etag(blob.etag) and name in local:
                    continue
                if name in local and self._local_changed(name, local[name]):
                    continue  # changed here too: the local copy wins and goes up with the next push
                if self._download(name, blob.etag, local.get(name)):
                    counts.downloaded += 1
            for name in list(self._record):
                if name in wanted:
                    continue
                st = local.get(name)
                if st is not None and self._local_changed(name, st):
                    continue  # deleted there, changed here: kept, and uploaded again by the next push
                if st is not None:
                    if _identity(self.directory / name) != _identity_of(st):
                        continue  # written since the listing (downloads took a while): kept, as above
                    os.unlink(self.directory / name)
                    counts.deleted_local += 1
                del self._record[name]
            self.skipped = skipped
            self._save_record()
            if skipped:
                log.info("%r: %d blob name(s) cannot be files here and were skipped", self, len(skipped))
            return counts

    def push(self) -> SyncCounts:
        """Bring the container up to the directory."""
        with self._lock:
            counts = SyncCounts()
            local = self._local_files()
            for name, st in sorted(local.items()):
                if not self._local_changed(name, st):
                    continue
                path = self.directory / name
                try:
                    with open(path, "rb") as fh:
                        answer = self.container.get_blob_client(name).upload_blob(fh, overwrite=True)
                except FileNotFoundError:
                    continue  # removed while we pushed; the next push deletes its blob
                # The size and time seen *before* reading: a write during the upload shows as a change.
                self._record[name] = {"etag": _etag(answer["etag"]), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
                counts.uploaded += 1
            for name in [n for n in self._record if n not in local]:
                try:
                    self.container.delete_blob(name, etag=self._record[name]["etag"],
                                               match_condition=MatchConditions.IfNotModified)
                    counts.deleted_remote += 1
                except ResourceNotFoundError:
                    pass  # already gone there
                except ResourceModifiedError:
                    pass  # changed there since: left alone, and the next pull brings it back
                del self._record[name]
            self._save_record()
            return counts

    def _download(self, name: str, etag: str, seen: Optional[os.stat_result]) -> bool:
        """Download one blob as it was listed; False if it changed or went away since (the next
        pull sees its new state), or if the local file changed from ``seen`` meanwhile (the local
        copy wins, as in :meth:`pull`)."""
        target = self.directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        # Downloaded beside the record, not in the directory, where a job or a push would see it half done.
        spool = self.record_file.parent / "downloading"
        spool.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=str(spool))
        try:
            with os.fdopen(fd, "wb") as fh:
                self.container.download_blob(name, etag=etag, match_condition=MatchConditions.IfNotModified
                                             ).readinto(fh)
            if _identity(target) != _identity_of(seen):  # a job wrote it while it downloaded
                os.unlink(tmp)
                return False
            os.replace(tmp, target)
        except (ResourceModifiedError, ResourceNotFoundError):
            os.unlink(tmp)
            return False
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        st = os.stat(target)
        self._record[name] = {"etag": _etag(etag), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        return True
