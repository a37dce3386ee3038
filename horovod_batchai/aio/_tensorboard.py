"""A job's TensorBoard event files, for asyncio: fetched through the aio clients, and TensorBoard
started on them by the sync API's own process handling (see :mod:`horovod_batchai._tensorboard`), and
a sweep's TensorBoard with its trials' HParams."""
from __future__ import annotations

import asyncio
from pathlib import Path
import logging
from typing import TYPE_CHECKING, List, Optional, Sequence

from .._shared.paths import local_path_under
from .._shared.tensorboard import (EVENTS_DIR, SweepRun, SweepTensorBoardBase, TensorBoardBase, event_files_to_fetch,
                                   has_event_files, sweep_tensorboard_folder, tensorboard_folder, tensorboard_installed)

if TYPE_CHECKING:
    from ._job import Job

__all__ = ["TensorBoard", "SweepTensorBoard", "sync_event_files", "open_tensorboard", "open_sweep_tensorboard"]

log = logging.getLogger(__name__)


async def sync_event_files(job: "Job", logdir: Path) -> int:
    """Fetch the job's event files missing from ``logdir`` or smaller there; returns how many."""
    fetched = 0
    pending: List[str] = [EVENTS_DIR] if has_event_files(await job.list_output_files()) else []
    while pending:
        directory = pending.pop()
        listed = await job.list_output_files(directory=directory)
        subdirectories, downloads = await asyncio.to_thread(event_files_to_fetch, directory, listed, logdir)
        pending += subdirectories
        for remote, local in downloads:
            await job.download(remote, local)
            fetched += 1
    return fetched


class TensorBoard(TensorBoardBase):
    """A job's event files in a local folder and TensorBoard on them (see
    :class:`horovod_batchai.TensorBoard`): ``await board.sync()`` fetches what the job wrote
    since, :attr:`url` is where TensorBoard listens, ``await board.stop()`` ends it. Starting and
    stopping the process wait in a worker thread."""

    job: "Job"

    async def sync(self) -> int:
        """Fetch the event files the job wrote since the last sync; returns how many."""
        return await sync_event_files(self.job, self.logdir)

    async def start(self, *, timeout: float = 120.0, keep_alive: bool = False) -> "TensorBoard":
        """Start TensorBoard on :attr:`logdir` and wait (at most ``timeout`` seconds) until it
        says where it listens; when TensorBoard is not installed, log the command and start nothing.
        It ends when this interpreter ends, unless ``keep_alive`` is True."""
        await asyncio.to_thread(self._start, timeout, keep_alive)
        return self

    async def stop(self) -> None:
        """End TensorBoard if this object started it."""
        await asyncio.to_thread(self._stop)

    async def __aenter__(self) -> "TensorBoard":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


async def open_tensorboard(job: "Job", logdir: Optional[Path], *, port: Optional[int], start: bool) -> TensorBoard:
    board = TensorBoard(job, tensorboard_folder(job, logdir), port)
    await board.sync()
    if start:
        await board.start()
    return board


class SweepTensorBoard(SweepTensorBoardBase, TensorBoard):
    """A sweep's TensorBoard (see :class:`horovod_batchai._tensorboard.SweepTensorBoard`):
    ``await board.sync()`` fetches the trials' event files and writes their HParams."""

    async def sync(self) -> int:
        """Fetch the event files the trials wrote since the last sync, and write the HParams of the
        trials whose values changed; returns how many event files were fetched."""
        fetched = 0
        for run in self.runs:
            if run.job is not None:
                fetched += await sync_event_files(run.job, local_path_under(self.logdir, run.name))
        if tensorboard_installed():
            await asyncio.to_thread(self._hparams.write, self.runs)
        else:
            log.warning("HParams of sweep %s not written: the tensorboard package is not installed (it comes with "
                        "TensorFlow; or pip install tensorboard)", self.sweep)
        return fetched


async def open_sweep_tensorboard(sweep: str, metric: str, parameters: Sequence[str], runs: Sequence[SweepRun],
                                 logdir: Optional[Path], *, port: Optional[int], start: bool,
                                 keep_alive: bool) -> SweepTensorBoard:
    """The TensorBoard of a sweep's ``runs`` (its trials), synced, and started when ``start``."""
    board = SweepTensorBoard(sweep, metric, parameters, runs, sweep_tensorboard_folder(sweep, logdir), port)
    await board.sync()
    if start:
        await board.start(keep_alive=keep_alive)
    return board
