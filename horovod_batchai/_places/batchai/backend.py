"""Batch AI (api-version 2018-05-01) through azure-mgmt-batchai: the local service and Azure.

Both targets get byte-for-byte the same requests; only the endpoint and the credential differ
(see :class:`Target`). Conversions to and from the generated models are in :mod:`.._conversions`.
"""
from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Sequence

from azure.core.exceptions import AzureError, ClientAuthenticationError, HttpResponseError, ResourceNotFoundError
from azure.core.polling import LROPoller

from ..._models.cluster_spec import AutoScale, ClusterSpec
from .conversions import (CLUSTER_SECRET_FIELDS, SECRET_FIELDS, cluster_differences, cluster_maximum_nodes,
                            cluster_status_from_rest, cluster_to_rest, conflict_from_service, job_from_rest,
                            job_status_from_rest, job_to_rest, mounts_from_rest, scale_to_rest)
from ..._models.constants import DEALLOCATION_OPTIONS, STDOUTERR
from ..._models.errors import ConflictError, InvalidSpecError, NotFoundError, azure_errors
from ..._models.job_spec import HorovodJob
from ..._shared.lro import DonePoller, MappedPoller, begin_delete, resume_token
from ..._models.mounts import AzureBlobMount, AzureFileShareMount
from ..._models.names import check_directory_id
from ..retry import IDEMPOTENT_POST
from ..._models.values import OutputFile, RemoteLogin, Usage
from .. import arm
from ..base import RemoteFile, ShareFile
from ..._models.records import ClusterRecord, ClusterRef, JobRecord, JobRef, WorkspaceRecord

if TYPE_CHECKING:
    from azure.mgmt.batchai import models

    from ..._target import Target

__all__ = ["BatchAIBackend"]

log = logging.getLogger(__name__)

#: where Batch AI workspaces (and their resource groups) go unless told otherwise, as before
DEFAULT_LOCATION = "eastus"


class BatchAIBackend:
    """The Batch AI REST API, on the local service or on Azure."""

    failure_log_name = "stderr.txt"

    def __init__(self, target: "Target") -> None:
        self._target = target
        self.kind = target.kind
        # Short locally; about what `az batchai job wait` used on Azure.
        self.default_poll_interval = 0.25 if target.is_local else 15.0

    @property
    def _client(self) -> Any:  # azure-mgmt-batchai's hints miss the paged results and per-call options
        return self._target.batchai()

    def close(self) -> None:
        pass  # the clients belong to the Target, which closes them

    # -- workspaces -----------------------------------------------------------------------------
    def workspace_id(self, resource_group: str, name: str) -> str:
        return (f"/subscriptions/{self._target.subscription_id}/resourceGroups/{resource_group}"
                f"/providers/Microsoft.BatchAI/workspaces/{name}")

    @staticmethod
    def _workspace_record(model: Any, resource_group: str, name: str) -> WorkspaceRecord:
        return WorkspaceRecord(resource_group=resource_group, name=name, location=str(model.location or ""))

    def get_workspace(self, resource_group: str, name: str) -> WorkspaceRecord:
        with azure_errors("reading workspace", self.workspace_id(resource_group, name)):
            model = self._client.workspaces.get(resource_group, name)
        return self._workspace_record(model, resource_group, name)

    def begin_create_workspace(self, resource_group: str, name: str, location: Optional[str], *,
                               continuation_token: Optional[str] = None) -> "LROPoller[WorkspaceRecord]":
        action, resource = "creating workspace", self.workspace_id(resource_group, name)
        inner = None
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                return DonePoller(self.get_workspace(resource_group, name), action=action, resource=resource)
        else:
            location = location or DEFAULT_LOCATION
            self.ensure_resource_group(resource_group, location)
        with azure_errors(action, resource):
            if inner is None:
                try:
                    model = self._client.workspaces.get(resource_group, name)
                    log.info("workspace %s exists; using it", resource)
                    return DonePoller(self._workspace_record(model, resource_group, name), action=action,
                                      resource=resource)
                except ResourceNotFoundError:
                    pass
                log.info("creating workspace %s in %s", resource, location)
            from azure.mgmt.batchai import models as batchai_models
            poller = self._client.workspaces.begin_create(
                resource_group, name, batchai_models.WorkspaceCreateParameters(location=location or DEFAULT_LOCATION),
                continuation_token=inner)
        return MappedPoller(poller, lambda m: self._workspace_record(m, resource_group, name), action=action,
                            resource=resource)

    def list_workspaces(self, resource_group: Optional[str]) -> List[WorkspaceRecord]:
        scope = f"/subscriptions/{self._target.subscription_id}" + (
            f"/resourceGroups/{resource_group}" if resource_group else "")
        with azure_errors("listing workspaces in", scope):
            if resource_group is not None:
                items: List[Any] = list(self._client.workspaces.list_by_resource_group(resource_group))
            else:
                items = list(self._client.workspaces.list())  # type: ignore[arg-type]
        return [self._workspace_record(m, arm.resource_group_of(m.id or ""), m.name or "") for m in items]

    def begin_delete_workspace(self, resource_group: str, name: str, *,
                               continuation_token: Optional[str] = None) -> "LROPoller[None]":
        resource = self.workspace_id(resource_group, name)
        return begin_delete("deleting workspace", resource, continuation_token,
                            lambda **kw: self._client.workspaces.begin_delete(resource_group, name, **kw))

    def ensure_resource_group(self, resource_group: str, location: str) -> None:
        arm.ensure_resource_group(self._target, resource_group, location)

    def begin_delete_resource_group(self, resource_group: str, *,
                                    continuation_token: Optional[str] = None) -> "LROPoller[None]":
        return arm.begin_delete_resource_group(self._target, resource_group, continuation_token=continuation_token)

    def usages(self, location: str) -> List[Usage]:
        with azure_errors("listing usages in", location):
            items: List[Any] = list(self._client.usages.list(location))
        return usages_from_rest(items)

    # -- experiments ----------------------------------------------------------------------------
    def experiment_id(self, resource_group: str, workspace: str, name: str) -> str:
        return f"{self.workspace_id(resource_group, workspace)}/experiments/{name}"

    def begin_create_experiment(self, resource_group: str, workspace: str, name: str, *,
                                continuation_token: Optional[str] = None) -> "LROPoller[None]":
        action, resource = "creating experiment", self.experiment_id(resource_group, workspace, name)
        inner = None
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                self.get_experiment(resource_group, workspace, name)
                return DonePoller(None, action=action, resource=resource)
        with azure_errors(action, resource):
            if inner is None:
                try:
                    self._client.experiments.get(resource_group, workspace, name)
                    log.info("experiment %s exists; using it", resource)
                    return DonePoller(None, action=action, resource=resource)
                except ResourceNotFoundError:
                    log.info("creating experiment %s", resource)
            poller = self._client.experiments.begin_create(resource_group, workspace, name, continuation_token=inner)
        return MappedPoller(poller, lambda _: None, action=action, resource=resource)

    def get_experiment(self, resource_group: str, workspace: str, name: str) -> None:
        with azure_errors("reading experiment", self.experiment_id(resource_group, workspace, name)):
            self._client.experiments.get(resource_group, workspace, name)

    def list_experiments(self, resource_group: str, workspace: str) -> List[str]:
        with azure_errors("listing experiments in", self.workspace_id(resource_group, workspace)):
            items: List[Any] = list(self._client.experiments.list_by_workspace(resource_group, workspace))
        return [m.name or "" for m in items]

    def begin_delete_experiment(self, resource_group: str, workspace: str, name: str, *,
                                continuation_token: Optional[str] = None) -> "LROPoller[None]":
        return begin_delete("deleting experiment", self.experiment_id(resource_group, workspace, name),
                            continuation_token,
                            lambda **kw: self._client.experiments.begin_delete(resource_group, workspace, name, **kw))

    # -- clusters -------------------------------------------------------------------------------
    def cluster_id(self, ref: ClusterRef) -> str:
        return f"{self.workspace_id(ref.resource_group, ref.workspace)}/clusters/{ref.name}"

    def check_cluster_spec(self, spec: ClusterSpec) -> None:
        if spec.auto_scale is not None and spec.auto_scale.idle_time_before_scale_down is not None:
            raise InvalidSpecError("auto_scale.idle_time_before_scale_down", "Batch AI has no such setting",
                                   "None (Batch AI scales down as the job queue empties)")

    def _cluster_record(self, model: "models.Cluster", ref: ClusterRef) -> ClusterRecord:
        setup = model.node_setup
        users = model.user_account_settings
        return ClusterRecord(
            name=ref.name, id=self.cluster_id(ref), vm_size=str(model.vm_size or ""),
            maximum_node_count=cluster_maximum_nodes(model),
            mounts=mounts_from_rest(setup.mount_volumes if setup else None),
            status=cluster_status_from_rest(model, resource_group=ref.resource_group, workspace=ref.workspace),
            ssh_public_key=users.admin_user_ssh_public_key if users else None, raw=model)

    def get_cluster(self, ref: ClusterRef) -> ClusterRecord:
        with azure_errors("reading cluster", self.cluster_id(ref)):
            model = self._client.clusters.get(ref.resource_group, ref.workspace, ref.name)
        return self._cluster_record(model, ref)

    cluster_status = get_cluster

    def find_cluster(self, ref: ClusterRef) -> Optional[ClusterRecord]:
        with azure_errors("reading cluster", self.cluster_id(ref)):
            try:
                model = self._client.clusters.get(ref.resource_group, ref.workspace, ref.name)
            except ResourceNotFoundError:
                return None
        return self._cluster_record(model, ref)

    def begin_create_cluster(self, ref: ClusterRef, spec: ClusterSpec, *,
                             continuation_token: Optional[str] = None) -> "LROPoller[ClusterRecord]":
        action, resource = "creating cluster", self.cluster_id(ref)
        inner = None
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                return DonePoller(self.get_cluster(ref), action=action, resource=resource)
        with azure_errors(action, resource):
            poller = self._client.clusters.begin_create(ref.resource_group, ref.workspace, ref.name,
                                                        None if inner else cluster_to_rest(spec),
                                                        continuation_token=inner)
        return MappedPoller(poller, lambda m: self._cluster_record(m, ref), action=action, resource=resource)

    def begin_reuse_cluster(self, ref: ClusterRef, spec: ClusterSpec,
                            existing: ClusterRecord) -> "LROPoller[ClusterRecord]":
        """What the service shows is compared here; the admin password, keys and secret values it
        never shows, so the same request is sent again and the service, which holds them, answers
        409 when they differ."""
        resource = self.cluster_id(ref)
        check_reusable_cluster(spec, existing, resource)
        with azure_errors("creating cluster", resource), refused_as_conflict(f"cluster {resource}", resource,
                                                                            CLUSTER_SECRET_FIELDS, CLUSTER_HINT):
            poller = self._client.clusters.begin_create(ref.resource_group, ref.workspace, ref.name,
                                                        cluster_to_rest(spec))
        return MappedPoller(poller, lambda m: self._cluster_record(m, ref), action="creating cluster",
                            resource=resource)

    def list_clusters(self, resource_group: str, workspace: str) -> List[ClusterRecord]:
        with azure_errors("listing clusters in", self.workspace_id(resource_group, workspace)):
            items: List[Any] = list(self._client.clusters.list_by_workspace(resource_group, workspace))
        return [self._cluster_record(m, ClusterRef(resource_group, workspace, m.name or "")) for m in items]

    def begin_delete_cluster(self, ref: ClusterRef, *,
                             continuation_token: Optional[str] = None) -> "LROPoller[None]":
        return begin_delete("deleting cluster", self.cluster_id(ref), continuation_token,
                            lambda **kw: self._client.clusters.begin_delete(ref.resource_group, ref.workspace,
                                                                            ref.name, **kw))

    def begin_scale_cluster(self, ref: ClusterRef, *, target_node_count: Optional[int] = None,
                            auto_scale: Optional[AutoScale] = None, deallocation_option: Optional[str] = None,
                            known: Optional[ClusterRecord] = None,
                            continuation_token: Optional[str] = None) -> "LROPoller[ClusterRecord]":
        """One PATCH, which Batch AI answers at once: the poller is finished when it returns (nodes
        then come and go; the caller watches the cluster's state). Resuming has nothing to resend."""
        action, resource = "updating cluster", self.cluster_id(ref)
        if continuation_token is not None:
            resume_token(continuation_token, action=action, resource=resource)
            return DonePoller(self.get_cluster(ref), action=action, resource=resource)
        update = scale_update(target_node_count, auto_scale, deallocation_option)
        with azure_errors(action, resource):
            # A scale PATCH sets absolute values, so repeating it after a dropped connection is safe.
            model = self._client.clusters.update(ref.resource_group, ref.workspace, ref.name, update,
                                                 **IDEMPOTENT_POST)
        return DonePoller(self._cluster_record(model, ref), action=action, resource=resource)

    def remote_logins(self, ref: ClusterRef) -> List[RemoteLogin]:
        with azure_errors("listing remote login information of", self.cluster_id(ref)):
            items = list(self._client.clusters.list_remote_login_information(
                ref.resource_group, ref.workspace, ref.name, **IDEMPOTENT_POST))
        return remote_logins_from_rest(items)

    # -- jobs -----------------------------------------------------------------------------------
    def job_id(self, ref: JobRef) -> str:
        return f"{self.experiment_id(ref.resource_group, ref.workspace, ref.experiment)}/jobs/{ref.name}"

    def _args(self, ref: JobRef) -> tuple[str, str, str, str]:
        return ref.resource_group, ref.workspace, ref.experiment, ref.name

    def _job_record(self, model: "models.Job", ref: JobRef) -> JobRecord:
        return JobRecord(name=ref.name, id=self.job_id(ref), status=job_status_from_rest(model),
                         cluster_id=getattr(getattr(model, "cluster", None), "id", "") or "",
                         read_spec=lambda: job_from_rest(model), raw=model)

    def check_submission(self, spec: HorovodJob, cluster: ClusterRecord) -> None:
        self.check_submission_spec(spec, cluster)
        self._check_job_storage(spec)

    def check_submission_spec(self, spec: HorovodJob, cluster: ClusterRecord) -> None:
        """The checks of :meth:`check_submission` that make no request (the aio backend's too)."""
        spec.check_resolved()
        spec.check_cluster(cluster.id, cluster.name, cluster.maximum_node_count)
        self._check_job_spec(spec, cluster)

    def _check_job_spec(self, spec: HorovodJob, cluster: ClusterRecord) -> None:
        spec.check_paths_against(cluster.mounts)
        for i, mount in enumerate(spec.mounts):
            if isinstance(mount, AzureBlobMount) and (mount.sas_token or not mount.account_key):
                raise spec.field_error(f"mounts[{i}]", f"Batch AI mounts blob container {mount.container_name!r} "
                                       "with the storage account's key" + (", not a SAS token" if mount.sas_token
                                                                           else "; none is given"),
                                       "AzureBlobMount(..., account_key=...) or spec.with_storage(...)",
                                       "credentials.accountKey, or the storage account given when loading the file "
                                       "(HorovodJob.from_file(..., storage=share), or --storage-account-name)")

    def _check_job_storage(self, spec: HorovodJob) -> None:
        """Every mounted file share must exist and take its key (a read; nothing is created).
        Blob containers are not checked: that would need the blob data plane client."""
        target = self._target
        for i, mount in enumerate(spec.mounts):
            if not isinstance(mount, AzureFileShareMount) or mount.account_key is None:
                continue
            service = target.share_service(target.default_file_endpoint(mount.account_name), mount.account_key)
            try:
                with share_check_errors(spec, i, mount):
                    service.get_share_client(mount.share_name).get_share_properties()
            finally:
                service.close()

    def find_job(self, ref: JobRef) -> Optional[JobRecord]:
        with azure_errors("reading job", self.job_id(ref)):
            try:
                model = self._client.jobs.get(*self._args(ref))
            except ResourceNotFoundError:
                return None
        return self._job_record(model, ref)

    def job_experiment(self, resource_group: str, workspace: str, name: str) -> str:
        for experiment in self.list_experiments(resource_group, workspace):
            if self.find_job(JobRef(resource_group, workspace, experiment, name)) is not None:
                return experiment
        resource = f"{self.workspace_id(resource_group, workspace)}/experiments/*/jobs/{name}"
        raise NotFoundError(f"no experiment of workspace {workspace!r} has a job {name!r}", resource=resource)

    def get_job(self, ref: JobRef) -> JobRecord:
        with azure_errors("reading job", self.job_id(ref)):
            model = self._client.jobs.get(*self._args(ref))
        return self._job_record(model, ref)

    def begin_submit_job(self, ref: JobRef, spec: HorovodJob, cluster: Optional[ClusterRecord], *,
                         continuation_token: Optional[str] = None) -> "LROPoller[JobRecord]":
        action, resource = "submitting job", self.job_id(ref)
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                return DonePoller(self.get_job(ref), action=action, resource=resource)
            with azure_errors(action, resource):
                poller = self._client.jobs.begin_create(*self._args(ref), None, continuation_token=inner)
            return MappedPoller(poller, lambda m: self._job_record(m, ref), action=action, resource=resource)
        assert cluster is not None
        existing = self.find_job(ref)
        if existing is not None:
            resubmitted = self._resubmit(ref, spec, cluster, existing)
            log.info("job %s exists with these settings; returning it instead of submitting again", resource)
            return resubmitted
        log.info("submitting job %s to cluster %s (%d node(s))", resource, cluster.name, spec.node_count)
        with azure_errors(action, resource):
            poller = self._client.jobs.begin_create(*self._args(ref), job_to_rest(spec, cluster_id=cluster.id))
        return MappedPoller(poller, lambda m: self._job_record(m, ref), action=action, resource=resource)

    def _resubmit(self, ref: JobRef, spec: HorovodJob, cluster: ClusterRecord,
                  existing: JobRecord) -> "LROPoller[JobRecord]":
        """A repeated submit (a retry, a re-run cell) returns the job that exists; a different job
        under the same name is a mistake the caller must see, not a silent reuse. What the service
        shows is compared here. Secret values and keys it never shows, so the same request is sent
        again: the service holds them, and answers 409 when they differ; for an identical request
        it changes nothing."""
        secret_names = [s.name for s in getattr(existing.raw, "secrets", None) or []]
        check_same_job(existing, spec, cluster.id, other_secret_names=secret_names)
        resource = self.job_id(ref)
        with azure_errors("submitting job", resource), refused_as_conflict(f"job {ref.name!r}", resource,
                                                                          SECRET_FIELDS, RESUBMIT_HINT):
            poller = self._client.jobs.begin_create(*self._args(ref), job_to_rest(spec, cluster_id=cluster.id))
        return MappedPoller(poller, lambda m: self._job_record(m, ref), action="submitting job", resource=resource)

    def list_jobs(self, resource_group: str, workspace: str, experiment: str) -> List[JobRecord]:
        with azure_errors("listing jobs in", self.experiment_id(resource_group, workspace, experiment)):
            items: List[Any] = list(self._client.jobs.list_by_experiment(resource_group, workspace, experiment))
        return [self._job_record(m, JobRef(resource_group, workspace, experiment, m.name or "")) for m in items]

    def begin_delete_job(self, ref: JobRef, *, continuation_token: Optional[str] = None) -> "LROPoller[None]":
        return begin_delete("deleting job", self.job_id(ref), continuation_token,
                            lambda **kw: self._client.jobs.begin_delete(*self._args(ref), **kw))

    def begin_terminate_job(self, ref: JobRef, *,
                            continuation_token: Optional[str] = None) -> "LROPoller[None]":
        action, resource = "terminating job", self.job_id(ref)
        inner = None
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                return DonePoller(None, action=action, resource=resource)
        with azure_errors(action, resource):
            log.info("terminating job %s", resource)
            # terminate is idempotent, so it may be repeated after a dropped connection
            poller = self._client.jobs.begin_terminate(*self._args(ref), continuation_token=inner, **IDEMPOTENT_POST)
        return MappedPoller(poller, lambda _: None, action=action, resource=resource)

    def list_output_files(self, ref: JobRef, output_directory_id: str, directory: str,
                          link_expiry_minutes: int) -> List[OutputFile]:
        options = output_files_options(output_directory_id, directory, link_expiry_minutes)
        with azure_errors("listing output files of", f"{self.job_id(ref)} ({output_directory_id}/{directory})"):
            items = list(self._client.jobs.list_output_files(*self._args(ref), options, **IDEMPOTENT_POST))
        return output_files_from_rest(items)

    def open_output(self, url: str) -> RemoteFile:
        return ShareFile(self._target.file_from_sas_url(url))

    # -- storage --------------------------------------------------------------------------------
    def check_share_datastore(self, account_name: str, share_name: str) -> None:
        pass  # a Batch AI job names the share and its key itself: there is nothing in between

    def register_share(self, account_name: str, share_name: str, account_key: str) -> None:
        pass  # a Batch AI job names the share and its key itself


RESUBMIT_HINT = "submit under a new name, or delete the old job first"
CLUSTER_HINT = "delete it or choose another name"


# -- what the sync and the async (horovod_batchai.aio) backends share: no request here --------
def usages_from_rest(items: List[Any]) -> List[Usage]:
    return [Usage(name=str(u.name.value if u.name else ""), current_value=int(u.current_value or 0),
                  limit=int(u.limit or 0), unit=str(getattr(u.unit, "value", u.unit) or "Count")) for u in items]


def remote_logins_from_rest(items: List[Any]) -> List[RemoteLogin]:
    return [RemoteLogin(node_id=i.node_id or "", ip_address=i.ip_address or "", port=int(i.port or 22))
            for i in items]


def check_reusable_cluster(spec: ClusterSpec, existing: ClusterRecord, resource: str) -> None:
    """ConflictError naming the settings the service shows in which ``existing`` is not ``spec``."""
    differs = cluster_differences(spec, existing.raw)
    if differs:
        raise ConflictError(f"cluster {resource} exists with other settings ({', '.join(differs)}); {CLUSTER_HINT}",
                            resource=resource)


@contextmanager
def refused_as_conflict(what: str, resource: str, secret_fields: Any, hint: str) -> Iterator[None]:
    """A 409 to a repeated create (settings the service holds but never shows differ) as a
    ConflictError naming them."""
    try:
        yield
    except HttpResponseError as err:
        if err.status_code != 409:
            raise
        raise conflict_from_service(what, resource, err, secret_fields, hint) from err


def scale_update(target_node_count: Optional[int], auto_scale: Optional[AutoScale],
                 deallocation_option: Optional[str]) -> "models.ClusterUpdateParameters":
    """The PATCH body of a scale request, its options checked first."""
    if auto_scale is not None and auto_scale.idle_time_before_scale_down is not None:
        raise InvalidSpecError("auto_scale.idle_time_before_scale_down", "Batch AI has no such setting",
                               "None (Batch AI scales down as the job queue empties)")
    option = deallocation_option or "requeue"
    if option not in DEALLOCATION_OPTIONS:
        raise InvalidSpecError("deallocation_option", f"{option!r} is not an option", " | ".join(DEALLOCATION_OPTIONS))
    from azure.mgmt.batchai import models
    scale = scale_to_rest(target_node_count=target_node_count, auto_scale=auto_scale, deallocation_option=option)
    return models.ClusterUpdateParameters(scale_settings=scale)


@contextmanager
def share_check_errors(spec: HorovodJob, index: int, mount: AzureFileShareMount) -> Iterator[None]:
    """What reading a mounted share's properties can answer, as the error naming the mount."""
    try:
        yield
    except ResourceNotFoundError:
        raise spec.field_error(f"mounts[{index}]", f"share {mount.share_name!r} does not exist in storage "
                               f"account {mount.account_name!r}",
                               "an existing share (FileShare.create(...) makes one)") from None
    except ClientAuthenticationError:
        raise spec.field_error(f"mounts[{index}]", f"storage account {mount.account_name!r} refused the key",
                               "the account's current key (FileShare.mount() fetches it)") from None
    except AzureError as err:
        with azure_errors("checking share", f"{mount.account_name}/{mount.share_name}"):
            raise err


def output_files_options(output_directory_id: str, directory: str,
                         link_expiry_minutes: int) -> "models.JobsListOutputFilesOptions":
    from azure.mgmt.batchai import models
    if output_directory_id != STDOUTERR:
        check_directory_id(output_directory_id, "output_directory_id", kind="OUTPUT")
    return models.JobsListOutputFilesOptions(outputdirectoryid=output_directory_id, directory=directory,
                                             linkexpiryinminutes=link_expiry_minutes, max_results=1000)


def output_files_from_rest(items: List[Any]) -> List[OutputFile]:
    return [OutputFile(name=f.name or "", is_directory=str(getattr(f.file_type, "value", f.file_type)) == "directory",
                       size=f.content_length, last_modified=f.last_modified, download_url=f.download_url)
            for f in items]


def check_same_job(existing: JobRecord, spec: HorovodJob, cluster_id: str, *,
                   other_secret_names: Sequence[str] = ()) -> None:
    """ConflictError naming every setting (shown by the service) in which ``existing`` is not
    ``spec`` on ``cluster_id``."""
    differs = spec.differences(existing.read_spec(), other_secret_names=list(other_secret_names))
    if cluster_id.lower() != existing.cluster_id.lower():
        differs.append("cluster")
    if differs:
        raise ConflictError(f"job {existing.name!r} already exists with other settings ({', '.join(differs)}); "
                            f"{RESUBMIT_HINT}", resource=existing.id)
