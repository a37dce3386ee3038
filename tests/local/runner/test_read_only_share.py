"""A job whose share is read-only fails with the code docs/local_service.rst names for a read-only
disk (StorageReadOnly), saying which path, not with a generic output-directory failure."""
from __future__ import annotations

import os
import subprocess

import pytest

from jobs_support import SHARE, make_lab

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a read-only bind mount needs root")


@needs_root
def test_a_job_on_a_read_only_share_fails_with_storage_read_only(service, batchai):
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=1)
    share_dir = service.context.files_root / lab.account / SHARE
    done = subprocess.run(["mount", "--bind", str(share_dir), str(share_dir)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here ({done.stderr.strip()})")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(share_dir)], check=True)
        lab.submit("job", {"customToolkitSettings": {"commandLine": "echo never"}})
        job = lab.wait_state("job")
    finally:
        subprocess.run(["umount", "-l", str(share_dir)], check=True)
    assert job.execution_state == "failed"
    [error] = job.execution_info.errors
    assert error.code == "StorageReadOnly"
    # The path is where the job writes: the share as mounted for it.
    assert "could not run the job: the file system is read-only: " in error.message
    assert "/mounts/afs/" in error.message
