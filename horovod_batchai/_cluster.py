"""GPU clusters: create, watch until ready, resize, auto-scale, remote login, delete."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, List, Optional

from azure.core.exceptions import ResourceNotFoundError

from ._cluster_spec import AutoScale, ClusterSpec
from ._conversions import cluster_maximum_nodes, cluster_status_from_rest, cluster_to_rest, mounts_from_rest, scale_to_rest
from ._errors import ClusterNotReadyError, ConflictError, InvalidSpecError, WaitTimeoutError, azure_errors
from ._mounts import Mount
from ._names import check_batchai_name
from ._states import ClusterStatus
from ._target import IDEMPOTENT_POST

if TYPE_CHECKING:
    from azure.mgmt.batchai import models

    from ._workspace import Workspace

__all__ = ["GpuCluster", "RemoteLogin", "DEALLOCATION_OPTIONS"]

log = logging.getLogger(__name__)

DEALLOCATION_OPTIONS = ("requeue", "terminate", "waitforjobcompletion")


@dataclass(frozen=True)
class RemoteLogin:
    """Where to ``ssh`` into one node: ``ssh -p <port> <admin user>@<ip_address>``."""

    node_id: str
    ip_address: str
    port: int


class GpuCluster:
    """A Batch AI cluster in a :class:`Workspace` (see :meth:`Workspace.create_cluster`)."""

    def __init__(self, workspace: "Workspace", name: str, *, _model: Optional["models.Cluster"] = None) -> None:
        self.workspace = workspace
        self.name = check_batchai_name(name, "cluster")
        self._model = _model

    def __repr__(self) -> str:
        return f"GpuCluster(workspace={self.workspace.name!r}, name={self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GpuCluster) and self.id.lower() == other.id.lower()

    def __hash__(self) -> int:
        return hash(self.id.lower())

    @property
    def id(self) -> str:
        return f"{self.workspace.id}/clusters/{self.name}"

    @property
    def _client(self):  # type: ignore[no-untyped-def]
        return self.workspace.target.batchai().clusters

    @property
    def _args(self) -> tuple[str, str, str]:
        return self.workspace.resource_group, self.workspace.name, self.name

    def _get(self) -> "models.Cluster":
        with azure_errors("reading cluster", self.id):
            self._model = self._client.get(*self._args)
        assert self._model is not None
        return self._model

    def _known(self) -> "models.Cluster":
        return self._model if self._model is not None else self._get()

    # -- create / get / list / delete -----------------------------------------------------------
    @classmethod
    def create(cls, workspace: "Workspace", name: str, spec: ClusterSpec) -> "GpuCluster":
        """The cluster ``name`` (get-or-create). An existing cluster of another VM size is a
        :class:`ConflictError`: a cluster's size cannot change."""
        if not isinstance(spec, ClusterSpec):
            raise InvalidSpecError("spec", f"{type(spec).__name__} is not a ClusterSpec", "ClusterSpec(...)")
        cluster = cls(workspace, name)
        with azure_errors("creating cluster", cluster.id):
            try:
                existing = cluster._client.get(*cluster._args)
            except ResourceNotFoundError:
                existing = None
            if existing is not None:
                if (existing.vm_size or "").lower() != spec.vm_size.lower():
                    raise ConflictError(f"cluster {cluster.id} exists with VM size {existing.vm_size}, "
                                        f"not {spec.vm_size}; delete it or choose another name", resource=cluster.id)
                log.info("cluster %s exists; using it", cluster.id)
                cluster._model = existing
                return cluster
            log.info("creating cluster %s (%s, %s)", cluster.id, spec.vm_size, _scale_text(spec))
            cluster._model = cluster._client.begin_create(*cluster._args, cluster_to_rest(spec)).result()
        return cluster

    @classmethod
    def get(cls, workspace: "Workspace", name: str) -> "GpuCluster":
        cluster = cls(workspace, name)
        cluster._get()
        return cluster

    @classmethod
    def list(cls, workspace: "Workspace") -> List["GpuCluster"]:
        with azure_errors("listing clusters in", workspace.id):
            items: list[Any] = list(workspace.target.batchai().clusters.list_by_workspace(workspace.resource_group,
                                                                               workspace.name))
        return [cls(workspace, m.name or "", _model=m) for m in items]

    def delete(self) -> None:
        """Delete the cluster; succeeds when already gone."""
        with azure_errors("deleting cluster", self.id):
            try:
                log.info("deleting cluster %s", self.id)
                self._client.begin_delete(*self._args).result()
            except ResourceNotFoundError:
                log.debug("cluster %s was already gone", self.id)
        self._model = None

    # -- what it is and where it stands --------------------------------------------------------
    @property
    def vm_size(self) -> str:
        return str(self._known().vm_size or "")

    @property
    def maximum_node_count(self) -> Optional[int]:
        """The most nodes a job can get: the manual target, or the auto-scale maximum."""
        return cluster_maximum_nodes(self._known())

    @property
    def mounts(self) -> tuple[Mount, ...]:
        """Cluster-level mounts (under ``$AZ_BATCHAI_MOUNT_ROOT``), without keys."""
        setup = self._known().node_setup
        return mounts_from_rest(setup.mount_volumes if setup else None)

    def refresh(self) -> "GpuCluster":
        self._get()
        return self

    def status(self) -> ClusterStatus:
        """A fresh snapshot: ``allocation_state``, ``node_state_counts``, ``errors``; ``.table()``
        prints it like the tutorial."""
        return cluster_status_from_rest(self._get(), resource_group=self.workspace.resource_group,
                                        workspace=self.workspace.name)

    def wait_until_ready(self, timeout: float = 900.0, *, poll_interval: Optional[float] = None,
                         on_status: Optional[Callable[[ClusterStatus], None]] = None) -> ClusterStatus:
        """Wait until the cluster is steady with all its target nodes idle (or running jobs).

        Raises :class:`ClusterNotReadyError` as soon as the cluster reports errors or unusable
        nodes, and :class:`WaitTimeoutError` after ``timeout`` seconds.
        """
        interval = poll_interval if poll_interval is not None else self.workspace.target.default_poll_interval
        deadline = time.monotonic() + timeout
        last: Optional[ClusterStatus] = None
        while True:
            status = self.status()
            if on_status is not None and status != last:
                on_status(status)
            last = status
            if status.errors:
                raise ClusterNotReadyError(f"cluster {self.name!r} reports errors: "
                                           + "; ".join(str(e) for e in status.errors), errors=status.errors)
            if status.node_state_counts.unusable:
                raise ClusterNotReadyError(f"cluster {self.name!r} has {status.node_state_counts.unusable} "
                                           "unusable node(s)")
            if status.is_ready:
                return status
            if time.monotonic() >= deadline:
                raise WaitTimeoutError(
                    f"cluster {self.name!r} was not ready after {timeout:g}s: {status.allocation_state.value}, "
                    f"{status.node_state_counts}", last_state=status)
            time.sleep(min(interval, max(0.0, deadline - time.monotonic())))

    # -- scale ----------------------------------------------------------------------------------
    def resize(self, target_node_count: int, *, deallocation_option: str = "requeue") -> ClusterStatus:
        """Set a fixed size (0 releases every node). ``deallocation_option`` says what happens to
        jobs on removed nodes: requeue | terminate | waitforjobcompletion."""
        if not isinstance(target_node_count, int) or isinstance(target_node_count, bool) or target_node_count < 0:
            raise InvalidSpecError("target_node_count", f"{target_node_count!r} is not a node count", "an integer >= 0")
        if deallocation_option not in DEALLOCATION_OPTIONS:
            raise InvalidSpecError("deallocation_option", f"{deallocation_option!r} is not an option",
                                   " | ".join(DEALLOCATION_OPTIONS))
        log.info("resizing cluster %s to %d node(s)", self.id, target_node_count)
        return self._update(scale_to_rest(target_node_count=target_node_count, deallocation_option=deallocation_option))

    def auto_scale(self, minimum: int, maximum: int, *, initial: int = 0) -> ClusterStatus:
        """Let the service scale between ``minimum`` and ``maximum`` nodes with the job queue."""
        settings = AutoScale(minimum=minimum, maximum=maximum, initial=initial)
        log.info("cluster %s auto-scales between %d and %d node(s)", self.id, minimum, maximum)
        return self._update(scale_to_rest(auto_scale=settings))

    def _update(self, scale: "models.ScaleSettings") -> ClusterStatus:
        with azure_errors("updating cluster", self.id):
            # A scale PATCH sets absolute values, so repeating it after a dropped connection is safe.
            from azure.mgmt.batchai import models
            self._model = self._client.update(*self._args, models.ClusterUpdateParameters(scale_settings=scale),
                                              **IDEMPOTENT_POST)
        assert self._model is not None
        return cluster_status_from_rest(self._model, resource_group=self.workspace.resource_group,
                                        workspace=self.workspace.name)

    def remote_login_info(self) -> List[RemoteLogin]:
        """Each node's public IP and SSH port."""
        with azure_errors("listing remote login information of", self.id):
            items = list(self._client.list_remote_login_information(*self._args, **IDEMPOTENT_POST))
        return [RemoteLogin(node_id=i.node_id or "", ip_address=i.ip_address or "", port=int(i.port or 22))
                for i in items]


def _scale_text(spec: ClusterSpec) -> str:
    if spec.auto_scale is not None:
        return f"auto-scale {spec.auto_scale.minimum}..{spec.auto_scale.maximum}"
    return f"{spec.target_node_count} node(s)"
