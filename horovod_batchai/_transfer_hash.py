"""Streams that compute a file's MD5 while azure-storage moves it, so a transfer and its check
read the bytes once.

* :class:`HashingReader` wraps the local file an upload reads: azure-storage reads it from
  start to end on the calling thread (its workers only send the ranges), so the digest is
  updated as each range is read and ready when the last range is sent.
* :class:`OrderedHashWriter` is what a parallel download writes into: its workers write 4 MiB
  ranges in whatever order they arrive, so each range is written to the file at its offset at
  once and hashed as soon as every byte before it has been hashed. Ranges that arrive early wait
  in memory, a few ranges at most (one per worker).

Both are duck-typed streams: they have just the methods azure-storage calls.
"""
from __future__ import annotations

import hashlib
import os
import threading
from typing import BinaryIO, Optional

from ._errors import TransferError

__all__ = ["HashingReader", "OrderedHashWriter", "PositionedWriter"]


class HashingReader:
    """A read-only stream over ``fh`` that hashes what is read; :meth:`digest` is the MD5 of
    exactly ``size`` bytes read in order, or a :class:`TransferError` if the file did not
    hold ``size`` bytes (it changed while it was being read)."""

    def __init__(self, fh: BinaryIO, size: int, name: str) -> None:
        self._fh = fh
        self._size = size
        self._name = name
        self._read = 0
        self._md5 = hashlib.md5(usedforsecurity=False)

    def read(self, n: int = -1) -> bytes:
        data = self._fh.read(n)
        self._md5.update(data)
        self._read += len(data)
        return data

    def digest(self) -> bytes:
        extra = self._fh.read(1)
        if self._read != self._size or extra:
            raise TransferError(f"{self._name} changed while it was being uploaded (it held {self._size} bytes "
                                "when the upload began); nothing was replaced")
        return self._md5.digest()


class PositionedWriter:
    """The seekable, write-only stream azure-storage's parallel download writes into: it seeks,
    then writes, under its own lock; ``_position`` is where the next write lands."""

    _position = 0

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence != os.SEEK_SET or offset < 0:
            raise ValueError(f"{type(self).__name__} only seeks to an absolute, non-negative offset")
        self._position = offset
        return offset


class OrderedHashWriter(PositionedWriter):
    """A seekable write-only stream for azure-storage's parallel download (``readinto``).

    azure-storage seeks and writes under its own lock, so one ``seek`` + ``write`` pair is never
    split by another worker's. With ``fd`` None nothing is stored: the bytes are only hashed
    (reading a share's file back to check it)."""

    def __init__(self, fd: Optional[int]) -> None:
        self._fd = fd
        self._position = 0
        self._hashed = 0
        self._waiting: dict[int, bytes] = {}
        self._md5 = hashlib.md5(usedforsecurity=False)
        self._lock = threading.Lock()

    def write(self, data: bytes) -> int:
        data = bytes(data)  # the bytes may wait here; a caller's reused buffer must not change under them
        offset, self._position = self._position, self._position + len(data)
        return self.write_at(offset, data)

    def write_at(self, offset: int, data: bytes) -> int:
        """Store and hash ``data``, the bytes at ``offset`` (a writer that was handed them earlier
        and wrote them later -- horovod_batchai.aio's -- keeps the offsets itself)."""
        if self._fd is not None:
            view, at = memoryview(data), offset
            while view:
                written = os.pwrite(self._fd, view, at)
                view, at = view[written:], at + written
        with self._lock:
            if offset < self._hashed or offset in self._waiting:
                raise ValueError(f"bytes at offset {offset} were written twice")
            self._waiting[offset] = data
            while self._hashed in self._waiting:
                chunk = self._waiting.pop(self._hashed)
                self._md5.update(chunk)
                self._hashed += len(chunk)
        return len(data)

    def result(self) -> tuple[int, bytes]:
        """(bytes written from offset 0 without a gap, their MD5); a gap is a :class:`TransferError`."""
        with self._lock:
            if self._waiting:
                raise TransferError(f"the download left a gap at byte {self._hashed}")
            return self._hashed, self._md5.digest()
