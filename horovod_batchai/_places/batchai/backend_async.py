"""Batch AI (api-version 2018-05-01) through ``azure.mgmt.batchai.aio``: the local service and Azure.

The requests are the sync backend's, sent by Microsoft's aio clients; everything decided without
a request -- ids, records, spec checks, conversions, error mapping -- is the sync backend's own
(:class:`horovod_batchai._places.batchai.backend.BatchAIBackend` and its module's functions).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, List, Optional

from azure.core.exceptions import ResourceNotFoundError

from ..arm import resource_group_of
from ..._models.records import ClusterRecord, ClusterRef, JobRecord, JobRef, WorkspaceRecord
from .backend import (CLUSTER_HINT, DEFAULT_LOCATION, RESUBMIT_HINT, BatchAIBackend, check_reusable_cluster,
                                  check_same_job, output_files_from_rest, output_files_options, refused_as_conflict,
                                  remote_logins_from_rest, scale_update, share_check_errors, usages_from_rest)
from ..._models.cluster_spec import AutoScale, ClusterSpec
from .conversions import CLUSTER_SECRET_FIELDS, SECRET_FIELDS, cluster_to_rest, job_to_rest
from ..._models.errors import NotFoundError, azure_errors
from ..._models.job_spec import HorovodJob
from ..._shared.lro import resume_token
from ..._models.mounts import AzureFileShareMount
from ..retry import IDEMPOTENT_POST
from ..._models.values import OutputFile, RemoteLogin, Usage
from ..._shared.lro_async import AsyncDonePoller, AsyncMappedPoller, AsyncPoller

if TYPE_CHECKING:
    from azure.storage.fileshare.aio import ShareFileClient

    from ...aio._target import Target

__all__ = ["AsyncBatchAIBackend", "AsyncShareFile"]

log = logging.getLogger(__name__)


async def _listed(pages: Any) -> List[Any]:
    return [item async for item in pages]


class AsyncShareFile:
    """A job output file behind a SAS link, read with ``azure.storage.fileshare.aio``."""

    def __init__(self, client: "ShareFileClient") -> None:
        self._client = client

    async def size(self) -> int:
        return int((await self._client.get_file_properties()).size or 0)

    async def read(self, offset: int, length: int) -> bytes:
        return bytes(await (await self._client.download_file(offset=offset, length=length)).readall())

    async def chunks(self) -> AsyncIterator[bytes]:
        async for chunk in (await self._client.download_file()).chunks():
            yield chunk

    async def close(self) -> None:
        await self._client.close()


class AsyncBatchAIBackend:
    """The Batch AI REST API, on the local service or on Azure, from the event loop."""

    def __init__(self, target: "Target") -> None:
        self._target = target
        # ids, records and the checks that make no request
        self.shapes = BatchAIBackend(target.sync)
        self.kind = target.kind
        self.default_poll_interval = self.shapes.default_poll_interval
        self.failure_log_name = self.shapes.failure_log_name

    async def _client(self) -> Any:  # azure-mgmt-batchai's hints miss the paged results and per-call options
        return await self._target.batchai()

    async def close(self) -> None:
        pass  # the clients belong to the Target, which closes them

    # -- ids and checks (no request) ------------------------------------------------------------
    def workspace_id(self, resource_group: str, name: str) -> str:
        return self.shapes.workspace_id(resource_group, name)

    def experiment_id(self, resource_group: str, workspace: str, name: str) -> str:
        return self.shapes.experiment_id(resource_group, workspace, name)

    def cluster_id(self, ref: ClusterRef) -> str:
        return self.shapes.cluster_id(ref)

    def job_id(self, ref: JobRef) -> str:
        return self.shapes.job_id(ref)

    def check_cluster_spec(self, spec: ClusterSpec) -> None:
        self.shapes.check_cluster_spec(spec)

    # -- resource groups ------------------------------------------------------------------------
    async def ensure_resource_group(self, resource_group: str, location: str) -> None:
        client = await self._target.resources()
        resource = f"/subscriptions/{self._target.subscription_id}/resourceGroups/{resource_group}"
        with azure_errors("creating resource group", resource):
            try:
                await client.resource_groups.get(resource_group)
                return
            except ResourceNotFoundError:
                pass
            log.info("creating resource group %s in %s", resource_group, location)
            from azure.mgmt.resource.resources.models import ResourceGroup
            await client.resource_groups.create_or_update(resource_group, ResourceGroup(location=location))

    async def begin_delete_resource_group(self, resource_group: str, *,
                                          continuation_token: Optional[str] = None) -> "AsyncPoller[None]":
        client = await self._target.resources()
        resource = f"/subscriptions/{self._target.subscription_id}/resourceGroups/{resource_group}"
        return await self._begin_delete("deleting resource group", resource, continuation_token,
                                        lambda **kw: client.resource_groups.begin_delete(resource_group, **kw))

    @staticmethod
    async def _begin_delete(action: str, resource: str, continuation_token: Optional[str],
                            start: Callable[..., Awaitable[Any]]) -> "AsyncPoller[None]":
        """``start()``'s poller (resumed from ``continuation_token`` when given), or a finished one
        when the resource is already gone."""
        inner = None
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                return AsyncDonePoller(None, action=action, resource=resource)
        with azure_errors(action, resource):
            try:
                log.info("%s %s", action, resource)
                poller = await start(continuation_token=inner)
            except ResourceNotFoundError:
                log.debug("%s: already gone", resource)
                return AsyncDonePoller(None, action=action, resource=resource)
        return AsyncMappedPoller(poller, lambda _: None, action=action, resource=resource)

    # -- workspaces -----------------------------------------------------------------------------
    async def get_workspace(self, resource_group: str, name: str) -> WorkspaceRecord:
        client = await self._client()
        with azure_errors("reading workspace", self.workspace_id(resource_group, name)):
            model = await client.workspaces.get(resource_group, name)
        return self.shapes._workspace_record(model, resource_group, name)

    async def begin_create_workspace(self, resource_group: str, name: str, location: Optional[str], *,
                                     continuation_token: Optional[str] = None) -> "AsyncPoller[WorkspaceRecord]":
        action, resource = "creating workspace", self.workspace_id(resource_group, name)
        client = await self._client()
        inner = None
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                return AsyncDonePoller(await self.get_workspace(resource_group, name), action=action,
                                       resource=resource)
        else:
            await self.ensure_resource_group(resource_group, location or DEFAULT_LOCATION)
        record = self.shapes._workspace_record
        with azure_errors(action, resource):
            if inner is None:
                try:
                    model = await client.workspaces.get(resource_group, name)
                    log.info("workspace %s exists; using it", resource)
                    return AsyncDonePoller(record(model, resource_group, name), action=action, resource=resource)
                except ResourceNotFoundError:
                    pass
                log.info("creating workspace %s in %s", resource, location or DEFAULT_LOCATION)
            from azure.mgmt.batchai import models as batchai_models
            poller = await client.workspaces.begin_create(
                resource_group, name, batchai_models.WorkspaceCreateParameters(location=location or DEFAULT_LOCATION),
                continuation_token=inner)
        return AsyncMappedPoller(poller, lambda m: record(m, resource_group, name), action=action, resource=resource)

    async def list_workspaces(self, resource_group: Optional[str]) -> List[WorkspaceRecord]:
        client = await self._client()
        scope = f"/subscriptions/{self._target.subscription_id}" + (
            f"/resourceGroups/{resource_group}" if resource_group else "")
        with azure_errors("listing workspaces in", scope):
            pages = (client.workspaces.list_by_resource_group(resource_group) if resource_group is not None
                     else client.workspaces.list())
            items = await _listed(pages)
        return [self.shapes._workspace_record(m, resource_group_of(m.id or ""), m.name or "") for m in items]

    async def begin_delete_workspace(self, resource_group: str, name: str, *,
                                     continuation_token: Optional[str] = None) -> "AsyncPoller[None]":
        client = await self._client()
        return await self._begin_delete("deleting workspace", self.workspace_id(resource_group, name),
                                        continuation_token,
                                        lambda **kw: client.workspaces.begin_delete(resource_group, name, **kw))

    async def usages(self, location: str) -> List[Usage]:
        client = await self._client()
        with azure_errors("listing usages in", location):
            items = await _listed(client.usages.list(location))
        return usages_from_rest(items)

    # -- experiments ----------------------------------------------------------------------------
    async def begin_create_experiment(self, resource_group: str, workspace: str, name: str, *,
                                      continuation_token: Optional[str] = None) -> "AsyncPoller[None]":
        action, resource = "creating experiment", self.experiment_id(resource_group, workspace, name)
        client = await self._client()
        inner = None
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                await self.get_experiment(resource_group, workspace, name)
                return AsyncDonePoller(None, action=action, resource=resource)
        with azure_errors(action, resource):
            if inner is None:
                try:
                    await client.experiments.get(resource_group, workspace, name)
                    log.info("experiment %s exists; using it", resource)
                    return AsyncDonePoller(None, action=action, resource=resource)
                except ResourceNotFoundError:
                    log.info("creating experiment %s", resource)
            poller = await client.experiments.begin_create(resource_group, workspace, name, continuation_token=inner)
        return AsyncMappedPoller(poller, lambda _: None, action=action, resource=resource)

    async def get_experiment(self, resource_group: str, workspace: str, name: str) -> None:
        client = await self._client()
        with azure_errors("reading experiment", self.experiment_id(resource_group, workspace, name)):
            await client.experiments.get(resource_group, workspace, name)

    async def list_experiments(self, resource_group: str, workspace: str) -> List[str]:
        client = await self._client()
        with azure_errors("listing experiments in", self.workspace_id(resource_group, workspace)):
            items = await _listed(client.experiments.list_by_workspace(resource_group, workspace))
        return [m.name or "" for m in items]

    async def begin_delete_experiment(self, resource_group: str, workspace: str, name: str, *,
                                      continuation_token: Optional[str] = None) -> "AsyncPoller[None]":
        client = await self._client()
        return await self._begin_delete(
            "deleting experiment", self.experiment_id(resource_group, workspace, name), continuation_token,
            lambda **kw: client.experiments.begin_delete(resource_group, workspace, name, **kw))

    # -- clusters -------------------------------------------------------------------------------
    async def get_cluster(self, ref: ClusterRef) -> ClusterRecord:
        client = await self._client()
        with azure_errors("reading cluster", self.cluster_id(ref)):
            model = await client.clusters.get(ref.resource_group, ref.workspace, ref.name)
        return self.shapes._cluster_record(model, ref)

    cluster_status = get_cluster

    async def find_cluster(self, ref: ClusterRef) -> Optional[ClusterRecord]:
        try:
            return await self.get_cluster(ref)
        except ResourceNotFoundError:
            return None

    async def begin_create_cluster(self, ref: ClusterRef, spec: ClusterSpec, *,
                                   continuation_token: Optional[str] = None) -> "AsyncPoller[ClusterRecord]":
        action, resource = "creating cluster", self.cluster_id(ref)
        client = await self._client()
        inner = None
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                return AsyncDonePoller(await self.get_cluster(ref), action=action, resource=resource)
        with azure_errors(action, resource):
            poller = await client.clusters.begin_create(ref.resource_group, ref.workspace, ref.name,
                                                        None if inner else cluster_to_rest(spec),
                                                        continuation_token=inner)
        return AsyncMappedPoller(poller, lambda m: self.shapes._cluster_record(m, ref), action=action,
                                 resource=resource)

    async def begin_reuse_cluster(self, ref: ClusterRef, spec: ClusterSpec,
                                  existing: ClusterRecord) -> "AsyncPoller[ClusterRecord]":
        """As the sync backend's: the settings the service shows are compared here, the rest by
        the service on the same request sent again."""
        resource = self.cluster_id(ref)
        check_reusable_cluster(spec, existing, resource)
        client = await self._client()
        with azure_errors("creating cluster", resource), refused_as_conflict(f"cluster {resource}", resource,
                                                                            CLUSTER_SECRET_FIELDS, CLUSTER_HINT):
            poller = await client.clusters.begin_create(ref.resource_group, ref.workspace, ref.name,
                                                        cluster_to_rest(spec))
        return AsyncMappedPoller(poller, lambda m: self.shapes._cluster_record(m, ref), action="creating cluster",
                                 resource=resource)

    async def list_clusters(self, resource_group: str, workspace: str) -> List[ClusterRecord]:
        client = await self._client()
        with azure_errors("listing clusters in", self.workspace_id(resource_group, workspace)):
            items = await _listed(client.clusters.list_by_workspace(resource_group, workspace))
        return [self.shapes._cluster_record(m, ClusterRef(resource_group, workspace, m.name or "")) for m in items]

    async def begin_delete_cluster(self, ref: ClusterRef, *,
                                   continuation_token: Optional[str] = None) -> "AsyncPoller[None]":
        client = await self._client()
        return await self._begin_delete(
            "deleting cluster", self.cluster_id(ref), continuation_token,
            lambda **kw: client.clusters.begin_delete(ref.resource_group, ref.workspace, ref.name, **kw))

    async def begin_scale_cluster(self, ref: ClusterRef, *, target_node_count: Optional[int] = None,
                                  auto_scale: Optional[AutoScale] = None, deallocation_option: Optional[str] = None,
                                  known: Optional[ClusterRecord] = None,
                                  continuation_token: Optional[str] = None) -> "AsyncPoller[ClusterRecord]":
        """One PATCH, answered at once (see the sync backend)."""
        action, resource = "updating cluster", self.cluster_id(ref)
        if continuation_token is not None:
            resume_token(continuation_token, action=action, resource=resource)
            return AsyncDonePoller(await self.get_cluster(ref), action=action, resource=resource)
        update = scale_update(target_node_count, auto_scale, deallocation_option)
        client = await self._client()
        with azure_errors(action, resource):
            # A scale PATCH sets absolute values, so repeating it after a dropped connection is safe.
            model = await client.clusters.update(ref.resource_group, ref.workspace, ref.name, update,
                                                 **IDEMPOTENT_POST)
        return AsyncDonePoller(self.shapes._cluster_record(model, ref), action=action, resource=resource)

    async def remote_logins(self, ref: ClusterRef) -> List[RemoteLogin]:
        client = await self._client()
        with azure_errors("listing remote login information of", self.cluster_id(ref)):
            items = await _listed(client.clusters.list_remote_login_information(
                ref.resource_group, ref.workspace, ref.name, **IDEMPOTENT_POST))
        return remote_logins_from_rest(items)

    # -- jobs -----------------------------------------------------------------------------------
    async def check_submission(self, spec: HorovodJob, cluster: ClusterRecord) -> None:
        """The sync backend's checks of a submission; the mounted shares' existence and keys read here."""
        self.shapes.check_submission_spec(spec, cluster)
        target = self._target
        for i, mount in enumerate(spec.mounts):
            if not isinstance(mount, AzureFileShareMount) or mount.account_key is None:
                continue
            service = await target.share_service(target.sync.default_file_endpoint(mount.account_name),
                                                 mount.account_key)
            async with service:
                with share_check_errors(spec, i, mount):
                    await service.get_share_client(mount.share_name).get_share_properties()

    async def get_job(self, ref: JobRef) -> JobRecord:
        client = await self._client()
        with azure_errors("reading job", self.job_id(ref)):
            model = await client.jobs.get(*self.shapes._args(ref))
        return self.shapes._job_record(model, ref)

    async def find_job(self, ref: JobRef) -> Optional[JobRecord]:
        try:
            return await self.get_job(ref)
        except ResourceNotFoundError:
            return None

    async def job_experiment(self, resource_group: str, workspace: str, name: str) -> str:
        for experiment in await self.list_experiments(resource_group, workspace):
            if await self.find_job(JobRef(resource_group, workspace, experiment, name)) is not None:
                return experiment
        resource = f"{self.workspace_id(resource_group, workspace)}/experiments/*/jobs/{name}"
        raise NotFoundError(f"no experiment of workspace {workspace!r} has a job {name!r}", resource=resource)

    async def begin_submit_job(self, ref: JobRef, spec: HorovodJob, cluster: Optional[ClusterRecord], *,
                               continuation_token: Optional[str] = None) -> "AsyncPoller[JobRecord]":
        action, resource = "submitting job", self.job_id(ref)
        client = await self._client()
        record = self.shapes._job_record
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                return AsyncDonePoller(await self.get_job(ref), action=action, resource=resource)
            with azure_errors(action, resource):
                poller = await client.jobs.begin_create(*self.shapes._args(ref), None, continuation_token=inner)
            return AsyncMappedPoller(poller, lambda m: record(m, ref), action=action, resource=resource)
        assert cluster is not None
        existing = await self.find_job(ref)
        if existing is not None:
            # A repeated submit returns the job that exists (see the sync backend's _resubmit).
            secret_names = [s.name for s in getattr(existing.raw, "secrets", None) or []]
            check_same_job(existing, spec, cluster.id, other_secret_names=secret_names)
            log.info("job %s exists with these settings; returning it instead of submitting again", resource)
        else:
            log.info("submitting job %s to cluster %s (%d node(s))", resource, cluster.name, spec.node_count)
        with azure_errors(action, resource), refused_as_conflict(f"job {ref.name!r}", resource, SECRET_FIELDS,
                                                                 RESUBMIT_HINT):
            poller = await client.jobs.begin_create(*self.shapes._args(ref), job_to_rest(spec, cluster_id=cluster.id))
        return AsyncMappedPoller(poller, lambda m: record(m, ref), action=action, resource=resource)

    async def list_jobs(self, resource_group: str, workspace: str, experiment: str) -> List[JobRecord]:
        client = await self._client()
        with azure_errors("listing jobs in", self.experiment_id(resource_group, workspace, experiment)):
            items = await _listed(client.jobs.list_by_experiment(resource_group, workspace, experiment))
        return [self.shapes._job_record(m, JobRef(resource_group, workspace, experiment, m.name or ""))
                for m in items]

    async def begin_delete_job(self, ref: JobRef, *,
                               continuation_token: Optional[str] = None) -> "AsyncPoller[None]":
        client = await self._client()
        return await self._begin_delete("deleting job", self.job_id(ref), continuation_token,
                                        lambda **kw: client.jobs.begin_delete(*self.shapes._args(ref), **kw))

    async def begin_terminate_job(self, ref: JobRef, *,
                                  continuation_token: Optional[str] = None) -> "AsyncPoller[None]":
        action, resource = "terminating job", self.job_id(ref)
        client = await self._client()
        inner = None
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            if inner is None:
                return AsyncDonePoller(None, action=action, resource=resource)
        with azure_errors(action, resource):
            log.info("terminating job %s", resource)
            # terminate is idempotent, so it may be repeated after a dropped connection
            poller = await client.jobs.begin_terminate(*self.shapes._args(ref), continuation_token=inner,
                                                       **IDEMPOTENT_POST)
        return AsyncMappedPoller(poller, lambda _: None, action=action, resource=resource)

    async def list_output_files(self, ref: JobRef, output_directory_id: str, directory: str,
                                link_expiry_minutes: int) -> List[OutputFile]:
        options = output_files_options(output_directory_id, directory, link_expiry_minutes)
        client = await self._client()
        with azure_errors("listing output files of", f"{self.job_id(ref)} ({output_directory_id}/{directory})"):
            items = await _listed(client.jobs.list_output_files(*self.shapes._args(ref), options, **IDEMPOTENT_POST))
        return output_files_from_rest(items)

    async def open_output(self, url: str) -> AsyncShareFile:
        return AsyncShareFile(await self._target.file_from_sas_url(url))

    # -- storage --------------------------------------------------------------------------------
    async def check_share_datastore(self, account_name: str, share_name: str) -> None:
        pass  # a Batch AI job names the share and its key itself: there is nothing in between

    async def register_share(self, account_name: str, share_name: str, account_key: str) -> None:
        pass  # a Batch AI job names the share and its key itself
