"""Nobody but the user who runs the service reads its state.

The state directory holds storage account keys, admin passwords and job secrets (``state.db``
and its write-ahead log), the token-signing secret, and every share's files and every job's
output. It is made ``0700``, so no other user can even list it; the database and the files the
service writes are ``0600`` and the directories it makes ``0700`` as a second line, should a
file ever be moved out. Job supervisors, node setup tasks and Azurite start with umask 077
whatever the service's own umask, so what jobs write is private too; the daemon runs with umask
077 as well, while a service running inside another program leaves that program's umask alone.

A state directory made by an older version (``0755``, a ``0644`` database) is tightened when
the service starts, once, recursively, and the log says what was done.
"""
from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

__all__ = ["PRIVATE_DIR", "PRIVATE_FILE", "secure_state_dir", "private_dir"]

log = logging.getLogger(__name__)

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
#: what the service writes at the top of the state directory and keeps private however it was made.
_TOP_FILES = ("state.db", "state.db-wal", "state.db-shm", "service.json", "service.lock", "service.log")
_TOP_DIRS = ("files", "jobs", "fileservers", "mlflow")


def private_dir(path: Path) -> Path:
    """``path`` (and missing parents) made a directory only its owner can enter."""
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    _tighten(path)
    return path


def _tighten(path: Path) -> bool:
    """Take group and other permissions off ``path`` (not following a link); True if it had any."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode) or not st.st_mode & 0o077:
        return False
    os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077)
    return True


def secure_state_dir(state_dir: Path) -> None:
    """Make ``state_dir`` private (creating it), tightening an older, looser one throughout."""
    state_dir = Path(state_dir)
    existed = state_dir.is_dir()
    loose = existed and bool(os.lstat(state_dir).st_mode & 0o077)
    private_dir(state_dir)
    for name in _TOP_DIRS:
        if (state_dir / name).is_dir():
            _tighten(state_dir / name)
    for name in _TOP_FILES:
        _tighten(state_dir / name)
    if not loose:
        return
    # Made before modes were kept: everything beneath may be readable by others. Links are left
    # alone (chmod would follow them out of the directory).
    changed = 0
    for directory, dirnames, filenames in os.walk(state_dir):
        for name in dirnames + filenames:
            try:
                changed += _tighten(Path(directory) / name)
            except OSError:
                continue  # removed meanwhile, or not ours
    log.warning("the state directory %s was open to other users; it is now %o and %d file(s) and "
                "directories in it were made private to this user", state_dir, PRIVATE_DIR, changed)
