"""Streams that compute a file's MD5 while azure-storage moves it, so a transfer and its check
read the bytes once.

* :class:`HashingReader` wraps the local file an upload reads: azure-storage reads it from
  start to end on the calling thread (its workers only send the ranges), so the digest is
  updated as each range is read and ready when the last range is sent.
* :class:`OrderedHashWriter` is what a parallel download writes into: its workers write 4 MiB
  ranges in whatever order they arrive; each range is written to the file at its offset at once.

The reader hashes what it hands out as it reads it. The writer hands its ranges to an
:class:`OrderedMd5`, which hashes them in file order on a thread of its own: the MD5 is the
slowest step of a transfer after the network (about 600 MB/s on one core), and azure-storage's
download workers write under one lock, so hashing inside ``write`` would hold every worker up.
When the ranges are written to a file, the hashing thread reads them back from it (the page
cache) into one reused buffer, so no range is held in memory for it: holding azure-storage's
4 MiB buffers until they are hashed, and freeing them from another thread, cost more CPU than
the MD5 itself on this project's machines (freed memory is handed back to the host). Without a
file, ranges wait in memory until every byte before them is hashed; a worker that writes while
more than ``max_waiting`` bytes wait, and the hashing thread has work, waits for it.

Both are duck-typed streams: they have just the methods azure-storage calls. Use them as context
managers (or call ``close``) so the hashing thread ends when a transfer fails.
"""
from __future__ import annotations

import hashlib
import os
import threading
from typing import Any, BinaryIO, Optional, Union

from .._models.errors import TransferError
from .parallel import check_stop

__all__ = ["HashingReader", "OrderedHashWriter", "OrderedMd5", "PositionedWriter"]

#: bytes that may wait to be hashed before a writer is held back (16 ranges of 4 MiB).
MAX_WAITING = 64 * 1024 * 1024
#: the buffer the hashing thread reads a written file back into.
READ_BACK_BYTES = 4 * 1024 * 1024


class OrderedMd5:
    """The MD5 of byte ranges handed over in any order, computed in file order on its own thread.
    With ``fd``, the ranges were written there: only their place is noted, and they are read back."""

    def __init__(self, fd: Optional[int] = None, *, max_waiting: int = MAX_WAITING) -> None:
        self._fd = fd
        self._md5 = hashlib.md5(usedforsecurity=False)
        self._max_waiting = max_waiting
        self._cond = threading.Condition()
        self._waiting: dict[int, Union[bytes, int]] = {}  # offset -> the bytes, or their length (with fd)
        self._waiting_bytes = 0
        self._next = 0         # the offset the hashing thread needs next
        self._hashed = 0       # bytes hashed so far
        self._finishing = False  # result() asked: hash what is there, then stop
        self._closed = False     # close() asked: stop after the range in hand, drop the rest
        self._thread: Optional[threading.Thread] = None
        self._buffer: Optional[memoryview] = None
        self._error: Optional[BaseException] = None

    def add(self, offset: int, data: bytes) -> None:
        """Hand over ``data``, the bytes at ``offset``; a range given twice is a ValueError."""
        with self._cond:
            if offset < self._next or offset in self._waiting:
                raise ValueError(f"bytes at offset {offset} were written twice")
            if self._closed or self._finishing:
                raise ValueError("the hash is finished: no more bytes can be added")
            if not data:
                return
            if self._fd is None:
                self._waiting[offset] = data
                self._waiting_bytes += len(data)
            else:
                self._waiting[offset] = len(data)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="transfer-md5", daemon=True)
                self._thread.start()
            self._cond.notify_all()
            # Back-pressure, only while the hashing thread can make progress (else it waits for us).
            while self._waiting_bytes > self._max_waiting and self._next in self._waiting and not self._closed:
                self._cond.wait()

    def _run(self) -> None:
        try:
            self._hash_in_order()
        except BaseException as err:  # noqa: B036 -- handed to result()
            with self._cond:
                self._error = err
                self._closed = True
                self._cond.notify_all()

    def _hash_in_order(self) -> None:
        while True:
            with self._cond:
                while self._next not in self._waiting and not (self._closed or self._finishing):
                    self._cond.wait()
                if self._closed or self._next not in self._waiting:
                    return
                chunk = self._waiting.pop(self._next)
                start = self._next
                length = chunk if isinstance(chunk, int) else len(chunk)
                if not isinstance(chunk, int):
                    self._waiting_bytes -= length
                self._next += length
                self._cond.notify_all()
            # Outside the lock; hashlib lets go of the GIL for large updates.
            if isinstance(chunk, int):
                self._hash_from_file(start, length)
            else:
                self._md5.update(chunk)
            with self._cond:
                self._hashed += length
                self._cond.notify_all()

    def _hash_from_file(self, offset: int, length: int) -> None:
        assert self._fd is not None
        if self._buffer is None:
            self._buffer = memoryview(bytearray(READ_BACK_BYTES))
        end = offset + length
        while offset < end:
            n = os.preadv(self._fd, [self._buffer[:min(len(self._buffer), end - offset)]], offset)
            if n <= 0:
                raise OSError(f"the file ended at byte {offset} while its ranges were hashed")
            self._md5.update(self._buffer[:n])
            offset += n

    def _stop(self, **flag: bool) -> None:
        with self._cond:
            for name, value in flag.items():
                setattr(self, f"_{name}", value)
            self._cond.notify_all()
        thread = self._thread
        if thread is not None:
            thread.join()

    def close(self) -> None:
        """Give up (a transfer failed or was interrupted): the thread stops after the range in
        hand, and what waits is dropped. Idempotent; after :meth:`result` it changes nothing."""
        self._stop(closed=True)
        with self._cond:
            self._waiting.clear()
            self._waiting_bytes = 0

    def result(self) -> tuple[int, bytes]:
        """(bytes hashed from offset 0 without a gap, their MD5); a gap is a :class:`TransferError`."""
        self._stop(finishing=True)
        with self._cond:
            if self._error is not None:
                raise TransferError(f"the transfer's MD5 could not be computed: {self._error}") from self._error
            if self._closed:
                raise ValueError("the hash was closed before its result was asked for")
            if self._waiting:
                raise TransferError(f"the transfer left a gap at byte {self._next}")
            return self._hashed, self._md5.digest()


class HashingReader:
    """A read-only stream over ``fh`` that hashes what is read; :meth:`digest` is the MD5 of
    exactly ``size`` bytes read in order, or a :class:`TransferError` if the file did not
    hold ``size`` bytes (it changed while it was being read). Once ``stop`` is set, a read
    raises ``Stopped``."""

    def __init__(self, fh: BinaryIO, size: int, name: str, *, stop: Optional[threading.Event] = None) -> None:
        self._fh = fh
        self._size = size
        self._name = name
        self._stop = stop
        self._read = 0
        self._md5 = hashlib.md5(usedforsecurity=False)

    def read(self, n: int = -1) -> bytes:
        # A transfer asked to stop sends no further range (the ranges in flight still finish).
        check_stop(self._stop)
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

    def close(self) -> None:
        pass  # nothing of its own to release; a context manager like the writer

    def __enter__(self) -> "HashingReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


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
    split by another worker's. ``fd`` must be open for reading too (the hash reads the ranges
    back). With ``fd`` None nothing is stored: the bytes are only hashed (reading a share's file
    back to check it)."""

    def __init__(self, fd: Optional[int]) -> None:
        self._fd = fd
        self._position = 0
        self._md5 = OrderedMd5(fd)

    def write(self, data: bytes) -> int:
        if self._fd is None:
            data = bytes(data)  # the bytes wait here; a caller's reused buffer must not change under them
        offset, self._position = self._position, self._position + len(data)
        if self._fd is not None:
            view, at = memoryview(data), offset
            while view:
                written = os.pwrite(self._fd, view, at)
                view, at = view[written:], at + written
        self._md5.add(offset, data)
        return len(data)

    def result(self) -> tuple[int, bytes]:
        """(bytes written from offset 0 without a gap, their MD5); a gap is a :class:`TransferError`."""
        return self._md5.result()

    def close(self) -> None:
        self._md5.close()

    def __enter__(self) -> "OrderedHashWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
