"""Workspaces, for asyncio: :class:`horovod_batchai.Workspace`'s methods, awaited."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Union, cast

from .._models.cluster_spec import AutoScale, ClusterSpec, ImageReference, SetupTask
from .._models.constants import DEFAULT_LRO_TIMEOUT
from .._models.mounts import Mount
from .._models.names import check_batchai_name, check_resource_group
from .._models.records import ClusterRef
from .._models.values import Usage
from .._shared.lro import check_polling, check_timeout, resume_token
from .._shared.lro_async import AsyncMappedPoller, AsyncPoller, accepted_async, async_background_poller
from .._shared.resource_ids import names_from_id
from .._shared.workspace import (WorkspaceBase, check_cluster_spec, check_workspace_args, cluster_spec_from_options,
                                 scale_text)
from ._cluster import GpuCluster
from ._experiment import Experiment

if TYPE_CHECKING:
    from .._places.base import AsyncBackend
    from ._target import Target

__all__ = ["Workspace"]

log = logging.getLogger(__name__)


class Workspace(WorkspaceBase):
    """A workspace (see :class:`horovod_batchai.Workspace`). Build one with ``await``
    :meth:`create` or :meth:`get`."""

    target: "Target"

    @property
    def _backend(self) -> "AsyncBackend":
        return self.target.backend

    @classmethod
    async def from_id(cls, target: "Target", resource_id: str) -> "Workspace":
        """The existing workspace whose ARM id is ``resource_id`` (as :attr:`id` gives it), fetched;
        an id of another form, or a target that is not an aio :class:`Target`, is an
        :class:`InvalidSpecError` stating the valid one (see :meth:`horovod_batchai.Workspace.from_id`)."""
        names = names_from_id(target, resource_id, "workspace", aio=True)
        return await cls.get(target, names["resource group"], names["workspace"])

    async def refresh(self) -> "Workspace":
        """Fetch the workspace again; returns the workspace itself."""
        self._record = await self._backend.get_workspace(self.resource_group, self.name)
        return self

    # -- create / get / list / delete -----------------------------------------------------------
    @classmethod
    async def begin_create(cls, target: "Target", resource_group: str, name: str, *, location: Optional[str] = None,
                           continuation_token: Optional[str] = None, polling: bool = True,
                           polling_interval: Optional[float] = None) -> "AsyncPoller[Workspace]":
        """Start get-or-create of the workspace (see :meth:`horovod_batchai.Workspace.begin_create`)."""
        location = check_workspace_args(resource_group, name, location)
        interval = check_polling(polling, polling_interval)
        backend = target.backend
        poller = AsyncMappedPoller(await backend.begin_create_workspace(resource_group, name, location,
                                                                        continuation_token=continuation_token,
                                                                        polling_interval=interval),
                                   lambda r: cls(target, resource_group, name, _record=r),
                                   action="creating workspace", resource=backend.workspace_id(resource_group, name),
                                   same_token=True)
        return poller if polling else accepted_async(poller, cls(target, resource_group, name))

    @classmethod
    async def create(cls, target: "Target", resource_group: str, name: str, *, location: Optional[str] = None,
                     timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> "Workspace":
        """:meth:`begin_create`, awaited for at most ``timeout`` seconds (None: no limit)."""
        check_timeout(timeout)
        return await (await cls.begin_create(target, resource_group, name, location=location)).result(timeout)

    @classmethod
    async def get(cls, target: "Target", resource_group: str, name: str) -> "Workspace":
        """The existing workspace; :class:`NotFoundError` when there is none."""
        return await cls(target, resource_group, name).refresh()

    @classmethod
    async def list(cls, target: "Target", resource_group: Optional[str] = None) -> List["Workspace"]:
        """Workspaces in ``resource_group``, or in the whole subscription."""
        if resource_group is not None:
            check_resource_group(resource_group)
        return [cls(target, r.resource_group, r.name, _record=r)
                for r in await target.backend.list_workspaces(resource_group)]

    async def begin_delete(self, *, delete_resource_group: bool = False, continuation_token: Optional[str] = None,
                           polling: bool = True, polling_interval: Optional[float] = None) -> "AsyncPoller[None]":
        """Start deleting the workspace -- and, only when asked, its resource group."""
        interval = check_polling(polling, polling_interval)
        backend, group = self._backend, self.resource_group
        if not delete_resource_group:
            poller = await backend.begin_delete_workspace(group, self.name, continuation_token=continuation_token,
                                                          polling_interval=interval)
            return poller if polling else accepted_async(poller, None)
        # Two operations, one after the other; the token says which one was running, and its token.
        action, resource = "deleting workspace and resource group", self.id
        step, inner = "workspace", ""
        if continuation_token is not None:
            saved = resume_token(continuation_token, action=action, resource=resource) or "group:"
            step, _, inner = saved.partition(":")
        first = (await backend.begin_delete_workspace(group, self.name, continuation_token=inner or None, polling_interval=interval)
                 if step == "workspace" else
                 await backend.begin_delete_resource_group(group, continuation_token=inner or None, polling_interval=interval))
        if not polling:
            if step == "workspace":
                await backend.begin_delete_resource_group(group, polling_interval=interval)
            return accepted_async(first, None)
        running: list[tuple[str, Any]] = [(step, first)]

        async def work() -> None:
            await running[0][1].result(None)
            if running[0][0] == "workspace":
                running[0] = ("group", await backend.begin_delete_resource_group(group, polling_interval=interval))
                await running[0][1].result(None)

        def token() -> str:
            now_step, poller = running[0]
            return f"{now_step}:{poller.continuation_token()}"

        return async_background_poller(work, action=action, resource=resource, token=token)

    async def delete(self, *, delete_resource_group: bool = False,
                     timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> None:
        """:meth:`begin_delete`, awaited for at most ``timeout`` seconds; succeeds when already gone."""
        check_timeout(timeout)
        await (await self.begin_delete(delete_resource_group=delete_resource_group)).result(timeout)

    async def usages(self) -> List[Usage]:
        """Quotas and their use in the workspace's region."""
        location = self.location or (await self.refresh()).location
        return await self._backend.usages(str(location))

    # -- experiments ----------------------------------------------------------------------------
    async def begin_create_experiment(self, name: str, *, continuation_token: Optional[str] = None,
                                      polling: bool = True,
                                      polling_interval: Optional[float] = None) -> "AsyncPoller[Experiment]":
        """Start get-or-create of the experiment ``name``."""
        interval = check_polling(polling, polling_interval)
        experiment = Experiment(self, name)
        poller = AsyncMappedPoller(await self._backend.begin_create_experiment(self.resource_group, self.name, name,
                                                                               continuation_token=continuation_token,
                                                                               polling_interval=interval),
                                   lambda _: experiment, action="creating experiment", resource=experiment.id,
                                   same_token=True)
        return poller if polling else accepted_async(poller, experiment)

    async def create_experiment(self, name: str, *, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> Experiment:
        """The experiment ``name`` (get-or-create), awaited for at most ``timeout`` seconds."""
        check_timeout(timeout)
        return await (await self.begin_create_experiment(name)).result(timeout)

    def _experiment(self, name: str) -> Experiment:
        """The experiment ``name`` of this workspace, not fetched (``from_id`` of a job starts here)."""
        return Experiment(self, name)

    async def get_experiment(self, name: str) -> Experiment:
        """The existing experiment; :class:`NotFoundError` when there is none."""
        return await Experiment(self, name).refresh()

    async def list_experiments(self) -> List[Experiment]:
        """The workspace's experiments (see :meth:`horovod_batchai.Workspace.list_experiments`)."""
        return [Experiment(self, name) for name in await self._backend.list_experiments(self.resource_group, self.name)]

    # -- clusters -------------------------------------------------------------------------------
    async def begin_create_cluster(self, name: str, spec: Optional[ClusterSpec] = None, *,
                                   vm_size: str = "Standard_NC6", vm_priority: str = "dedicated",
                                   target_node_count: Optional[int] = None,
                                   auto_scale: Optional[Union[AutoScale, tuple[int, int]]] = None,
                                   admin_user_name: Optional[str] = None, ssh_public_key: Optional[str] = None,
                                   admin_password: Optional[str] = None, generate_ssh_keys: bool = True,
                                   ssh_key_path: Optional[Union[str, Path]] = None,
                                   image: Optional[ImageReference] = None, setup_task: Optional[SetupTask] = None,
                                   mounts: Sequence[Mount] = (), continuation_token: Optional[str] = None,
                                   polling: bool = True,
                                   polling_interval: Optional[float] = None) -> "AsyncPoller[GpuCluster]":
        """Start creating the cluster ``name`` (get-or-create), from ``spec`` or from the keyword
        options (see :meth:`horovod_batchai.Workspace.begin_create_cluster`)."""
        check_batchai_name(name, "cluster")
        interval = check_polling(polling, polling_interval)
        backend = self._backend
        ref = ClusterRef(self.resource_group, self.name, name)
        action, cluster_id = "creating cluster", backend.cluster_id(ref)
        if continuation_token is not None:
            poller = await backend.begin_create_cluster(ref, cast(ClusterSpec, spec),
                                                        continuation_token=continuation_token, polling_interval=interval)
        else:
            if spec is None:
                spec = cluster_spec_from_options(
                    vm_size=vm_size, vm_priority=vm_priority, target_node_count=target_node_count,
                    auto_scale=auto_scale, admin_user_name=admin_user_name, ssh_public_key=ssh_public_key,
                    admin_password=admin_password, generate_ssh_keys=generate_ssh_keys, ssh_key_path=ssh_key_path,
                    image=image, setup_task=setup_task, mounts=mounts)
            spec = check_cluster_spec(spec, backend)
            existing = await backend.find_cluster(ref)
            if existing is not None:
                poller = await backend.begin_reuse_cluster(ref, spec, existing, polling_interval=interval)
                log.info("cluster %s exists with these settings; using it", cluster_id)
            else:
                log.info("creating cluster %s (%s, %s)", cluster_id, spec.vm_size, scale_text(spec))
                poller = await backend.begin_create_cluster(ref, spec, polling_interval=interval)
        created = AsyncMappedPoller(poller, lambda r: GpuCluster(self, name, _record=r), action=action,
                                    resource=cluster_id, same_token=True)
        return created if polling else accepted_async(created, GpuCluster(self, name))

    async def create_cluster(self, name: str, spec: Optional[ClusterSpec] = None, *, vm_size: str = "Standard_NC6",
                             vm_priority: str = "dedicated", target_node_count: Optional[int] = None,
                             auto_scale: Optional[Union[AutoScale, tuple[int, int]]] = None,
                             admin_user_name: Optional[str] = None, ssh_public_key: Optional[str] = None,
                             admin_password: Optional[str] = None, generate_ssh_keys: bool = True,
                             ssh_key_path: Optional[Union[str, Path]] = None, image: Optional[ImageReference] = None,
                             setup_task: Optional[SetupTask] = None, mounts: Sequence[Mount] = (),
                             timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> GpuCluster:
        """:meth:`begin_create_cluster`, awaited for at most ``timeout`` seconds for the service to
        accept the cluster."""
        check_timeout(timeout)
        poller = await self.begin_create_cluster(
            name, spec, vm_size=vm_size, vm_priority=vm_priority, target_node_count=target_node_count,
            auto_scale=auto_scale, admin_user_name=admin_user_name, ssh_public_key=ssh_public_key,
            admin_password=admin_password, generate_ssh_keys=generate_ssh_keys, ssh_key_path=ssh_key_path,
            image=image, setup_task=setup_task, mounts=mounts)
        return await poller.result(timeout)

    async def get_cluster(self, name: str) -> GpuCluster:
        """The existing cluster; :class:`NotFoundError` when there is none."""
        return await GpuCluster(self, name).refresh()

    async def list_clusters(self) -> List[GpuCluster]:
        """The workspace's clusters (see :meth:`horovod_batchai.Workspace.list_clusters`)."""
        return [GpuCluster(self, r.name, _record=r)
                for r in await self._backend.list_clusters(self.resource_group, self.name)]


