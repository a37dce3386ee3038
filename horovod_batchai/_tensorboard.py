"""A job's TensorBoard event files, synced to a local folder, and TensorBoard started on them.

The event files are under ``tensorboard/`` in the job's output directory (``stdouterr``), where the
``training`` package writes them on rank 0. A sync fetches the files that are new or have grown
since the last one, so it can be repeated while the job runs. TensorBoard ships with TensorFlow;
where it is not installed, the command to run is given instead of starting it.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

from ._shared.tensorboard import EVENTS_DIR, TensorBoardBase, event_files_to_fetch, has_event_files, tensorboard_folder

if TYPE_CHECKING:
    from ._job import Job

__all__ = ["TensorBoard", "sync_event_files"]

log = logging.getLogger(__name__)


def sync_event_files(job: "Job", logdir: Path) -> int:
    """Fetch the job's event files that are missing from ``logdir`` or smaller there; returns
    how many were fetched. A job without event files fetches none."""
    fetched = 0
    pending: List[str] = [EVENTS_DIR] if has_event_files(job.list_output_files()) else []
    while pending:
        directory = pending.pop()
        subdirectories, downloads = event_files_to_fetch(directory, job.list_output_files(directory=directory), logdir)
        pending += subdirectories
        for remote, local in downloads:
            job.download(remote, local)
            fetched += 1
    return fetched


class TensorBoard(TensorBoardBase):
    """A job's event files in a local folder, and TensorBoard on them when it is installed.

    :meth:`sync` fetches what the job wrote since; :attr:`url` is where TensorBoard listens (None
    when it is not running); :attr:`command` is the command that starts it; :meth:`stop` ends it.
    Without a ``port``, TensorBoard binds one the system chooses and :attr:`port` is the one it
    reports.
    """

    job: "Job"

    def sync(self) -> int:
        """Fetch the event files the job wrote since the last sync; returns how many.

        :returns: the number of files fetched."""
        return sync_event_files(self.job, self.logdir)

    def start(self, *, timeout: float = 120.0) -> "TensorBoard":
        """Start TensorBoard on :attr:`logdir` and wait until it says where it listens; when
        TensorBoard is not installed, log the command and return without starting anything.

        :keyword float timeout: seconds to wait for TensorBoard to say where it listens.
        :returns: the TensorBoard itself."""
        self._start(timeout)
        return self

    def stop(self) -> None:
        """End TensorBoard if this object started it."""
        self._stop()

    def __enter__(self) -> "TensorBoard":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def open_tensorboard(job: "Job", logdir: Optional[Path], *, port: Optional[int], start: bool) -> TensorBoard:
    board = TensorBoard(job, tensorboard_folder(job, logdir), port)
    board.sync()
    if start:
        board.start()
    return board
