"""What a GPU cluster is: a frozen, keyword-only spec validated when built."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType
from typing import Any, Mapping, Optional

from .errors import InvalidSpecError
from .mounts import AzureBlobMount, AzureFileShareMount, FileServerMount, Mount, UnmanagedMount
from .names import (check_admin_user_name, check_command_text, check_env_name, check_env_value, check_environment_size,
                    check_items, check_mapping, check_node_path, check_optional, check_text, check_vm_size)
from .pickling import PicklesWithoutSecrets

__all__ = ["ClusterSpec", "AutoScale", "ImageReference", "SetupTask", "VM_PRIORITIES"]

VM_PRIORITIES = ("dedicated", "lowpriority")


@dataclass(frozen=True, kw_only=True)
class AutoScale:
    """Auto-scale between ``minimum`` and ``maximum`` nodes, starting at ``initial``.
    ``idle_time_before_scale_down`` is Azure ML's (AmlCompute); Batch AI has no such setting."""

    minimum: int
    maximum: int
    initial: int = 0
    idle_time_before_scale_down: Optional[timedelta] = None

    def __post_init__(self) -> None:
        for name in ("minimum", "maximum", "initial"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InvalidSpecError(f"auto_scale.{name}", f"{value!r} is not a node count", "an integer >= 0")
        if self.maximum < 1 or self.minimum > self.maximum:
            raise InvalidSpecError("auto_scale", f"({self.minimum}, {self.maximum}) is not a range",
                                   "(minimum, maximum) with 0 <= minimum <= maximum and maximum >= 1")
        if not self.minimum <= self.initial <= self.maximum and self.initial != 0:
            raise InvalidSpecError("auto_scale.initial", f"{self.initial} is outside ({self.minimum}, {self.maximum})",
                                   "0, or a count between minimum and maximum")
        idle = self.idle_time_before_scale_down
        if idle is not None and (not isinstance(idle, timedelta) or idle <= timedelta(0)):
            raise InvalidSpecError("auto_scale.idle_time_before_scale_down", f"{idle!r} is not a positive duration",
                                   "a datetime.timedelta, e.g. timedelta(minutes=2)")


@dataclass(frozen=True, kw_only=True)
class ImageReference:
    """The OS image of the nodes (the service's default is Ubuntu Server 16.04-LTS)."""

    publisher: str
    offer: str
    sku: str
    version: str = "latest"
    virtual_machine_image_id: Optional[str] = None

    def __post_init__(self) -> None:
        for name in ("publisher", "offer", "sku", "version"):
            check_text(getattr(self, name), f"image.{name}", max_bytes=256,
                       valid_form="e.g. ImageReference(publisher='Canonical', offer='UbuntuServer', sku='16.04-LTS')")
        if self.virtual_machine_image_id is not None:
            check_text(self.virtual_machine_image_id, "image.virtual_machine_image_id", max_bytes=2048,
                       valid_form="a custom image's resource id, or None")


_CLUSTER_PICKLE_HINT = ("a spec without passwords, keys or secret values (sign in with ssh_public_key), or the spec "
                        "built in the receiving process")


@dataclass(frozen=True, kw_only=True)
class SetupTask(PicklesWithoutSecrets):
    """A command run on every node when it joins the cluster; logs go under ``std_out_err_path_prefix``."""

    _pickle_prefix = "setup_task."
    _pickle_hint = _CLUSTER_PICKLE_HINT

    command_line: str
    std_out_err_path_prefix: str
    environment_variables: Mapping[str, str] = field(default_factory=dict)
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        check_command_text(self.command_line, "setup_task.command_line",
                           valid_form="a shell command line run on each node as it joins, e.g. 'apt install -y x'")
        check_node_path(self.std_out_err_path_prefix, "setup_task.std_out_err_path_prefix",
                        "a path under a cluster mount, e.g. '$AZ_BATCHAI_MOUNT_ROOT/myshare/setup'")
        check_mapping(self.environment_variables, "setup_task.environment_variables")
        check_mapping(self.secrets, "setup_task.secrets")
        for kind, variables in (("environment_variables", self.environment_variables), ("secrets", self.secrets)):
            for name, value in variables.items():
                check_env_name(name, f"setup_task.{kind}")
                check_env_value(name, value, f"setup_task.{kind}[{name!r}]", secret=kind == "secrets")
        overlap = set(self.environment_variables) & set(self.secrets)
        if overlap:
            raise InvalidSpecError("setup_task.secrets", f"{sorted(overlap)} also appear in environment_variables",
                                   "each name in one of the two")
        check_environment_size({**self.environment_variables, **self.secrets},
                               "setup_task.environment_variables and setup_task.secrets")
        object.__setattr__(self, "environment_variables", MappingProxyType(dict(self.environment_variables)))
        object.__setattr__(self, "secrets", MappingProxyType(dict(self.secrets)))


@dataclass(frozen=True, kw_only=True)
class ClusterSpec(PicklesWithoutSecrets):
    """A Batch AI cluster: ``target_node_count`` fixed nodes, or ``auto_scale`` between bounds.

    The admin user signs in with ``ssh_public_key`` or ``admin_password`` (never shown).
    ``mounts`` are mounted on every node under ``$AZ_BATCHAI_MOUNT_ROOT``. It pickles when it
    holds no secret (no password, setup-task secret values or mount keys).
    """

    _pickle_hint = _CLUSTER_PICKLE_HINT

    vm_size: str
    admin_user_name: str
    vm_priority: str = "dedicated"
    target_node_count: Optional[int] = None
    auto_scale: Optional[AutoScale] = None
    ssh_public_key: Optional[str] = None
    admin_password: Optional[str] = field(default=None, repr=False)
    image: Optional[ImageReference] = None
    setup_task: Optional[SetupTask] = None
    mounts: tuple[Mount, ...] = ()

    def __post_init__(self) -> None:
        check_vm_size(self.vm_size)
        check_admin_user_name(self.admin_user_name)
        if self.vm_priority not in VM_PRIORITIES:
            raise InvalidSpecError("vm_priority", f"{self.vm_priority!r} is not a VM priority", " | ".join(VM_PRIORITIES))
        if isinstance(self.auto_scale, (tuple, list)) and len(self.auto_scale) == 2:
            object.__setattr__(self, "auto_scale", AutoScale(minimum=self.auto_scale[0], maximum=self.auto_scale[1]))
        check_optional(self.auto_scale, "auto_scale", AutoScale, "(minimum, maximum) or AutoScale(minimum=..., maximum=...)")
        if self.auto_scale is not None and self.target_node_count is not None:
            raise InvalidSpecError("target_node_count", "given together with auto_scale",
                                   "either target_node_count or auto_scale=(minimum, maximum)")
        if self.auto_scale is None and self.target_node_count is None:
            object.__setattr__(self, "target_node_count", 1)
        if self.target_node_count is not None and (
                not isinstance(self.target_node_count, int) or isinstance(self.target_node_count, bool)
                or self.target_node_count < 0):
            raise InvalidSpecError("target_node_count", f"{self.target_node_count!r} is not a node count",
                                   "an integer >= 0")
        if not self.ssh_public_key and not self.admin_password:
            raise InvalidSpecError("ssh_public_key", "neither an SSH public key nor a password was given",
                                   "ssh_public_key='ssh-rsa AAAA...', admin_password=..., or generate_ssh_keys=True")
        if self.admin_password is not None:
            check_text(self.admin_password, "admin_password", valid_form="the admin user's password, or None",
                       max_bytes=256, secret=True)
        if self.ssh_public_key is not None:
            check_text(self.ssh_public_key, "ssh_public_key", max_bytes=16384,
                       valid_form="one line like 'ssh-rsa AAAAB3... user@host' (the contents of id_rsa.pub)")
        if self.ssh_public_key and not self.ssh_public_key.startswith(("ssh-rsa ", "ssh-ed25519 ", "ecdsa-sha2-")):
            raise InvalidSpecError("ssh_public_key", "is not an OpenSSH public key",
                                   "one line like 'ssh-rsa AAAAB3... user@host' (the contents of id_rsa.pub)")
        check_optional(self.image, "image", ImageReference, "ImageReference(publisher=..., offer=..., sku=...)")
        check_optional(self.setup_task, "setup_task", SetupTask,
                       "SetupTask(command_line=..., std_out_err_path_prefix=...)")
        object.__setattr__(self, "mounts", check_items(
            self.mounts, "mounts", (AzureFileShareMount, AzureBlobMount, FileServerMount, UnmanagedMount),
            "a sequence of AzureFileShareMount (FileShare.mount()), AzureBlobMount, FileServerMount or "
            "UnmanagedMount, e.g. mounts=(share.mount(),)"))
        for i, mount in enumerate(self.mounts):
            if not mount.is_resolved or (isinstance(mount, AzureBlobMount) and not mount.account_key):
                raise InvalidSpecError(f"mounts[{i}]", "has no storage account key",
                                       "a mount made by FileShare.mount(), which fetches the key")

    @property
    def maximum_node_count(self) -> int:
        """The most nodes a job on this cluster can get."""
        return self.auto_scale.maximum if self.auto_scale is not None else int(self.target_node_count or 0)

    def replace(self, **changes: Any) -> "ClusterSpec":
        """A copy with ``changes`` applied (and validated), e.g. ``spec.replace(target_node_count=2)``.

        :returns: a new :class:`ClusterSpec`.
        :raises InvalidSpecError: for a bad value."""
        return dataclasses.replace(self, **changes)
