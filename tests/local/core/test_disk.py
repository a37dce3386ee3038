"""Disk trouble recognised (full, read-only; from the OS and from SQLite), and the service's log
handler, which drops a line whole on a full disk -- on a real full tmpfs, as root -- and says so
once there is room again."""
from __future__ import annotations

import errno
import logging
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from horovod_batchai.local.core.disk import WholeLineLogHandler, disk_problem


def test_disk_problems_are_recognised_with_their_path(tmp_path: Path) -> None:
    full = disk_problem(OSError(errno.ENOSPC, "No space left on device", "/data/x"), tmp_path)
    assert full is not None and not full.read_only and full.describe() == "no space left on the device: /data/x"
    read_only = disk_problem(OSError(errno.EROFS, "Read-only file system"), tmp_path)
    assert read_only is not None and read_only.describe() == f"the file system is read-only: {tmp_path}"
    try:
        raise RuntimeError("wrapped") from OSError(errno.EDQUOT, "Disk quota exceeded")
    except RuntimeError as err:
        assert disk_problem(err, tmp_path) == full.__class__(False, str(tmp_path))
    db = tmp_path / "state.db"
    assert disk_problem(sqlite3.OperationalError("database or disk is full"), db).describe().endswith(str(db))
    assert disk_problem(sqlite3.OperationalError("attempt to write a readonly database"), db).read_only
    assert disk_problem(OSError(errno.EACCES, "Permission denied"), tmp_path) is None
    assert disk_problem(ValueError("no"), tmp_path) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_the_log_drops_whole_lines_on_a_full_disk_and_says_so_later(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        fd = os.open(disk / "service.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        logger = logging.getLogger("test_disk.whole_lines")
        logger.propagate = False
        handler = WholeLineLogHandler(fd)
        handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        logger.addHandler(handler)
        try:
            logger.warning("before")
            filler = disk / "filler"
            filled = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                while True:
                    os.write(filled, b"\0" * 4096)
            except OSError:
                pass
            finally:
                os.close(filled)
            for i in range(5):
                logger.warning("while full %d %s", i, "x" * 20000)  # more than a page: cannot fit
            filler.unlink()
            logger.warning("after")
        finally:
            logger.removeHandler(handler)
            os.close(fd)
        lines = (disk / "service.log").read_text().splitlines()
        assert lines[0] == "WARNING before"
        assert lines[-2:] == ["5 log line(s) were dropped: the disk holding this log was full or read-only",
                              "WARNING after"]
        assert all(line.startswith("WARNING while full") and line.endswith("x" * 20000) for line in lines[1:-2])
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)
