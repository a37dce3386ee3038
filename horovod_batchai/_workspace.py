"""Workspaces: where clusters, experiments and jobs live (Batch AI workspace or Azure ML workspace)."""
from __future__ import annotations

import getpass
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Union

from azure.core.polling import LROPoller

from ._backends import backend_for
from ._backends.base import ClusterRef, WorkspaceRecord
from ._cluster import GpuCluster
from ._cluster_spec import AutoScale, ClusterSpec, ImageReference, SetupTask
from ._errors import InvalidSpecError
from ._experiment import Experiment
from ._lro import DEFAULT_LRO_TIMEOUT, DonePoller, MappedPoller
from ._mounts import Mount
from ._names import check_batchai_name, check_location, check_resource_group
from ._resource_ids import parse_id
from ._values import Usage

if TYPE_CHECKING:
    from ._backends.base import Backend
    from ._target import Target

__all__ = ["Workspace", "Usage"]

log = logging.getLogger(__name__)


class Workspace:
    """A workspace. Build one with :meth:`create` (get-or-create), :meth:`get` or :meth:`from_id`.

    ``location`` is the one last fetched (None until then); it never makes a request. It may be
    shared between threads, and pickles as a reference (its target and names; see
    :class:`Target`): the receiving process fetches what it needs afresh.
    """

    def __init__(self, target: "Target", resource_group: str, name: str, *,
                 _record: Optional[WorkspaceRecord] = None) -> None:
        self.target = target
        self.resource_group = check_resource_group(resource_group)
        self.name = check_batchai_name(name, "workspace")
        self._record = _record

    def __repr__(self) -> str:
        return f"Workspace(resource_group={self.resource_group!r}, name={self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Workspace) and (self.id.lower() == other.id.lower())

    def __hash__(self) -> int:
        return hash(self.id.lower())

    def __reduce__(self) -> tuple[Any, ...]:
        return (Workspace, (self.target, self.resource_group, self.name))

    @classmethod
    def from_id(cls, target: "Target", resource_id: str) -> "Workspace":
        """The existing workspace whose ARM id is ``resource_id`` (as :attr:`id` gives it); an id
        of another form is an :class:`InvalidSpecError` stating the valid one."""
        names = parse_id(target, resource_id, "workspace")
        return cls.get(target, names["resource group"], names["workspace"])

    @property
    def _backend(self) -> "Backend":
        return backend_for(self.target)

    @property
    def id(self) -> str:
        return self._backend.workspace_id(self.resource_group, self.name)

    @property
    def location(self) -> Optional[str]:
        return self._record.location if self._record is not None else None

    def refresh(self) -> "Workspace":
        """Fetch the workspace again; returns the workspace itself."""
        self._record = self._backend.get_workspace(self.resource_group, self.name)
        return self

    # -- create / get / list / delete -----------------------------------------------------------
    @classmethod
    def create(cls, target: "Target", resource_group: str, name: str, *, location: Optional[str] = None,
               timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> "Workspace":
        """The workspace ``name`` in ``resource_group``, creating the group (in ``location``) and
        the workspace when missing. Calling it again returns the same workspace. Batch AI
        defaults ``location`` to eastus; creating an Azure ML workspace needs it given."""
        check_resource_group(resource_group)
        check_batchai_name(name, "workspace")
        if location is not None:
            location = check_location(location)
        record = backend_for(target).create_workspace(resource_group, name, location, timeout)
        return cls(target, resource_group, name, _record=record)

    @classmethod
    def get(cls, target: "Target", resource_group: str, name: str) -> "Workspace":
        """The existing workspace; :class:`NotFoundError` when there is none."""
        return cls(target, resource_group, name).refresh()

    @classmethod
    def list(cls, target: "Target", resource_group: Optional[str] = None) -> List["Workspace"]:
        """Workspaces in ``resource_group``, or in the whole subscription."""
        if resource_group is not None:
            check_resource_group(resource_group)
        return [cls(target, r.resource_group, r.name, _record=r)
                for r in backend_for(target).list_workspaces(resource_group)]

    def begin_delete(self) -> "LROPoller[None]":
        """Start deleting the workspace (with its clusters, experiments and jobs)."""
        return self._backend.begin_delete_workspace(self.resource_group, self.name)

    def delete(self, *, delete_resource_group: bool = False, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> None:
        """Delete the workspace (with its clusters, experiments and jobs) -- and, only when asked,
        its resource group with everything in it. Succeeds when already gone."""
        self.begin_delete().result(timeout)
        if delete_resource_group:
            self._backend.delete_resource_group(self.resource_group, timeout)

    def usages(self) -> List[Usage]:
        """Quotas and their use in the workspace's region."""
        location = self.location or self.refresh().location
        return self._backend.usages(str(location))

    # -- children -------------------------------------------------------------------------------
    def create_experiment(self, name: str) -> Experiment:
        return Experiment.create(self, name)

    def get_experiment(self, name: str) -> Experiment:
        return Experiment.get(self, name)

    def list_experiments(self) -> List[Experiment]:
        return Experiment.list(self)

    def begin_create_cluster(self, name: str, spec: Optional[ClusterSpec] = None, *, vm_size: str = "Standard_NC6",
                             vm_priority: str = "dedicated", target_node_count: Optional[int] = None,
                             auto_scale: Optional[Union[AutoScale, tuple[int, int]]] = None,
                             admin_user_name: Optional[str] = None, ssh_public_key: Optional[str] = None,
                             admin_password: Optional[str] = None, generate_ssh_keys: bool = True,
                             ssh_key_path: Optional[Union[str, Path]] = None, image: Optional[ImageReference] = None,
                             setup_task: Optional[SetupTask] = None,
                             mounts: Sequence[Mount] = ()) -> "LROPoller[GpuCluster]":
        """Start creating the cluster ``name`` (get-or-create), from ``spec`` or from the keyword
        options; the poller's result is the :class:`GpuCluster` once the service accepted it.

        Without ``ssh_public_key`` or ``admin_password``, ``generate_ssh_keys`` uses
        ``~/.ssh/id_rsa.pub`` (or ``ssh_key_path + '.pub'``), creating the pair when missing.
        When the cluster exists, what is compared depends on the target (never the node count,
        which :meth:`GpuCluster.resize` changes): on Batch AI (local or Azure), other settings --
        its VM size, admin user, password, key, image, setup task or mounts -- are a
        :class:`ConflictError` naming them; on Azure ML only another VM size is a conflict, and
        the existing AmlCompute keeps its own scale and admin user. Fields the target cannot
        express are refused here, before any request.
        """
        if spec is None:
            if isinstance(auto_scale, tuple):
                auto_scale = AutoScale(minimum=auto_scale[0], maximum=auto_scale[1])
            user = admin_user_name or _default_admin_user()
            if not ssh_public_key and not admin_password and generate_ssh_keys:
                from ._ssh import ensure_ssh_key
                ssh_public_key = ensure_ssh_key(Path(ssh_key_path).expanduser() if ssh_key_path else None)
            spec = ClusterSpec(vm_size=vm_size, vm_priority=vm_priority, target_node_count=target_node_count,
                               auto_scale=auto_scale, admin_user_name=user, ssh_public_key=ssh_public_key,
                               admin_password=admin_password, image=image, setup_task=setup_task,
                               mounts=tuple(mounts))
        if not isinstance(spec, ClusterSpec):
            raise InvalidSpecError("spec", f"{type(spec).__name__} is not a ClusterSpec", "ClusterSpec(...)")
        check_batchai_name(name, "cluster")
        backend = self._backend
        backend.check_cluster_spec(spec)
        ref = ClusterRef(self.resource_group, self.name, name)
        cluster_id = backend.cluster_id(ref)
        existing = backend.find_cluster(ref)
        if existing is not None:
            record = backend.reuse_cluster(ref, spec, existing)
            log.info("cluster %s exists with these settings; using it", cluster_id)
            return DonePoller(GpuCluster(self, name, _record=record))
        log.info("creating cluster %s (%s, %s)", cluster_id, spec.vm_size, _scale_text(spec))
        return MappedPoller(backend.begin_create_cluster(ref, spec), lambda r: GpuCluster(self, name, _record=r),
                            action="creating cluster", resource=cluster_id)

    def create_cluster(self, name: str, spec: Optional[ClusterSpec] = None, *, vm_size: str = "Standard_NC6",
                       vm_priority: str = "dedicated", target_node_count: Optional[int] = None,
                       auto_scale: Optional[Union[AutoScale, tuple[int, int]]] = None,
                       admin_user_name: Optional[str] = None, ssh_public_key: Optional[str] = None,
                       admin_password: Optional[str] = None, generate_ssh_keys: bool = True,
                       ssh_key_path: Optional[Union[str, Path]] = None, image: Optional[ImageReference] = None,
                       setup_task: Optional[SetupTask] = None, mounts: Sequence[Mount] = (),
                       timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> GpuCluster:
        """:meth:`begin_create_cluster`, waiting at most ``timeout`` seconds for the service to
        accept the cluster; :meth:`GpuCluster.wait_until_ready` then waits for its nodes."""
        return self.begin_create_cluster(
            name, spec, vm_size=vm_size, vm_priority=vm_priority, target_node_count=target_node_count,
            auto_scale=auto_scale, admin_user_name=admin_user_name, ssh_public_key=ssh_public_key,
            admin_password=admin_password, generate_ssh_keys=generate_ssh_keys, ssh_key_path=ssh_key_path,
            image=image, setup_task=setup_task, mounts=mounts).result(timeout)

    def get_cluster(self, name: str) -> GpuCluster:
        return GpuCluster.get(self, name)

    def list_clusters(self) -> List[GpuCluster]:
        return GpuCluster.list(self)


def _default_admin_user() -> str:
    """The local user name, as the CLI defaulted ``--user-name``; 'batchai' when it is not usable."""
    try:
        user = getpass.getuser()
    except Exception:  # no user database entry (containers)
        user = ""
    return user if user and user.lower() not in ("root", "admin") and user.replace("_", "a").isalnum() else "batchai"


def _scale_text(spec: ClusterSpec) -> str:
    if spec.auto_scale is not None:
        return f"auto-scale {spec.auto_scale.minimum}..{spec.auto_scale.maximum}"
    return f"{spec.target_node_count} node(s)"
