"""Batch AI workspaces (and the resource group that holds one)."""
from __future__ import annotations

import getpass
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Union

from azure.core.exceptions import ResourceNotFoundError

from ._cluster_spec import AutoScale, ClusterSpec, ImageReference, SetupTask
from ._errors import ConflictError, azure_errors
from ._mounts import Mount
from ._names import check_batchai_name, check_location, check_resource_group

if TYPE_CHECKING:
    from azure.mgmt.batchai import models

    from ._cluster import GpuCluster
    from ._experiment import Experiment
    from ._target import Target

__all__ = ["Workspace", "Usage"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Usage:
    """A quota in the workspace's region (``az batchai list-usages``), e.g. dedicated cores."""

    name: str
    current_value: int
    limit: int
    unit: str


class Workspace:
    """A Batch AI workspace. Build one with :meth:`create` (get-or-create) or :meth:`get`."""

    def __init__(self, target: "Target", resource_group: str, name: str, *,
                 _model: Optional["models.Workspace"] = None) -> None:
        self.target = target
        self.resource_group = check_resource_group(resource_group)
        self.name = check_batchai_name(name, "workspace")
        self._model = _model

    def __repr__(self) -> str:
        return f"Workspace(resource_group={self.resource_group!r}, name={self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Workspace) and (self.id.lower() == other.id.lower())

    def __hash__(self) -> int:
        return hash(self.id.lower())

    @property
    def id(self) -> str:
        return (f"/subscriptions/{self.target.subscription_id}/resourceGroups/{self.resource_group}"
                f"/providers/Microsoft.BatchAI/workspaces/{self.name}")

    @property
    def location(self) -> str:
        if self._model is None:
            self.refresh()
        assert self._model is not None
        return str(self._model.location)

    def refresh(self) -> "Workspace":
        with azure_errors("reading workspace", self.id):
            self._model = self.target.batchai().workspaces.get(self.resource_group, self.name)
        return self

    # -- create / get / list / delete -----------------------------------------------------------
    @classmethod
    def create(cls, target: "Target", resource_group: str, name: str, *, location: str = "eastus") -> "Workspace":
        """The workspace ``name`` in ``resource_group``, creating the group (in ``location``) and
        the workspace when missing. Calling it again returns the same workspace."""
        check_resource_group(resource_group)
        check_batchai_name(name, "workspace")
        location = check_location(location)
        ensure_resource_group(target, resource_group, location)
        client = target.batchai()
        resource = cls(target, resource_group, name).id
        with azure_errors("creating workspace", resource):
            try:
                model = client.workspaces.get(resource_group, name)
                log.info("workspace %s exists; using it", resource)
            except ResourceNotFoundError:
                log.info("creating workspace %s in %s", resource, location)
                from azure.mgmt.batchai import models as batchai_models
                model = client.workspaces.begin_create(
                    resource_group, name, batchai_models.WorkspaceCreateParameters(location=location)).result()
        return cls(target, resource_group, name, _model=model)

    @classmethod
    def get(cls, target: "Target", resource_group: str, name: str) -> "Workspace":
        """The existing workspace; :class:`NotFoundError` when there is none."""
        return cls(target, resource_group, name).refresh()

    @classmethod
    def list(cls, target: "Target", resource_group: Optional[str] = None) -> List["Workspace"]:
        """Workspaces in ``resource_group``, or in the whole subscription."""
        client = target.batchai()
        scope = f"/subscriptions/{target.subscription_id}" + (f"/resourceGroups/{resource_group}" if resource_group else "")
        with azure_errors("listing workspaces in", scope):
            if resource_group is not None:
                check_resource_group(resource_group)
                models_: List[Any] = list(client.workspaces.list_by_resource_group(resource_group))
            else:
                models_ = list(client.workspaces.list())  # type: ignore[arg-type]
        return [cls(target, _resource_group_of(m.id or ""), m.name or "", _model=m) for m in models_]

    def delete(self, *, delete_resource_group: bool = False) -> None:
        """Delete the workspace (with its clusters, experiments and jobs) -- and, when asked, its
        resource group with everything in it. Succeeds when already gone."""
        with azure_errors("deleting workspace", self.id):
            try:
                log.info("deleting workspace %s", self.id)
                self.target.batchai().workspaces.begin_delete(self.resource_group, self.name).result()
            except ResourceNotFoundError:
                log.debug("workspace %s was already gone", self.id)
        if delete_resource_group:
            delete_resource_group_(self.target, self.resource_group)

    def usages(self) -> List[Usage]:
        """Batch AI quotas and their use in the workspace's region."""
        location = self.location
        with azure_errors("listing usages in", location):
            items: List[Any] = list(self.target.batchai().usages.list(location))
        return [Usage(name=str(u.name.value if u.name else ""), current_value=int(u.current_value or 0),
                      limit=int(u.limit or 0), unit=str(getattr(u.unit, "value", u.unit) or "Count")) for u in items]

    # -- children -------------------------------------------------------------------------------
    def create_experiment(self, name: str) -> "Experiment":
        from ._experiment import Experiment
        return Experiment.create(self, name)

    def get_experiment(self, name: str) -> "Experiment":
        from ._experiment import Experiment
        return Experiment.get(self, name)

    def list_experiments(self) -> List["Experiment"]:
        from ._experiment import Experiment
        return Experiment.list(self)

    def create_cluster(self, name: str, spec: Optional[ClusterSpec] = None, *, vm_size: str = "Standard_NC6",
                       vm_priority: str = "dedicated", target_node_count: Optional[int] = None,
                       auto_scale: Optional[Union[AutoScale, tuple[int, int]]] = None,
                       admin_user_name: Optional[str] = None, ssh_public_key: Optional[str] = None,
                       admin_password: Optional[str] = None, generate_ssh_keys: bool = True,
                       ssh_key_path: Optional[Union[str, Path]] = None, image: Optional[ImageReference] = None,
                       setup_task: Optional[SetupTask] = None, mounts: Sequence[Mount] = ()) -> "GpuCluster":
        """The cluster ``name`` (get-or-create), from ``spec`` or from the keyword options.

        Without ``ssh_public_key`` or ``admin_password``, ``generate_ssh_keys`` uses
        ``~/.ssh/id_rsa.pub`` (or ``ssh_key_path + '.pub'``), creating the pair when missing.
        The call returns once the service accepted the cluster; see
        :meth:`GpuCluster.wait_until_ready`.
        """
        from ._cluster import GpuCluster
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
        return GpuCluster.create(self, name, spec)

    def get_cluster(self, name: str) -> "GpuCluster":
        from ._cluster import GpuCluster
        return GpuCluster.get(self, name)

    def list_clusters(self) -> List["GpuCluster"]:
        from ._cluster import GpuCluster
        return GpuCluster.list(self)


def _default_admin_user() -> str:
    """The local user name, as the CLI defaulted ``--user-name``; 'batchai' when it is not usable."""
    try:
        user = getpass.getuser()
    except Exception:  # no user database entry (containers)
        user = ""
    return user if user and user.lower() not in ("root", "admin") and user.replace("_", "a").isalnum() else "batchai"


def _resource_group_of(resource_id: str) -> str:
    parts = resource_id.split("/")
    lowered = [p.lower() for p in parts]
    return parts[lowered.index("resourcegroups") + 1] if "resourcegroups" in lowered else ""


def ensure_resource_group(target: "Target", resource_group: str, location: str) -> None:
    """Create ``resource_group`` in ``location`` unless it exists (in any location)."""
    client = target.resources()
    resource = f"/subscriptions/{target.subscription_id}/resourceGroups/{resource_group}"
    with azure_errors("creating resource group", resource):
        try:
            client.resource_groups.get(resource_group)
            return
        except ResourceNotFoundError:
            pass
        log.info("creating resource group %s in %s", resource_group, location)
        from azure.mgmt.resource.resources.models import ResourceGroup
        client.resource_groups.create_or_update(resource_group, ResourceGroup(location=location))


def delete_resource_group_(target: "Target", resource_group: str) -> None:
    resource = f"/subscriptions/{target.subscription_id}/resourceGroups/{resource_group}"
    with azure_errors("deleting resource group", resource):
        try:
            log.info("deleting resource group %s", resource_group)
            target.resources().resource_groups.begin_delete(resource_group).result()
        except ResourceNotFoundError:
            log.debug("resource group %s was already gone", resource_group)


def conflict(resource: str, message: str) -> ConflictError:
    return ConflictError(message, resource=resource)
