"""Azure Machine Learning through azure-ai-ml: AmlCompute clusters, AzureFile and AzureBlob
datastores (checked to be the storage their name stands for), command jobs with MPI
distribution, logs from the run-history service and blob storage, and what a job writes to
``$AZ_BATCHAI_STDOUTERR_DIR`` from its file share (``stdouterr.py``), sweeps as Azure ML's own
sweep jobs (``sweeps.py``), and a job's MLflow run: its metrics through the workspace's MLflow
endpoint (``tracking.py``), its artifacts through the artifact service (``run_artifacts.py``).

Every client is built with the Target's azure-core client options (``transport=`` included):
azure-ai-ml passes them to each of its generated clients and to the pipeline it reads the
workspace's discovery URL with; the blob clients that read logs and upload the build context
(``upload.py``), and the file-share clients that read a job's stdouterr directory, are built
here with the same options, so azure-ai-ml never uploads anything
itself. Calls that reach into azure-ai-ml below its public surface are marked; they are pinned
by the exact azure-ai-ml version of the ``azureml`` extra.
"""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Tuple
from urllib.parse import quote

from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.core.polling import LROPoller

from ..._models.cluster_spec import AutoScale, ClusterSpec
from ..._models.constants import DEFAULT_POLL_INTERVAL, STDOUTERR
from ..._models.errors import (ConflictError, InvalidSpecError, NotFoundError, ServiceErrorDetail,
                               azure_errors)
from ..._models.job_spec import HorovodJob
from ..._models.mlflow_run import Artifact, RunData
from ..._models.mounts import AzureBlobMount, AzureFileShareMount
from ..._models.records import ClusterRecord, ClusterRef, JobRecord, JobRef, SweepRecord, WorkspaceRecord
from ..._models.states import ExecutionState
from ..._models.sweep_job import SweepRequest
from ..._models.values import OutputFile, RemoteLogin, Usage
from ..._shared.job import check_same_job
from ..._shared.lro import DonePoller, MappedPoller, background_poller, resume_token
from ..._shared.metrics import MetricsTable, parse_metrics_csv, table_from_run
from ..._shared.steps import Sync, begin_delete, run
from .. import arm, mlflow
from ..base import RemoteFile
from ..connection import ShareFile
from ..storage import StorageAccountOperations
from .conversions import (DatastoreIdentity, check_cluster_spec, check_job_spec, check_scale, cluster_status_from_rest,
                          command_job_entity, compute_entity, datastore_entity, datastore_identity,
                          job_status_from_entity, mount_datastore, node_field, read_spec_property,
                          SPEC_PROPERTY, spec_property)
from .datastore_storage import account_url, datastore_secret
from .library_log import routed
from .run_artifacts import ArtifactRoot, RunArtifacts, artifact_root, history_base
from .states import execution_state
from .stdouterr import StdOutErrPlace, list_share_directory, stdouterr_place
from .sweeps import (SWEEP_PROPERTY, TrialRun, check_sweep_request, request_property, sweep_job_entity, sweep_record,
                     trial_index)

if TYPE_CHECKING:
    from azure.ai.ml import MLClient
    from azure.storage.blob import BlobClient

    from ..connection import Connection

__all__ = ["AzureMLBackend", "AzureMLOperations", "RANK0_LOGS"]

log = logging.getLogger(__name__)

#: rank 0's combined stdout and stderr, as Azure ML names it: per process under MPI, else one log
RANK0_LOGS = ("user_logs/std_log_process_0.txt", "user_logs/std_log.txt")
#: names a Batch AI job's stdouterr directory had; on Azure ML both are rank 0's combined log
ALIASES = ("stdout.txt", "stderr.txt")


class _Blob:
    """A log blob behind a SAS link, read with azure-storage-blob."""

    def __init__(self, client: "BlobClient") -> None:
        self._client = client

    def size(self) -> int:
        return int(self._client.get_blob_properties().size or 0)

    def read(self, offset: int, length: int) -> bytes:
        return bytes(self._client.download_blob(offset=offset, length=length).readall())

    def chunks(self) -> Iterator[bytes]:
        return iter(self._client.download_blob().chunks())


class AzureMLOperations(StorageAccountOperations):
    """One Azure ML workspace (the Target's), through one ``MLClient``. azure-ai-ml has no async
    API, so its operations are plain sync methods; the storage account operations it takes in are
    steps (:mod:`..storage`), run by :class:`AzureMLBackend`.

    Its ``begin_`` methods take the public classes' polling options (``**poll``) and leave them:
    azure-ai-ml's pollers poll at their own pace, and ``polling=False`` is applied above, by not
    waiting."""

    failure_log_name = "stderr.txt"
    default_poll_interval = DEFAULT_POLL_INTERVAL
    #: sweeps are Azure ML's sweep jobs: the service samples, runs and stops the trials (``sweeps.py``)
    holds_sweeps = True

    def __init__(self, connection: "Connection") -> None:
        assert connection.resource_group and connection.workspace
        self._connection = connection
        self.kind = connection.kind
        self._lock = threading.Lock()
        self._ml: Optional["MLClient"] = None
        #: datastores known to be the storage their name stands for (read or registered here)
        self._registered: dict[str, DatastoreIdentity] = {}
        #: datastores check_share_datastore found missing, for the register_share that follows it
        self._absent: set[str] = set()
        #: each job's properties as last read (its submitted spec never changes)
        self._job_properties: dict[str, dict[str, Any]] = {}
        #: the credential of each share listed last, by the URL prefix of its files
        self._share_credentials: dict[str, str] = {}
        #: sweep trials that have ended, as last read (an ended run changes no more)
        self._ended_trials: Dict[str, TrialRun] = {}
        #: each sweep's trial spec, by sweep name (None: a sweep job this package did not create)
        self._sweep_specs: Dict[str, Optional[HorovodJob]] = {}
        #: the workspace's MLflow tracking URI once read, and the pipeline to its REST API
        self._mlflow_uri: Optional[str] = None
        self._mlflow_client: Any = None
        #: each MLflow run's artifact root, once read (a run's never changes)
        self._artifact_roots: Dict[str, ArtifactRoot] = {}

    @property
    def ml(self) -> "MLClient":
        with self._lock:
            if self._ml is None:
                from azure.ai.ml import MLClient
                options = self._connection.client_options
                # No usage telemetry unless the caller asks for it; no progress bars in a library.
                options.setdefault("enable_telemetry", False)
                options.setdefault("show_progress", False)
                self._ml = MLClient(self._connection.credential(), self._connection.subscription_id,
                                    self._connection.resource_group, self._connection.workspace, **options)
            return self._ml

    def close(self) -> None:
        self._ml = None

    # -- scope ----------------------------------------------------------------------------------
    def _check_scope(self, resource_group: str, workspace: str) -> None:
        """An azureml target works in one workspace; naming another is a mistake, not a lookup."""
        if resource_group.lower() != str(self._connection.resource_group).lower():
            raise InvalidSpecError("resource_group", f"{resource_group!r} is not the target's resource group",
                                   f"{self._connection.resource_group!r} (Target.azureml(..., resource_group, ...))")
        if workspace.lower() != str(self._connection.workspace).lower():
            raise InvalidSpecError("workspace", f"{workspace!r} is not the target's Azure ML workspace",
                                   f"{self._connection.workspace!r} (Target.azureml(..., workspace))")

    def workspace_id(self, resource_group: str, name: str) -> str:
        return (f"/subscriptions/{self._connection.subscription_id}/resourceGroups/{resource_group}"
                f"/providers/Microsoft.MachineLearningServices/workspaces/{name}")

    # -- workspaces -----------------------------------------------------------------------------
    def get_workspace(self, resource_group: str, name: str) -> WorkspaceRecord:
        self._check_scope(resource_group, name)
        with azure_errors("reading workspace", self.workspace_id(resource_group, name)):
            entity = self.ml.workspaces.get(name)
        return WorkspaceRecord(resource_group=resource_group, name=name, location=str(entity.location or ""))

    def begin_create_workspace(self, resource_group: str, name: str, location: Optional[str], *,
                               continuation_token: Optional[str] = None, **poll: Any) -> "LROPoller[WorkspaceRecord]":
        """Get the workspace; create it only when missing (Azure also creates a storage account,
        a key vault and an Application Insights instance for it). azure-ai-ml runs the creation
        as an ARM template deployment whose poller gives no continuation token; resuming from a
        token of a workspace that already existed reads it again."""
        self._check_scope(resource_group, name)
        resource = self.workspace_id(resource_group, name)
        if continuation_token is not None:
            resume_token(continuation_token, action="creating workspace", resource=resource)
        with azure_errors("reading workspace", resource):
            try:
                entity = self.ml.workspaces.get(name)
                log.info("workspace %s exists; using it", resource)
                return DonePoller(WorkspaceRecord(resource_group, name, str(entity.location or "")),
                                  action="creating workspace", resource=resource)
            except ResourceNotFoundError:
                pass
        if location is None:
            raise InvalidSpecError("location", f"is needed to create Azure ML workspace {name!r}, which does not "
                                   "exist yet", "a region such as 'eastus' (Azure also creates a storage account, "
                                   "a key vault and Application Insights for the workspace)")
        self.ensure_resource_group(resource_group, location)
        from azure.ai.ml.entities import Workspace as WorkspaceEntity
        log.info("creating Azure ML workspace %s in %s (with its storage account, key vault and "
                 "Application Insights)", resource, location)
        with azure_errors("creating workspace", resource):
            poller = self.ml.workspaces.begin_create(WorkspaceEntity(name=name, location=location))
        return MappedPoller(poller, lambda e: WorkspaceRecord(resource_group, name,
                                                              str(getattr(e, "location", location) or location)),
                            action="creating workspace", resource=resource)

    def list_workspaces(self, resource_group: Optional[str]) -> List[WorkspaceRecord]:
        if resource_group is not None and resource_group.lower() != str(self._connection.resource_group).lower():
            return []
        return [self.get_workspace(str(self._connection.resource_group), str(self._connection.workspace))]

    def begin_delete_workspace(self, resource_group: str, name: str, *,
                               continuation_token: Optional[str] = None, **poll: Any) -> "LROPoller[None]":
        """Delete the workspace only (never its dependent resources or resource group here).
        azure-ai-ml's delete takes no continuation token; deleting is idempotent, so resuming asks
        again."""
        self._check_scope(resource_group, name)
        resource = self.workspace_id(resource_group, name)
        if continuation_token is not None:
            resume_token(continuation_token, action="deleting workspace", resource=resource)
        with azure_errors("deleting workspace", resource):
            try:
                poller = self.ml.workspaces.begin_delete(name, delete_dependent_resources=False)
            except ResourceNotFoundError:
                return DonePoller(None, action="deleting workspace", resource=resource)
        return MappedPoller(poller, lambda _: None, action="deleting workspace", resource=resource)

    def ensure_resource_group(self, resource_group: str, location: str) -> None:
        run(arm.ensure_resource_group(self._connection, resource_group, location))

    def begin_delete_resource_group(self, resource_group: str, *,
                                    continuation_token: Optional[str] = None, **poll: Any) -> "LROPoller[None]":
        return run(arm.begin_delete_resource_group(self._connection, resource_group,
                                                   continuation_token=continuation_token))

    def usages(self, location: str) -> List[Usage]:
        with azure_errors("listing usages in", location):
            items: List[Any] = list(self.ml.compute.list_usage(location=location))
        return [Usage(name=str(getattr(u.name, "value", u.name) or ""), current_value=int(u.current_value or 0),
                      limit=int(u.limit or 0), unit=str(getattr(u, "unit", None) or "Count")) for u in items]

    # -- experiments: Azure ML makes one with the first job that names it -----------------------
    def experiment_id(self, resource_group: str, workspace: str, name: str) -> str:
        return f"{self.workspace_id(resource_group, workspace)}/experiments/{name}"

    def begin_create_experiment(self, resource_group: str, workspace: str, name: str, *,
                                continuation_token: Optional[str] = None, **poll: Any) -> "LROPoller[None]":
        self._check_scope(resource_group, workspace)
        resource = self.experiment_id(resource_group, workspace, name)
        if continuation_token is not None:
            resume_token(continuation_token, action="creating experiment", resource=resource)
        return DonePoller(None, action="creating experiment", resource=resource)

    def get_experiment(self, resource_group: str, workspace: str, name: str) -> None:
        self._check_scope(resource_group, workspace)

    def list_experiments(self, resource_group: str, workspace: str) -> List[str]:
        self._check_scope(resource_group, workspace)
        with azure_errors("listing jobs in", self.workspace_id(resource_group, workspace)):
            names = {str(j.experiment_name) for j in self.ml.jobs.list() if getattr(j, "experiment_name", None)}
        return sorted(names)

    def begin_delete_experiment(self, resource_group: str, workspace: str, name: str, *,
                                continuation_token: Optional[str] = None, **poll: Any) -> "LROPoller[None]":
        """Delete the experiment's jobs, one after the other, on the poller's thread. Deleting is
        idempotent, so resuming from a token starts over with the jobs that remain."""
        action, resource = "deleting experiment", self.experiment_id(resource_group, workspace, name)
        if continuation_token is not None:
            resume_token(continuation_token, action=action, resource=resource)
        records = self.list_jobs(resource_group, workspace, name)

        def delete_jobs() -> None:
            for record in records:
                self.begin_delete_job(JobRef(resource_group, workspace, name, record.name)).result(None)

        return background_poller(delete_jobs, action=action, resource=resource)

    # -- clusters (AmlCompute) ------------------------------------------------------------------
    def cluster_id(self, ref: ClusterRef) -> str:
        return f"{self.workspace_id(ref.resource_group, ref.workspace)}/computes/{ref.name}"

    def check_cluster_spec(self, spec: ClusterSpec) -> None:
        check_cluster_spec(spec)

    def _raw_get(self, ref: ClusterRef) -> Any:
        # Below azure-ai-ml's public surface: its AmlCompute entity drops allocationState and the
        # node counts, which its generated client (the same request) keeps.
        return self.ml.compute._operation.get(ref.resource_group, ref.workspace, ref.name)

    def _record(self, ref: ClusterRef, resource: Any, nodes: Optional[list[Any]] = None) -> ClusterRecord:
        status = cluster_status_from_rest(resource, resource_group=ref.resource_group, workspace=ref.workspace,
                                          nodes=nodes)
        props = getattr(resource.properties, "properties", None)
        if _compute_type(resource) not in ("AmlCompute", ""):
            raise ConflictError(f"compute {ref.name!r} is a {resource.properties.compute_type}, not an AmlCompute "
                                "cluster", resource=self.cluster_id(ref))
        scale = getattr(props, "scale_settings", None)
        credentials = getattr(props, "user_account_credentials", None)
        return ClusterRecord(name=ref.name, id=self.cluster_id(ref), vm_size=status.vm_size,
                             maximum_node_count=getattr(scale, "max_node_count", None), mounts=(), status=status,
                             ssh_public_key=getattr(credentials, "admin_user_ssh_public_key", None), raw=resource)

    def get_cluster(self, ref: ClusterRef) -> ClusterRecord:
        self._check_scope(ref.resource_group, ref.workspace)
        with azure_errors("reading cluster", self.cluster_id(ref)):
            return self._record(ref, self._raw_get(ref))

    def find_cluster(self, ref: ClusterRef) -> Optional[ClusterRecord]:
        try:
            return self.get_cluster(ref)
        except NotFoundError:
            return None

    def cluster_status(self, ref: ClusterRef) -> ClusterRecord:
        """The compute as its GET describes it: allocation state, node counts
        (``nodeStateCounts``), errors. One request per poll."""
        return self.get_cluster(ref)

    def _resume_compute_update(self, ref: ClusterRef, token: str) -> Any:
        # Below azure-ai-ml's public surface: its compute pollers give continuation tokens, but
        # only its generated client takes them back (the same PUT's polling).
        return self.ml.compute._operation.begin_create_or_update(ref.resource_group, ref.workspace, ref.name,
                                                                 {}, continuation_token=token)

    def begin_create_cluster(self, ref: ClusterRef, spec: ClusterSpec, *,
                             continuation_token: Optional[str] = None, **poll: Any) -> "LROPoller[ClusterRecord]":
        self._check_scope(ref.resource_group, ref.workspace)
        action, resource = "creating cluster", self.cluster_id(ref)
        with azure_errors(action, resource):
            if continuation_token is not None:
                inner = resume_token(continuation_token, action=action, resource=resource)
                if inner is None:
                    return DonePoller(self.get_cluster(ref), action=action, resource=resource)
                poller = self._resume_compute_update(ref, inner)
            else:
                poller = self.ml.compute.begin_create_or_update(compute_entity(ref.name, spec))
        return MappedPoller(poller, lambda _: self.get_cluster(ref), action=action, resource=resource)

    def begin_reuse_cluster(self, ref: ClusterRef, spec: ClusterSpec,
                            existing: ClusterRecord, **poll: Any) -> "LROPoller[ClusterRecord]":
        """An AmlCompute cluster of another VM size is another cluster; the rest (scale, admin
        user) is the compute's to keep."""
        check_cluster_spec(spec)
        if existing.vm_size.lower() != spec.vm_size.lower():
            raise ConflictError(f"cluster {existing.id} exists with VM size {existing.vm_size}, not {spec.vm_size}; "
                                "delete it or choose another name", resource=existing.id)
        return DonePoller(existing, action="creating cluster", resource=existing.id)

    def list_clusters(self, resource_group: str, workspace: str) -> List[ClusterRecord]:
        self._check_scope(resource_group, workspace)
        with azure_errors("listing clusters in", self.workspace_id(resource_group, workspace)):
            items = list(self.ml.compute._operation.list(resource_group, workspace))  # see _raw_get
        return [self._record(ClusterRef(resource_group, workspace, str(r.name)), r) for r in items
                if _compute_type(r) == "AmlCompute"]

    def begin_delete_cluster(self, ref: ClusterRef, *,
                             continuation_token: Optional[str] = None, **poll: Any) -> "LROPoller[None]":
        """Delete the AmlCompute; azure-ai-ml's delete takes no continuation token, and deleting is
        idempotent, so resuming asks again."""
        self._check_scope(ref.resource_group, ref.workspace)
        action, resource = "deleting cluster", self.cluster_id(ref)
        if continuation_token is not None:
            resume_token(continuation_token, action=action, resource=resource)
        with azure_errors(action, resource):
            try:
                poller = self.ml.compute.begin_delete(ref.name, action="Delete")
            except ResourceNotFoundError:
                return DonePoller(None, action=action, resource=resource)
        return MappedPoller(poller, lambda _: None, action=action, resource=resource)

    def begin_scale_cluster(self, ref: ClusterRef, *, target_node_count: Optional[int] = None,
                            auto_scale: Optional[AutoScale] = None, deallocation_option: Optional[str] = None,
                            known: Optional[ClusterRecord] = None,
                            continuation_token: Optional[str] = None, **poll: Any) -> "LROPoller[ClusterRecord]":
        """AmlCompute has one scale setting, (min, max): a fixed size is min = max. The update is
        a long-running operation; its poller is done once the service has accepted it."""
        self._check_scope(ref.resource_group, ref.workspace)
        action = "updating cluster"
        if continuation_token is not None:
            resource = self.cluster_id(ref)
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                return DonePoller(self.get_cluster(ref), action=action, resource=resource)
            with azure_errors(action, resource):
                resumed = self._resume_compute_update(ref, inner)
            return MappedPoller(resumed, lambda _: self.get_cluster(ref), action=action, resource=resource)
        if deallocation_option is not None:
            raise InvalidSpecError("deallocation_option", "AmlCompute only ever removes idle nodes; it cannot "
                                   "requeue or terminate the jobs on them", "None")
        if auto_scale is not None:
            check_scale(auto_scale)
        resource = self.cluster_id(ref)
        with azure_errors("updating cluster", resource):
            entity = self.ml.compute.get(ref.name)
            if auto_scale is not None:
                entity.min_instances, entity.max_instances = auto_scale.minimum, auto_scale.maximum
                if auto_scale.idle_time_before_scale_down is not None:
                    entity.idle_time_before_scale_down = int(auto_scale.idle_time_before_scale_down.total_seconds())
            else:
                entity.min_instances = entity.max_instances = int(target_node_count or 0)
            poller = self.ml.compute.begin_update(entity)
        return MappedPoller(poller, lambda _: self.get_cluster(ref), action=action, resource=resource)

    def remote_logins(self, ref: ClusterRef) -> List[RemoteLogin]:
        self._check_scope(ref.resource_group, ref.workspace)
        with azure_errors("listing nodes of", self.cluster_id(ref)):
            nodes = list(self.ml.compute.list_nodes(ref.name))
        return [RemoteLogin(node_id=str(node_field(n, "node_id") or ""),
                            ip_address=str(node_field(n, "public_ip_address")),
                            port=int(node_field(n, "port") or 22)) for n in nodes if node_field(n, "public_ip_address")]

    # -- jobs (command jobs) --------------------------------------------------------------------
    def job_id(self, ref: JobRef) -> str:
        return f"{self.workspace_id(ref.resource_group, ref.workspace)}/jobs/{ref.name}"

    def check_submission(self, spec: HorovodJob, cluster: ClusterRecord) -> None:
        spec.check_resolved()
        spec.check_cluster(cluster.id, cluster.name, cluster.maximum_node_count)
        self._check_job_spec(spec, cluster)
        with routed():  # azure-ai-ml's messages on this package's logger, not on stderr
            self._check_job_storage(spec)

    def _check_job_spec(self, spec: HorovodJob, cluster: ClusterRecord) -> None:
        # The name is checked with the spec: Azure ML's rule is stricter than Batch AI's. A sweep's
        # trial names its parameters; a plain job that does is refused when it is submitted.
        check_job_spec(spec, "job", sweep_trial=True)

    def _check_job_storage(self, spec: HorovodJob) -> None:
        """Every mount's datastore must be the storage the job names (type, account, share or
        container), read before anything changes. A share's datastore must exist
        (FileShare.create registers it); a blob container's may be missing, when the container
        exists: it is registered by begin_submit_job, with the mount's credential."""
        missing: list[tuple[int, AzureBlobMount]] = []
        for i, mount in enumerate(spec.mounts):
            if not isinstance(mount, (AzureFileShareMount, AzureBlobMount)):
                continue
            name, wanted = mount_datastore(mount)
            if self._registered.get(name) == wanted:
                continue
            found = self._read_datastore(name)
            if found is None:
                if isinstance(mount, AzureFileShareMount):
                    raise spec.field_error(f"mounts[{i}]", f"share {mount.share_name!r} of storage account "
                                           f"{mount.account_name!r} is not registered in workspace "
                                           f"{self._connection.workspace!r} (no datastore {name!r})",
                                           "a share from FileShare.create(...), which registers it")
                if name not in {mount_datastore(m)[0] for _, m in missing}:  # two mounts of one container
                    missing.append((i, mount))
                continue
            problem = self._identity_problem(name, found, wanted)
            if problem:
                field = spec.field_error(f"mounts[{i}]", "").field
                raise ConflictError(f"{field}: {problem}; the job was not submitted",
                                    resource=self._datastore_id(name))
            self._registered[name] = wanted
        for i, mount in missing:
            self._check_container(spec, i, mount)
            self._absent.add(mount_datastore(mount)[0])

    def _check_container(self, spec: HorovodJob, index: int, mount: AzureBlobMount) -> None:
        """The container must exist before a datastore names it: Azure ML registers one with
        ``skipValidation=true`` and the job would fail at its mount. Read with the mount's
        credential (the caller's identity when it has none) through the target's blob client.
        A refusal (403) does not say the container is missing, and the job's identity may read
        what the caller's cannot: that is logged, and the job goes ahead."""
        from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
        from azure.storage.blob import ContainerClient
        field = f"mounts[{index}]"
        endpoint = account_url(datastore_entity(mount, description=""), "blob")  # where its datastore points
        self._connection.check_data_url(endpoint, f"the blob endpoint of storage account {mount.account_name!r}")
        credential: Any
        if mount.account_key:
            credential = AzureNamedKeyCredential(mount.account_name, mount.account_key)
        elif mount.sas_token:
            credential = AzureSasCredential(mount.sas_token.lstrip("?"))
        else:
            credential = self._connection.credential()
        where = f"{mount.account_name}/{mount.container_name}"
        try:
            with azure_errors("reading blob container", where):
                try:
                    with ContainerClient(endpoint, mount.container_name, credential=credential,
                                         **self._connection.data_plane_options()) as container:
                        container.get_container_properties()
                except HttpResponseError as err:
                    if err.status_code != 403:
                        raise
                    log.warning("blob container %s (%s): reading it was refused (403, %s), so whether it exists "
                                "is not known here; the job's own identity may read it", where,
                                spec.field_error(field, "").field,
                                getattr(err, "error_code", None) or "no code")
        except NotFoundError:
            raise spec.field_error(field, f"blob container {mount.container_name!r} does not exist in storage "
                                   f"account {mount.account_name!r}; nothing was registered",
                                   "an existing container of that account (create it first, e.g. "
                                   "ContainerClient.create_container() or az storage container create)") from None

    def _register_missing_blob_datastores(self, spec: HorovodJob) -> list[str]:
        """Register the datastores of the blob mounts that check_submission found missing (their
        containers exist); return their names. A mount it did not see is checked first."""
        blobs = [m for m in spec.mounts if isinstance(m, AzureBlobMount)]
        if any(self._registered.get(mount_datastore(m)[0]) != mount_datastore(m)[1]
               and mount_datastore(m)[0] not in self._absent for m in blobs):
            self._check_job_storage(spec)
        registered: list[str] = []
        for mount in blobs:
            name, wanted = mount_datastore(mount)
            if name in self._absent and self._registered.get(name) != wanted:
                try:
                    self._create_datastore(mount)
                except Exception:
                    self._remove_datastores(registered, None)
                    raise
                self._absent.discard(name)
                registered.append(name)
        return registered

    def _remove_datastores(self, names: list[str], ref: Optional[JobRef]) -> None:
        """Delete the datastores this submission registered (its job was not created); a failure
        is logged, and the submission's own error is what the caller sees."""
        for name in names:
            try:
                with azure_errors("removing datastore", self._datastore_id(name)):
                    self.ml.datastores.delete(name)
                log.info("removed datastore %s, registered for job %s, which was not created", name,
                         ref.name if ref else "(none)")
            except Exception as err:  # noqa: BLE001 -- the submission's error matters more
                log.warning("datastore %s, registered for a job that was not created, is left: removing it "
                            "failed (%s)", name, err)
            self._registered.pop(name, None)

    def _datastore_id(self, name: str) -> str:
        return f"{self.workspace_id(str(self._connection.resource_group), str(self._connection.workspace))}/datastores/{name}"

    def _read_datastore(self, name: str) -> Optional[DatastoreIdentity]:
        """The identity of datastore ``name``; None when the workspace has none of that name."""
        try:
            with azure_errors("reading datastore", self._datastore_id(name)):
                return datastore_identity(self.ml.datastores.get(name))
        except NotFoundError:
            return None

    def _identity_problem(self, name: str, found: DatastoreIdentity, wanted: DatastoreIdentity) -> str:
        differs = found.differences(wanted)
        if not differs:
            return ""
        return (f"datastore {name!r} of workspace {self._connection.workspace!r} is {found.describe()}, not "
                f"{wanted.describe()} ({'; '.join(differs)}); it is left as it is: remove or rename that datastore, "
                "or use other storage")

    def _create_datastore(self, mount: "AzureFileShareMount | AzureBlobMount") -> None:
        name, wanted = mount_datastore(mount)
        what = (f"file share {wanted.place} of {wanted.account}" if wanted.kind == "AzureFile"
                else f"blob container {wanted.place} of {wanted.account}")
        entity = datastore_entity(mount, description=f"horovod-batchai: {what}")
        with azure_errors("registering datastore", self._datastore_id(name)):
            self.ml.datastores.create_or_update(entity)
        log.info("registered %s as datastore %s", what, name)
        self._registered[name] = wanted

    def _job_record(self, ref: JobRef, entity: Any) -> JobRecord:
        errors: tuple[ServiceErrorDetail, ...] = ()
        if str(getattr(entity.status, "value", entity.status) or "") == "Failed":  # not Canceled: no error to read
            errors = self._run_errors(ref.name)
        properties = dict(getattr(entity, "properties", None) or {})
        self._job_properties[ref.name] = properties
        return JobRecord(name=ref.name, id=self.job_id(ref), status=job_status_from_entity(entity, errors),
                         cluster_id=self.cluster_id(ClusterRef(ref.resource_group, ref.workspace,
                                                               str(entity.compute or "").rsplit("/", 1)[-1])),
                         read_spec=lambda: read_spec_property(properties, ref.name))

    def _run_errors(self, name: str) -> tuple[ServiceErrorDetail, ...]:
        """The run-history service's error for a failed job (its ARM resource carries none)."""
        try:
            details = self._run_details(name)
        except HttpResponseError as err:
            log.debug("no run details for %s: %s", name, type(err).__name__)
            return ()
        inner = getattr(getattr(details, "error", None), "error", None)
        if inner is None:
            return ()
        field = inner.get if isinstance(inner, dict) else lambda key: getattr(inner, key, None)
        return (ServiceErrorDetail(str(field("code") or ""), str(field("message") or "")),)

    def _run_details(self, name: str) -> Any:
        # Below azure-ai-ml's public surface: jobs.stream() prints to stdout; its run-history
        # client (found through the workspace's discoveryUrl) is what it reads the logs with. The
        # answer holds the logs' SAS links: kept out of network traces the caller turned on.
        runs = self.ml.jobs._runs_operations
        return runs._operation.get_details(runs._operation_scope.subscription_id,
                                           runs._operation_scope.resource_group_name, runs._workspace_name, name,
                                           logging_enable=False)

    def _get_entity(self, ref: JobRef) -> Any:
        self._check_scope(ref.resource_group, ref.workspace)
        with azure_errors("reading job", self.job_id(ref)):
            entity = self.ml.jobs.get(ref.name)
        if str(getattr(entity, "experiment_name", "") or "") != ref.experiment:
            raise NotFoundError(f"job {ref.name!r} is in experiment {entity.experiment_name!r}, not "
                                f"{ref.experiment!r} (Azure ML job names are unique in the workspace)",
                                resource=self.job_id(ref))
        return entity

    def job_experiment(self, resource_group: str, workspace: str, name: str) -> str:
        self._check_scope(resource_group, workspace)
        with azure_errors("reading job", f"{self.workspace_id(resource_group, workspace)}/jobs/{name}"):
            entity = self.ml.jobs.get(name)
        return str(getattr(entity, "experiment_name", "") or "")

    def get_job(self, ref: JobRef) -> JobRecord:
        return self._job_record(ref, self._get_entity(ref))

    def find_job(self, ref: JobRef) -> Optional[JobRecord]:
        try:
            return self.get_job(ref)
        except NotFoundError as err:
            if err.azure_error is None:  # it exists, in another experiment
                raise ConflictError(str(err), resource=err.resource) from None
            return None

    def begin_submit_job(self, ref: JobRef, spec: HorovodJob, cluster: Optional[ClusterRecord], *,
                         continuation_token: Optional[str] = None, **poll: Any) -> "LROPoller[JobRecord]":
        """Azure ML accepts a command job in the one request that creates it (azure-ai-ml's
        ``create_or_update``), so the poller is finished when this returns; resuming from its
        token reads the job again."""
        action, resource = "submitting job", self.job_id(ref)
        if continuation_token is not None:
            resume_token(continuation_token, action=action, resource=resource)
            return DonePoller(self.get_job(ref), action=action, resource=resource)
        assert cluster is not None
        check_job_spec(spec, ref.name)
        existing = self.find_job(ref)
        if existing is not None:
            check_same_job(existing, spec, cluster.id)
            log.info("job %s exists with these settings; returning it instead of submitting again", existing.id)
            return DonePoller(existing, action=action, resource=resource)
        with routed():  # azure-ai-ml's messages on this package's logger, not on stderr
            created = self._create_job(ref, spec, cluster)
        return DonePoller(self._job_record(ref, created), action=action, resource=resource)

    def _create_job(self, ref: JobRef, spec: HorovodJob, cluster: ClusterRecord, *,
                    sweep: Optional[Tuple[SweepRequest, Dict[str, str]]] = None) -> Any:
        """Register the datastores check_submission found missing, then the environment (unless
        the workspace has it) and the job -- or, given ``sweep`` (its request and the sweep job's
        properties), the sweep job whose trials run ``spec``. When the service refuses either, or
        something fails before the job is sent, the datastores registered here are removed again."""
        registered = self._register_missing_blob_datastores(spec)
        sent = False
        try:
            environment = self._environment(spec)
            entity = command_job_entity(spec, job_name=ref.name, experiment=ref.experiment, compute=cluster.name,
                                        environment=environment, sweep_trial=sweep is not None)
            if sweep is not None:
                entity = sweep_job_entity(sweep[0], entity, name=ref.name, experiment=ref.experiment,
                                          properties=sweep[1])
            log.info("submitting Azure ML %s %s to %s (%d node(s) x %d process(es)%s)",
                     "sweep job" if sweep else "job", ref.name, cluster.name, spec.node_count,
                     (spec.process_count or spec.node_count) // spec.node_count, " per trial" if sweep else "")
            with azure_errors("submitting job", self.job_id(ref)):
                try:
                    sent = True
                    return self.ml.jobs.create_or_update(entity)
                except HttpResponseError as err:
                    # a 4xx is a refusal: nothing was created; otherwise the job may exist
                    sent = not (err.status_code is not None and 400 <= err.status_code < 500)
                    raise
        except Exception:
            if registered and not sent:
                self._remove_datastores(registered, ref)
            elif registered:
                log.warning("job %s: the datastores registered for it (%s) are kept: the job may have been "
                            "created", ref.name, ", ".join(registered))
            raise

    def _environment(self, spec: HorovodJob) -> Any:
        """The job's environment: the ARM id of the version the workspace has, when it is the one
        the job needs (read, not written again); else the entity, which azure-ai-ml registers with
        the job -- for the job's image (anonymous, versioned by azure-ai-ml's hash of the image),
        or for the package's Docker build context, uploaded here through the target's blob client
        and handed to azure-ai-ml as a URI (which it does not upload)."""
        from azure.ai.ml.entities import BuildContext, Environment
        if spec.container_image:
            wanted = Environment(image=spec.container_image)  # names itself: CliV2AnonymousEnvironment, hash
            found = self._read_environment(str(wanted.name), str(wanted.version))
            if found is not None and found.image == spec.container_image:
                return self._known_environment(found)
            return wanted
        from .environment import CONTEXT_NAME, DOCKERFILE, ENVIRONMENT_VERSION_LENGTH, content_hash, context_files
        from .upload import upload_context
        files = context_files()
        digest = content_hash(files)
        # One environment version per content: the same package registers (and builds) the same
        # environment run after run. The Dockerfile is named although it is the service's default.
        version = digest[:ENVIRONMENT_VERSION_LENGTH]
        found = self._read_environment(CONTEXT_NAME, version)
        build = getattr(found, "build", None)
        if (found is not None and build is not None and build.dockerfile_path == DOCKERFILE.name
                and str(build.path or "").rstrip("/").endswith(f"/{digest}/{CONTEXT_NAME}")):
            return self._known_environment(found)  # its context was uploaded whole before it was registered
        uri = upload_context(self.ml, self._connection, files, name=CONTEXT_NAME, digest=digest)
        return Environment(name=CONTEXT_NAME, version=version,
                           build=BuildContext(path=uri, dockerfile_path=DOCKERFILE.name))

    def _read_environment(self, name: str, version: str) -> Any:
        """Environment version ``name``/``version`` of the workspace; None when it has none."""
        workspace = self.workspace_id(str(self._connection.resource_group), str(self._connection.workspace))
        resource = f"{workspace}/environments/{name}/versions/{version}"
        try:
            with azure_errors("reading environment", resource):
                return self.ml.environments.get(name, version=version)
        except NotFoundError:
            return None

    def _known_environment(self, found: Any) -> str:
        log.info("environment %s:%s is in the workspace already; using it", found.name, found.version)
        return str(found.id)  # an ARM id: azure-ai-ml hands it to the job as it is, registering nothing

    def list_jobs(self, resource_group: str, workspace: str, experiment: str) -> List[JobRecord]:
        self._check_scope(resource_group, workspace)
        with azure_errors("listing jobs in", self.experiment_id(resource_group, workspace, experiment)):
            items = [j for j in self.ml.jobs.list() if getattr(j, "experiment_name", None) == experiment]
        return [self._job_record(JobRef(resource_group, workspace, experiment, str(j.name)), j) for j in items]

    def begin_delete_job(self, ref: JobRef, *, continuation_token: Optional[str] = None, **poll: Any) -> "LROPoller[None]":
        self._check_scope(ref.resource_group, ref.workspace)

        def start(continuation_token: Optional[str]) -> Any:
            return self.ml.jobs.begin_delete(ref.name, **({"continuation_token": continuation_token}
                                                          if continuation_token else {}))

        return run(begin_delete("deleting job", self.job_id(ref), continuation_token, start))

    def begin_terminate_job(self, ref: JobRef, *,
                            continuation_token: Optional[str] = None, **poll: Any) -> "LROPoller[None]":
        """Cancel the job; a job that has already ended has nothing to cancel."""
        action, resource = "cancelling job", self.job_id(ref)
        inner = None
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                return DonePoller(None, action=action, resource=resource)
        else:
            entity = self._get_entity(ref)
            if execution_state(entity.status).is_terminal():
                return DonePoller(None, action=action, resource=resource)
        with azure_errors(action, resource):
            log.info("cancelling job %s", resource)
            poller = self.ml.jobs.begin_cancel(ref.name, **({"continuation_token": inner} if inner else {}))
        return MappedPoller(poller, lambda _: None, action=action, resource=resource)

    def list_output_files(self, ref: JobRef, output_directory_id: str, directory: str,
                          link_expiry_minutes: int) -> List[OutputFile]:
        """The job's logs, as the run-history service lists them (``user_logs/...``,
        ``system_logs/...``), plus ``stdout.txt`` and ``stderr.txt`` at the top: both are rank 0's
        combined log, the file Batch AI's stdout.txt was; then what the job wrote to
        ``$AZ_BATCHAI_STDOUTERR_DIR`` on its share (a name run history has is its log). The
        service sets the logs' links' lifetime; the share's files are read with the datastore's
        secret, which their links do not carry."""
        if output_directory_id != STDOUTERR:
            raise InvalidSpecError("output_directory_id", f"{output_directory_id!r}: Azure ML jobs here have only "
                                   "their logs", "'stdouterr'")
        self._check_scope(ref.resource_group, ref.workspace)
        with azure_errors("listing logs of", self.job_id(ref)):
            logs: dict[str, str] = dict(getattr(self._run_details(ref.name), "log_files", None) or {})
        rank0 = next((name for name in RANK0_LOGS if name in logs), None)
        if rank0 is not None:
            for alias in ALIASES:
                logs.setdefault(alias, logs[rank0])
        prefix = "" if directory.strip("/") in ("", ".") else directory.strip("/") + "/"
        entries: dict[str, OutputFile] = {}
        for name in sorted(logs):
            if not name.startswith(prefix):
                continue
            head, _, rest = name[len(prefix):].partition("/")
            if rest:
                entries.setdefault(head, OutputFile(name=head, is_directory=True))
            else:
                entries[head] = OutputFile(name=head, is_directory=False, download_url=logs[name])
        for item in self._readable_stdouterr_files(ref, prefix.rstrip("/")):
            entries.setdefault(item.name, item)
        return list(entries.values())

    def _readable_stdouterr_files(self, ref: JobRef, directory: str) -> List[OutputFile]:
        """:meth:`_stdouterr_files`, or none when the caller may read the job but not its
        datastore's secret: its logs are still listed, as before the share was read."""
        try:
            return self._stdouterr_files(ref, directory)
        except HttpResponseError as err:
            if err.status_code != 403:
                raise
            log.warning("job %s: its $AZ_BATCHAI_STDOUTERR_DIR files (metrics.csv, TensorBoard events) are not "
                        "listed: reading its share's datastore secret was refused (403); the logs are", ref.name)
            return []

    def _stdouterr_files(self, ref: JobRef, directory: str) -> List[OutputFile]:
        """``directory`` of the job's stdouterr directory on its share (none when the job's
        stdOutErrPathPrefix is on no share, or the job has not made the directory yet)."""
        place = self._stdouterr_place(ref)
        if place is None:
            return []
        return self._place_files(place, directory, ref.name)

    def _place_files(self, place: StdOutErrPlace, directory: str, job_name: str) -> List[OutputFile]:
        """``directory`` of the stdouterr directory ``place`` of job ``job_name``, read with its
        datastore's secret (empty when the job has not made it yet)."""
        resource = self._datastore_id(place.datastore)
        with azure_errors("reading datastore", resource):
            datastore = self.ml.datastores.get(place.datastore)
        problem = self._identity_problem(place.datastore, datastore_identity(datastore), place.identity)
        if problem:
            raise ConflictError(f"reading the output files of job {job_name!r}: {problem}", resource=resource)
        with azure_errors("reading the secret of datastore", resource):
            credential = datastore_secret(self.ml, place.datastore)
        if not credential:
            raise ConflictError(f"reading the output files of job {job_name!r}: datastore {place.datastore!r} holds "
                                "no account key or SAS token for its share", resource=resource)
        endpoint = account_url(datastore, "file")
        path = "/".join(part for part in (place.path, directory) if part)
        with azure_errors("listing", f"{place.identity.account}/{place.identity.place}/{path}"):
            items = list_share_directory(self._connection, endpoint, str(datastore.file_share_name), path, credential)
        self._share_credentials[f"{endpoint}/{quote(str(datastore.file_share_name))}/"] = credential
        return items

    def _stdouterr_place(self, ref: JobRef) -> Optional[StdOutErrPlace]:
        properties = self._job_properties.get(ref.name)
        if properties is None:
            properties = dict(getattr(self._get_entity(ref), "properties", None) or {})
        try:
            spec: Optional[HorovodJob] = read_spec_property(properties, ref.name)
        except InvalidSpecError:  # a sweep's trial runs its sweep's spec; another job's writes are unknown
            spec = self._trial_spec(ref)
        return None if spec is None else stdouterr_place(spec, ref.name)

    def _trial_spec(self, ref: JobRef) -> Optional[HorovodJob]:
        """The spec job ``<sweep>_<index>`` runs when it is a trial of a sweep this package made."""
        sweep = ref.name.rpartition("_")[0]
        if not sweep or trial_index(sweep, ref.name) is None:
            return None
        if sweep not in self._sweep_specs:
            try:
                self._sweep_spec(self._get_entity(JobRef(ref.resource_group, ref.workspace, ref.experiment, sweep)))
            except NotFoundError:
                return None
        return self._sweep_specs.get(sweep)

    def open_output(self, url: str) -> RemoteFile:
        from azure.storage.blob import BlobClient
        from azure.storage.fileshare import ShareFileClient
        share = next(((prefix, key) for prefix, key in list(self._share_credentials.items())
                      if url.startswith(prefix)), None)
        if share is not None:  # a file of a stdouterr directory, listed with its datastore's secret
            return ShareFile(ShareFileClient.from_file_url(url, credential=share[1],
                                                           **self._connection.data_plane_options()))
        self._connection.check_data_url(url.split("?", 1)[0], "the log's download URL")
        return _Blob(BlobClient.from_blob_url(url, **self._connection.data_plane_options()))

    # -- sweeps: Azure ML's sweep jobs (sweeps.py) ---------------------------------------------
    def sweep_id(self, ref: JobRef) -> str:
        return self.job_id(ref)

    def create_sweep(self, ref: JobRef, request: SweepRequest, spec: HorovodJob,
                     cluster: ClusterRecord) -> SweepRecord:
        """Create the sweep job (``jobType: Sweep``) whose trial is the command job ``spec``
        would be submitted as, after reading its environment (registered with the sweep only
        when the workspace lacks it: never once per trial). The same sweep again is returned; a
        job of another kind or definition under the name is a ConflictError."""
        self._check_scope(ref.resource_group, ref.workspace)
        check_job_spec(spec, ref.name, sweep_trial=True)
        check_sweep_request(request)
        properties = {SPEC_PROPERTY: spec_property(spec), SWEEP_PROPERTY: request_property(request)}
        existing = self._find_entity(ref)
        if existing is not None:
            self._check_same_sweep(ref, existing, properties, cluster)
            log.info("sweep %s exists with these settings; returning it instead of creating it again", self.job_id(ref))
            return self._sweep_record(ref, existing)
        with routed():  # azure-ai-ml's messages on this package's logger, not on stderr
            created = self._create_job(ref, spec, cluster, sweep=(request, properties))
        return self._sweep_record(ref, created)

    def _find_entity(self, ref: JobRef) -> Any:
        """The job ``ref`` names, read; None when the workspace has no job of that name."""
        try:
            return self._get_entity(ref)
        except NotFoundError as err:
            if err.azure_error is None:  # it exists, in another experiment
                raise ConflictError(str(err), resource=err.resource) from None
            return None

    def _check_same_sweep(self, ref: JobRef, entity: Any, properties: Dict[str, str], cluster: ClusterRecord) -> None:
        found = dict(getattr(entity, "properties", None) or {})
        differs = [what for what, same in (
            ("it is not a sweep job", _is_sweep(entity)),
            ("its trial's job differs", found.get(SPEC_PROPERTY) == properties[SPEC_PROPERTY]),
            ("its sampling, search space, objective, limits or early termination differ",
             found.get(SWEEP_PROPERTY) == properties[SWEEP_PROPERTY]),
            (f"it runs on {str(entity.compute or '').rsplit('/', 1)[-1]!r}",
             str(entity.compute or "").rsplit("/", 1)[-1].lower() == cluster.name.lower())) if not same]
        if differs:
            raise ConflictError(f"job {ref.name!r} exists and is not this sweep ({'; '.join(differs[:2])}); delete it "
                                "or choose another name", resource=self.job_id(ref))

    def get_sweep(self, ref: JobRef) -> SweepRecord:
        return self._sweep_record(ref, self._get_sweep_entity(ref))

    def _get_sweep_entity(self, ref: JobRef) -> Any:
        entity = self._get_entity(ref)
        if not _is_sweep(entity):
            raise NotFoundError(f"job {ref.name!r} of experiment {ref.experiment!r} is a {entity.type} job, not a "
                                "sweep", resource=self.job_id(ref))
        return entity

    def list_sweeps(self, resource_group: str, workspace: str, experiment: str) -> List[SweepRecord]:
        self._check_scope(resource_group, workspace)
        with azure_errors("listing jobs in", self.experiment_id(resource_group, workspace, experiment)):
            items = [j for j in self.ml.jobs.list()
                     if getattr(j, "experiment_name", None) == experiment and _is_sweep(j)]
        return [self._sweep_record(JobRef(resource_group, workspace, experiment, str(j.name)), j) for j in items]

    def cancel_sweep(self, ref: JobRef) -> SweepRecord:
        """Azure ML's cancel of the sweep job (it starts no more trials and cancels the live
        ones), waited for; a sweep that has ended has nothing to cancel."""
        entity = self._get_sweep_entity(ref)
        if not execution_state(entity.status).is_terminal():
            self._cancel(ref)
            entity = self._get_entity(ref)
        return self._sweep_record(ref, entity)

    def delete_sweep(self, ref: JobRef) -> None:
        """Cancel the sweep when it runs, then delete the sweep job (``DELETE jobs/{name}``, as a
        job is deleted); nothing when it is gone."""
        entity = self._find_entity(ref)
        if entity is None:
            return None
        if not _is_sweep(entity):
            raise ConflictError(f"job {ref.name!r} is a {entity.type} job, not a sweep: delete it as a job",
                                resource=self.job_id(ref))
        if not execution_state(entity.status).is_terminal():
            self._cancel(ref)
        self.begin_delete_job(ref).result(None)
        self._sweep_specs.pop(ref.name, None)
        for trial in [t for t in self._ended_trials if trial_index(ref.name, t) is not None]:
            del self._ended_trials[trial]  # a sweep made again under the name has other trials
        return None

    def _cancel(self, ref: JobRef) -> None:
        """Cancel job ``ref`` and wait until the service has taken the cancel."""
        with azure_errors("cancelling sweep", self.job_id(ref)):
            log.info("cancelling sweep %s", self.job_id(ref))
            self.ml.jobs.begin_cancel(ref.name).result()

    def _sweep_spec(self, entity: Any) -> Optional[HorovodJob]:
        """The trial spec of sweep job ``entity`` (None when this package did not create it), kept."""
        spec: Optional[HorovodJob] = None
        if _is_sweep(entity):
            try:
                spec = read_spec_property(dict(getattr(entity, "properties", None) or {}), str(entity.name))
            except InvalidSpecError:
                spec = None
        self._sweep_specs[str(entity.name)] = spec
        return spec

    def _sweep_record(self, ref: JobRef, entity: Any) -> SweepRecord:
        """The sweep job and its trials, each trial's metrics read (an ended trial's once)."""
        spec = self._sweep_spec(entity)
        tags = dict(getattr(entity, "tags", None) or {})
        objective = entity.objective
        metric = str(objective.primary_metric or "")
        runs: List[TrialRun] = []
        # HyperDrive's count of the trials it has sampled: none yet means no child to list
        if str(tags.get("_aml_system_samples_generated_count", "")) != "0":
            runs = [self._trial_run(spec, child, metric) for child in self._sweep_children(ref)]
        status = str(getattr(entity.status, "value", entity.status) or "")
        errors = self._run_errors(ref.name) if status == "Failed" else ()
        arguments = spec.arguments if spec is not None else str(getattr(entity.trial, "command", "") or "")
        return sweep_record(name=ref.name, id=self.job_id(ref), status=status, tags=tags,
                            properties=dict(getattr(entity, "properties", None) or {}), metric=metric,
                            goal=str(objective.goal or "maximize"), arguments=arguments, runs=runs,
                            error="; ".join(e.message for e in errors) or None, raw=entity)

    def _sweep_children(self, ref: JobRef) -> List[Any]:
        # Below azure-ai-ml's public surface: jobs.list(parent_job_name=...) reads the sweep job
        # again and then lists its children from run history with this very call.
        with azure_errors("listing the trials of sweep", self.job_id(ref)):
            return [c for c in self.ml.jobs._runs_operations.get_run_children(ref.name) if c is not None]

    def _trial_run(self, spec: Optional[HorovodJob], child: Any, metric: str) -> TrialRun:
        name = str(child.name)
        ended = self._ended_trials.get(name)
        if ended is not None:
            return ended
        state = execution_state(child.status)
        table = None
        if spec is not None and state is not ExecutionState.QUEUED:
            table = self._trial_metrics(spec, name)
        error = None
        if str(getattr(child.status, "value", child.status) or "") == "Failed":
            error = "; ".join(e.message for e in self._run_errors(name)) or None
        recorded = tuple(table.columns) if table is not None else ()
        values = tuple(table.column(metric)) if table is not None and metric in table.columns else ()
        run = TrialRun(name=name, status=child.status, error=error, values=values, recorded=recorded)
        if state.is_terminal():
            self._ended_trials[name] = run
        return run

    def _trial_metrics(self, spec: HorovodJob, trial: str) -> Optional[MetricsTable]:
        """What sweep trial ``trial`` recorded, epoch by epoch; None when nothing yet.

        The one place a trial's metrics are read, as :meth:`Job.metrics` reads a job's: its MLflow
        run first (what Azure ML's own policies judge; the run is the trial's job), then the
        ``metrics.csv`` its script wrote to its stdouterr directory on the share."""
        with azure_errors("reading the MLflow run of", trial):
            run = self.mlflow_run(trial)
        if run.histories:
            return table_from_run(run, job=trial)
        place = stdouterr_place(spec, trial)
        if place is None:
            return None
        try:
            files = {f.name: f for f in self._place_files(place, "", trial)}
        except HttpResponseError as err:
            if err.status_code != 403:
                raise
            log.warning("sweep trial %s: its metrics.csv is not read: reading its share's datastore secret was "
                        "refused (403)", trial)
            return None
        found = files.get("metrics.csv")
        if found is None or found.is_directory or not found.download_url:
            return None
        with azure_errors("reading the metrics of", trial):
            data = b"".join(self.open_output(found.download_url).chunks())
        return parse_metrics_csv(data.decode("utf-8", "replace"), job=trial)

    # -- storage --------------------------------------------------------------------------------
    def check_share_datastore(self, account_name: str, share_name: str) -> None:
        """Read the share's datastore: one that is this share is used as it is (remembered);
        one that is other storage is a ConflictError; none is registered by register_share."""
        name, wanted = mount_datastore(AzureFileShareMount.for_share(account_name, share_name))
        found = self._read_datastore(name)
        if found is None:
            self._absent.add(name)  # for register_share, which follows
            return
        problem = self._identity_problem(name, found, wanted)
        if problem:
            raise ConflictError(f"registering file share {account_name}/{share_name}: {problem}",
                                resource=self._datastore_id(name))
        log.info("datastore %s is file share %s/%s already; using it", name, account_name, share_name)
        self._registered[name] = wanted

    def register_share(self, account_name: str, share_name: str, account_key: str) -> None:
        """An AzureFile datastore for the share, with the account key (Azure ML keeps it in the
        workspace's key vault), so that jobs can mount it -- unless check_share_datastore found
        it already. Never overwrites a datastore: one that exists is checked, not replaced."""
        mount = AzureFileShareMount.for_share(account_name, share_name, account_key=account_key)
        name, wanted = mount_datastore(mount)
        if self._registered.get(name) == wanted:
            return
        if name not in self._absent:
            self.check_share_datastore(account_name, share_name)
        if self._registered.get(name) != wanted:
            self._create_datastore(mount)
        self._absent.discard(name)

    # -- MLflow tracking: the workspace's (its REST calls are ../mlflow.py's; ./tracking.py the pipeline) --
    def mlflow_tracking_uri(self) -> str:
        """The workspace's ``mlFlowTrackingUri`` (``azureml://<region>.api.azureml.ms/mlflow/v1.0/
        subscriptions/.../workspaces/<ws>``), read once from the workspace; built from its region
        when the workspace does not say."""
        if self._mlflow_uri is None:
            resource = self.workspace_id(str(self._connection.resource_group), str(self._connection.workspace))
            with azure_errors("reading workspace", resource):
                entity = self.ml.workspaces.get(self._connection.workspace)
            self._mlflow_uri = str(getattr(entity, "mlflow_tracking_uri", None) or
                                   mlflow.azureml_tracking_uri(str(entity.location or ""), resource))
        return self._mlflow_uri

    def _mlflow_send(self) -> Any:
        """What sends a request to the workspace's MLflow host: the pipeline of ``tracking.py``."""
        base = mlflow.https_base(self.mlflow_tracking_uri())
        with self._lock:
            if self._mlflow_client is None:
                from .tracking import mlflow_pipeline
                self._mlflow_client = mlflow_pipeline(self._connection, base)
            client = self._mlflow_client
        return lambda request, **options: client.send_request(request, stream=False, **options)

    def _mlflow(self) -> "mlflow.MlflowRest":
        return mlflow.MlflowRest(mlflow.https_base(self.mlflow_tracking_uri()), self._mlflow_send())

    def job_mlflow_run_id(self, ref: JobRef) -> str:
        """The job's name: Azure ML tracks each job as the MLflow run of that id."""
        self._check_scope(ref.resource_group, ref.workspace)
        return ref.name

    def mlflow_run(self, run_id: str) -> RunData:
        return run(mlflow.run_data(self._mlflow(), run_id))

    # The run's artifacts: the workspace's artifact service on the same host, with the same pipeline
    # (./run_artifacts.py); each file's blob through its SAS link, with azure-storage-blob.
    def _run_artifacts(self, run_id: str) -> Tuple[RunArtifacts, ArtifactRoot]:
        root = self._artifact_roots.get(run_id)
        if root is None:
            found = run(mlflow.run_data(self._mlflow(), run_id, histories=False))
            root = self._artifact_roots[run_id] = artifact_root(found.artifact_uri)
        service = RunArtifacts(history_base(self.mlflow_tracking_uri()), self._mlflow_send(), self._read_blob)
        return service, root

    def _read_blob(self, link: str) -> bytes:
        from azure.storage.blob import BlobClient
        with BlobClient.from_blob_url(link, **self._connection.data_plane_options()) as blob:  # its session closed
            return bytes(blob.download_blob().readall())

    def list_mlflow_artifacts(self, run_id: str, path: str) -> List[Artifact]:
        service, root = self._run_artifacts(run_id)
        return run(service.list(root, path))

    def read_mlflow_artifact(self, run_id: str, path: str) -> bytes:
        service, root = self._run_artifacts(run_id)
        return run(service.read(root, path, lambda link: self._connection.check_data_url(link, "the artifact's link")))


def _is_sweep(entity: Any) -> bool:
    return str(getattr(entity, "type", "") or "").lower() == "sweep"


def _compute_type(resource: Any) -> str:
    kind = getattr(getattr(resource, "properties", None), "compute_type", None)
    return str(getattr(kind, "value", kind) or "")


class AzureMLBackend(Sync):
    """The Azure ML backend of a sync target (see :class:`AzureMLOperations`)."""

    def __init__(self, connection: "Connection") -> None:
        super().__init__(AzureMLOperations(connection))
