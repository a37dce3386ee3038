"""What a submitted job is, and what its waits, tails and metrics decide, without a request: the sync
and the aio Job share it."""
from __future__ import annotations

import logging
from typing import Any, Callable, List, Optional, Sequence

from .._models.errors import (ConflictError, HorovodBatchAIError, InvalidSpecError, JobFailedError, TransferError,
                              WaitTimeoutError)
from .._models.job_spec import HorovodJob
from .._models.names import check_batchai_name
from .._models.records import JobRecord, JobRef
from .._models.states import ExecutionState, JobStatus
from .._models.values import OutputFile
from .._models.mlflow_run import RunData
from .metrics import METRICS_FILE, MetricsTable, parse_metrics_csv, table_from_run
from .polling import Polling

log = logging.getLogger(__name__)

__all__ = ["EndWatch", "JobBase", "TAIL_BYTES", "check_download_link", "check_tail_bytes", "check_tensorboard_port", "metrics_from", "metrics_link", "no_metrics", "output_named", "tail_text", "RESUBMIT_HINT", "check_same_job", "check_artifact_path", "with_run", "no_run_error"]



TAIL_BYTES = 4096
#: JobBase._run_id before the job's MLflow run was looked up
_NOT_LOOKED_UP: Any = "<not looked up>"


_TAIL_LINES = 30


def output_named(files: List[OutputFile], name: str, path: str, output_directory_id: str) -> OutputFile:
    """The listed output file ``name`` (``path`` as the caller wrote it), or the error naming it."""
    match = next((f for f in files if f.name == name), None)
    if match is None:
        raise InvalidSpecError("path", f"{path!r} is not among the job's {output_directory_id} files",
                               "a name from list_output_files()")
    return match


def check_download_link(match: OutputFile, path: str, output_directory_id: str) -> str:
    """The listed file's download link, or the error saying there is none."""
    if not match.download_url:
        raise TransferError(f"the service gave no download link for {path!r} ({output_directory_id})")
    return match.download_url


def check_tail_bytes(max_bytes: object) -> None:
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise InvalidSpecError("max_bytes", f"{max_bytes!r} is not a byte count", "a positive integer")


def tail_text(data: bytes, start: int) -> str:
    """The last lines of a log read from byte ``start`` (a partial first line is dropped)."""
    text = data.decode("utf-8", errors="replace")
    if start > 0:
        text = text.split("\n", 1)[-1]  # drop the partial first line
    return "\n".join(text.splitlines()[-_TAIL_LINES:])


def metrics_link(files: List[OutputFile]) -> Optional[str]:
    """The download link of ``metrics.csv`` among a job's listed ``stdouterr`` files, or None."""
    match = next((f for f in files if f.name == METRICS_FILE and not f.is_directory), None)
    return match.download_url if match is not None and match.download_url else None


def no_metrics(job: str, state: ExecutionState) -> MetricsTable:
    """The empty table of a job with no ``metrics.csv``, its reason saying why for its state."""
    if state is ExecutionState.QUEUED:
        reason = "it is queued; its first row comes when its first epoch ends"
    elif not state.is_terminal():
        reason = f"it is {state.value} and has not finished an epoch yet (no {METRICS_FILE} in its output directory)"
    else:
        reason = (f"it ended {state.value} without writing {METRICS_FILE} to its output directory "
                  "($AZ_BATCHAI_STDOUTERR_DIR); scripts other than the training package record metrics as the docs "
                  "show (\"Experiments: curves and sweeps\")")
    return MetricsTable(job, (), (), reason, state.value)


def metrics_from(data: bytes, job: str, state: ExecutionState) -> MetricsTable:
    """The table of the ``metrics.csv`` bytes read from a job in ``state``."""
    return parse_metrics_csv(data.decode("utf-8", errors="replace"), job=job, execution_state=state.value)


def with_run(csv_table: Optional[MetricsTable], run: Optional[RunData], job: str,
             state: ExecutionState) -> Optional[MetricsTable]:
    """What :meth:`Job.metrics` answers: the run's table when the run has metrics; else the
    metrics.csv's (``csv_table``; None: it is still to be read) with the run's id and params."""
    import dataclasses
    if run is not None and run.histories:
        return table_from_run(run, job=job, execution_state=state.value)
    if csv_table is None or run is None:
        return csv_table
    return dataclasses.replace(csv_table, run_id=run.run_id, params=dict(run.params))


def check_artifact_path(path: object) -> str:
    """An artifact's path relative to the run's root ('' for the root), checked."""
    if not isinstance(path, str):
        raise InvalidSpecError("path", f"{path!r} is not an artifact path", "a path such as 'model' or 'model/x.h5'")
    parts = path.strip("/").split("/")
    if path.strip("/") and any(p in ("", ".", "..") for p in parts):
        raise InvalidSpecError("path", f"{path!r} is not an artifact path",
                               "a path relative to the run's artifact root, without '.' or '..' parts")
    return path.strip("/")


def no_run_error(job: Any) -> HorovodBatchAIError:
    """The error of an artifact call for a job without an MLflow run."""
    return HorovodBatchAIError(f"job {job.name!r} has no MLflow run: the local service makes one when the job starts "
                               "(with MLflow tracking on; see `horovod-batchai local start --help`), Azure ML for "
                               "every job; Azure Batch AI had none")


def check_tensorboard_port(port: object) -> None:
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536):
        raise InvalidSpecError("port", f"{port!r} is not a TCP port", "an integer from 1 to 65535, or None")


class EndWatch:
    """What waiting for a job to end decides on each status (the sync and async waits share it)."""

    def __init__(self, name: str, polling: Polling, on_state: Optional[Callable[[ExecutionState], None]]) -> None:
        self._name = name
        self._polling = polling
        self._on_state = on_state
        self._seen: Optional[ExecutionState] = None

    def report(self, status: JobStatus) -> None:
        if status.execution_state is not self._seen:
            self._seen = status.execution_state
            log.debug("job %s is %s", self._name, status.execution_state.value)
            if self._on_state is not None:
                self._on_state(status.execution_state)

    @staticmethod
    def done(status: JobStatus) -> bool:
        return status.execution_state.is_terminal()

    def timeout_error(self, status: JobStatus) -> WaitTimeoutError:
        return WaitTimeoutError(f"job {self._name!r} was still {status.execution_state.value} after "
                                f"{self._polling.timeout:g}s", last_state=status.execution_state)

    @staticmethod
    def failed(status: JobStatus) -> bool:
        return status.execution_state is ExecutionState.FAILED

    def failure(self, status: JobStatus, stderr_tail: str) -> JobFailedError:
        return JobFailedError(self._name, exit_code=status.exit_code, errors=status.errors, stderr_tail=stderr_tail)


class JobBase:
    """What a job is, as last fetched, with no request: the sync and the aio Job share it."""

    @property
    def _backend(self) -> Any:
        raise NotImplementedError  # the sync class's backend, or the aio class's

    def __init__(self, experiment: Any, name: str, *, _record: Optional[JobRecord] = None) -> None:
        self.experiment = experiment
        self.name = check_batchai_name(name, "job")
        self._record = _record
        #: the job's MLflow run id once found (its run never changes); _NOT_LOOKED_UP before
        self._run_id: Optional[str] = _NOT_LOOKED_UP

    def __repr__(self) -> str:
        state = self._record.status.execution_state.value if self._record else "unknown"
        return f"Job(experiment={self.experiment.name!r}, name={self.name!r}, execution_state={state!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self)) and self.id.lower() == other.id.lower()

    def __hash__(self) -> int:
        return hash(self.id.lower())

    @property
    def target(self) -> Any:
        """The :class:`Target` the job's requests go to (its experiment's)."""
        return self.experiment.workspace.target

    @property
    def _ref(self) -> JobRef:
        ws = self.experiment.workspace
        return JobRef(ws.resource_group, ws.name, self.experiment.name, self.name)

    @property
    def id(self) -> str:
        """The job's ARM id (what :meth:`from_id` takes)."""
        return self._backend.job_id(self._ref)

    def _known(self) -> JobRecord:
        if self._record is None:
            raise HorovodBatchAIError(f"job {self.name!r} has not been fetched yet; refresh() it first")
        return self._record

    @property
    def status(self) -> JobStatus:
        """The state last fetched."""
        return self._known().status

    @property
    def execution_state(self) -> ExecutionState:
        """The ``executionState`` last fetched; call :meth:`refresh` for a fresh one."""
        return self.status.execution_state

    @property
    def mlflow_run_id(self) -> Optional[str]:
        """The id of the job's MLflow run, as last looked up (by :meth:`metrics`,
        :meth:`list_artifacts` or :meth:`download_artifacts`; makes no request): None when the
        job has no run -- not started yet, MLflow tracking off, or Azure Batch AI, which had none.
        On Azure ML it is the job's name, as Azure ML tracks it. With the target's
        :attr:`~horovod_batchai.Target.mlflow_tracking_uri` it opens the run in MLflow's own
        client (``mlflow.get_run(job.mlflow_run_id)``).

        :raises HorovodBatchAIError: when it has not been looked up yet."""
        if self._run_id is _NOT_LOOKED_UP:
            raise HorovodBatchAIError(f"the MLflow run of job {self.name!r} has not been looked up yet; call "
                                      "metrics() (or list_artifacts()) first")
        return self._run_id

    def _known_run_id(self) -> Optional[str]:
        """The run id if it was found before (a run, once made, stays the job's)."""
        return None if self._run_id is _NOT_LOOKED_UP else self._run_id

    @property
    def spec(self) -> HorovodJob:
        """The job as submitted, read back from what the service last returned (keys and secret
        values are never returned)."""
        return self._known().read_spec()


RESUBMIT_HINT = "submit under a new name, or delete the old job first"


def check_same_job(existing: JobRecord, spec: HorovodJob, cluster_id: str, *,
                   other_secret_names: Sequence[str] = ()) -> None:
    """ConflictError naming every setting (shown by the service) in which ``existing`` is not
    ``spec`` on ``cluster_id``: a repeated submit returns the job that exists, a different job
    under the same name is a mistake the caller must see."""
    differs = spec.differences(existing.read_spec(), other_secret_names=list(other_secret_names))
    if cluster_id.lower() != existing.cluster_id.lower():
        differs.append("cluster")
    if differs:
        raise ConflictError(f"job {existing.name!r} already exists with other settings ({', '.join(differs)}); "
                            f"{RESUBMIT_HINT}", resource=existing.id)
