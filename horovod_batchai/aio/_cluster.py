"""GPU clusters, for asyncio: :class:`horovod_batchai.GpuCluster`'s methods, awaited."""
from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable, List, Optional, cast

from .._models.cluster_spec import AutoScale
from .._models.constants import DEFAULT_LRO_TIMEOUT
from .._models.states import ClusterStatus
from .._models.values import RemoteLogin
from .._shared.cluster import GpuClusterBase, ReadyWatch, check_resize
from .._shared.lro import check_polling, check_timeout, resume_token
from .._shared.lro_async import AsyncDonePoller, AsyncPoller, accepted_async, async_background_poller
from .._shared.polling import Polling
from .._shared.polling_async import async_poll_until
from .._shared.resource_ids import names_from_id, parent_workspace

if TYPE_CHECKING:
    from .._places.base import AsyncBackend
    from ._target import Target
    from ._workspace import Workspace

__all__ = ["GpuCluster"]

log = logging.getLogger(__name__)


class GpuCluster(GpuClusterBase):
    """A GPU cluster (see :class:`horovod_batchai.GpuCluster`); created, got and listed through
    its aio :class:`Workspace`. Properties describe the cluster as last fetched."""

    workspace: "Workspace"

    @property
    def _backend(self) -> "AsyncBackend":
        return self.workspace.target.backend

    @classmethod
    async def from_id(cls, target: "Target", resource_id: str) -> "GpuCluster":
        """The existing cluster whose ARM id is ``resource_id``, fetched (see
        :meth:`horovod_batchai.GpuCluster.from_id`; the target must be an aio :class:`Target`)."""
        names = names_from_id(target, resource_id, "cluster", aio=True)
        return cast("GpuCluster", await parent_workspace(target, names).get_cluster(names["cluster"]))

    async def begin_delete(self, *, continuation_token: Optional[str] = None, polling: bool = True,
                           polling_interval: Optional[float] = None) -> "AsyncPoller[None]":
        """Start deleting the cluster; the poller finishes at once when it is already gone."""
        interval = check_polling(polling, polling_interval)
        self._record = None
        poller = await self._backend.begin_delete_cluster(self._ref, continuation_token=continuation_token,
                                                          polling_interval=interval)
        return poller if polling else accepted_async(poller, None)

    async def delete(self, *, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> None:
        """Delete the cluster, awaited for at most ``timeout`` seconds; succeeds when already gone."""
        check_timeout(timeout)
        await (await self.begin_delete()).result(timeout)

    # -- what it is and where it stands --------------------------------------------------------
    async def refresh(self) -> "GpuCluster":
        """Fetch the cluster again; returns the cluster itself."""
        self._record = await self._backend.get_cluster(self._ref)
        return self

    async def status(self) -> ClusterStatus:
        """A fresh snapshot (see :meth:`horovod_batchai.GpuCluster.status`)."""
        self._record = await self._backend.cluster_status(self._ref)
        return self._record.status

    async def wait_until_ready(self, timeout: float = 900.0, *, poll_interval: Optional[float] = None,
                               on_status: Optional[Callable[[ClusterStatus], None]] = None) -> ClusterStatus:
        """Wait until the cluster is steady with all its target nodes idle, polling between
        ``asyncio.sleep`` calls; :class:`ClusterNotReadyError` on errors or unusable nodes,
        :class:`WaitTimeoutError` after ``timeout`` seconds. Cancelling it stops the polling."""
        polling = Polling(timeout=timeout, allow_no_timeout=False,
                          poll_interval=poll_interval if poll_interval is not None
                          else self._backend.default_poll_interval)
        return await self._until_ready(polling, on_status)

    async def _until_ready(self, polling: Polling,
                           on_status: Optional[Callable[[ClusterStatus], None]] = None) -> ClusterStatus:
        watch = ReadyWatch(self.name, polling, on_status)
        return await async_poll_until(self.status, done=watch.done, polling=polling, on_each=watch.check,
                                      on_timeout=watch.timeout_error)

    # -- scale ----------------------------------------------------------------------------------
    async def begin_resize(self, target_node_count: int, *, deallocation_option: Optional[str] = None,
                           continuation_token: Optional[str] = None, polling: bool = True,
                           polling_interval: Optional[float] = None) -> "AsyncPoller[ClusterStatus]":
        """Start setting a fixed size; the poller is done when the cluster is steady at it (see
        :meth:`horovod_batchai.GpuCluster.begin_resize`)."""
        interval = check_polling(polling, polling_interval)
        if continuation_token is None:
            check_resize(target_node_count, deallocation_option)
            log.info("resizing cluster %s to %d node(s)", self.id, target_node_count)
        return await self._begin_scale("resizing cluster", continuation_token, polling, interval,
                                       target_node_count=target_node_count, deallocation_option=deallocation_option)

    async def resize(self, target_node_count: int, *, deallocation_option: Optional[str] = None,
                     timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> ClusterStatus:
        """:meth:`begin_resize`, awaited for at most ``timeout`` seconds."""
        check_timeout(timeout)
        poller = await self.begin_resize(target_node_count, deallocation_option=deallocation_option)
        return await poller.result(timeout)

    async def begin_auto_scale(self, minimum: int, maximum: int, *, initial: int = 0,
                               idle_time_before_scale_down: Optional[timedelta] = None,
                               continuation_token: Optional[str] = None, polling: bool = True,
                               polling_interval: Optional[float] = None) -> "AsyncPoller[ClusterStatus]":
        """Start letting the service scale between ``minimum`` and ``maximum`` nodes (see
        :meth:`horovod_batchai.GpuCluster.begin_auto_scale`)."""
        interval = check_polling(polling, polling_interval)
        settings = None
        if continuation_token is None:
            settings = AutoScale(minimum=minimum, maximum=maximum, initial=initial,
                                 idle_time_before_scale_down=idle_time_before_scale_down)
            log.info("cluster %s auto-scales between %d and %d node(s)", self.id, minimum, maximum)
        return await self._begin_scale("setting auto-scale of cluster", continuation_token, polling, interval,
                                       auto_scale=settings)

    async def auto_scale(self, minimum: int, maximum: int, *, initial: int = 0,
                         idle_time_before_scale_down: Optional[timedelta] = None,
                         timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> ClusterStatus:
        """:meth:`begin_auto_scale`, awaited for at most ``timeout`` seconds."""
        check_timeout(timeout)
        poller = await self.begin_auto_scale(minimum, maximum, initial=initial,
                                             idle_time_before_scale_down=idle_time_before_scale_down)
        return await poller.result(timeout)

    async def _begin_scale(self, action: str, continuation_token: Optional[str], polling: bool,
                           polling_interval: Optional[float], **scale: Any) -> "AsyncPoller[ClusterStatus]":
        """The scale request (sent now), then the wait until the cluster is ready at its new scale
        (while the poller is awaited)."""
        backend, resource = self._backend, self.id
        interval = polling_interval or backend.default_poll_interval
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            scaling = await backend.begin_scale_cluster(self._ref, continuation_token=inner,
                                                        polling_interval=interval) if inner else None
        else:
            scaling = await backend.begin_scale_cluster(self._ref, known=self._record, polling_interval=interval,
                                                        **scale)
        if not polling:
            return accepted_async(scaling, await self.status()) if scaling is not None else \
                AsyncDonePoller(await self.status(), action=action, resource=resource)
        running = [scaling]

        async def work() -> ClusterStatus:
            request = running[0]
            if request is not None:
                self._record = await request.result(None)
                running[0] = None
            return await self._until_ready(Polling(timeout=None, poll_interval=interval))

        def token() -> Optional[str]:
            request = running[0]
            return request.continuation_token() if request is not None else None

        return async_background_poller(work, action=action, resource=resource, token=token)

    async def remote_login_info(self) -> List[RemoteLogin]:
        """Each node's public IP and SSH port."""
        return await self._backend.remote_logins(self._ref)

