"""What a GPU cluster is and how waiting for it decides, without a request: the sync and the aio
GpuCluster share it."""
from __future__ import annotations

from typing import Any, Callable, Optional

from .._models.constants import DEALLOCATION_OPTIONS
from .._models.errors import ClusterNotReadyError, HorovodBatchAIError, InvalidSpecError, WaitTimeoutError
from .._models.mounts import Mount
from .._models.names import check_batchai_name
from .._models.records import ClusterRecord, ClusterRef
from .._models.states import ClusterStatus
from .polling import Polling

__all__ = ["GpuClusterBase", "ReadyWatch", "check_resize"]




def check_resize(target_node_count: object, deallocation_option: Optional[str]) -> None:
    """Refuse a resize's arguments before anything is sent."""
    if not isinstance(target_node_count, int) or isinstance(target_node_count, bool) or target_node_count < 0:
        raise InvalidSpecError("target_node_count", f"{target_node_count!r} is not a node count", "an integer >= 0")
    if deallocation_option is not None and deallocation_option not in DEALLOCATION_OPTIONS:
        raise InvalidSpecError("deallocation_option", f"{deallocation_option!r} is not an option",
                               " | ".join(DEALLOCATION_OPTIONS))


class ReadyWatch:
    """What waiting for a cluster to be ready decides on each snapshot (the sync and async waits
    share it): ``on_status`` sees each new one, errors or unusable nodes end the wait."""

    def __init__(self, name: str, polling: Polling,
                 on_status: Optional[Callable[[ClusterStatus], None]] = None) -> None:
        self._name = name
        self._polling = polling
        self._on_status = on_status
        self._last: Optional[ClusterStatus] = None

    def check(self, status: ClusterStatus) -> None:
        if self._on_status is not None and status != self._last:
            self._on_status(status)
        self._last = status
        if status.errors:
            raise ClusterNotReadyError(f"cluster {self._name!r} reports errors: "
                                       + "; ".join(str(e) for e in status.errors), errors=status.errors)
        if status.node_state_counts.unusable:
            raise ClusterNotReadyError(f"cluster {self._name!r} has {status.node_state_counts.unusable} "
                                       "unusable node(s)")

    @staticmethod
    def done(status: ClusterStatus) -> bool:
        return status.is_ready

    def timeout_error(self, status: ClusterStatus) -> WaitTimeoutError:
        return WaitTimeoutError(f"cluster {self._name!r} was not ready after {self._polling.timeout:g}s: "
                                f"{status.allocation_state.value}, {status.node_state_counts}", last_state=status)


class GpuClusterBase:
    """What a cluster is, as last fetched, with no request: the sync and the aio GpuCluster share it."""

    @property
    def _backend(self) -> Any:
        raise NotImplementedError  # the sync class's backend, or the aio class's

    def __init__(self, workspace: Any, name: str, *, _record: Optional[ClusterRecord] = None) -> None:
        self.workspace = workspace
        self.name = check_batchai_name(name, "cluster")
        self._record = _record

    def __repr__(self) -> str:
        return f"GpuCluster(workspace={self.workspace.name!r}, name={self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self)) and self.id.lower() == other.id.lower()

    def __hash__(self) -> int:
        return hash(self.id.lower())

    @property
    def _ref(self) -> ClusterRef:
        return ClusterRef(self.workspace.resource_group, self.workspace.name, self.name)

    @property
    def id(self) -> str:
        """The cluster's ARM id (what :meth:`from_id` takes)."""
        return self._backend.cluster_id(self._ref)

    def _known(self) -> ClusterRecord:
        if self._record is None:
            raise HorovodBatchAIError(f"cluster {self.name!r} has not been fetched yet; refresh() it first")
        return self._record

    @property
    def vm_size(self) -> str:
        """The nodes' VM size, as last fetched; a :class:`HorovodBatchAIError` before the first fetch."""
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
