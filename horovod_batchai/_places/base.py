"""What every backend does, in the public classes' own terms.

A backend takes names and frozen specs and returns the neutral records below; it never sees
the public classes (they sit above it). Everything a backend checks about a spec it checks
before its first request, raising :class:`InvalidSpecError` naming the field.

Its ``begin_`` methods send the operation's first request and return a poller without waiting
(never a poller waited on with a fixed timeout); each takes ``continuation_token``, a token of a
poller it returned (``_shared.lro.resume_token`` reads it), to resume instead of starting, and
azure-core's ``polling`` and ``polling_interval``, for the Microsoft client's poller.

:class:`Backend` is the sync side; an aio backend has the same members, its requests coroutine
functions and its pollers ``AsyncLROPoller``s. A place written as operations (generator methods,
:mod:`.._shared.steps`) gets both from one class; see ``DEVELOPERS.md``, "A new place to run".
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Protocol, runtime_checkable

from azure.core.polling import LROPoller

from .._models.cluster_spec import AutoScale, ClusterSpec
from .._models.job_spec import HorovodJob
from .._models.records import ClusterRecord, ClusterRef, JobRecord, JobRef, SweepRecord, WorkspaceRecord
from .._models.values import OutputFile, RemoteLogin, Usage

if TYPE_CHECKING:  # what only the protocol's hints name: a command that shows a job does not import them
    from .._models.mlflow_run import Artifact, RunData
    from .._models.sweep_job import SweepRequest

__all__ = ["Backend", "AsyncBackend", "SpecChecks", "RemoteFile", "IDEMPOTENT_POST"]

#: per-call option for POST/PATCH requests that are safe to repeat (listKeys, listOutputFiles,
#: listRemoteLoginInformation, terminate, a scale PATCH): azure-core retries only GET/PUT/DELETE
#: (and a few others) after a dropped connection unless told a request may be repeated.
IDEMPOTENT_POST = {"retry_on_methods": frozenset({"HEAD", "GET", "PUT", "DELETE", "OPTIONS", "POST", "PATCH"})}


@runtime_checkable
class RemoteFile(Protocol):
    """A file reached through a time-limited link: its size, and ranged reads."""

    def size(self) -> int: ...

    def read(self, offset: int, length: int) -> bytes: ...

    def chunks(self) -> Iterator[bytes]: ...


class SpecChecks(Protocol):
    """The check a backend makes of a cluster spec without a request (the sync and async backends share it)."""

    def check_cluster_spec(self, spec: ClusterSpec) -> None: ...


class Backend(Protocol):
    """The operations the public classes delegate. Names are the caller's; ids are the service's."""

    kind: str
    #: seconds between status polls unless the caller says otherwise
    default_poll_interval: float

    # -- workspaces -----------------------------------------------------------------------------
    def workspace_id(self, resource_group: str, name: str) -> str: ...

    def get_workspace(self, resource_group: str, name: str) -> WorkspaceRecord: ...

    def begin_create_workspace(self, resource_group: str, name: str, location: Optional[str], *,
                               continuation_token: Optional[str] = None,
                               polling_interval: Optional[float] = None) -> "LROPoller[WorkspaceRecord]":
        """Get-or-create: the resource group first when missing, then the workspace."""
        ...

    def list_workspaces(self, resource_group: Optional[str]) -> List[WorkspaceRecord]: ...

    def begin_delete_workspace(self, resource_group: str, name: str, *,
                               continuation_token: Optional[str] = None,
                               polling_interval: Optional[float] = None) -> "LROPoller[None]": ...

    def ensure_resource_group(self, resource_group: str, location: str) -> None: ...

    def begin_delete_resource_group(self, resource_group: str, *,
                                    continuation_token: Optional[str] = None,
                                    polling_interval: Optional[float] = None) -> "LROPoller[None]": ...

    def usages(self, location: str) -> List[Usage]: ...

    # -- experiments ----------------------------------------------------------------------------
    def experiment_id(self, resource_group: str, workspace: str, name: str) -> str: ...

    def begin_create_experiment(self, resource_group: str, workspace: str, name: str, *,
                                continuation_token: Optional[str] = None,
                                polling_interval: Optional[float] = None) -> "LROPoller[None]": ...

    def get_experiment(self, resource_group: str, workspace: str, name: str) -> None: ...

    def list_experiments(self, resource_group: str, workspace: str) -> List[str]: ...

    def begin_delete_experiment(self, resource_group: str, workspace: str, name: str, *,
                                continuation_token: Optional[str] = None,
                                polling_interval: Optional[float] = None) -> "LROPoller[None]": ...

    # -- clusters -------------------------------------------------------------------------------
    def cluster_id(self, ref: ClusterRef) -> str: ...

    def check_cluster_spec(self, spec: ClusterSpec) -> None: ...

    def get_cluster(self, ref: ClusterRef) -> ClusterRecord: ...

    def find_cluster(self, ref: ClusterRef) -> Optional[ClusterRecord]: ...

    def begin_create_cluster(self, ref: ClusterRef, spec: ClusterSpec, *,
                             continuation_token: Optional[str] = None,
                             polling_interval: Optional[float] = None) -> "LROPoller[ClusterRecord]": ...

    def begin_reuse_cluster(self, ref: ClusterRef, spec: ClusterSpec,
                            existing: ClusterRecord,
                            polling_interval: Optional[float] = None) -> "LROPoller[ClusterRecord]":
        """``existing`` if it has ``spec``'s settings (its size aside); ConflictError naming the
        fields otherwise."""
        ...

    def list_clusters(self, resource_group: str, workspace: str) -> List[ClusterRecord]: ...

    def begin_delete_cluster(self, ref: ClusterRef, *,
                             continuation_token: Optional[str] = None,
                             polling_interval: Optional[float] = None) -> "LROPoller[None]": ...

    def cluster_status(self, ref: ClusterRef) -> ClusterRecord: ...

    def begin_scale_cluster(self, ref: ClusterRef, *, target_node_count: Optional[int] = None,
                            auto_scale: Optional[AutoScale] = None, deallocation_option: Optional[str] = None,
                            known: Optional[ClusterRecord] = None,
                            continuation_token: Optional[str] = None,
                            polling_interval: Optional[float] = None) -> "LROPoller[ClusterRecord]":
        """Set the scale; the poller is done once the service has accepted it (nodes then come
        and go: the caller watches the cluster's state for that)."""
        ...

    def remote_logins(self, ref: ClusterRef) -> List[RemoteLogin]: ...

    # -- jobs -----------------------------------------------------------------------------------
    def job_id(self, ref: JobRef) -> str: ...

    def check_submission(self, spec: HorovodJob, cluster: ClusterRecord) -> None:
        """Everything checked before a job is submitted, in one call: placeholders filled and keys
        given, the cluster able to give ``node_count`` nodes, paths inside a mount, every field
        expressible on this target, and the storage each mount names (read, never changed, except
        what the target registers for a mount by design). InvalidSpecError or ConflictError, before
        anything is created."""
        ...

    def find_job(self, ref: JobRef) -> Optional[JobRecord]: ...

    def job_experiment(self, resource_group: str, workspace: str, name: str) -> str:
        """The experiment the job ``name`` is in (Azure ML job ids do not name it);
        NotFoundError when there is no such job."""
        ...

    def get_job(self, ref: JobRef) -> JobRecord: ...

    def begin_submit_job(self, ref: JobRef, spec: HorovodJob, cluster: Optional[ClusterRecord], *,
                         continuation_token: Optional[str] = None,
                         polling_interval: Optional[float] = None) -> "LROPoller[JobRecord]":
        """The poller is done once the service has accepted the job (not once it has run). With
        ``continuation_token``, ``spec`` and ``cluster`` are not used."""
        ...

    def list_jobs(self, resource_group: str, workspace: str, experiment: str) -> List[JobRecord]: ...

    def begin_delete_job(self, ref: JobRef, *, continuation_token: Optional[str] = None,
                         polling_interval: Optional[float] = None) -> "LROPoller[None]": ...

    def begin_terminate_job(self, ref: JobRef, *,
                            continuation_token: Optional[str] = None,
                            polling_interval: Optional[float] = None) -> "LROPoller[None]": ...

    def list_output_files(self, ref: JobRef, output_directory_id: str, directory: str,
                          link_expiry_minutes: int) -> List[OutputFile]: ...

    def open_output(self, url: str) -> RemoteFile: ...

    #: the output file whose tail explains a failure (``stderr.txt`` on Batch AI)
    failure_log_name: str

    # -- sweeps ---------------------------------------------------------------------------------
    #: whether the service holds and drives sweeps (the methods below); when not, the SDK drives
    #: one from the caller's process, trial job by trial job
    holds_sweeps: bool

    def sweep_id(self, ref: JobRef) -> str: ...

    def create_sweep(self, ref: JobRef, request: SweepRequest, spec: HorovodJob,
                     cluster: ClusterRecord) -> SweepRecord:
        """Get-or-create: the same sweep again is returned; another under its name is a ConflictError."""
        ...

    def get_sweep(self, ref: JobRef) -> SweepRecord: ...

    def list_sweeps(self, resource_group: str, workspace: str, experiment: str) -> List[SweepRecord]: ...

    def cancel_sweep(self, ref: JobRef) -> SweepRecord: ...

    def delete_sweep(self, ref: JobRef) -> None: ...

    # -- storage --------------------------------------------------------------------------------
    def check_share_datastore(self, account_name: str, share_name: str) -> None:
        """Raise ConflictError when what jobs would mount for this share is other storage (reads only)."""
        ...

    def register_share(self, account_name: str, share_name: str, account_key: str) -> None: ...

    def begin_create_storage_account(self, resource_group: str, account_name: str, location: str, sku: str, *,
                                     continuation_token: Optional[str] = None,
                                     polling_interval: Optional[float] = None) -> "LROPoller[str]":
        """Get-or-create of a StorageV2 account; the poller's result is its file endpoint."""
        ...

    def get_file_endpoint(self, resource_group: str, account_name: str) -> str: ...

    def get_account_key(self, resource_group: str, account_name: str) -> str: ...

    def delete_storage_account(self, resource_group: str, account_name: str) -> None: ...

    def share_service(self, account_url: str, account_key: str) -> Any:
        """A data-plane ``ShareServiceClient`` signing with the key (no request)."""
        ...

    def keep_client(self, client: Any) -> None:
        """Close ``client`` with the target."""
        ...

    def release_client(self, client: Any) -> None: ...

    def keeps_client(self, client: Any) -> bool: ...

    def close(self) -> None: ...

    # -- MLflow tracking (the REST calls: _places/mlflow.py) ------------------------------------
    def mlflow_tracking_uri(self) -> Optional[str]:
        """The place's MLflow tracking URI; None where it has none (Batch AI on Azure)."""
        ...

    def job_mlflow_run_id(self, ref: JobRef) -> Optional[str]:
        """The id of the job's MLflow run; None where it has none (yet)."""
        ...

    def mlflow_run(self, run_id: str) -> RunData: ...

    def list_mlflow_artifacts(self, run_id: str, path: str) -> List[Artifact]: ...

    def read_mlflow_artifact(self, run_id: str, path: str) -> bytes: ...


#: what the aio classes delegate to: a :class:`Backend`'s members, its requests awaited
AsyncBackend = Any
