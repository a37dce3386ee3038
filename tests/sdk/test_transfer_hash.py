"""The streams that hash a transfer as it happens: the digest is the file's, whatever the order
the ranges arrive in, and a file that changes or a download that leaves a gap is an error."""
from __future__ import annotations

import hashlib
import io
import os
import random
from pathlib import Path

import pytest

from horovod_batchai import TransferError
from horovod_batchai._shared.transfer_hash import HashingReader, OrderedHashWriter, OrderedMd5

MIB = 1024 * 1024


def _ranges(payload: bytes, size: int) -> list[tuple[int, bytes]]:
    return [(start, payload[start:start + size]) for start in range(0, len(payload), size)]


def test_ranges_written_in_any_order_give_the_file_and_its_md5(tmp_path: Path) -> None:
    payload = os.urandom(10 * MIB + 3)
    ranges = _ranges(payload, 1 * MIB)
    random.Random(7).shuffle(ranges)
    target = tmp_path / "out.bin"
    with open(target, "w+b") as fh:
        writer = OrderedHashWriter(fh.fileno())
        for start, data in ranges:
            writer.seek(start)
            writer.write(data)
        assert writer.result() == (len(payload), hashlib.md5(payload).digest())
    assert target.read_bytes() == payload


def test_hash_only_keeps_nothing_but_early_ranges() -> None:
    payload = os.urandom(3 * MIB)
    writer = OrderedHashWriter(None)
    (a, first), (b, second), (c, third) = _ranges(payload, MIB)
    for start, data in ((c, third), (a, first), (b, second)):
        writer.seek(start)
        writer.write(memoryview(data))
    assert writer.result() == (len(payload), hashlib.md5(payload).digest())


def test_a_gap_or_a_range_written_twice_is_an_error() -> None:
    writer = OrderedHashWriter(None)
    writer.write(b"a" * 10)
    writer.seek(20)
    writer.write(b"c" * 10)
    with pytest.raises(TransferError, match="gap at byte 10"):
        writer.result()
    writer.seek(0)
    with pytest.raises(ValueError, match="written twice"):
        writer.write(b"a" * 10)
    with pytest.raises(ValueError):
        writer.seek(0, os.SEEK_END)


def test_the_reader_hashes_what_it_hands_out() -> None:
    payload = os.urandom(5 * MIB + 1)
    reader = HashingReader(io.BytesIO(payload), len(payload), "model.bin")
    assert b"".join(iter(lambda: reader.read(4 * MIB), b"")) == payload
    assert reader.digest() == hashlib.md5(payload).digest()


@pytest.mark.parametrize("actual", [99, 101])
def test_a_file_that_changed_size_while_read_is_an_error(actual: int) -> None:
    reader = HashingReader(io.BytesIO(b"x" * actual), 100, "model.bin")
    reader.read(100)
    with pytest.raises(TransferError, match="model.bin changed while it was being uploaded"):
        reader.digest()


def test_writers_are_held_back_only_while_the_hash_can_catch_up() -> None:
    # Far more than max_waiting arrives ahead of a gap: nobody waits (the hash needs the gap first).
    md5 = OrderedMd5(max_waiting=2 * MIB)
    payload = os.urandom(8 * MIB)
    ranges = _ranges(payload, MIB)
    for start, data in ranges[1:]:
        md5.add(start, data)
    md5.add(*ranges[0])
    assert md5.result() == (len(payload), hashlib.md5(payload).digest())


def test_closing_ends_the_hashing_thread_and_drops_what_waits() -> None:
    md5 = OrderedMd5()
    md5.add(MIB, b"x" * MIB)  # waits for byte 0, which never comes
    md5.close()
    assert md5._thread is not None and not md5._thread.is_alive()
    assert md5._waiting == {}
    with pytest.raises(ValueError, match="closed"):
        md5.result()


def test_a_gap_left_at_the_end_is_a_transfer_error() -> None:
    md5 = OrderedMd5()
    md5.add(MIB, b"x" * MIB)
    with pytest.raises(TransferError, match="gap at byte 0"):
        md5.result()


def test_a_file_the_hash_cannot_read_back_is_a_transfer_error(tmp_path: Path) -> None:
    with open(tmp_path / "out.bin", "wb") as fh:  # write-only: the hashing thread cannot read it
        writer = OrderedHashWriter(fh.fileno())
        writer.write(b"x" * 100)
        with pytest.raises(TransferError, match="could not be computed"):
            writer.result()


def test_the_reader_hands_out_nothing_more_once_asked_to_stop() -> None:
    import threading
    from horovod_batchai._shared.parallel import Stopped
    stop = threading.Event()
    reader = HashingReader(io.BytesIO(b"x" * 100), 100, "model.bin", stop=stop)
    assert reader.read(10) == b"x" * 10
    stop.set()
    with pytest.raises(Stopped):
        reader.read(10)
