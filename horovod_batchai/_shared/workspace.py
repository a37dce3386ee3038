"""What a workspace is, and the checks and cluster specs its create methods build, without a request:
the sync and the aio Workspace share it."""
from __future__ import annotations

import getpass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence, Union

from .._models.cluster_spec import AutoScale, ClusterSpec, ImageReference, SetupTask
from .._models.errors import InvalidSpecError
from .._models.mounts import Mount
from .._models.names import check_batchai_name, check_location, check_resource_group
from .._models.records import WorkspaceRecord

if TYPE_CHECKING:
    from .._places.base import SpecChecks

__all__ = ["WorkspaceBase", "check_cluster_spec", "check_workspace_args", "cluster_spec_from_options", "scale_text"]


class WorkspaceBase:
    """What a workspace is, with no request: the sync and the aio Workspace share it."""

    @property
    def _backend(self) -> Any:
        raise NotImplementedError  # the sync class's backend, or the aio class's

    def __init__(self, target: Any, resource_group: str, name: str, *,
                 _record: Optional[WorkspaceRecord] = None) -> None:
        self.target = target
        self.resource_group = check_resource_group(resource_group)
        self.name = check_batchai_name(name, "workspace")
        self._record = _record

    def __repr__(self) -> str:
        return f"Workspace(resource_group={self.resource_group!r}, name={self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self)) and self.id.lower() == other.id.lower()

    def __hash__(self) -> int:
        return hash(self.id.lower())

    @property
    def id(self) -> str:
        """The workspace's ARM id (what :meth:`from_id` takes)."""
        return self._backend.workspace_id(self.resource_group, self.name)

    @property
    def location(self) -> Optional[str]:
        """The workspace's Azure region, as last fetched (None when not known)."""
        return self._record.location if self._record is not None else None


def cluster_spec_from_options(*, vm_size: str, vm_priority: str, target_node_count: Optional[int],
                              auto_scale: Optional[Union[AutoScale, tuple[int, int]]], admin_user_name: Optional[str],
                              ssh_public_key: Optional[str], admin_password: Optional[str], generate_ssh_keys: bool,
                              ssh_key_path: Optional[Union[str, Path]], image: Optional[ImageReference],
                              setup_task: Optional[SetupTask], mounts: Sequence[Mount]) -> ClusterSpec:
    """The :class:`ClusterSpec` that ``create_cluster``'s keyword options describe (it turns an
    ``auto_scale`` pair into an :class:`AutoScale` and ``mounts`` into a tuple, refusing what is
    neither, naming the option)."""
    user = admin_user_name or _default_admin_user()
    if not ssh_public_key and not admin_password and generate_ssh_keys:
        from .ssh import ensure_ssh_key
        ssh_public_key = ensure_ssh_key(Path(ssh_key_path).expanduser() if ssh_key_path else None)
    return ClusterSpec(vm_size=vm_size, vm_priority=vm_priority, target_node_count=target_node_count,
                       auto_scale=auto_scale, admin_user_name=user,  # type: ignore[arg-type]
                       ssh_public_key=ssh_public_key,
                       admin_password=admin_password, image=image, setup_task=setup_task,
                       mounts=mounts)  # type: ignore[arg-type]  # ClusterSpec checks and converts it


def check_cluster_spec(spec: object, backend: "SpecChecks") -> ClusterSpec:
    if not isinstance(spec, ClusterSpec):
        raise InvalidSpecError("spec", f"{type(spec).__name__} is not a ClusterSpec", "ClusterSpec(...)")
    backend.check_cluster_spec(spec)
    return spec


def check_workspace_args(resource_group: str, name: str, location: Optional[str]) -> Optional[str]:
    """Refuse ``begin_create``'s arguments before anything is sent; the location as checked."""
    check_resource_group(resource_group)
    check_batchai_name(name, "workspace")
    return check_location(location) if location is not None else None


def _default_admin_user() -> str:
    """The local user name, as the CLI defaulted ``--user-name``; 'batchai' when it is not usable."""
    try:
        user = getpass.getuser()
    except Exception:  # no user database entry (containers)
        user = ""
    return user if user and user.lower() not in ("root", "admin") and user.replace("_", "a").isalnum() else "batchai"


def scale_text(spec: ClusterSpec) -> str:
    if spec.auto_scale is not None:
        return f"auto-scale {spec.auto_scale.minimum}..{spec.auto_scale.maximum}"
    return f"{spec.target_node_count} node(s)"
