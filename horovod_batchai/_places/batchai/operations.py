"""Batch AI (api-version 2018-05-01) through azure-mgmt-batchai: the local service and Azure.

Every operation is written here once, as steps (:mod:`horovod_batchai._shared.steps`): the sync
backend (:mod:`.backend`) runs them with Microsoft's sync clients, the aio one
(:mod:`.backend_async`) with their aio clients, so both send byte-for-byte the same requests. Both
targets do too; only the endpoint and the credential differ (see
:class:`horovod_batchai._places.connection.Connection`). Reading a job, the local service's sweeps
and MLflow's REST API go as JSON through the connection's ARM pipeline with the same policies
(:mod:`.rest`). Jobs convert to and from the generated models in
:mod:`horovod_batchai._models.job_json`, clusters in :mod:`.conversions`.
"""
from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, List, Mapping, Optional, Union

from azure.core.exceptions import AzureError, ClientAuthenticationError, HttpResponseError, ResourceNotFoundError

from ..._models.cluster_spec import AutoScale, ClusterSpec
from ..._models.constants import (DEALLOCATION_OPTIONS, DEFAULT_LOCATION, DEFAULT_POLL_INTERVAL, LOCAL_POLL_INTERVAL,
                                  STDOUTERR)
from ..._models.errors import ConflictError, InvalidSpecError, NotFoundError, TargetError, azure_errors
from ..._models.job_json import SECRET_FIELDS, job_from_json, job_to_properties, job_to_rest, mounts_from_rest
from ..._models.job_spec import HorovodJob
from ..._models.mlflow_run import Artifact, RunData
from ..._models.mounts import AzureBlobMount, AzureFileShareMount
from ..._models.names import check_directory_id
from ..._models.records import ClusterRecord, ClusterRef, JobRecord, JobRef, SweepRecord, WorkspaceRecord
from ..._models.values import OutputFile, RemoteLogin, Usage
from ..._shared.job import RESUBMIT_HINT, check_same_job
from ..._shared.lro import poll_options, resume_token
from ..._shared.steps import Done, Listed, Mapped, Steps, begin_delete
from .. import arm, mlflow
from ..base import IDEMPOTENT_POST
from ..storage import StorageAccountOperations
from .conversions import (CLUSTER_SECRET_FIELDS, cluster_differences, cluster_maximum_nodes, cluster_status_from_rest,
                          cluster_to_rest, conflict_from_service, job_status_from_json, output_files_from_json,
                          scale_to_rest)
from .rest import checked_json, json_request, listed_json
from .sweeps import sweep_record

if TYPE_CHECKING:
    from azure.mgmt.batchai import models

    from ..._models.sweep_job import SweepRequest
    from ..connection import Connection

__all__ = ["BatchAIOperations"]

log = logging.getLogger(__name__)

CLUSTER_HINT = "delete it or choose another name"


class BatchAIOperations(StorageAccountOperations):
    """The Batch AI REST API, on the local service or on Azure. Its generator methods are the
    operations (each ``yield`` a request); the rest make no request."""

    failure_log_name = "stderr.txt"

    def __init__(self, connection: "Connection") -> None:
        self._connection = connection
        self.kind = connection.kind
        # Short locally; about what `az batchai job wait` used on Azure.
        self.default_poll_interval = LOCAL_POLL_INTERVAL if connection.is_local else DEFAULT_POLL_INTERVAL

    @property
    def holds_sweeps(self) -> bool:
        """The local service holds and drives sweeps; Batch AI on Azure never had them."""
        return self._connection.is_local

    def _client(self) -> Any:  # azure-mgmt-batchai's hints miss the paged results and per-call options
        return self._connection.batchai()

    def _rest(self) -> Any:
        """The ARM pipeline for requests sent and read as JSON (:mod:`.rest`)."""
        return self._connection.batchai_rest()

    def close(self) -> "Steps[None]":
        return (yield None)  # the clients belong to the connection, which closes them

    # -- ids and checks (no request) ------------------------------------------------------------
    def workspace_id(self, resource_group: str, name: str) -> str:
        return f"{arm.resource_group_id(self._connection.subscription_id, resource_group)}" \
               f"/providers/Microsoft.BatchAI/workspaces/{name}"

    def experiment_id(self, resource_group: str, workspace: str, name: str) -> str:
        return f"{self.workspace_id(resource_group, workspace)}/experiments/{name}"

    def cluster_id(self, ref: ClusterRef) -> str:
        return f"{self.workspace_id(ref.resource_group, ref.workspace)}/clusters/{ref.name}"

    def job_id(self, ref: JobRef) -> str:
        return f"{self.experiment_id(ref.resource_group, ref.workspace, ref.experiment)}/jobs/{ref.name}"

    def check_cluster_spec(self, spec: ClusterSpec) -> None:
        if spec.auto_scale is not None and spec.auto_scale.idle_time_before_scale_down is not None:
            raise InvalidSpecError("auto_scale.idle_time_before_scale_down", "Batch AI has no such setting",
                                   "None (Batch AI scales down as the job queue empties)")

    @staticmethod
    def _workspace_record(doc: Mapping[str, Any], resource_group: str, name: str) -> WorkspaceRecord:
        return WorkspaceRecord(resource_group=resource_group, name=name, location=str(doc.get("location") or ""))

    def _cluster_record(self, model: "models.Cluster", ref: ClusterRef) -> ClusterRecord:
        setup = model.node_setup
        users = model.user_account_settings
        return ClusterRecord(
            name=ref.name, id=self.cluster_id(ref), vm_size=str(model.vm_size or ""),
            maximum_node_count=cluster_maximum_nodes(model),
            mounts=mounts_from_rest(setup.mount_volumes if setup else None),
            status=cluster_status_from_rest(model, resource_group=ref.resource_group, workspace=ref.workspace),
            ssh_public_key=users.admin_user_ssh_public_key if users else None, raw=model)

    def _job_record(self, job: "Union[models.Job, Mapping[str, Any]]", ref: JobRef) -> JobRecord:
        """The record of a job the service described: its JSON, or a generated client's model."""
        doc = job if isinstance(job, Mapping) else job.serialize(keep_readonly=True)
        return JobRecord(name=ref.name, id=self.job_id(ref), status=job_status_from_json(doc),
                         cluster_id=str(((doc.get("properties") or {}).get("cluster") or {}).get("id") or ""),
                         read_spec=lambda: job_from_json(HorovodJob, doc), raw=doc)

    @staticmethod
    def _args(ref: JobRef) -> tuple[str, str, str, str]:
        return ref.resource_group, ref.workspace, ref.experiment, ref.name

    # -- resource groups ------------------------------------------------------------------------
    def ensure_resource_group(self, resource_group: str, location: str) -> "Steps[None]":
        yield from arm.ensure_resource_group(self._connection, resource_group, location)

    def begin_delete_resource_group(self, resource_group: str, *,
                                    continuation_token: Optional[str] = None,
                                    polling_interval: Optional[float] = None) -> "Steps[Any]":
        return (yield from arm.begin_delete_resource_group(self._connection, resource_group,
                                                           continuation_token=continuation_token,
                                                           polling_interval=polling_interval))

    # -- workspaces -----------------------------------------------------------------------------
    def get_workspace(self, resource_group: str, name: str) -> "Steps[WorkspaceRecord]":
        resource = self.workspace_id(resource_group, name)
        rest = yield self._rest()
        with azure_errors("reading workspace", resource):
            response = yield rest.send_request(json_request(rest, "GET", resource))
            return self._workspace_record(checked_json(response, (200,)), resource_group, name)

    def begin_create_workspace(self, resource_group: str, name: str, location: Optional[str], *,
                               continuation_token: Optional[str] = None,
                               polling_interval: Optional[float] = None) -> "Steps[Any]":
        """Get-or-create: the resource group first when missing, then the workspace."""
        action, resource = "creating workspace", self.workspace_id(resource_group, name)
        client = yield self._client()
        location = location or DEFAULT_LOCATION
        inner = None
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                return (yield Done((yield from self.get_workspace(resource_group, name)), action, resource))
        else:
            yield from self.ensure_resource_group(resource_group, location)
        if inner is None:
            try:
                found = yield from self.get_workspace(resource_group, name)
                log.info("workspace %s exists; using it", resource)
                return (yield Done(found, action, resource))
            except NotFoundError:
                log.info("creating workspace %s in %s", resource, location)
        with azure_errors(action, resource):
            from azure.mgmt.batchai import models as batchai_models
            poller = yield client.workspaces.begin_create(
                resource_group, name, batchai_models.WorkspaceCreateParameters(location=location),
                continuation_token=inner, **poll_options(polling_interval))
        return (yield Mapped(poller, lambda m: self._workspace_record(m.serialize(keep_readonly=True), resource_group,
                                                                      name), action, resource))

    def list_workspaces(self, resource_group: Optional[str]) -> "Steps[List[WorkspaceRecord]]":
        rest = yield self._rest()
        scope = f"/subscriptions/{self._connection.subscription_id}" + (
            f"/resourceGroups/{resource_group}" if resource_group is not None else "")
        with azure_errors("listing workspaces in", scope):
            docs = yield from listed_json(rest, json_request(rest, "GET", f"{scope}/providers/Microsoft.BatchAI/workspaces"))
        return [self._workspace_record(d, arm.resource_group_of(str(d.get("id") or "")), str(d.get("name") or ""))
                for d in docs]

    def begin_delete_workspace(self, resource_group: str, name: str, *,
                               continuation_token: Optional[str] = None,
                               polling_interval: Optional[float] = None) -> "Steps[Any]":
        client = yield self._client()
        return (yield from begin_delete("deleting workspace", self.workspace_id(resource_group, name),
                                        continuation_token,
                                        lambda **kw: client.workspaces.begin_delete(resource_group, name, **kw),
                                        **poll_options(polling_interval)))

    def usages(self, location: str) -> "Steps[List[Usage]]":
        client = yield self._client()
        with azure_errors("listing usages in", location):
            items = yield Listed(client.usages.list(location))
        return usages_from_rest(items)

    # -- experiments ----------------------------------------------------------------------------
    def begin_create_experiment(self, resource_group: str, workspace: str, name: str, *,
                                continuation_token: Optional[str] = None,
                                polling_interval: Optional[float] = None) -> "Steps[Any]":
        action, resource = "creating experiment", self.experiment_id(resource_group, workspace, name)
        client = yield self._client()
        inner = None
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                yield from self.get_experiment(resource_group, workspace, name)
                return (yield Done(None, action, resource))
        with azure_errors(action, resource):
            if inner is None:
                try:
                    yield client.experiments.get(resource_group, workspace, name)
                    log.info("experiment %s exists; using it", resource)
                    return (yield Done(None, action, resource))
                except ResourceNotFoundError:
                    log.info("creating experiment %s", resource)
            poller = yield client.experiments.begin_create(resource_group, workspace, name, continuation_token=inner,
                                                           **poll_options(polling_interval))
        return (yield Mapped(poller, lambda _: None, action, resource))

    def get_experiment(self, resource_group: str, workspace: str, name: str) -> "Steps[None]":
        client = yield self._client()
        with azure_errors("reading experiment", self.experiment_id(resource_group, workspace, name)):
            yield client.experiments.get(resource_group, workspace, name)

    def list_experiments(self, resource_group: str, workspace: str) -> "Steps[List[str]]":
        client = yield self._client()
        with azure_errors("listing experiments in", self.workspace_id(resource_group, workspace)):
            items = yield Listed(client.experiments.list_by_workspace(resource_group, workspace))
        return [m.name or "" for m in items]

    def begin_delete_experiment(self, resource_group: str, workspace: str, name: str, *,
                                continuation_token: Optional[str] = None,
                                polling_interval: Optional[float] = None) -> "Steps[Any]":
        client = yield self._client()
        return (yield from begin_delete(
            "deleting experiment", self.experiment_id(resource_group, workspace, name), continuation_token,
            lambda **kw: client.experiments.begin_delete(resource_group, workspace, name, **kw),
            **poll_options(polling_interval)))

    # -- clusters -------------------------------------------------------------------------------
    def get_cluster(self, ref: ClusterRef) -> "Steps[ClusterRecord]":
        client = yield self._client()
        with azure_errors("reading cluster", self.cluster_id(ref)):
            model = yield client.clusters.get(ref.resource_group, ref.workspace, ref.name)
        return self._cluster_record(model, ref)

    cluster_status = get_cluster

    def find_cluster(self, ref: ClusterRef) -> "Steps[Optional[ClusterRecord]]":
        client = yield self._client()
        with azure_errors("reading cluster", self.cluster_id(ref)):
            try:
                model = yield client.clusters.get(ref.resource_group, ref.workspace, ref.name)
            except ResourceNotFoundError:
                return None
        return self._cluster_record(model, ref)

    def begin_create_cluster(self, ref: ClusterRef, spec: ClusterSpec, *,
                             continuation_token: Optional[str] = None,
                             polling_interval: Optional[float] = None) -> "Steps[Any]":
        action, resource = "creating cluster", self.cluster_id(ref)
        client = yield self._client()
        inner = None
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                return (yield Done((yield from self.get_cluster(ref)), action, resource))
        with azure_errors(action, resource):
            poller = yield client.clusters.begin_create(ref.resource_group, ref.workspace, ref.name,
                                                        None if inner else cluster_to_rest(spec),
                                                        continuation_token=inner,
                                                        **poll_options(polling_interval))
        return (yield Mapped(poller, lambda m: self._cluster_record(m, ref), action, resource))

    def begin_reuse_cluster(self, ref: ClusterRef, spec: ClusterSpec, existing: ClusterRecord, *,
                            polling_interval: Optional[float] = None) -> "Steps[Any]":
        """``existing`` if it has ``spec``'s settings; ConflictError naming the fields otherwise.
        What the service shows is compared here; the admin password, keys and secret values it
        never shows, so the same request is sent again and the service, which holds them, answers
        409 when they differ. The scale asked for is then set (the same PUT leaves an existing
        cluster's scale as it is), so the cluster is what the caller asked for."""
        action, resource = "creating cluster", self.cluster_id(ref)
        check_reusable_cluster(spec, existing, resource)
        client = yield self._client()
        with azure_errors(action, resource), refused_as_conflict(f"cluster {resource}", resource,
                                                                CLUSTER_SECRET_FIELDS, CLUSTER_HINT):
            poller = yield client.clusters.begin_create(ref.resource_group, ref.workspace, ref.name,
                                                        cluster_to_rest(spec), **poll_options(polling_interval))
        return (yield Mapped(poller, lambda m: self._scaled_as_asked(ref, spec, m), action, resource))

    def _scaled_as_asked(self, ref: ClusterRef, spec: ClusterSpec, model: Any) -> "Steps[ClusterRecord]":
        """The reused cluster, its scale set to ``spec``'s when it has another."""
        record = self._cluster_record(model, ref)
        asked = spec.auto_scale
        if (spec.target_node_count in (None, record.status.target_node_count) and
                (asked is None or (asked.minimum, asked.maximum) == record.status.auto_scale)):
            return record
        log.info("cluster %s exists at another scale; setting the one asked for (%s)", record.id,
                 f"{spec.target_node_count} node(s)" if asked is None else f"{asked.minimum}..{asked.maximum}")
        client = yield self._client()
        with azure_errors("updating cluster", record.id):
            model = yield client.clusters.update(ref.resource_group, ref.workspace, ref.name,
                                                 scale_update(spec.target_node_count, asked, None), **IDEMPOTENT_POST)
        return self._cluster_record(model, ref)

    def list_clusters(self, resource_group: str, workspace: str) -> "Steps[List[ClusterRecord]]":
        client = yield self._client()
        with azure_errors("listing clusters in", self.workspace_id(resource_group, workspace)):
            items = yield Listed(client.clusters.list_by_workspace(resource_group, workspace))
        return [self._cluster_record(m, ClusterRef(resource_group, workspace, m.name or "")) for m in items]

    def begin_delete_cluster(self, ref: ClusterRef, *, continuation_token: Optional[str] = None,
                             polling_interval: Optional[float] = None) -> "Steps[Any]":
        client = yield self._client()
        return (yield from begin_delete(
            "deleting cluster", self.cluster_id(ref), continuation_token,
            lambda **kw: client.clusters.begin_delete(ref.resource_group, ref.workspace, ref.name, **kw),
            **poll_options(polling_interval)))

    def begin_scale_cluster(self, ref: ClusterRef, *, target_node_count: Optional[int] = None,
                            auto_scale: Optional[AutoScale] = None, deallocation_option: Optional[str] = None,
                            known: Optional[ClusterRecord] = None,
                            continuation_token: Optional[str] = None,
                            polling_interval: Optional[float] = None) -> "Steps[Any]":
        """One PATCH, which Batch AI answers at once: the poller is finished when it returns (nodes
        then come and go; the caller watches the cluster's state). Resuming has nothing to resend."""
        action, resource = "updating cluster", self.cluster_id(ref)
        if continuation_token is not None:
            resume_token(continuation_token, action=action, resource=resource)
            return (yield Done((yield from self.get_cluster(ref)), action, resource))
        update = scale_update(target_node_count, auto_scale, deallocation_option)
        client = yield self._client()
        with azure_errors(action, resource):
            # A scale PATCH sets absolute values, so repeating it after a dropped connection is safe.
            model = yield client.clusters.update(ref.resource_group, ref.workspace, ref.name, update,
                                                 **IDEMPOTENT_POST)
        return (yield Done(self._cluster_record(model, ref), action, resource))

    def remote_logins(self, ref: ClusterRef) -> "Steps[List[RemoteLogin]]":
        client = yield self._client()
        with azure_errors("listing remote login information of", self.cluster_id(ref)):
            items = yield Listed(client.clusters.list_remote_login_information(
                ref.resource_group, ref.workspace, ref.name, **IDEMPOTENT_POST))
        return remote_logins_from_rest(items)

    # -- jobs -----------------------------------------------------------------------------------
    def check_submission(self, spec: HorovodJob, cluster: ClusterRecord) -> "Steps[None]":
        """Everything checked before a job is submitted: placeholders filled and keys given, the
        cluster able to give its nodes, paths inside a mount, and every mounted file share there
        and taking its key (a read; nothing is created). Blob containers are not checked: that
        would need the blob data plane client."""
        spec.check_resolved()
        spec.check_cluster(cluster.id, cluster.name, cluster.maximum_node_count)
        check_job_spec(spec, cluster)
        connection = self._connection
        for i, mount in enumerate(spec.mounts):
            if not isinstance(mount, AzureFileShareMount) or mount.account_key is None:
                continue
            service = yield connection.share_service(connection.default_file_endpoint(mount.account_name),
                                                     mount.account_key)
            try:
                with share_check_errors(spec, i, mount):
                    yield service.get_share_client(mount.share_name).get_share_properties()
            finally:
                yield service.close()

    def get_job(self, ref: JobRef) -> "Steps[JobRecord]":
        # read as JSON: showing a job needs none of azure-mgmt-batchai's models (nor their import)
        rest = yield self._rest()
        with azure_errors("reading job", self.job_id(ref)):
            response = yield rest.send_request(json_request(rest, "GET", self.job_id(ref)))
            return self._job_record(checked_json(response, (200,)), ref)

    def find_job(self, ref: JobRef) -> "Steps[Optional[JobRecord]]":
        try:
            return (yield from self.get_job(ref))
        except NotFoundError:
            return None

    def job_experiment(self, resource_group: str, workspace: str, name: str) -> "Steps[str]":
        """The experiment the job ``name`` is in; NotFoundError when there is no such job."""
        for experiment in (yield from self.list_experiments(resource_group, workspace)):
            if (yield from self.find_job(JobRef(resource_group, workspace, experiment, name))) is not None:
                return experiment
        resource = f"{self.workspace_id(resource_group, workspace)}/experiments/*/jobs/{name}"
        raise NotFoundError(f"no experiment of workspace {workspace!r} has a job {name!r}", resource=resource)

    def begin_submit_job(self, ref: JobRef, spec: HorovodJob, cluster: Optional[ClusterRecord], *,
                         continuation_token: Optional[str] = None,
                         polling_interval: Optional[float] = None) -> "Steps[Any]":
        """The poller is done once the service has accepted the job (not once it has run). With
        ``continuation_token``, ``spec`` and ``cluster`` are not used."""
        action, resource = "submitting job", self.job_id(ref)
        client = yield self._client()
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                return (yield Done((yield from self.get_job(ref)), action, resource))
            with azure_errors(action, resource):
                poller = yield client.jobs.begin_create(*self._args(ref), None, continuation_token=inner,
                                                        **poll_options(polling_interval))
            return (yield Mapped(poller, lambda m: self._job_record(m, ref), action, resource))
        assert cluster is not None
        existing = yield from self.find_job(ref)
        if existing is not None:
            resubmitted = yield from self._resubmit(ref, spec, cluster, existing, polling_interval=polling_interval)
            log.info("job %s exists with these settings; returning it instead of submitting again", resource)
            return resubmitted
        log.info("submitting job %s to cluster %s (%d node(s))", resource, cluster.name, spec.node_count)
        with azure_errors(action, resource):
            poller = yield client.jobs.begin_create(*self._args(ref), job_to_rest(spec, cluster_id=cluster.id),
                                                    **poll_options(polling_interval))
        return (yield Mapped(poller, lambda m: self._job_record(m, ref), action, resource))

    def _resubmit(self, ref: JobRef, spec: HorovodJob, cluster: ClusterRecord, existing: JobRecord, *,
                  polling_interval: Optional[float] = None) -> "Steps[Any]":
        """A repeated submit (a retry, a re-run cell) returns the job that exists; a different job
        under the same name is a mistake the caller must see, not a silent reuse. What the service
        shows is compared here. Secret values and keys it never shows, so the same request is sent
        again: the service holds them, and answers 409 when they differ; for an identical request
        it changes nothing."""
        secret_names = [str(s.get("name")) for s in (existing.raw.get("properties") or {}).get("secrets") or []]
        check_same_job(existing, spec, cluster.id, other_secret_names=secret_names)
        action, resource = "submitting job", self.job_id(ref)
        client = yield self._client()
        with azure_errors(action, resource), refused_as_conflict(f"job {ref.name!r}", resource,
                                                                SECRET_FIELDS, RESUBMIT_HINT):
            poller = yield client.jobs.begin_create(*self._args(ref), job_to_rest(spec, cluster_id=cluster.id),
                                                    **poll_options(polling_interval))
        return (yield Mapped(poller, lambda m: self._job_record(m, ref), action, resource))

    def list_jobs(self, resource_group: str, workspace: str, experiment: str) -> "Steps[List[JobRecord]]":
        where = self.experiment_id(resource_group, workspace, experiment)
        rest = yield self._rest()
        with azure_errors("listing jobs in", where):
            docs = yield from listed_json(rest, json_request(rest, "GET", f"{where}/jobs"))
        return [self._job_record(d, JobRef(resource_group, workspace, experiment, str(d.get("name") or "")))
                for d in docs]

    def begin_delete_job(self, ref: JobRef, *, continuation_token: Optional[str] = None,
                         polling_interval: Optional[float] = None) -> "Steps[Any]":
        client = yield self._client()
        return (yield from begin_delete("deleting job", self.job_id(ref), continuation_token,
                                        lambda **kw: client.jobs.begin_delete(*self._args(ref), **kw),
                                        **poll_options(polling_interval)))

    def begin_terminate_job(self, ref: JobRef, *, continuation_token: Optional[str] = None,
                            polling_interval: Optional[float] = None) -> "Steps[Any]":
        action, resource = "terminating job", self.job_id(ref)
        client = yield self._client()
        inner = None
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                return (yield Done(None, action, resource))
        with azure_errors(action, resource):
            log.info("terminating job %s", resource)
            # terminate is idempotent, so it may be repeated after a dropped connection
            poller = yield client.jobs.begin_terminate(*self._args(ref), continuation_token=inner, **IDEMPOTENT_POST,
                                                       **poll_options(polling_interval))
        return (yield Mapped(poller, lambda _: None, action, resource))

    def list_output_files(self, ref: JobRef, output_directory_id: str, directory: str,
                          link_expiry_minutes: int) -> "Steps[List[OutputFile]]":
        params = output_files_params(output_directory_id, directory, link_expiry_minutes)
        rest = yield self._rest()
        with azure_errors("listing output files of", f"{self.job_id(ref)} ({output_directory_id}/{directory})"):
            first = json_request(rest, "POST", self.job_id(ref), action="listOutputFiles", params=params)
            docs = yield from listed_json(rest, first, **IDEMPOTENT_POST)
        return output_files_from_json(docs)

    def open_output(self, url: str) -> "Steps[Any]":
        """The output file behind ``url`` (a SAS link), for ranged reads."""
        return (yield self._connection.open_output(url))

    # -- sweeps (held by the local service; Batch AI on Azure has none) -------------------------
    def sweep_id(self, ref: JobRef) -> str:
        return f"{self.experiment_id(ref.resource_group, ref.workspace, ref.experiment)}/sweeps/{ref.name}"

    def create_sweep(self, ref: JobRef, request: SweepRequest, spec: HorovodJob,
                     cluster: ClusterRecord) -> "Steps[SweepRecord]":
        """PUT the sweep (the same sweep again changes nothing; another under its name is a
        ConflictError). ``spec`` is the trial's job, its arguments naming the parameters."""
        action, resource = "creating sweep", self.sweep_id(ref)
        rest = yield self._rest()
        trial = job_to_properties(spec, cluster_id=cluster.id, reveal_secrets=True)
        body = {"properties": {**request.properties, "trial": trial}}
        log.info("creating sweep %s on cluster %s", resource, cluster.name)
        with azure_errors(action, resource), refused_as_conflict(f"sweep {ref.name!r}", resource, SECRET_FIELDS,
                                                                "delete it or choose another name"):
            response = yield rest.send_request(json_request(rest, "PUT", resource, body=body))
            return sweep_record(checked_json(response), resource)

    def get_sweep(self, ref: JobRef) -> "Steps[SweepRecord]":
        resource = self.sweep_id(ref)
        rest = yield self._rest()
        with azure_errors("reading sweep", resource):
            response = yield rest.send_request(json_request(rest, "GET", resource))
            return sweep_record(checked_json(response, (200,)), resource)

    def list_sweeps(self, resource_group: str, workspace: str, experiment: str) -> "Steps[List[SweepRecord]]":
        where = f"{self.experiment_id(resource_group, workspace, experiment)}/sweeps"
        rest = yield self._rest()
        with azure_errors("listing sweeps in", where):
            response = yield rest.send_request(json_request(rest, "GET", where))
            docs = (checked_json(response, (200,)) or {}).get("value") or []
        return [sweep_record(doc, f"{where}/{doc.get('name')}") for doc in docs]

    def cancel_sweep(self, ref: JobRef) -> "Steps[SweepRecord]":
        """Cancel: no trial is started again and the live ones are cancelled (idempotent)."""
        resource = self.sweep_id(ref)
        rest = yield self._rest()
        log.info("cancelling sweep %s", resource)
        with azure_errors("cancelling sweep", resource):
            response = yield rest.send_request(json_request(rest, "POST", resource, action="cancel"), **IDEMPOTENT_POST)
            return sweep_record(checked_json(response, (200,)), resource)

    def delete_sweep(self, ref: JobRef) -> "Steps[None]":
        """Delete the sweep (its live trials are cancelled; the trials' jobs stay); nothing when it is gone."""
        resource = self.sweep_id(ref)
        rest = yield self._rest()
        with azure_errors("deleting sweep", resource):
            response = yield rest.send_request(json_request(rest, "DELETE", resource))
            checked_json(response, (200, 202, 204))
        return None

    # -- storage --------------------------------------------------------------------------------
    def check_share_datastore(self, account_name: str, share_name: str) -> "Steps[None]":
        return (yield None)  # a Batch AI job names the share and its key itself: there is nothing in between

    def register_share(self, account_name: str, share_name: str, account_key: str) -> "Steps[None]":
        return (yield None)  # a Batch AI job names the share and its key itself

    # -- MLflow tracking: the local service's server (its REST calls are ../mlflow.py's) ----------
    def mlflow_tracking_uri(self) -> "Steps[Optional[str]]":
        """The local service's ``https://127.0.0.1:PORT/_mlflow``; None on Azure: Batch AI had no
        MLflow (it was retired in 2019, before Azure ML's MLflow tracking)."""
        if not self._connection.is_local:
            return None
        yield self._rest()  # the service found (or started): off the event loop on the aio side
        return self._connection.mlflow_tracking_uri()

    def _mlflow(self) -> "Steps[mlflow.MlflowRest]":
        uri = yield from self.mlflow_tracking_uri()
        if uri is None:
            raise TargetError("Azure Batch AI has no MLflow tracking server (it was retired in 2019); runs are "
                              "tracked on the local service and on Azure ML")
        rest = yield self._rest()
        # the Batch AI pipeline: the service's credential opens its /_mlflow front
        return mlflow.MlflowRest(uri, rest.send_request)

    def job_mlflow_run_id(self, ref: JobRef) -> "Steps[Optional[str]]":
        """The id of the job's run: the run the service made when it started the job (named after
        the job, tagged with its id); None before that, on Azure, or where tracking is off."""
        if not self._connection.is_local:
            return None
        rest = yield from self._mlflow()
        try:
            return (yield from mlflow.find_run(rest, ref.experiment, ref.name,
                                               {"horovod_batchai.job_id": self.job_id(ref)}))
        except HttpResponseError as err:
            if mlflow.tracking_off(err):
                log.debug("the local service tracks no runs: %s", err.message)
                return None
            raise

    def mlflow_run(self, run_id: str) -> "Steps[RunData]":
        rest = yield from self._mlflow()
        return (yield from mlflow.run_data(rest, run_id))

    def list_mlflow_artifacts(self, run_id: str, path: str) -> "Steps[List[Artifact]]":
        rest = yield from self._mlflow()
        return (yield from mlflow.list_artifacts(rest, run_id, path))

    def read_mlflow_artifact(self, run_id: str, path: str) -> "Steps[bytes]":
        rest = yield from self._mlflow()
        return (yield from mlflow.read_artifact(rest, run_id, path))


# -- what the operations decide without a request -----------------------------------------------
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


def check_job_spec(spec: HorovodJob, cluster: ClusterRecord) -> None:
    """What Batch AI refuses in a job on ``cluster``, checked before any request."""
    spec.check_paths_against(cluster.mounts)
    for i, mount in enumerate(spec.mounts):
        if isinstance(mount, AzureBlobMount) and (mount.sas_token or not mount.account_key):
            raise spec.field_error(f"mounts[{i}]", f"Batch AI mounts blob container {mount.container_name!r} "
                                   "with the storage account's key" + (", not a SAS token" if mount.sas_token
                                                                       else "; none is given"),
                                   "AzureBlobMount(..., account_key=...) or spec.with_storage(...)",
                                   "credentials.accountKey, or the storage account given when loading the file "
                                   "(HorovodJob.from_file(..., storage=share), or --storage-account-name)")


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


def output_files_params(output_directory_id: str, directory: str, link_expiry_minutes: int) -> dict[str, str]:
    """The query of ``listOutputFiles`` (pages of 1000, the service's most)."""
    if output_directory_id != STDOUTERR:
        check_directory_id(output_directory_id, "output_directory_id", kind="OUTPUT")
    return {"outputdirectoryid": output_directory_id, "directory": directory,
            "linkexpiryinminutes": str(link_expiry_minutes), "maxresults": "1000"}
