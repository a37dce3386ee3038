"""GPU clusters: watch until ready, resize, auto-scale, remote login, delete.

Clusters are created through :meth:`Workspace.create_cluster` (or ``begin_create_cluster``).
"""
from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable, List, Optional

from azure.core.polling import LROPoller

from ._backends import backend_for
from ._backends.base import ClusterRecord, ClusterRef
from ._cluster_spec import AutoScale
from ._errors import ClusterNotReadyError, HorovodBatchAIError, InvalidSpecError, WaitTimeoutError
from ._lro import DEFAULT_LRO_TIMEOUT
from ._mounts import Mount
from ._names import check_batchai_name
from ._polling import Polling, check_seconds, poll_until
from ._resource_ids import parse_id
from ._states import ClusterStatus
from ._values import RemoteLogin

if TYPE_CHECKING:
    from ._backends.base import Backend
    from ._target import Target
    from ._workspace import Workspace

__all__ = ["GpuCluster", "RemoteLogin", "DEALLOCATION_OPTIONS"]

log = logging.getLogger(__name__)

DEALLOCATION_OPTIONS = ("requeue", "terminate", "waitforjobcompletion")


class GpuCluster:
    """A GPU cluster in a :class:`Workspace` (see :meth:`Workspace.create_cluster`).

    Properties describe the cluster as last fetched (by the call that returned it, or
    :meth:`refresh`) and never make a request; :meth:`status` fetches a fresh snapshot.

    A cluster may be shared between threads (what was last fetched is replaced whole, so a reader
    sees one snapshot or the next, never a mix). It pickles as a reference, without what was
    fetched: call :meth:`refresh` in the receiving process. :meth:`from_id` rebuilds it from its id.
    """

    def __init__(self, workspace: "Workspace", name: str, *, _record: Optional[ClusterRecord] = None) -> None:
        self.workspace = workspace
        self.name = check_batchai_name(name, "cluster")
        self._record = _record

    def __repr__(self) -> str:
        return f"GpuCluster(workspace={self.workspace.name!r}, name={self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GpuCluster) and self.id.lower() == other.id.lower()

    def __hash__(self) -> int:
        return hash(self.id.lower())

    def __reduce__(self) -> tuple[Any, ...]:
        return (GpuCluster, (self.workspace, self.name))

    @classmethod
    def from_id(cls, target: "Target", resource_id: str) -> "GpuCluster":
        """The existing cluster whose ARM id is ``resource_id`` (as :attr:`id` gives it); an id
        of another form is an :class:`InvalidSpecError` stating the valid one."""
        from ._workspace import Workspace
        names = parse_id(target, resource_id, "cluster")
        return cls.get(Workspace(target, names["resource group"], names["workspace"]), names["cluster"])

    @property
    def _backend(self) -> "Backend":
        return backend_for(self.workspace.target)

    @property
    def _ref(self) -> ClusterRef:
        return ClusterRef(self.workspace.resource_group, self.workspace.name, self.name)

    @property
    def id(self) -> str:
        return self._backend.cluster_id(self._ref)

    # -- get / list / delete --------------------------------------------------------------------
    @classmethod
    def get(cls, workspace: "Workspace", name: str) -> "GpuCluster":
        """The existing cluster; :class:`NotFoundError` when there is none."""
        return cls(workspace, name).refresh()

    @classmethod
    def list(cls, workspace: "Workspace") -> List["GpuCluster"]:
        records = backend_for(workspace.target).list_clusters(workspace.resource_group, workspace.name)
        return [cls(workspace, r.name, _record=r) for r in records]

    def begin_delete(self) -> "LROPoller[None]":
        """Start deleting the cluster; the poller finishes at once when it is already gone."""
        self._record = None
        return self._backend.begin_delete_cluster(self._ref)

    def delete(self, *, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> None:
        """Delete the cluster and wait (at most ``timeout`` seconds); succeeds when already gone."""
        self.begin_delete().result(timeout)

    # -- what it is and where it stands --------------------------------------------------------
    def _known(self) -> ClusterRecord:
        if self._record is None:
            raise HorovodBatchAIError(f"cluster {self.name!r} has not been fetched yet; call refresh() first")
        return self._record

    @property
    def vm_size(self) -> str:
        return self._known().vm_size

    @property
    def maximum_node_count(self) -> Optional[int]:
        """The most nodes a job can get: the manual target, or the auto-scale maximum."""
        return self._known().maximum_node_count

    @property
    def mounts(self) -> tuple[Mount, ...]:
        """Cluster-level mounts (under ``$AZ_BATCHAI_MOUNT_ROOT``), without keys."""
        return self._known().mounts

    @property
    def ssh_public_key(self) -> Optional[str]:
        """The admin user's public key, as the service reports it."""
        return self._known().ssh_public_key

    def refresh(self) -> "GpuCluster":
        """Fetch the cluster again; returns the cluster itself."""
        self._record = self._backend.get_cluster(self._ref)
        return self

    def status(self) -> ClusterStatus:
        """A fresh snapshot: ``allocation_state``, ``node_state_counts``, ``errors``; ``.table()``
        prints it like the tutorial."""
        record = self._record = self._backend.cluster_status(self._ref)
        return record.status  # this call's snapshot, whatever another thread fetched since

    def wait_until_ready(self, timeout: float = 900.0, *, poll_interval: Optional[float] = None,
                         on_status: Optional[Callable[[ClusterStatus], None]] = None,
                         clock: Callable[[], float] = time.monotonic,
                         sleep: Callable[[float], None] = time.sleep,
                         stop: Optional[threading.Event] = None) -> ClusterStatus:
        """Wait until the cluster is steady with all its target nodes idle (or running jobs).

        Raises :class:`ClusterNotReadyError` as soon as the cluster reports errors or unusable
        nodes, :class:`WaitTimeoutError` after ``timeout`` seconds, and :class:`StoppedError`
        within one poll interval of ``stop`` (a ``threading.Event``) being set by another thread.
        """
        polling = Polling(timeout=timeout, allow_no_timeout=False, clock=clock, sleep=sleep, stop=stop,
                          poll_interval=poll_interval if poll_interval is not None
                          else self._backend.default_poll_interval)
        last: list[ClusterStatus] = []

        def check(status: ClusterStatus) -> None:
            if on_status is not None and (not last or status != last[-1]):
                on_status(status)
            last[:] = [status]
            if status.errors:
                raise ClusterNotReadyError(f"cluster {self.name!r} reports errors: "
                                           + "; ".join(str(e) for e in status.errors), errors=status.errors)
            if status.node_state_counts.unusable:
                raise ClusterNotReadyError(f"cluster {self.name!r} has {status.node_state_counts.unusable} "
                                           "unusable node(s)")

        return poll_until(self.status, done=lambda s: s.is_ready, polling=polling, on_each=check,
                          what=f"waiting for cluster {self.name!r}",
                          on_timeout=lambda s: WaitTimeoutError(
                              f"cluster {self.name!r} was not ready after {timeout:g}s: {s.allocation_state.value}, "
                              f"{s.node_state_counts}", last_state=s))

    # -- scale ----------------------------------------------------------------------------------
    def resize(self, target_node_count: int, *, deallocation_option: Optional[str] = None,
               timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> ClusterStatus:
        """Set a fixed size (0 releases every node). ``deallocation_option`` says what happens to
        jobs on removed nodes: requeue (Batch AI's default) | terminate | waitforjobcompletion.

        Waits at most ``timeout`` seconds (None: no limit) for the service to accept the new
        size -- on Azure ML, the compute update's long-running operation -- and raises
        :class:`WaitTimeoutError` after that; :meth:`wait_until_ready` then waits for the nodes."""
        if not isinstance(target_node_count, int) or isinstance(target_node_count, bool) or target_node_count < 0:
            raise InvalidSpecError("target_node_count", f"{target_node_count!r} is not a node count", "an integer >= 0")
        if deallocation_option is not None and deallocation_option not in DEALLOCATION_OPTIONS:
            raise InvalidSpecError("deallocation_option", f"{deallocation_option!r} is not an option",
                                   " | ".join(DEALLOCATION_OPTIONS))
        seconds = check_seconds(timeout, "timeout", allow_none=True, allow_infinite=True)
        log.info("resizing cluster %s to %d node(s)", self.id, target_node_count)
        record = self._record = self._backend.scale_cluster(self._ref, target_node_count=target_node_count,
                                                            deallocation_option=deallocation_option,
                                                            known=self._record, timeout=seconds)
        return record.status

    def auto_scale(self, minimum: int, maximum: int, *, initial: int = 0,
                   idle_time_before_scale_down: Optional[timedelta] = None,
                   timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> ClusterStatus:
        """Let the service scale between ``minimum`` and ``maximum`` nodes with the job queue
        (on Azure ML, nodes idle for ``idle_time_before_scale_down`` are released). Waits at
        most ``timeout`` seconds, as :meth:`resize` does."""
        settings = AutoScale(minimum=minimum, maximum=maximum, initial=initial,
                             idle_time_before_scale_down=idle_time_before_scale_down)
        seconds = check_seconds(timeout, "timeout", allow_none=True, allow_infinite=True)
        log.info("cluster %s auto-scales between %d and %d node(s)", self.id, minimum, maximum)
        record = self._record = self._backend.scale_cluster(self._ref, auto_scale=settings, known=self._record,
                                                            timeout=seconds)
        return record.status

    def remote_login_info(self) -> List[RemoteLogin]:
        """Each node's public IP and SSH port."""
        return self._backend.remote_logins(self._ref)
