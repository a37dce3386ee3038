"""Azure Machine Learning through azure-ai-ml: AmlCompute clusters, AzureFile datastores,
command jobs with MPI distribution, logs from the run-history service and blob storage.

Every client is built with the Target's azure-core client options (``transport=`` included):
azure-ai-ml passes them to each of its generated clients and to the pipeline it reads the
workspace's discovery URL with; the blob clients that read logs are built here with the same
options. Calls that reach into azure-ai-ml below its public surface are marked; they are pinned
by the exact azure-ai-ml version of the ``azureml`` extra.
"""
from __future__ import annotations

import logging
import shutil
import threading
from typing import TYPE_CHECKING, Any, Iterator, List, Optional

from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.core.polling import LROPoller

from ..._cluster_spec import AutoScale, ClusterSpec
from ..._errors import ConflictError, InvalidSpecError, NotFoundError, ServiceErrorDetail, azure_errors
from ..._job_spec import HorovodJob
from ..._lro import DonePoller, MappedPoller, background_poller, resume_token
from ..._mounts import AzureFileShareMount
from ..._values import OutputFile, RemoteLogin, Usage
from .. import arm
from ..base import ClusterRecord, ClusterRef, JobRecord, JobRef, RemoteFile, WorkspaceRecord
from .conversions import (check_cluster_spec, check_job_spec, check_scale, cluster_status_from_rest,
                          command_job_entity, compute_entity, datastore_name, job_status_from_entity,
                          node_field, read_spec_property)
from .states import execution_state

if TYPE_CHECKING:
    from azure.ai.ml import MLClient
    from azure.storage.blob import BlobClient

    from ..._target import Target

__all__ = ["AzureMLBackend", "STDOUTERR", "RANK0_LOGS"]

log = logging.getLogger(__name__)

STDOUTERR = "stdouterr"
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


class AzureMLBackend:
    """One Azure ML workspace (the Target's), through one ``MLClient``."""

    failure_log_name = "stderr.txt"
    default_poll_interval = 15.0

    def __init__(self, target: "Target") -> None:
        assert target.resource_group and target.workspace
        self._target = target
        self.kind = target.kind
        self._lock = threading.Lock()
        self._ml: Optional["MLClient"] = None
        self._registered: set[str] = set()

    @property
    def ml(self) -> "MLClient":
        with self._lock:
            if self._ml is None:
                from azure.ai.ml import MLClient
                options = self._target.client_options
                # No usage telemetry unless the caller asks for it; no progress bars in a library.
                options.setdefault("enable_telemetry", False)
                options.setdefault("show_progress", False)
                self._ml = MLClient(self._target.credential(), self._target.subscription_id,
                                    self._target.resource_group, self._target.workspace, **options)
            return self._ml

    def close(self) -> None:
        self._ml = None

    # -- scope ----------------------------------------------------------------------------------
    def _check_scope(self, resource_group: str, workspace: str) -> None:
        """An azureml target works in one workspace; naming another is a mistake, not a lookup."""
        if resource_group.lower() != str(self._target.resource_group).lower():
            raise InvalidSpecError("resource_group", f"{resource_group!r} is not the target's resource group",
                                   f"{self._target.resource_group!r} (Target.azureml(..., resource_group, ...))")
        if workspace.lower() != str(self._target.workspace).lower():
            raise InvalidSpecError("workspace", f"{workspace!r} is not the target's Azure ML workspace",
                                   f"{self._target.workspace!r} (Target.azureml(..., workspace))")

    def workspace_id(self, resource_group: str, name: str) -> str:
        return (f"/subscriptions/{self._target.subscription_id}/resourceGroups/{resource_group}"
                f"/providers/Microsoft.MachineLearningServices/workspaces/{name}")

    # -- workspaces -----------------------------------------------------------------------------
    def get_workspace(self, resource_group: str, name: str) -> WorkspaceRecord:
        self._check_scope(resource_group, name)
        with azure_errors("reading workspace", self.workspace_id(resource_group, name)):
            entity = self.ml.workspaces.get(name)
        return WorkspaceRecord(resource_group=resource_group, name=name, location=str(entity.location or ""))

    def begin_create_workspace(self, resource_group: str, name: str, location: Optional[str], *,
                               continuation_token: Optional[str] = None) -> "LROPoller[WorkspaceRecord]":
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
        if resource_group is not None and resource_group.lower() != str(self._target.resource_group).lower():
            return []
        return [self.get_workspace(str(self._target.resource_group), str(self._target.workspace))]

    def begin_delete_workspace(self, resource_group: str, name: str, *,
                               continuation_token: Optional[str] = None) -> "LROPoller[None]":
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
        arm.ensure_resource_group(self._target, resource_group, location)

    def begin_delete_resource_group(self, resource_group: str, *,
                                    continuation_token: Optional[str] = None) -> "LROPoller[None]":
        return arm.begin_delete_resource_group(self._target, resource_group, continuation_token=continuation_token)

    def usages(self, location: str) -> List[Usage]:
        with azure_errors("listing usages in", location):
            items: List[Any] = list(self.ml.compute.list_usage(location=location))
        return [Usage(name=str(getattr(u.name, "value", u.name) or ""), current_value=int(u.current_value or 0),
                      limit=int(u.limit or 0), unit=str(getattr(u, "unit", None) or "Count")) for u in items]

    # -- experiments: Azure ML makes one with the first job that names it -----------------------
    def experiment_id(self, resource_group: str, workspace: str, name: str) -> str:
        return f"{self.workspace_id(resource_group, workspace)}/experiments/{name}"

    def begin_create_experiment(self, resource_group: str, workspace: str, name: str, *,
                                continuation_token: Optional[str] = None) -> "LROPoller[None]":
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
                                continuation_token: Optional[str] = None) -> "LROPoller[None]":
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
        """The compute (allocation state, errors) with node counts from its node list."""
        self._check_scope(ref.resource_group, ref.workspace)
        with azure_errors("reading cluster", self.cluster_id(ref)):
            resource = self._raw_get(ref)
            nodes = list(self.ml.compute.list_nodes(ref.name))
        return self._record(ref, resource, nodes)

    def _resume_compute_update(self, ref: ClusterRef, token: str) -> Any:
        # Below azure-ai-ml's public surface: its compute pollers give continuation tokens, but
        # only its generated client takes them back (the same PUT's polling).
        return self.ml.compute._operation.begin_create_or_update(ref.resource_group, ref.workspace, ref.name,
                                                                 {}, continuation_token=token)

    def begin_create_cluster(self, ref: ClusterRef, spec: ClusterSpec, *,
                             continuation_token: Optional[str] = None) -> "LROPoller[ClusterRecord]":
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
                            existing: ClusterRecord) -> "LROPoller[ClusterRecord]":
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
                             continuation_token: Optional[str] = None) -> "LROPoller[None]":
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
                            continuation_token: Optional[str] = None) -> "LROPoller[ClusterRecord]":
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

    def check_job_spec(self, spec: HorovodJob, cluster: ClusterRecord) -> None:
        # The name is checked with the spec: Azure ML's rule is stricter than Batch AI's.
        check_job_spec(spec, "job")

    def check_job_storage(self, spec: HorovodJob) -> None:
        """Each mounted share must be registered as a datastore (FileShare.create/get does it).
        A share this process registered is known; any other is looked up (a read)."""
        for i, mount in enumerate(spec.mounts):
            if not isinstance(mount, AzureFileShareMount):
                continue
            name = datastore_name(mount.account_name, mount.share_name)
            if name in self._registered:
                continue
            try:
                with azure_errors("reading datastore", name):
                    self.ml.datastores.get(name)
            except NotFoundError:
                raise spec.field_error(f"mounts[{i}]", f"share {mount.share_name!r} of storage account "
                                       f"{mount.account_name!r} is not registered in workspace "
                                       f"{self._target.workspace!r} (no datastore {name!r})",
                                       "a share from FileShare.create(...) or FileShare.get(...), which "
                                       "registers it") from None
            self._registered.add(name)

    def _job_record(self, ref: JobRef, entity: Any) -> JobRecord:
        errors: tuple[ServiceErrorDetail, ...] = ()
        if str(getattr(entity.status, "value", entity.status) or "") == "Failed":  # not Canceled: no error to read
            errors = self._run_errors(ref.name)
        properties = dict(getattr(entity, "properties", None) or {})
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
        # client (found through the workspace's discoveryUrl) is what it reads the logs with.
        return self.ml.jobs._runs_operations.get_run_details(name)

    def _get_entity(self, ref: JobRef) -> Any:
        self._check_scope(ref.resource_group, ref.workspace)
        with azure_errors("reading job", self.job_id(ref)):
            entity = self.ml.jobs.get(ref.name)
        if str(getattr(entity, "experiment_name", "") or "") != ref.experiment:
            raise NotFoundError(f"job {ref.name!r} is in experiment {entity.experiment_name!r}, not "
                                f"{ref.experiment!r} (Azure ML job names are unique in the workspace)",
                                resource=self.job_id(ref))
        return entity

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
                         continuation_token: Optional[str] = None) -> "LROPoller[JobRecord]":
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
            from ..batchai import check_same_job  # secrets are refused here, so what it shows is all there is
            check_same_job(existing, spec, cluster.id)
            log.info("job %s exists with these settings; returning it instead of submitting again", existing.id)
            return DonePoller(existing, action=action, resource=resource)
        context = None
        if spec.container_image:
            from azure.ai.ml.entities import Environment
            environment = Environment(image=spec.container_image)
        else:
            from azure.ai.ml.entities import BuildContext, Environment
            from .environment import DOCKERFILE, build_context
            context = build_context()
            # Named although it is the service's default: the build is the package's Dockerfile.
            environment = Environment(build=BuildContext(path=str(context), dockerfile_path=DOCKERFILE.name))
        entity = command_job_entity(spec, job_name=ref.name, experiment=ref.experiment, compute=cluster.name,
                                    environment=environment)
        log.info("submitting Azure ML job %s to %s (%d node(s) x %d process(es))", ref.name, cluster.name,
                 spec.node_count, (spec.process_count or spec.node_count) // spec.node_count)
        try:
            with azure_errors("submitting job", self.job_id(ref)):
                created = self.ml.jobs.create_or_update(entity)
        finally:
            if context is not None:
                shutil.rmtree(context.parent, ignore_errors=True)
        return DonePoller(self._job_record(ref, created), action=action, resource=resource)

    def list_jobs(self, resource_group: str, workspace: str, experiment: str) -> List[JobRecord]:
        self._check_scope(resource_group, workspace)
        with azure_errors("listing jobs in", self.experiment_id(resource_group, workspace, experiment)):
            items = [j for j in self.ml.jobs.list() if getattr(j, "experiment_name", None) == experiment]
        return [self._job_record(JobRef(resource_group, workspace, experiment, str(j.name)), j) for j in items]

    def begin_delete_job(self, ref: JobRef, *, continuation_token: Optional[str] = None) -> "LROPoller[None]":
        self._check_scope(ref.resource_group, ref.workspace)
        action, resource = "deleting job", self.job_id(ref)
        inner = None
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                return DonePoller(None, action=action, resource=resource)
        with azure_errors(action, resource):
            try:
                poller = self.ml.jobs.begin_delete(ref.name, **({"continuation_token": inner} if inner else {}))
            except ResourceNotFoundError:
                return DonePoller(None, action=action, resource=resource)
        return MappedPoller(poller, lambda _: None, action=action, resource=resource)

    def begin_terminate_job(self, ref: JobRef, *,
                            continuation_token: Optional[str] = None) -> "LROPoller[None]":
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
        combined log, the file Batch AI's stdout.txt was. The service sets the links' lifetime."""
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
        return list(entries.values())

    def open_output(self, url: str) -> RemoteFile:
        from azure.storage.blob import BlobClient
        self._target.check_data_url(url.split("?", 1)[0], "the log's download URL")
        return _Blob(BlobClient.from_blob_url(url, **self._target.data_plane_options()))

    # -- storage --------------------------------------------------------------------------------
    def register_share(self, account_name: str, share_name: str, account_key: str) -> None:
        """An AzureFile datastore for the share, with the account key (Azure ML keeps it in the
        workspace's key vault), so that jobs can mount it."""
        from azure.ai.ml.entities import AccountKeyConfiguration, AzureFileDatastore
        name = datastore_name(account_name, share_name)
        datastore = AzureFileDatastore(name=name, account_name=account_name, file_share_name=share_name,
                                       description=f"horovod-batchai: file share {share_name} of {account_name}",
                                       credentials=AccountKeyConfiguration(account_key=account_key))
        with azure_errors("registering datastore", name):
            self.ml.datastores.create_or_update(datastore)
        log.info("registered file share %s/%s as datastore %s", account_name, share_name, name)
        self._registered.add(name)


def _compute_type(resource: Any) -> str:
    kind = getattr(getattr(resource, "properties", None), "compute_type", None)
    return str(getattr(kind, "value", kind) or "")
