"""Uploads a crashed client left under their temporary name are removed when the service starts."""
from __future__ import annotations

import os
import time

from horovod_batchai._shared.fileshare import upload_temp_path
from horovod_batchai.local import LocalService
from horovod_batchai.local.files.store import STALE_UPLOAD_AGE_S, STALE_UPLOAD_RE

from files_support import create_account, share_service


def test_the_sdks_temporary_names_are_the_ones_the_service_cleans() -> None:
    for path in ("model.h5", "cifar/saved_models/model.h5", "d/" + "n" * 255, "d/.hidden", "d/ü n.txt"):
        temp = upload_temp_path(path)
        assert temp.rpartition("/")[0] == path.rpartition("/")[0]
        name = temp.rpartition("/")[2]
        assert STALE_UPLOAD_RE.match(name) and len(name) <= 255, name
    assert not STALE_UPLOAD_RE.match("model.h5") and not STALE_UPLOAD_RE.match(".model.uploading-xyz")


def test_start_up_removes_stale_temporary_uploads_only(tmp_path) -> None:
    state = tmp_path / "state"
    with LocalService(state) as service:
        account = create_account(service)
        share = share_service(service, account).create_share("share")
        share.create_directory("d")
        for path in ("d/.model.h5.uploading-0123456789ab", "d/.fresh.h5.uploading-ba9876543210",
                     "d/model.h5", "d/.model.h5.uploading-notours"):
            share.get_file_client(path).upload_file(b"partial")
        root = service.context.files_root / account.name / "share" / "d"
    old = time.time() - STALE_UPLOAD_AGE_S - 60
    for name in (".model.h5.uploading-0123456789ab", "model.h5", ".model.h5.uploading-notours"):
        os.utime(root / name, (old, old))
    with LocalService(state):
        assert sorted(os.listdir(root)) == [".fresh.h5.uploading-ba9876543210", ".model.h5.uploading-notours",
                                            "model.h5"]


def test_a_running_service_sweeps_leftovers_but_not_uploads_in_progress(tmp_path, monkeypatch) -> None:
    from horovod_batchai.local.files import store
    monkeypatch.setattr(store, "STALE_UPLOAD_SWEEP_S", 0.2)
    monkeypatch.setattr(store, "STALE_UPLOAD_AGE_S", 2.0)
    with LocalService(tmp_path / "state") as service:
        account = create_account(service)
        share = share_service(service, account).create_share("share")
        busy = share.get_file_client(".busy.h5.uploading-ba9876543210")
        for name in (".left.h5.uploading-0123456789ab", ".busy.h5.uploading-ba9876543210"):
            share.get_file_client(name).upload_file(b"partial")
        root = service.context.files_root / account.name / "share"
        deadline = time.monotonic() + 30
        while (root / ".left.h5.uploading-0123456789ab").exists():
            assert time.monotonic() < deadline, "the sweep never removed the leftover"
            busy.download_file().readall()  # read back, which does not change its mtime: in progress
            time.sleep(0.1)
        assert os.listdir(root) == [".busy.h5.uploading-ba9876543210"]
