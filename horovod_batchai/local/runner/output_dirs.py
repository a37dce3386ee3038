"""Where each output directory of a job is, recorded by the run that makes it.

When a job starts, its run records every output directory (``stdouterr`` and each
``outputDirectories[].id``) in the ``job_output_dirs`` table: the local path and, when that path
lies (through the job's mounts) on an Azure file share or in a mounted blob container's mirror,
the account, the share or container, and the path inside it. ``listOutputFiles``
(``batchai/outputs.py``) reads them back as :class:`OutputDirLocation` records.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from ..core.context import ServiceContext
from ..core.store import resource_key
from ..storage import accounts

__all__ = ["STDOUTERR", "OutputDirLocation", "StoragePlace", "record_output_dirs", "forget_output_dirs", "output_dir"]

#: the id of the output directory that holds a job's stdout.txt and stderr.txt.
STDOUTERR = "stdouterr"


@dataclass(frozen=True)
class StoragePlace:
    """An Azure file share or blob container, and a path inside it."""

    account: str
    #: the share's or the container's name.
    share: str
    #: '/'-joined path inside it ('' for its root).
    path: str
    #: a blob container (else a file share).
    blob: bool = False


@dataclass(frozen=True)
class OutputDirLocation:
    """Where one output directory of a job is."""

    dir_id: str
    #: the directory on this machine, as the job saw it.
    local_path: Path
    #: the share or container it lies on through the job's mounts; None when on neither.
    storage: Optional[StoragePlace] = None


def _locate_on_share(context: ServiceContext, path: Path) -> Optional[tuple[str, str, str]]:
    """(account, share, path inside the share) if ``path`` is (through mounts) on a file share."""
    try:
        real = path.resolve()
        rel = real.relative_to(Path(context.files_root).resolve())
    except (OSError, ValueError):
        return None
    parts = rel.parts
    if len(parts) < 2:
        return None
    account = accounts.find_account(context.store, parts[0])
    name = account["name"] if account else parts[0]
    return name, parts[1], "/".join(parts[2:])


def _locate_on_container(context: ServiceContext, path: Path) -> Optional[tuple[str, str, str]]:
    """(account, container, path inside it) if ``path`` is (through mounts) in a blob container's mirror."""
    if context.blob is None:
        return None
    try:
        real = path.resolve()
        rel = real.relative_to(Path(context.blob.mounts_root).resolve())
    except (OSError, ValueError):
        return None
    parts = rel.parts  # <account>/<container>/files/...
    if len(parts) < 3 or parts[2] != "files":
        return None
    account = accounts.find_account(context.store, parts[0])
    return (account["name"] if account else parts[0]), parts[1], "/".join(parts[3:])


def record_output_dirs(context: ServiceContext, job_id: str, dirs: Iterable[tuple[str, Path]]) -> None:
    """Remember where a starting job's output directories are (replacing an earlier run's)."""
    rows = []
    for dir_id, path in dirs:
        storage: Optional[str] = None
        located = _locate_on_share(context, path)
        if located is None:
            located = _locate_on_container(context, path)
            storage = "blob" if located else None
        account, share, share_path = located if located else (None, None, None)
        rows.append((resource_key(job_id), dir_id, str(path), account, share, share_path, storage))
    with context.store.transaction() as db:
        db.execute("DELETE FROM job_output_dirs WHERE job = ?", (resource_key(job_id),))
        db.executemany("INSERT INTO job_output_dirs (job, dir_id, local_path, account, share, share_path, storage)"
                       " VALUES (?, ?, ?, ?, ?, ?, ?)", rows)


def forget_output_dirs(context: ServiceContext, job_id: str) -> None:
    with context.store.transaction() as db:
        db.execute("DELETE FROM job_output_dirs WHERE job = ?", (resource_key(job_id),))


def output_dir(context: ServiceContext, job_id: str, dir_id: str) -> Optional[OutputDirLocation]:
    """The recorded location of one output directory of a job (ids match case-insensitively)."""
    rows = context.store.query("SELECT * FROM job_output_dirs WHERE job = ? AND lower(dir_id) = lower(?)",
                               (resource_key(job_id), dir_id))
    if not rows:
        return None
    row = rows[0]
    place = None if row["account"] is None else StoragePlace(
        account=row["account"], share=row["share"], path=row["share_path"] or "", blob=row["storage"] == "blob")
    return OutputDirLocation(dir_id=row["dir_id"], local_path=Path(row["local_path"]), storage=place)
