"""Disk trouble -- a full or read-only state directory or share -- recognised, so that every error
it causes says what happened and where, instead of "internal error".

The service keeps running through it: requests that need to write fail with the condition and the
path, reads keep working, and everything works again once there is space (or the file system is
writable again). Its log is written so that a full disk drops whole lines, never tears one
(:class:`WholeLineLogHandler`).
"""
from __future__ import annotations

import errno
import logging
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

__all__ = ["DiskProblem", "disk_problem", "WholeLineLogHandler"]

_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_READ_ONLY = frozenset({errno.EROFS})


@dataclass(frozen=True)
class DiskProblem:
    """A write failed because the disk is full or the file system read-only."""

    read_only: bool
    path: str

    @property
    def condition(self) -> str:
        return "the file system is read-only" if self.read_only else "no space left on the device"

    def describe(self) -> str:
        """e.g. ``no space left on the device: /home/me/.horovod-batchai/local/state.db``"""
        return f"{self.condition}: {self.path}"


def disk_problem(exc: BaseException, where: Path) -> Optional[DiskProblem]:
    """The disk problem behind ``exc`` (or its causes), if it is one. ``where`` names the path when
    the error does not (a write to an open file, SQLite)."""
    seen: set[int] = set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _FULL | _READ_ONLY:
            return DiskProblem(current.errno in _READ_ONLY, str(current.filename or where))
        if isinstance(current, sqlite3.OperationalError):
            text = str(current).lower()
            if "disk is full" in text or ("disk i/o error" in text and _no_space(where)):
                return DiskProblem(False, str(where))
            if "readonly database" in text or "read-only" in text:
                return DiskProblem(True, str(where))
        current = current.__cause__ or current.__context__
    return None


def _no_space(path: Path) -> bool:
    try:
        stats = os.statvfs(path if path.is_dir() else path.parent)
    except OSError:
        return False
    return stats.f_bavail == 0


class WholeLineLogHandler(logging.Handler):
    """Writes each record to a file descriptor in one ``write``; a record that does not fit on a
    full disk is dropped whole (a partial write is cut back), and the first line written once
    there is room again says how many were dropped."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self._dropped = 0
        self._write_lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = (self.format(record) + "\n").encode("utf-8", "replace")
        except Exception:  # a record that cannot be formatted: logging's own report
            self.handleError(record)
            return
        with self._write_lock:
            if self._dropped:  # said together with the next line that fits, never alone
                line = (f"{self._dropped} log line(s) were dropped: the disk holding this log was full or "
                        "read-only\n").encode() + line
            if self._write_whole(line):
                self._dropped = 0
            else:
                self._dropped += 1

    def _write_whole(self, data: bytes) -> bool:
        try:
            before = os.fstat(self._fd).st_size
        except OSError:
            before = None
        try:
            written = os.write(self._fd, data)
        except OSError:
            return False
        if written == len(data):
            return True
        if before is not None:
            try:
                if os.fstat(self._fd).st_size == before + written:  # nobody else wrote meanwhile
                    os.ftruncate(self._fd, before)
            except OSError:
                pass
        return False
