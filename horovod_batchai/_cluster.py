"""GPU clusters: watch until ready, resize, auto-scale, remote login, delete.

Clusters are created, got and listed through their workspace: :meth:`Workspace.create_cluster`
(or ``begin_create_cluster``), :meth:`Workspace.get_cluster`, :meth:`Workspace.list_clusters`.
"""
from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable, List, Optional

from azure.core.polling import LROPoller

from ._models.cluster_spec import AutoScale
from ._models.constants import DEFAULT_LRO_TIMEOUT
from ._models.states import ClusterStatus
from ._models.values import RemoteLogin
from ._shared.cluster import GpuClusterBase, ReadyWatch, check_resize
from ._shared.deprecation import deprecated
from ._shared.lro import DonePoller, accepted, background_poller, check_polling, check_timeout, resume_token
from ._shared.polling import Polling, poll_until
from ._shared.resource_ids import names_from_id, parent_workspace

if TYPE_CHECKING:
    from ._places.base import Backend
    from ._target import Target
    from ._workspace import Workspace

__all__ = ["GpuCluster", "RemoteLogin"]

log = logging.getLogger(__name__)


class GpuCluster(GpuClusterBase):
    """A GPU cluster in a :class:`Workspace` (see :meth:`Workspace.create_cluster`).

    Properties describe the cluster as last fetched (by the call that returned it, or
    :meth:`refresh`) and never make a request; :meth:`status` fetches a fresh snapshot.

    A cluster may be shared between threads (what was last fetched is replaced whole, so a reader
    sees one snapshot or the next, never a mix). It pickles as a reference, without what was
    fetched: call :meth:`refresh` in the receiving process. :meth:`from_id` rebuilds it from its id.
    """

    workspace: "Workspace"

    def __reduce__(self) -> tuple[Any, ...]:
        return (GpuCluster, (self.workspace, self.name))

    @classmethod
    def from_id(cls, target: "Target", resource_id: str) -> "GpuCluster":
        """The existing cluster whose ARM id is ``resource_id`` (as :attr:`id` gives it); an id
        of another form is an :class:`InvalidSpecError` stating the valid one.

        :param Target target: where the cluster is.
        :param str resource_id: the cluster's ARM id.
        :returns: the :class:`GpuCluster`, fetched.
        :raises InvalidSpecError: for an id of another form.
        :raises NotFoundError: when there is no such cluster."""
        names = names_from_id(target, resource_id, "cluster")
        return parent_workspace(target, names).get_cluster(names["cluster"])

    @property
    def _backend(self) -> "Backend":
        return self.workspace.target.backend

    # -- get / list / delete --------------------------------------------------------------------
    @classmethod
    def get(cls, workspace: "Workspace", name: str) -> "GpuCluster":
        """Deprecated: use :meth:`Workspace.get_cluster`.

        :param Workspace workspace: the workspace.
        :param str name: the cluster's name.
        :returns: the :class:`GpuCluster`."""
        deprecated("GpuCluster.get(workspace, name)", "workspace.get_cluster(name)")
        return workspace.get_cluster(name)

    @classmethod
    def list(cls, workspace: "Workspace") -> List["GpuCluster"]:
        """Deprecated: use :meth:`Workspace.list_clusters`.

        :param Workspace workspace: the workspace.
        :returns: the clusters."""
        deprecated("GpuCluster.list(workspace)", "workspace.list_clusters()")
        return workspace.list_clusters()

    def begin_delete(self, *, continuation_token: Optional[str] = None, polling: bool = True,
                     polling_interval: Optional[float] = None) -> "LROPoller[None]":
        """Start deleting the cluster; the poller finishes at once when it is already gone.

        :keyword str continuation_token: a poller's ``continuation_token()``: resume that call.
        :keyword bool polling: False: the poller is done once the service has accepted the request.
        :keyword float polling_interval: seconds between polls (default: the target's).
        :returns: an ``LROPoller`` whose result is None.
        :raises InvalidSpecError: for a bad option or a token of another operation."""
        interval = check_polling(polling, polling_interval)
        self._record = None
        poller = self._backend.begin_delete_cluster(self._ref, continuation_token=continuation_token,
                                                    polling_interval=interval)
        return poller if polling else accepted(poller, None)

    def delete(self, *, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> None:
        """Delete the cluster and wait (at most ``timeout`` seconds; None: no limit); succeeds
        when already gone.

        :keyword float timeout: seconds to wait; None: no limit.
        :raises WaitTimeoutError: when ``timeout`` is spent (the deletion goes on)."""
        check_timeout(timeout)
        self.begin_delete().result(timeout)

    # -- what it is and where it stands --------------------------------------------------------
    def refresh(self) -> "GpuCluster":
        """Fetch the cluster again; returns the cluster itself.

        :returns: the cluster itself.
        :raises NotFoundError: when the cluster is gone."""
        self._record = self._backend.get_cluster(self._ref)
        return self

    def status(self) -> ClusterStatus:
        """A fresh snapshot: ``allocation_state``, ``node_state_counts``, ``errors``; ``.table()``
        prints it like the tutorial.

        :returns: the :class:`ClusterStatus` fetched now."""
        record = self._record = self._backend.cluster_status(self._ref)
        return record.status  # this call's snapshot, whatever another thread fetched since

    def wait_until_ready(self, timeout: float = 900.0, *, poll_interval: Optional[float] = None,
                         on_status: Optional[Callable[[ClusterStatus], None]] = None,
                         clock: Callable[[], float] = time.monotonic,
                         sleep: Callable[[float], None] = time.sleep,
                         stop: Optional[threading.Event] = None) -> ClusterStatus:
        """Wait until the cluster is steady at the size its scale settings ask for (see
        :attr:`ClusterStatus.is_ready`): exactly the target number of nodes, or a number within the
        auto-scale bounds, each idle or running a job, none preparing or leaving. After
        :meth:`resize` it returns once the cluster has the new size, whatever the service
        answered the resize with.

        Raises :class:`ClusterNotReadyError` as soon as the cluster reports errors or unusable
        nodes, :class:`WaitTimeoutError` after ``timeout`` seconds, and :class:`StoppedError`
        within one poll interval of ``stop`` (a ``threading.Event``) being set by another thread.

        :param float timeout: seconds to wait.
        :keyword float poll_interval: seconds between polls (default: the target's).
        :keyword on_status: called with each new :class:`ClusterStatus`.
        :keyword clock: the monotonic clock the timeout is measured with (tests give a fake one).
        :keyword sleep: what waits between polls (tests give a fake one).
        :keyword stop: a ``threading.Event`` that ends the wait when set.
        :returns: the ready cluster's :class:`ClusterStatus`.
        :raises ClusterNotReadyError: when the cluster reports errors or unusable nodes.
        :raises WaitTimeoutError: when ``timeout`` is spent.
        :raises StoppedError: when ``stop`` is set.
        """
        polling = Polling(timeout=timeout, allow_no_timeout=False, clock=clock, sleep=sleep, stop=stop,
                          poll_interval=poll_interval if poll_interval is not None
                          else self._backend.default_poll_interval)
        return self._until_ready(polling, on_status)

    def _until_ready(self, polling: Polling, on_status: Optional[Callable[[ClusterStatus], None]] = None
                     ) -> ClusterStatus:
        """The wait of :meth:`wait_until_ready` (and of the resize pollers), on ``polling``'s deadline."""
        watch = ReadyWatch(self.name, polling, on_status)
        return poll_until(self.status, done=watch.done, polling=polling, on_each=watch.check,
                          what=f"waiting for cluster {self.name!r}", on_timeout=watch.timeout_error)

    # -- scale ----------------------------------------------------------------------------------
    def begin_resize(self, target_node_count: int, *, deallocation_option: Optional[str] = None,
                     continuation_token: Optional[str] = None, polling: bool = True,
                     polling_interval: Optional[float] = None) -> "LROPoller[ClusterStatus]":
        """Start setting a fixed size (0 releases every node). ``deallocation_option`` says what
        happens to jobs on removed nodes: requeue (Batch AI's default) | terminate |
        waitforjobcompletion. The poller is done when the cluster is steady at the new size (what
        :meth:`wait_until_ready` waits for); its result is that :class:`ClusterStatus`, and it
        raises :class:`ClusterNotReadyError` if the cluster reports errors or unusable nodes.
        ``continuation_token`` resumes an earlier call (the other arguments are then not used);
        with ``polling=False`` the poller is done once the service has accepted the new size, and
        its result is the cluster's status then; ``polling_interval`` is the seconds between polls.

        :param int target_node_count: the number of nodes, 0 or more.
        :returns: an ``LROPoller`` whose result is the :class:`ClusterStatus`.
        :raises InvalidSpecError: for a bad argument, before anything is sent.
        :keyword str deallocation_option: ``'requeue'``, ``'terminate'`` or ``'waitforjobcompletion'``.
        :keyword str continuation_token: a poller's ``continuation_token()``: resume that call.
        :keyword bool polling: False: the poller is done once the service has accepted the new size.
        :keyword float polling_interval: seconds between polls (default: the target's)."""
        interval = check_polling(polling, polling_interval)
        if continuation_token is None:
            check_resize(target_node_count, deallocation_option)
            log.info("resizing cluster %s to %d node(s)", self.id, target_node_count)
        return self._begin_scale("resizing cluster", continuation_token, polling, interval,
                                 target_node_count=target_node_count, deallocation_option=deallocation_option)

    def resize(self, target_node_count: int, *, deallocation_option: Optional[str] = None,
               timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> ClusterStatus:
        """:meth:`begin_resize`, waiting at most ``timeout`` seconds (None: no limit) until the
        cluster is steady at the new size; :class:`WaitTimeoutError` after that.

        :param int target_node_count: the number of nodes, 0 or more.
        :keyword str deallocation_option: ``'requeue'``, ``'terminate'`` or ``'waitforjobcompletion'``.
        :keyword float timeout: seconds to wait; None: no limit.
        :returns: the cluster's :class:`ClusterStatus` at its new size.
        :raises InvalidSpecError: for a bad argument, before anything is sent.
        :raises ClusterNotReadyError: when the cluster reports errors or unusable nodes.
        :raises WaitTimeoutError: when ``timeout`` is spent (the resize goes on)."""
        check_timeout(timeout)
        return self.begin_resize(target_node_count, deallocation_option=deallocation_option).result(timeout)

    def begin_auto_scale(self, minimum: int, maximum: int, *, initial: int = 0,
                         idle_time_before_scale_down: Optional[timedelta] = None,
                         continuation_token: Optional[str] = None, polling: bool = True,
                         polling_interval: Optional[float] = None) -> "LROPoller[ClusterStatus]":
        """Start letting the service scale between ``minimum`` and ``maximum`` nodes with the job
        queue (on Azure ML, nodes idle for ``idle_time_before_scale_down`` are released). The
        poller is done when the cluster is steady within its new bounds, as for :meth:`begin_resize`
        (whose ``continuation_token``, ``polling`` and ``polling_interval`` these are too).

        :param int minimum: the fewest nodes.
        :param int maximum: the most nodes.
        :keyword int initial: the nodes to start with.
        :returns: an ``LROPoller`` whose result is the :class:`ClusterStatus`.
        :raises InvalidSpecError: for bad bounds, before anything is sent.
        :keyword timedelta idle_time_before_scale_down: how long a node idles before it is released (Azure ML).
        :keyword str continuation_token: a poller's ``continuation_token()``: resume that call.
        :keyword bool polling: False: the poller is done once the service has accepted the new bounds.
        :keyword float polling_interval: seconds between polls (default: the target's)."""
        interval = check_polling(polling, polling_interval)
        settings = None
        if continuation_token is None:
            settings = AutoScale(minimum=minimum, maximum=maximum, initial=initial,
                                 idle_time_before_scale_down=idle_time_before_scale_down)
            log.info("cluster %s auto-scales between %d and %d node(s)", self.id, minimum, maximum)
        return self._begin_scale("setting auto-scale of cluster", continuation_token, polling, interval,
                                 auto_scale=settings)

    def auto_scale(self, minimum: int, maximum: int, *, initial: int = 0,
                   idle_time_before_scale_down: Optional[timedelta] = None,
                   timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> ClusterStatus:
        """:meth:`begin_auto_scale`, waiting at most ``timeout`` seconds (None: no limit).

        :param int minimum: the fewest nodes.
        :param int maximum: the most nodes.
        :keyword int initial: the nodes to start with.
        :keyword timedelta idle_time_before_scale_down: how long a node idles before it is released (Azure ML).
        :keyword float timeout: seconds to wait; None: no limit.
        :returns: the cluster's :class:`ClusterStatus` within its new bounds.
        :raises InvalidSpecError: for bad bounds, before anything is sent.
        :raises WaitTimeoutError: when ``timeout`` is spent (the change goes on)."""
        check_timeout(timeout)
        return self.begin_auto_scale(minimum, maximum, initial=initial,
                                     idle_time_before_scale_down=idle_time_before_scale_down).result(timeout)

    def _begin_scale(self, action: str, continuation_token: Optional[str], polling: bool,
                     polling_interval: Optional[float], **scale: object) -> "LROPoller[ClusterStatus]":
        """The scale request (sent now), then the wait until the cluster is ready at its new scale
        (on the poller's thread). The token holds the request's own while it runs; after that,
        resuming only watches the cluster."""
        backend, resource = self._backend, self.id
        interval = polling_interval or backend.default_poll_interval
        if continuation_token is not None:
            inner = resume_token(continuation_token, action=action, resource=resource)
            scaling = backend.begin_scale_cluster(self._ref, continuation_token=inner,
                                                  polling_interval=interval) if inner else None
        else:
            scaling = backend.begin_scale_cluster(self._ref, known=self._record, polling_interval=interval,
                                                  **scale)  # type: ignore[arg-type]
        if not polling:
            return accepted(scaling, self.status()) if scaling is not None else \
                DonePoller(self.status(), action=action, resource=resource)
        running = [scaling]

        def work() -> ClusterStatus:
            request = running[0]
            if request is not None:
                self._record = request.result(None)
                running[0] = None
            return self._until_ready(Polling(timeout=None, poll_interval=interval))

        def token() -> Optional[str]:
            request = running[0]
            return request.continuation_token() if request is not None else None

        return background_poller(work, action=action, resource=resource, token=token)

    def remote_login_info(self) -> List[RemoteLogin]:
        """Each node's public IP and SSH port.

        :returns: one :class:`RemoteLogin` per node."""
        return self._backend.remote_logins(self._ref)
