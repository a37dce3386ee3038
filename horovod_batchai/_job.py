"""Submitted jobs: state, waiting, termination, output files and streaming."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Union

from azure.core.exceptions import AzureError, ClientAuthenticationError, HttpResponseError, ResourceNotFoundError

from ._conversions import job_from_rest, job_status_from_rest, job_to_rest
from ._errors import (ConflictError, HorovodBatchAIError, InvalidSpecError, JobFailedError, TransferError,
                      WaitTimeoutError, azure_errors)
from ._fileshare import local_path_under
from ._job_spec import HorovodJob
from ._mounts import AzureFileShareMount, describe
from ._names import check_batchai_name, check_directory_id
from ._states import ExecutionState, JobStatus
from ._stream import OutputStream
from ._target import IDEMPOTENT_POST

if TYPE_CHECKING:
    from azure.mgmt.batchai import models

    from ._cluster import GpuCluster
    from ._experiment import Experiment
    from ._target import Target

__all__ = ["Job", "OutputFile", "STDOUTERR"]

log = logging.getLogger(__name__)

STDOUTERR = "stdouterr"
_STDERR_TAIL_BYTES = 4096
_STDERR_TAIL_LINES = 30


@dataclass(frozen=True)
class OutputFile:
    """A file or directory a job wrote. ``download_url`` is a time-limited SAS link: it is a
    credential, so it is kept out of ``repr``."""

    name: str
    is_directory: bool
    size: Optional[int] = None
    last_modified: Optional[datetime] = None
    download_url: Optional[str] = field(default=None, repr=False)


class Job:
    """A job submitted to an :class:`Experiment` (see :meth:`Experiment.submit`)."""

    def __init__(self, experiment: "Experiment", name: str, *, _model: Optional["models.Job"] = None) -> None:
        self.experiment = experiment
        self.name = check_batchai_name(name, "job")
        self._model = _model
        self._status: Optional[JobStatus] = job_status_from_rest(_model) if _model is not None else None

    def __repr__(self) -> str:
        state = self._status.execution_state.value if self._status else "unknown"
        return f"Job(experiment={self.experiment.name!r}, name={self.name!r}, execution_state={state!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Job) and self.id.lower() == other.id.lower()

    def __hash__(self) -> int:
        return hash(self.id.lower())

    @property
    def id(self) -> str:
        return f"{self.experiment.id}/jobs/{self.name}"

    @property
    def target(self) -> "Target":
        return self.experiment.workspace.target

    @property
    def _args(self) -> tuple[str, str, str, str]:
        ws = self.experiment.workspace
        return ws.resource_group, ws.name, self.experiment.name, self.name

    @property
    def _client(self):  # type: ignore[no-untyped-def]
        return self.target.batchai().jobs

    # -- submit / get / list / delete -----------------------------------------------------------
    @classmethod
    def submit(cls, experiment: "Experiment", name: str, spec: HorovodJob, *,
               cluster: Union["GpuCluster", str]) -> "Job":
        from ._cluster import GpuCluster
        from ._experiment import require_spec
        job = cls(experiment, name)
        spec = require_spec(spec)
        unresolved = [f"mounts[{i}] ({describe(m)})" for i, m in enumerate(spec.mounts) if not m.is_resolved]
        if unresolved:
            raise InvalidSpecError(unresolved[0], "has no storage account name or key",
                                   "HorovodJob.from_file(..., storage=share) or spec.with_storage(share)")
        if isinstance(cluster, str):
            cluster = GpuCluster(experiment.workspace, cluster)
        if not isinstance(cluster, GpuCluster):
            raise InvalidSpecError("cluster", f"{type(cluster).__name__} is not a cluster", "a GpuCluster or its name")
        maximum = cluster.maximum_node_count
        if maximum is not None and spec.node_count > maximum:
            raise InvalidSpecError("node_count", f"{spec.node_count} is more than cluster {cluster.name!r} can "
                                   f"have ({maximum})", f"1..{maximum}, or resize the cluster first")
        spec.check_paths_against(cluster.mounts)
        job._check_shares(spec)
        with azure_errors("submitting job", job.id):
            try:
                job._model = job._client.get(*job._args)
                _check_same_job(job, spec, cluster.id)
                log.info("job %s exists with these settings; returning it instead of submitting again", job.id)
            except ResourceNotFoundError:
                log.info("submitting job %s to cluster %s (%d node(s))", job.id, cluster.name, spec.node_count)
                job._model = job._client.begin_create(*job._args, job_to_rest(spec, cluster_id=cluster.id)).result()
        job._status = job_status_from_rest(job._model)
        return job

    def _check_shares(self, spec: HorovodJob) -> None:
        """Every mounted file share must exist and take its key (a read; nothing is created).
        Blob containers are not checked: that would need the blob data plane client."""
        for i, mount in enumerate(spec.mounts):
            if not isinstance(mount, AzureFileShareMount) or mount.account_key is None:
                continue
            service = self.target.share_service(self.target.default_file_endpoint(mount.account_name), mount.account_key)
            try:
                service.get_share_client(mount.share_name).get_share_properties()
            except ResourceNotFoundError:
                raise InvalidSpecError(f"mounts[{i}]", f"share {mount.share_name!r} does not exist in storage "
                                       f"account {mount.account_name!r}",
                                       "an existing share (FileShare.create(...) makes one)") from None
            except ClientAuthenticationError:
                raise InvalidSpecError(f"mounts[{i}]", f"storage account {mount.account_name!r} refused the key",
                                       "the account's current key (FileShare.mount() fetches it)") from None
            except AzureError as err:
                with azure_errors("checking share", f"{mount.account_name}/{mount.share_name}"):
                    raise err
            finally:
                service.close()

    @classmethod
    def get(cls, experiment: "Experiment", name: str) -> "Job":
        job = cls(experiment, name)
        job.refresh()
        return job

    @classmethod
    def list(cls, experiment: "Experiment") -> List["Job"]:
        ws = experiment.workspace
        with azure_errors("listing jobs in", experiment.id):
            items: list[Any] = list(ws.target.batchai().jobs.list_by_experiment(ws.resource_group, ws.name, experiment.name))
        return [cls(experiment, m.name or "", _model=m) for m in items]

    def delete(self) -> None:
        """Delete the job (stopping it if it runs); succeeds when already gone."""
        with azure_errors("deleting job", self.id):
            try:
                log.info("deleting job %s", self.id)
                self._client.begin_delete(*self._args).result()
            except ResourceNotFoundError:
                log.debug("job %s was already gone", self.id)

    def terminate(self) -> JobStatus:
        """Ask the service to stop the job; returns once it is terminal. Harmless on a finished job."""
        with azure_errors("terminating job", self.id):
            log.info("terminating job %s", self.id)
            # terminate is idempotent, so it may be repeated after a dropped connection
            self._client.begin_terminate(*self._args, **IDEMPOTENT_POST).result()
        return self.refresh()

    # -- state ----------------------------------------------------------------------------------
    def refresh(self) -> JobStatus:
        """Fetch the job's current state."""
        with azure_errors("reading job", self.id):
            self._model = self._client.get(*self._args)
        assert self._model is not None
        self._status = job_status_from_rest(self._model)
        return self._status

    @property
    def status(self) -> JobStatus:
        """The last fetched state (fetched now if never)."""
        return self._status if self._status is not None else self.refresh()

    @property
    def execution_state(self) -> ExecutionState:
        """The last fetched ``executionState``; call :meth:`refresh` for a fresh one."""
        return self.status.execution_state

    @property
    def spec(self) -> HorovodJob:
        """The job as submitted, read back from the service (keys and secret values are never returned)."""
        if self._model is None:
            self.refresh()
        return job_from_rest(self._model)

    def wait(self, timeout: Optional[float] = None, *, poll_interval: Optional[float] = None,
             on_state: Optional[Callable[[ExecutionState], None]] = None) -> JobStatus:
        """Wait until the job ends. Returns its status on success; raises :class:`JobFailedError`
        (exit code, service errors, the tail of stderr.txt) on failure and
        :class:`WaitTimeoutError` after ``timeout`` seconds. ``on_state`` sees each new state."""
        interval = poll_interval if poll_interval is not None else self.target.default_poll_interval
        deadline = None if timeout is None else time.monotonic() + timeout
        last: Optional[ExecutionState] = None
        while True:
            status = self.refresh()
            if status.execution_state is not last:
                last = status.execution_state
                log.debug("job %s is %s", self.name, last.value)
                if on_state is not None:
                    on_state(last)
            if status.execution_state is ExecutionState.SUCCEEDED:
                return status
            if status.execution_state is ExecutionState.FAILED:
                raise JobFailedError(self.name, exit_code=status.exit_code, errors=status.errors,
                                     stderr_tail=self.stderr_tail())
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeoutError(f"job {self.name!r} was still {status.execution_state.value} after "
                                       f"{timeout:g}s", last_state=status.execution_state)
            time.sleep(interval if deadline is None else min(interval, max(0.0, deadline - time.monotonic())))

    # -- output files ---------------------------------------------------------------------------
    def list_output_files(self, output_directory_id: str = STDOUTERR, directory: str = ".", *,
                          link_expiry_minutes: int = 60) -> List[OutputFile]:
        """Files and directories in ``directory`` of the output directory ``output_directory_id``
        (``stdouterr`` holds stdout.txt, stderr.txt and the logs)."""
        from azure.mgmt.batchai import models
        if output_directory_id != STDOUTERR:
            check_directory_id(output_directory_id, "output_directory_id")
        if not isinstance(link_expiry_minutes, int) or not 5 <= link_expiry_minutes <= 600:
            raise InvalidSpecError("link_expiry_minutes", f"{link_expiry_minutes!r} is not a link lifetime",
                                   "minutes between 5 and 600 (the service's range)")
        options = models.JobsListOutputFilesOptions(outputdirectoryid=output_directory_id, directory=directory,
                                                    linkexpiryinminutes=link_expiry_minutes, max_results=1000)
        with azure_errors("listing output files of", f"{self.id} ({output_directory_id}/{directory})"):
            items = list(self._client.list_output_files(*self._args, options, **IDEMPOTENT_POST))
        return [OutputFile(name=f.name or "", is_directory=str(getattr(f.file_type, "value", f.file_type)) == "directory",
                           size=f.content_length, last_modified=f.last_modified, download_url=f.download_url)
                for f in items]

    def stream(self, name: str = "stdout.txt", *, output_directory_id: str = STDOUTERR,
               poll_interval: Optional[float] = None, timeout: Optional[float] = None,
               link_expiry_minutes: int = 60, renew_before_s: Optional[float] = None) -> OutputStream:
        """Text appended to output file ``name`` as the job writes it, until the job ends; waits
        for the file to appear. See :class:`OutputStream`."""
        return OutputStream(self, name, output_directory_id=output_directory_id, poll_interval=poll_interval,
                            timeout=timeout, link_expiry_minutes=link_expiry_minutes, renew_before_s=renew_before_s)

    def download(self, path: str, dest: Union[str, Path], *, output_directory_id: str = STDOUTERR) -> Path:
        """Download output file ``path`` (relative to the output directory; a directory is fetched
        whole) to ``dest`` (a file path, or an existing directory to put it in)."""
        directory, _, name = path.strip("/").rpartition("/")
        dest = Path(dest)
        match = next((f for f in self.list_output_files(output_directory_id, directory or ".") if f.name == name), None)
        if match is None:
            raise InvalidSpecError("path", f"{path!r} is not among the job's {output_directory_id} files",
                                   "a name from list_output_files()")
        if match.is_directory:
            dest.mkdir(parents=True, exist_ok=True)
            for child in self.list_output_files(output_directory_id, path.strip("/")):
                self.download(f"{path.strip('/')}/{child.name}", local_path_under(dest, child.name),
                              output_directory_id=output_directory_id)
            return dest
        if dest.is_dir():
            dest = dest / name
        if not match.download_url:
            raise TransferError(f"the service gave no download link for {path!r} ({output_directory_id})")
        client = self.target.file_from_sas_url(match.download_url)
        partial = dest.with_name(dest.name + ".partial")
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            with azure_errors("downloading", f"{self.name}/{output_directory_id}/{path}"), open(partial, "wb") as fh:
                for chunk in client.download_file().chunks():
                    fh.write(chunk)
        except BaseException:  # a failed or interrupted download leaves nothing behind
            partial.unlink(missing_ok=True)
            raise
        partial.replace(dest)
        return dest

    def stderr_tail(self, max_bytes: int = _STDERR_TAIL_BYTES) -> str:
        """The last lines of ``stderr.txt`` (empty when there is none or it cannot be read)."""
        try:
            match = next((f for f in self.list_output_files(STDOUTERR) if f.name == "stderr.txt"), None)
            if match is None or not match.download_url or not match.size:
                return ""
            start = max(0, int(match.size) - max_bytes)
            client = self.target.file_from_sas_url(match.download_url)
            data = client.download_file(offset=start, length=int(match.size) - start).readall()
        except (AzureError, HttpResponseError, HorovodBatchAIError) as err:
            log.debug("could not read stderr.txt of %s: %s", self.name, type(err).__name__)
            return ""
        text = data.decode("utf-8", errors="replace")
        if start > 0:
            text = text.split("\n", 1)[-1]  # drop the partial first line
        return "\n".join(text.splitlines()[-_STDERR_TAIL_LINES:])


def _check_same_job(job: "Job", spec: HorovodJob, cluster_id: str) -> None:
    """A repeated submit (a retry, a re-run cell) returns the job that exists; a different job
    under the same name is a mistake the caller must see, not a silent reuse."""
    existing = job_from_rest(job._model)
    existing_cluster = getattr(getattr(job._model, "cluster", None), "id", "") or ""
    differs = [name for name, mine, theirs in (
        ("script", spec.script, existing.script),
        ("arguments", spec.arguments, existing.arguments),
        ("node_count", spec.node_count, existing.node_count),
        ("process_count", spec.process_count or spec.node_count, existing.process_count or existing.node_count),
        ("std_out_err_path_prefix", spec.std_out_err_path_prefix, existing.std_out_err_path_prefix),
        ("cluster", cluster_id.lower(), existing_cluster.lower()),
    ) if mine != theirs]
    if differs:
        raise ConflictError(f"job {job.name!r} already exists with other settings ({', '.join(differs)}); "
                            "submit under a new name, or delete the old job first", resource=job.id)
