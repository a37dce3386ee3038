"""Submitted jobs: state, waiting, termination, output files and streaming.

Jobs are submitted, got and listed through their experiment: :meth:`Experiment.submit` (or
``begin_submit``), :meth:`Experiment.get_job`, :meth:`Experiment.list_jobs`.
"""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Union

from azure.core.exceptions import AzureError, HttpResponseError
from azure.core.polling import LROPoller

from ._models.constants import DEFAULT_LRO_TIMEOUT, STDOUTERR
from ._models.errors import HorovodBatchAIError, InvalidSpecError, azure_errors
from ._models.names import local_destination, local_directory
from ._models.records import JobRecord
from ._models.states import ExecutionState, JobStatus
from ._models.values import OutputFile
from ._shared.deprecation import deprecated, positional_options
from ._models.mlflow_run import Artifact, RunData
from ._shared.job import (TAIL_BYTES, EndWatch, JobBase, check_artifact_path, check_download_link, check_tail_bytes,
                          check_tensorboard_port, metrics_from, metrics_link, no_metrics, no_run_error, output_named,
                          tail_text, with_run)
from ._shared.lro import MappedPoller, accepted, check_polling, check_timeout
from ._shared.metrics import METRICS_FILE, MetricsTable
from ._shared.parallel import check_stop
from ._shared.paths import local_path_under
from ._shared.polling import Polling, check_stop_event, poll_until
from ._shared.resource_ids import names_from_id, parent_workspace
from ._shared.stream import check_link_expiry, check_output_path
from ._stream import OutputStream

if TYPE_CHECKING:
    from ._experiment import Experiment
    from ._places.base import Backend
    from ._target import Target
    from ._tensorboard import TensorBoard

__all__ = ["Job", "OutputFile"]

log = logging.getLogger(__name__)


class Job(JobBase):
    """A job submitted to an :class:`Experiment` (see :meth:`Experiment.submit`).

    ``status``, ``execution_state`` and ``spec`` describe the job as last fetched (by the call
    that returned it, or :meth:`refresh`) and never make a request.

    A job may be shared between threads: what was last fetched is replaced whole, so a reader
    sees one snapshot or the next, never a mix (a :class:`OutputStream` is an iterator: read each
    from one thread). It pickles as a reference, without what was fetched: call :meth:`refresh`
    in the receiving process. :meth:`from_id` rebuilds it from :attr:`id`.
    """

    experiment: "Experiment"

    @property
    def target(self) -> "Target":
        return self.experiment.workspace.target

    def __reduce__(self) -> tuple[Any, ...]:
        return (Job, (self.experiment, self.name))

    @classmethod
    def from_id(cls, target: "Target", resource_id: str) -> "Job":
        """The existing job whose ARM id is ``resource_id`` (as :attr:`id` gives it), fetched; an
        id of another form is an :class:`InvalidSpecError` stating the valid one. (Azure ML job ids
        do not name the experiment: it is read from the job.)

        :param Target target: where the job is.
        :param str resource_id: the job's ARM id.
        :returns: the :class:`Job`, fetched.
        :raises InvalidSpecError: for an id of another form.
        :raises NotFoundError: when there is no such job."""
        names = names_from_id(target, resource_id, "job")
        workspace = parent_workspace(target, names)
        experiment = names.get("experiment") or target.backend.job_experiment(
            workspace.resource_group, workspace.name, names["job"])
        job: Job = workspace._experiment(experiment).get_job(names["job"])
        return job

    @property
    def _backend(self) -> "Backend":
        return self.target.backend

    # -- get / list / delete --------------------------------------------------------------------
    @classmethod
    def get(cls, experiment: "Experiment", name: str) -> "Job":
        """Deprecated: use :meth:`Experiment.get_job`.

        :param Experiment experiment: the experiment.
        :param str name: the job's name.
        :returns: the :class:`Job`."""
        deprecated("Job.get(experiment, name)", "experiment.get_job(name)")
        return experiment.get_job(name)

    @classmethod
    def list(cls, experiment: "Experiment") -> List["Job"]:
        """Deprecated: use :meth:`Experiment.list_jobs`.

        :param Experiment experiment: the experiment.
        :returns: the jobs."""
        deprecated("Job.list(experiment)", "experiment.list_jobs()")
        return experiment.list_jobs()

    def begin_delete(self, *, continuation_token: Optional[str] = None, polling: bool = True,
                     polling_interval: Optional[float] = None) -> "LROPoller[None]":
        """Start deleting the job (stopping it if it runs); finishes at once when already gone.

        :keyword str continuation_token: a poller's ``continuation_token()``: resume that call.
        :keyword bool polling: False: the poller is done once the service has accepted the request.
        :keyword float polling_interval: seconds between polls (default: the target's).
        :returns: an ``LROPoller`` whose result is None.
        :raises InvalidSpecError: for a bad option or a token of another operation."""
        interval = check_polling(polling, polling_interval)
        poller = self._backend.begin_delete_job(self._ref, continuation_token=continuation_token,
                                                polling_interval=interval)
        return poller if polling else accepted(poller, None)

    def delete(self, *, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> None:
        """Delete the job and wait (at most ``timeout`` seconds; None: no limit); succeeds when
        already gone.

        :keyword float timeout: seconds to wait; None: no limit.
        :raises WaitTimeoutError: when ``timeout`` is spent (the deletion goes on)."""
        check_timeout(timeout)
        self.begin_delete().result(timeout)

    def begin_terminate(self, *, continuation_token: Optional[str] = None, polling: bool = True,
                        polling_interval: Optional[float] = None) -> "LROPoller[JobStatus]":
        """Ask the service to stop the job (Azure ML: cancel it); harmless on a finished job. The
        poller is done once the service has stopped it; its result is the job's fresh status.

        :keyword str continuation_token: a poller's ``continuation_token()``: resume that call.
        :keyword bool polling: False: the poller is done once the service has accepted the request
            (its result is the job's status then).
        :keyword float polling_interval: seconds between polls (default: the target's).
        :returns: an ``LROPoller`` whose result is the :class:`JobStatus`.
        :raises InvalidSpecError: for a bad option or a token of another operation."""
        interval = check_polling(polling, polling_interval)
        poller = self._backend.begin_terminate_job(self._ref, continuation_token=continuation_token,
                                                   polling_interval=interval)
        mapped = MappedPoller(poller, lambda _: self._fetch().status, action="terminating job", resource=self.id,
                              same_token=True)
        return mapped if polling else accepted(mapped, self._fetch().status)

    def terminate(self, *, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> JobStatus:
        """:meth:`begin_terminate`, waiting at most ``timeout`` seconds (None: no limit); returns
        the job's fresh status.

        :keyword float timeout: seconds to wait; None: no limit.
        :returns: the job's :class:`JobStatus`.
        :raises WaitTimeoutError: when ``timeout`` is spent (the termination goes on)."""
        check_timeout(timeout)
        return self.begin_terminate().result(timeout)

    # -- state ----------------------------------------------------------------------------------
    def refresh(self) -> "Job":
        """Fetch the job's current state; returns the job itself (see :attr:`status`).

        :returns: the job itself.
        :raises NotFoundError: when the job is gone."""
        self._fetch()
        return self

    def _fetch(self) -> JobRecord:
        """Fetch the job and keep the record; returns this call's record, which another thread's
        refresh cannot replace under the caller."""
        record = self._record = self._backend.get_job(self._ref)
        return record

    def wait(self, timeout: Optional[float] = None, *, poll_interval: Optional[float] = None,
             on_state: Optional[Callable[[ExecutionState], None]] = None,
             clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
             stop: Optional[threading.Event] = None) -> JobStatus:
        """Wait until the job ends. Returns its status on success; raises :class:`JobFailedError`
        (exit code, service errors, the tail of the job's log) on failure and
        :class:`WaitTimeoutError` after ``timeout`` seconds (None: no limit). ``on_state`` sees
        each new state. Setting ``stop`` (a ``threading.Event``) from another thread ends the
        wait within one poll interval with :class:`StoppedError`; the job runs on.

        :param float timeout: seconds to wait; None: no limit.
        :keyword float poll_interval: seconds between polls (default: the target's).
        :keyword on_state: called with each new :class:`ExecutionState`.
        :keyword clock: the monotonic clock the timeout is measured with (tests give a fake one).
        :keyword sleep: what waits between polls (tests give a fake one).
        :keyword stop: a ``threading.Event`` that ends the wait when set.
        :returns: the succeeded job's :class:`JobStatus`.
        :raises JobFailedError: when the job fails.
        :raises WaitTimeoutError: when ``timeout`` is spent.
        :raises StoppedError: when ``stop`` is set."""
        polling = Polling(timeout=timeout, clock=clock, sleep=sleep, stop=stop,
                          poll_interval=poll_interval if poll_interval is not None
                          else self._backend.default_poll_interval)
        watch = EndWatch(self.name, polling, on_state)
        status = poll_until(lambda: self._fetch().status, done=watch.done, polling=polling, on_each=watch.report,
                            what=f"waiting for job {self.name!r}", on_timeout=watch.timeout_error)
        if watch.failed(status):
            raise watch.failure(status, self.stderr_tail())
        return status

    # -- output files ---------------------------------------------------------------------------
    @positional_options("output_directory_id", "directory")
    def list_output_files(self, *, output_directory_id: str = STDOUTERR, directory: str = ".",
                          link_expiry_minutes: int = 60) -> List[OutputFile]:
        """Files and directories in ``directory`` of the output directory ``output_directory_id``
        (``stdouterr`` holds stdout.txt, stderr.txt and the logs).

        :keyword str output_directory_id: the output directory (``stdouterr`` or an :class:`OutputDirectory`'s id).
        :keyword str directory: the directory in it to list.
        :keyword int link_expiry_minutes: how long the files' download URLs stay valid.
        :returns: one :class:`OutputFile` per file or directory."""
        check_link_expiry(link_expiry_minutes)
        return self._backend.list_output_files(self._ref, output_directory_id, directory, link_expiry_minutes)

    def stream(self, name: str = "stdout.txt", *, output_directory_id: str = STDOUTERR,
               poll_interval: Optional[float] = None, timeout: Optional[float] = None,
               link_expiry_minutes: int = 60, renew_before_s: Optional[float] = None,
               stop: Optional[threading.Event] = None) -> OutputStream:
        """Text appended to output file ``name`` as the job writes it, until the job ends; waits
        for the file to appear. Setting ``stop`` from another thread ends the iteration within one
        poll interval with :class:`StoppedError`. See :class:`OutputStream`.

        :param str name: the file's path in the output directory.
        :keyword str output_directory_id: the output directory (``stdouterr`` or an :class:`OutputDirectory`'s id).
        :keyword float poll_interval: seconds between reads (default: the target's).
        :keyword float timeout: seconds after which the stream ends with :class:`WaitTimeoutError`; None: no limit.
        :keyword int link_expiry_minutes: how long each download URL stays valid.
        :keyword float renew_before_s: seconds before a URL expires that it is renewed (default: a tenth of its
            lifetime, 5 s to 2 min).
        :keyword stop: a ``threading.Event`` that ends the iteration when set.
        :returns: an :class:`OutputStream` of text.
        :raises InvalidSpecError: for a bad argument, before anything is read."""
        return OutputStream(self, name, output_directory_id=output_directory_id, poll_interval=poll_interval,
                            timeout=timeout, link_expiry_minutes=link_expiry_minutes, renew_before_s=renew_before_s,
                            stop=stop)

    def download(self, path: str, dest: Union[str, Path], *, output_directory_id: str = STDOUTERR,
                 stop: Optional[threading.Event] = None) -> Path:
        """Download output file ``path`` (relative to the output directory; a directory is fetched
        whole) to ``dest``: a file path, or a directory to put it in (an existing one, or one written
        with a trailing '/'). A destination that cannot be written is an :class:`InvalidSpecError`.
        Setting ``stop`` from another thread ends it between two chunks with :class:`StoppedError`,
        leaving no partial file.

        :param str path: the file or directory, relative to the output directory.
        :param dest: the local file, or the directory to put it in.
        :keyword str output_directory_id: the output directory (``stdouterr`` or an :class:`OutputDirectory`'s id).
        :keyword stop: a ``threading.Event`` that ends the download when set.
        :returns: the local path written.
        :raises InvalidSpecError: for a bad path or a destination that cannot be written.
        :raises StoppedError: when ``stop`` is set."""
        stop = check_stop_event(stop)
        directory, _, name = check_output_path(path, "path").strip("/").rpartition("/")
        match = output_named(self.list_output_files(output_directory_id=output_directory_id, directory=directory or "."), name, path,
                             output_directory_id)
        if match.is_directory:
            dest = local_directory(dest)
            for child in self.list_output_files(output_directory_id=output_directory_id, directory=path.strip("/")):
                self.download(f"{path.strip('/')}/{child.name}", local_path_under(dest, child.name),
                              output_directory_id=output_directory_id, stop=stop)
            return dest
        dest = local_destination(dest, name)
        remote = self._backend.open_output(check_download_link(match, path, output_directory_id))
        partial = dest.with_name(dest.name + ".partial")
        try:
            with azure_errors("downloading", f"{self.name}/{output_directory_id}/{path}"), open(partial, "wb") as fh:
                for chunk in remote.chunks():
                    check_stop(stop)
                    fh.write(chunk)
        except BaseException:  # a failed or interrupted download leaves nothing behind
            partial.unlink(missing_ok=True)
            raise
        partial.replace(dest)
        return dest

    # -- metrics and the job's MLflow run --------------------------------------------------------
    def metrics(self) -> MetricsTable:
        """The job's metrics, read now -- while it runs or after: one row per finished epoch, each
        metric's whole history (:meth:`MetricsTable.history`: per step and per epoch) and the
        run's parameters.

        They come from the job's MLflow run (what ``mlflow.log_metric`` and ``mlflow.log_param``
        in its script logged; the ``training`` package logs there on rank 0), read through
        MLflow's REST API with the target's own clients and credential; where the run has no
        metrics (or there is none), from the ``metrics.csv`` in the job's output directory
        (``$AZ_BATCHAI_STDOUTERR_DIR`` on the node), which any script can write (see the docs,
        "Experiments: curves and sweeps"). :attr:`MetricsTable.source` says which. A job that has
        recorded none gives an empty table whose ``reason`` says why.

        :returns: a :class:`MetricsTable`, empty (with its ``reason``) when there are none.
        """
        state = self.refresh().execution_state
        run = self._mlflow_run()
        table = with_run(None, run, self.name, state)
        if table is not None:
            return table
        link = metrics_link(self.list_output_files(output_directory_id=STDOUTERR))
        if link is None:
            csv_table = no_metrics(self.name, state)
        else:
            remote = self._backend.open_output(link)
            with azure_errors("reading metrics of", f"{self.name}/{STDOUTERR}/{METRICS_FILE}"):
                data = b"".join(remote.chunks())
            csv_table = metrics_from(data, self.name, state)
        return with_run(csv_table, run, self.name, state) or csv_table

    def _mlflow_run_id(self) -> Optional[str]:
        run_id = self._known_run_id()
        if run_id is None:
            with azure_errors("looking up the MLflow run of", self.id):
                run_id = self._run_id = self._backend.job_mlflow_run_id(self._ref)
        return run_id

    def _mlflow_run(self) -> Optional[RunData]:
        run_id = self._mlflow_run_id()
        if run_id is None:
            return None
        with azure_errors("reading the MLflow run of", self.id):
            return self._backend.mlflow_run(run_id)

    def list_artifacts(self, path: str = "") -> List[Artifact]:
        """The artifacts of the job's MLflow run directly in ``path`` ('' for the root): what
        ``mlflow.log_artifact`` logged (the ``training`` package logs ``model/`` and
        ``tensorboard/``), read as :meth:`metrics` reads, with the target's pipeline: locally
        through MLflow's REST API (``artifacts/list``); on Azure ML from the workspace's artifact
        service on the same host with the caller's credential, as the ``azureml-mlflow`` plugin
        reads them (its listing has no sizes: ``size`` is None there).

        :param str path: a directory of the run's artifacts, relative to their root.
        :returns: one :class:`~horovod_batchai._models.mlflow_run.Artifact` per file or directory.
        :raises InvalidSpecError: for a path that is not one (``..``, ``.``).
        :raises HorovodBatchAIError: when the job has no MLflow run."""
        path = check_artifact_path(path)
        run_id = self._mlflow_run_id()
        if run_id is None:
            raise no_run_error(self)
        with azure_errors("listing the MLflow artifacts of", self.id):
            return self._backend.list_mlflow_artifacts(run_id, path)

    def download_artifacts(self, path: str, dest: Union[str, Path]) -> Path:
        """Download artifact ``path`` of the job's MLflow run ('' or a directory: every file under
        it) to ``dest``: for a file, a file path or a directory to put it in (an existing one, or
        one written with a trailing '/'); for a directory, the directory to put its files in. A
        file comes through MLflow's artifact proxy locally, on Azure ML from its blob through the
        short-lived link the artifact service gives (never logged).

        :param str path: the artifact, relative to the run's artifact root.
        :param dest: the local file or directory.
        :returns: the local path written.
        :raises HorovodBatchAIError: when the job has no MLflow run.
        :raises InvalidSpecError: for a bad path, or one the run does not have (before anything
            is written)."""
        path = check_artifact_path(path)
        parent, _, name = path.rpartition("/")
        match = None
        if path:
            match = next((a for a in self.list_artifacts(parent) if a.name == name), None)
            if match is None:
                raise InvalidSpecError("path", f"{path!r} is not among the artifacts of job {self.name!r}",
                                       "a path from list_artifacts()")
        if match is None or match.is_directory:
            folder = local_directory(dest)
            for child in self.list_artifacts(path):
                self.download_artifacts(child.path, local_path_under(folder, child.name))
            return folder
        target = local_destination(dest, name)
        with azure_errors("downloading the MLflow artifact of", f"{self.id} ({path})"):
            data = self._backend.read_mlflow_artifact(str(self._known_run_id()), path)
        partial = target.with_name(target.name + ".partial")
        try:
            partial.write_bytes(data)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        partial.replace(target)
        return target

    def sync_tensorboard(self, logdir: Union[str, Path]) -> int:
        """Fetch the job's TensorBoard event files (``tensorboard/`` in its output directory) that
        are new or have grown into ``logdir``, running or finished; returns how many were fetched.

        :param logdir: the local directory to fetch into.
        :returns: the number of files fetched."""
        from ._tensorboard import sync_event_files
        return sync_event_files(self, local_directory(logdir, "logdir"))

    @positional_options("logdir")
    def tensorboard(self, *, logdir: Union[str, Path, None] = None, port: Optional[int] = None,
                    start: bool = True) -> "TensorBoard":
        """Sync the job's event files to ``logdir`` (default ``./tensorboard/<job>``) and start
        TensorBoard on them (on ``port``, default one the system chooses); returns a :class:`TensorBoard` whose
        ``url`` it answers at, ``sync()`` fetches newer files and ``stop()`` ends it. Where
        TensorBoard is not installed nothing is started, and ``command_line`` says what to run.

        :keyword logdir: the local directory for the event files (default ``./tensorboard/<job>``).
        :keyword int port: the port TensorBoard listens on (default: one the system chooses).
        :keyword bool start: False: only sync, do not start TensorBoard.
        :returns: a :class:`TensorBoard`.
        :raises InvalidSpecError: for a bad port."""
        from ._tensorboard import open_tensorboard
        check_tensorboard_port(port)
        return open_tensorboard(self, None if logdir is None else Path(logdir), port=port, start=start)

    @positional_options("max_bytes")
    def stderr_tail(self, *, max_bytes: int = TAIL_BYTES) -> str:
        """The last lines of the job's error log (``stderr.txt`` on Batch AI, rank 0's log on
        Azure ML); empty when there is none or it cannot be read.

        :keyword int max_bytes: read at most this many bytes from the log's end.
        :returns: the text, possibly empty.
        :raises InvalidSpecError: for a bad ``max_bytes``."""
        return self._tail(self._backend.failure_log_name, max_bytes)

    @positional_options("max_bytes")
    def stdout_tail(self, *, max_bytes: int = TAIL_BYTES) -> str:
        """The last lines of the job's ``stdout.txt`` (at most 30, from its last ``max_bytes``
        bytes); empty when there is none or it cannot be read.

        :keyword int max_bytes: read at most this many bytes from the file's end.
        :returns: the text, possibly empty.
        :raises InvalidSpecError: for a bad ``max_bytes``."""
        return self._tail("stdout.txt", max_bytes)

    def _tail(self, wanted: str, max_bytes: int) -> str:
        check_tail_bytes(max_bytes)
        directory, _, name = wanted.rpartition("/")
        try:
            files = self.list_output_files(output_directory_id=STDOUTERR, directory=directory or ".")
            match = next((f for f in files if f.name == name), None)
            if match is None or not match.download_url or match.size == 0:
                return ""
            remote = self._backend.open_output(match.download_url)
            size = int(match.size) if match.size is not None else remote.size()  # Azure ML lists no sizes
            if not size:
                return ""
            start = max(0, size - max_bytes)
            data = remote.read(start, size - start)
        except (AzureError, HttpResponseError, HorovodBatchAIError) as err:
            log.debug("could not read %s of %s: %s", wanted, self.name, type(err).__name__)
            return ""
        return tail_text(data, start)

    def watch(self, *, lines: int = 10, curves: bool = True, poll_interval: Optional[float] = None,
              timeout: Optional[float] = None) -> JobStatus:
        """Show the job's state, the last ``lines`` lines of its ``stdout.txt`` and (``curves``)
        its loss and accuracy curves, updated in place in a notebook (printed as they change
        elsewhere), until the job ends, ``timeout`` seconds pass, or an interrupt (the notebook's
        stop button). Returns the last status fetched; never raises for a failed job. Curves need
        matplotlib (the ``notebook`` extra).

        :keyword int lines: how many lines of ``stdout.txt`` to show.
        :keyword bool curves: show the loss and accuracy curves.
        :keyword float poll_interval: seconds between updates (default: the target's).
        :keyword float timeout: seconds to watch; None: until the job ends.
        :returns: the last :class:`JobStatus` fetched.
        :raises InvalidSpecError: for a bad ``lines``."""
        from ._watch import NotebookView, TextView, in_notebook, watch
        if isinstance(lines, bool) or not isinstance(lines, int) or lines < 0:
            raise InvalidSpecError("lines", f"{lines!r} is not a number of lines", "an integer >= 0")
        if curves:
            from ._models.errors import import_optional
            import_optional("matplotlib", "watch() with curves")
        view = NotebookView() if in_notebook() else TextView()
        return watch(self, lines=lines, curves=curves, poll_interval=poll_interval, timeout=timeout, view=view)
