"""Submitted jobs, for asyncio: :class:`horovod_batchai.Job`'s methods, awaited.

:meth:`Job.wait` and :meth:`Job.stream` poll between ``asyncio.sleep`` calls: cancelling them (a
``CancelledError``, ``asyncio.wait_for``'s deadline, Ctrl-C under ``asyncio.run``) stops the
polling at once, with no thread left behind. The job itself goes on unless the caller asks for it
to be terminated (``wait(..., terminate_on_cancel=True)``).
"""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Union

from azure.core.exceptions import AzureError, HttpResponseError

from .._models.constants import DEFAULT_LRO_TIMEOUT, STDOUTERR
from .._models.errors import HorovodBatchAIError, InvalidSpecError, azure_errors
from .._models.names import local_destination, local_directory
from .._models.states import ExecutionState, JobStatus
from .._models.values import OutputFile
from .._shared.deprecation import positional_options
from .._models.mlflow_run import Artifact, RunData
from .._shared.job import (TAIL_BYTES, EndWatch, JobBase, check_artifact_path, check_download_link, check_tail_bytes,
                           check_tensorboard_port, metrics_from, metrics_link, no_metrics, no_run_error, output_named,
                           tail_text, with_run)
from .._shared.lro import check_polling, check_timeout
from .._shared.lro_async import AsyncMappedPoller, AsyncPoller, accepted_async
from .._shared.metrics import METRICS_FILE, MetricsTable
from .._shared.paths import local_path_under
from .._shared.polling import Polling
from .._shared.polling_async import async_poll_until
from .._shared.resource_ids import names_from_id, parent_workspace
from .._shared.stream import check_link_expiry, check_output_path
from ._stream import AsyncOutputStream

if TYPE_CHECKING:
    from .._places.base import AsyncBackend
    from ._experiment import Experiment
    from ._target import Target
    from ._tensorboard import TensorBoard

__all__ = ["Job"]

log = logging.getLogger(__name__)


class Job(JobBase):
    """A job submitted to an aio :class:`Experiment` (see :class:`horovod_batchai.Job`).
    ``status``, ``execution_state`` and ``spec`` describe the job as last fetched."""

    experiment: "Experiment"

    @property
    def target(self) -> "Target":
        return self.experiment.workspace.target

    @property
    def _backend(self) -> "AsyncBackend":
        return self.target.backend

    @classmethod
    async def from_id(cls, target: "Target", resource_id: str) -> "Job":
        """The existing job whose ARM id is ``resource_id`` (as :attr:`id` gives it), fetched; an
        id of another form, or a target that is not an aio :class:`Target`, is an
        :class:`InvalidSpecError` stating the valid one. (Azure ML job ids do not name the
        experiment: it is read from the job.)"""
        names = names_from_id(target, resource_id, "job", aio=True)
        workspace = parent_workspace(target, names)
        experiment = names.get("experiment") or await target.backend.job_experiment(
            workspace.resource_group, workspace.name, names["job"])
        job: Job = await workspace._experiment(experiment).get_job(names["job"])
        return job

    async def begin_delete(self, *, continuation_token: Optional[str] = None, polling: bool = True,
                           polling_interval: Optional[float] = None) -> "AsyncPoller[None]":
        """Start deleting the job (stopping it if it runs); finishes at once when already gone."""
        interval = check_polling(polling, polling_interval)
        poller = await self._backend.begin_delete_job(self._ref, continuation_token=continuation_token,
                                                      polling_interval=interval)
        return poller if polling else accepted_async(poller, None)

    async def delete(self, *, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> None:
        """Delete the job, awaited for at most ``timeout`` seconds; succeeds when already gone."""
        check_timeout(timeout)
        await (await self.begin_delete()).result(timeout)

    async def begin_terminate(self, *, continuation_token: Optional[str] = None, polling: bool = True,
                              polling_interval: Optional[float] = None) -> "AsyncPoller[JobStatus]":
        """Ask the service to stop the job; the poller's result is the job's fresh status."""
        interval = check_polling(polling, polling_interval)
        poller = await self._backend.begin_terminate_job(self._ref, continuation_token=continuation_token,
                                                         polling_interval=interval)

        async def fresh(_: object) -> JobStatus:
            return (await self.refresh()).status

        mapped: AsyncMappedPoller[Any, JobStatus] = AsyncMappedPoller(poller, fresh, action="terminating job",
                                                                      resource=self.id, same_token=True)
        return mapped if polling else accepted_async(mapped, (await self.refresh()).status)

    async def terminate(self, *, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> JobStatus:
        """:meth:`begin_terminate`, awaited for at most ``timeout`` seconds."""
        check_timeout(timeout)
        return await (await self.begin_terminate()).result(timeout)

    # -- state ----------------------------------------------------------------------------------
    async def refresh(self) -> "Job":
        """Fetch the job's current state; returns the job itself."""
        self._record = await self._backend.get_job(self._ref)
        return self

    async def wait(self, timeout: Optional[float] = None, *, poll_interval: Optional[float] = None,
                   on_state: Optional[Callable[[ExecutionState], None]] = None,
                   terminate_on_cancel: bool = False) -> JobStatus:
        """Wait until the job ends, polling between ``asyncio.sleep`` calls. Returns its status on
        success; raises :class:`JobFailedError` on failure and :class:`WaitTimeoutError` after
        ``timeout`` seconds (None: no limit). Cancelling the wait stops the polling at once;
        with ``terminate_on_cancel`` the job is then asked to stop too (the request is sent
        before the cancellation goes on; its outcome is not awaited).

        :param float timeout: seconds to wait; None: no limit.
        :keyword float poll_interval: seconds between polls (default: the target's).
        :keyword on_state: called with each new :class:`ExecutionState`.
        :keyword bool terminate_on_cancel: when the wait is cancelled, also ask the service to stop the job.
        :returns: the succeeded job's :class:`JobStatus`.
        :raises JobFailedError: when the job fails.
        :raises WaitTimeoutError: when ``timeout`` is spent."""
        polling = Polling(timeout=timeout, poll_interval=poll_interval if poll_interval is not None
                          else self._backend.default_poll_interval)
        watch = EndWatch(self.name, polling, on_state)

        async def fetch() -> JobStatus:
            return (await self.refresh()).status

        try:
            status = await async_poll_until(fetch, done=watch.done, polling=polling, on_each=watch.report,
                                            on_timeout=watch.timeout_error)
        except asyncio.CancelledError:
            if terminate_on_cancel:
                await asyncio.shield(self._ask_to_stop())
            raise
        if watch.failed(status):
            raise watch.failure(status, await self.stderr_tail())
        return status

    async def _ask_to_stop(self) -> None:
        try:
            await self._backend.begin_terminate_job(self._ref)
            log.info("job %s: asked the service to terminate it (its wait was cancelled)", self.name)
        except (AzureError, HorovodBatchAIError) as err:
            log.warning("job %s: the terminate request after a cancelled wait failed (%s)", self.name,
                        type(err).__name__)

    # -- output files ---------------------------------------------------------------------------
    @positional_options("output_directory_id", "directory")
    async def list_output_files(self, *, output_directory_id: str = STDOUTERR, directory: str = ".",
                                link_expiry_minutes: int = 60) -> List[OutputFile]:
        """Files and directories in ``directory`` of the output directory ``output_directory_id``."""
        check_link_expiry(link_expiry_minutes)
        return await self._backend.list_output_files(self._ref, output_directory_id, directory, link_expiry_minutes)

    def stream(self, name: str = "stdout.txt", *, output_directory_id: str = STDOUTERR,
               poll_interval: Optional[float] = None, timeout: Optional[float] = None,
               link_expiry_minutes: int = 60, renew_before_s: Optional[float] = None) -> AsyncOutputStream:
        """Text appended to output file ``name`` as the job writes it, until the job ends:
        ``async for text in job.stream("stdout.txt")``. See :class:`AsyncOutputStream`."""
        return AsyncOutputStream(self, name, output_directory_id=output_directory_id, poll_interval=poll_interval,
                                 timeout=timeout, link_expiry_minutes=link_expiry_minutes,
                                 renew_before_s=renew_before_s)

    async def download(self, path: str, dest: Union[str, Path], *, output_directory_id: str = STDOUTERR) -> Path:
        """Download output file ``path`` (a directory is fetched whole) to ``dest`` (see
        :meth:`horovod_batchai.Job.download`); the file is written in a worker thread."""
        directory, _, name = check_output_path(path, "path").strip("/").rpartition("/")
        match = output_named(await self.list_output_files(output_directory_id=output_directory_id, directory=directory or "."), name, path,
                             output_directory_id)
        if match.is_directory:
            dest = local_directory(dest)
            for child in await self.list_output_files(output_directory_id=output_directory_id, directory=path.strip("/")):
                await self.download(f"{path.strip('/')}/{child.name}", local_path_under(dest, child.name),
                                    output_directory_id=output_directory_id)
            return dest
        dest = local_destination(dest, name)
        remote = await self._backend.open_output(check_download_link(match, path, output_directory_id))
        partial = dest.with_name(dest.name + ".partial")
        try:
            with azure_errors("downloading", f"{self.name}/{output_directory_id}/{path}"), open(partial, "wb") as fh:
                async for chunk in remote.chunks():
                    await asyncio.to_thread(fh.write, chunk)
        except BaseException:  # a failed, interrupted or cancelled download leaves nothing behind
            partial.unlink(missing_ok=True)
            raise
        finally:
            await remote.close()
        partial.replace(dest)
        return dest

    # -- metrics and the job's MLflow run --------------------------------------------------------
    async def metrics(self) -> MetricsTable:
        """The job's metrics, read now: from its MLflow run, else its ``metrics.csv`` (see
        :meth:`horovod_batchai.Job.metrics`); a job that has recorded none gives an empty table
        whose ``reason`` says why."""
        state = (await self.refresh()).execution_state
        run = await self._mlflow_run()
        table = with_run(None, run, self.name, state)
        if table is not None:
            return table
        link = metrics_link(await self.list_output_files(output_directory_id=STDOUTERR))
        if link is None:
            csv_table = no_metrics(self.name, state)
        else:
            remote = await self._backend.open_output(link)
            try:
                with azure_errors("reading metrics of", f"{self.name}/{STDOUTERR}/{METRICS_FILE}"):
                    data = b"".join([chunk async for chunk in remote.chunks()])
            finally:
                await remote.close()
            csv_table = metrics_from(data, self.name, state)
        return with_run(csv_table, run, self.name, state) or csv_table

    async def _mlflow_run_id(self) -> Optional[str]:
        run_id = self._known_run_id()
        if run_id is None:
            with azure_errors("looking up the MLflow run of", self.id):
                run_id = self._run_id = await self._backend.job_mlflow_run_id(self._ref)
        return run_id

    async def _mlflow_run(self) -> Optional[RunData]:
        run_id = await self._mlflow_run_id()
        if run_id is None:
            return None
        with azure_errors("reading the MLflow run of", self.id):
            run: RunData = await self._backend.mlflow_run(run_id)
        return run

    async def list_artifacts(self, path: str = "") -> List[Artifact]:
        """The artifacts of the job's MLflow run directly in ``path`` (see
        :meth:`horovod_batchai.Job.list_artifacts`).

        :param str path: a directory of the run's artifacts, relative to their root.
        :returns: one ``Artifact`` per file or directory.
        :raises InvalidSpecError: for a path that is not one (``..``, ``.``).
        :raises HorovodBatchAIError: when the job has no MLflow run."""
        path = check_artifact_path(path)
        run_id = await self._mlflow_run_id()
        if run_id is None:
            raise no_run_error(self)
        with azure_errors("listing the MLflow artifacts of", self.id):
            found: List[Artifact] = await self._backend.list_mlflow_artifacts(run_id, path)
        return found

    async def download_artifacts(self, path: str, dest: Union[str, Path]) -> Path:
        """Download artifact ``path`` of the job's MLflow run (a directory: every file under it) to
        ``dest`` (see :meth:`horovod_batchai.Job.download_artifacts`); files are written in a
        worker thread."""
        path = check_artifact_path(path)
        parent, _, name = path.rpartition("/")
        match = None
        if path:
            match = next((a for a in await self.list_artifacts(parent) if a.name == name), None)
            if match is None:
                raise InvalidSpecError("path", f"{path!r} is not among the artifacts of job {self.name!r}",
                                       "a path from list_artifacts()")
        if match is None or match.is_directory:
            folder = local_directory(dest)
            for child in await self.list_artifacts(path):
                await self.download_artifacts(child.path, local_path_under(folder, child.name))
            return folder
        target = local_destination(dest, name)
        with azure_errors("downloading the MLflow artifact of", f"{self.id} ({path})"):
            data = await self._backend.read_mlflow_artifact(str(self._known_run_id()), path)
        partial = target.with_name(target.name + ".partial")
        try:
            await asyncio.to_thread(partial.write_bytes, data)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        partial.replace(target)
        return target

    async def sync_tensorboard(self, logdir: Union[str, Path]) -> int:
        """Fetch the job's TensorBoard event files that are new or have grown into ``logdir``;
        returns how many were fetched (see :meth:`horovod_batchai.Job.sync_tensorboard`)."""
        from ._tensorboard import sync_event_files
        return await sync_event_files(self, local_directory(logdir, "logdir"))

    @positional_options("logdir")
    async def tensorboard(self, *, logdir: Union[str, Path, None] = None, port: Optional[int] = None,
                          start: bool = True) -> "TensorBoard":
        """Sync the job's event files to ``logdir`` (default ``./tensorboard/<job>``) and start
        TensorBoard on them (see :meth:`horovod_batchai.Job.tensorboard`); returns an aio
        :class:`TensorBoard` (``await board.sync()``, ``await board.stop()``)."""
        from ._tensorboard import open_tensorboard
        check_tensorboard_port(port)
        return await open_tensorboard(self, None if logdir is None else Path(logdir), port=port, start=start)

    @positional_options("max_bytes")
    async def stderr_tail(self, *, max_bytes: int = TAIL_BYTES) -> str:
        """The last lines of the job's error log; empty when there is none or it cannot be read."""
        return await self._tail(self._backend.failure_log_name, max_bytes)

    @positional_options("max_bytes")
    async def stdout_tail(self, *, max_bytes: int = TAIL_BYTES) -> str:
        """The last lines of the job's ``stdout.txt``; empty when there is none or it cannot be read."""
        return await self._tail("stdout.txt", max_bytes)

    async def _tail(self, wanted: str, max_bytes: int) -> str:
        check_tail_bytes(max_bytes)
        directory, _, name = wanted.rpartition("/")
        try:
            files = await self.list_output_files(output_directory_id=STDOUTERR, directory=directory or ".")
            match = next((f for f in files if f.name == name), None)
            if match is None or not match.download_url or match.size == 0:
                return ""
            remote = await self._backend.open_output(match.download_url)
            try:
                size = int(match.size) if match.size is not None else await remote.size()  # Azure ML lists no sizes
                if not size:
                    return ""
                start = max(0, size - max_bytes)
                data = await remote.read(start, size - start)
            finally:
                await remote.close()
        except (AzureError, HttpResponseError, HorovodBatchAIError) as err:
            log.debug("could not read %s of %s: %s", wanted, self.name, type(err).__name__)
            return ""
        return tail_text(data, start)
