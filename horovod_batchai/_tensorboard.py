"""A job's TensorBoard event files, synced to a local folder, and TensorBoard started on them.

The event files are under ``tensorboard/`` in the job's output directory (``stdouterr``), where the
``training`` package writes them on rank 0. A sync fetches the files that are new or have grown
since the last one, so it can be repeated while the job runs. TensorBoard ships with TensorFlow;
where it is not installed, the command to run is given instead of starting it. A TensorBoard
started here ends when this interpreter ends, unless started with ``keep_alive=True``.

A sweep's TensorBoard (:meth:`Sweep.tensorboard`) holds every trial's event files, each trial a
run, with its parameters and the final value of the sweep's metric written as HParams, so that
TensorBoard's HPARAMS tab compares them.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Sequence

from ._shared.paths import local_path_under
from ._shared.tensorboard import (EVENTS_DIR, SweepRun, SweepTensorBoardBase, TensorBoardBase, event_files_to_fetch,
                                  has_event_files, sweep_tensorboard_folder, tensorboard_folder, tensorboard_installed)

if TYPE_CHECKING:
    from ._job import Job

__all__ = ["TensorBoard", "SweepTensorBoard", "sync_event_files", "open_tensorboard", "open_sweep_tensorboard"]

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

    def start(self, *, timeout: float = 120.0, keep_alive: bool = False) -> "TensorBoard":
        """Start TensorBoard on :attr:`logdir` and wait until it says where it listens; when
        TensorBoard is not installed, log the command and return without starting anything.
        TensorBoard ends when this interpreter ends (a notebook's kernel too, however it ends),
        unless ``keep_alive`` is True: then it serves on until :meth:`stop` or killed by hand.

        :keyword float timeout: seconds to wait for TensorBoard to say where it listens.
        :keyword bool keep_alive: let TensorBoard outlive this interpreter.
        :returns: the TensorBoard itself."""
        self._start(timeout, keep_alive)
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


class SweepTensorBoard(SweepTensorBoardBase, TensorBoard):
    """A sweep's TensorBoard: every trial's event files under ``logdir/<trial>``, each trial a
    run, and its parameters and the final value of the sweep's metric as HParams (the HPARAMS tab
    compares the trials). Made by :meth:`Sweep.tensorboard`; :meth:`sync` fetches what the trials
    wrote since and updates their HParams. :attr:`job` is None."""

    def sync(self) -> int:
        """Fetch the event files the trials wrote since the last sync, and write the HParams of the
        trials whose values changed; returns how many event files were fetched.

        :returns: the number of files fetched."""
        fetched = 0
        for run in self.runs:
            if run.job is not None:
                fetched += sync_event_files(run.job, local_path_under(self.logdir, run.name))
        if tensorboard_installed():
            self._hparams.write(self.runs)
        else:
            log.warning("HParams of sweep %s not written: the tensorboard package is not installed (it comes with "
                        "TensorFlow; or pip install tensorboard)", self.sweep)
        return fetched


def open_sweep_tensorboard(sweep: str, metric: str, parameters: Sequence[str], runs: Sequence[SweepRun],
                           logdir: Optional[Path], *, port: Optional[int], start: bool,
                           keep_alive: bool) -> SweepTensorBoard:
    """The TensorBoard of a sweep's ``runs`` (its trials), synced, and started when ``start``."""
    board = SweepTensorBoard(sweep, metric, parameters, runs, sweep_tensorboard_folder(sweep, logdir), port)
    board.sync()
    if start:
        board.start(keep_alive=keep_alive)
    return board
