"""The state directory and everything the service writes in it are its user's only."""
from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from horovod_batchai.local import LocalService

from files_support import create_account, share_service


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_new_state_directory_and_what_is_written_in_it_are_private(tmp_path: Path) -> None:
    with LocalService(tmp_path / "state") as service:
        account = create_account(service)
        share = share_service(service, account).create_share("share")
        share.create_directory("cifar")
        share.get_file_client("cifar/model.h5").upload_file(b"weights")
        state = service.state_dir
        share_dir = service.context.files_root / account.name / "share"
        assert _mode(state) == 0o700
        for name in ("state.db", "state.db-wal", "state.db-shm", "token-secret", "tls-key.pem", "service.json",
                     "service.lock"):
            assert _mode(state / name) == 0o600, name
        for directory in (state / "files", state / "jobs", share_dir.parent, share_dir, share_dir / "cifar"):
            assert _mode(directory) == 0o700, directory
        assert _mode(share_dir / "cifar" / "model.h5") == 0o600


def test_an_older_open_state_directory_is_tightened_at_start_and_the_log_says_so(tmp_path: Path, caplog) -> None:
    state = tmp_path / "state"
    with LocalService(state) as service:
        account = create_account(service)
        share_service(service, account).create_share("share").get_file_client("f.txt").upload_file(b"data")
    outside = tmp_path / "outside.txt"
    outside.write_text("not the service's")
    outside.chmod(0o644)
    share_dir = state / "files" / account.name / "share"
    (share_dir / "link").symlink_to(outside)
    # What an older version left: world-readable everything.
    for path in [state, *state.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    with caplog.at_level(logging.WARNING, logger="horovod_batchai.local.core.permissions"):
        with LocalService(state):
            pass
    assert any("open to other users" in r.getMessage() and str(state) in r.getMessage() for r in caplog.records)
    for path in [state, *state.rglob("*")]:
        if not path.is_symlink():
            assert _mode(path) & 0o077 == 0, path
    assert _mode(share_dir / "f.txt") == 0o600 and _mode(state / "state.db") == 0o600
    assert _mode(outside) == 0o644  # a link's target outside the state directory is left alone
