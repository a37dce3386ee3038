"""Deleting a (half-built) chroot never deletes what is mounted into it: the host directories a
session binds in (the node runtime) and /dev would go with it otherwise."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import trixie

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")


def test_removing_a_chroot_unmounts_what_is_bound_into_it_first(tmp_path: Path) -> None:
    host = tmp_path / "host-dir"
    host.mkdir()
    (host / "precious.txt").write_text("keep me")
    root = tmp_path / "chroot"
    trixie._bind(str(host), root / "opt" / "runtime", read_only=True)
    trixie._bind(str(host), root / "opt" / "writable", read_only=False)
    try:
        assert trixie.mounts_under(root) == [str(root / "opt" / "runtime"), str(root / "opt" / "writable")]
        with pytest.raises(OSError):  # read-only inside
            (root / "opt" / "runtime" / "new.txt").write_text("x")
        trixie._remove(root)
    finally:
        for point in trixie.mounts_under(root):
            subprocess.run(["umount", "-l", point], check=False)
    assert not root.exists() and trixie.mounts_under(root) == []
    assert (host / "precious.txt").read_text() == "keep me"
