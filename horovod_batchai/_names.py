"""Validation of names, paths and the shape of spec fields, before anything is sent.

Each check raises :class:`InvalidSpecError` naming the field and the valid form, and returns the
value (normalised where Azure itself is case-insensitive, e.g. locations).
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Optional, Union

from ._errors import InvalidSpecError

__all__ = [
    "check_resource_group", "check_batchai_name", "check_storage_account", "check_share_name",
    "check_share_path", "check_relative_mount_path", "check_location", "check_admin_user_name",
    "check_directory_id", "check_env_name", "check_vm_size", "check_subscription_id", "check_items",
    "check_mapping", "check_optional",
]

_RESOURCE_GROUP = re.compile(r"^[-\w.()]{1,90}\Z")
_BATCHAI_NAME = re.compile(r"^[-\w]{1,64}\Z", re.ASCII)
_STORAGE_ACCOUNT = re.compile(r"^[a-z0-9]{3,24}\Z")
_SHARE = re.compile(r"^(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]\Z")
_MOUNT_PATH = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*\Z")
_LOCATION = re.compile(r"^[a-z0-9]{2,40}\Z")
_ADMIN_USER = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}\Z")
_DIRECTORY_ID = re.compile(r"^[A-Za-z0-9_]{1,64}\Z")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_VM_SIZE = re.compile(r"^standard_[a-z0-9_]+\Z", re.IGNORECASE)
_SUBSCRIPTION = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
_FORBIDDEN_IN_FILE_NAME = set('"\\:|<>*?')


def check_resource_group(name: str, field: str = "resource_group") -> str:
    if not isinstance(name, str) or not _RESOURCE_GROUP.match(name) or name.endswith("."):
        raise InvalidSpecError(field, f"{name!r} is not a valid resource group name",
                               "1-90 letters, digits, '-', '_', '.', '(' or ')', not ending in '.'")
    return name


def check_batchai_name(name: str, field: str) -> str:
    """Workspaces, experiments, clusters, jobs and file servers share one rule."""
    if not isinstance(name, str) or not _BATCHAI_NAME.match(name):
        raise InvalidSpecError(field, f"{name!r} is not a valid name",
                               "1-64 characters: letters, digits, '-' or '_'")
    return name


def check_storage_account(name: str, field: str = "account_name") -> str:
    if not isinstance(name, str) or not _STORAGE_ACCOUNT.match(name):
        raise InvalidSpecError(field, f"{name!r} is not a valid storage account name",
                               "3-24 lower-case letters or digits")
    return name


def check_share_name(name: str, field: str = "share_name") -> str:
    if not isinstance(name, str) or not _SHARE.match(name):
        raise InvalidSpecError(field, f"{name!r} is not a valid file share name",
                               "3-63 lower-case letters, digits or single hyphens, "
                               "starting and ending with a letter or digit")
    return name


def check_share_path(path: str, field: str = "path", *, allow_root: bool = False) -> str:
    """A path inside a share, with '/' separators; returns it without leading/trailing slashes."""
    if not isinstance(path, str):
        raise InvalidSpecError(field, f"{path!r} is not a path", "a string like 'cifar/data/file.bin'")
    cleaned = path.strip("/")
    if cleaned in ("", "."):
        if allow_root:
            return ""
        raise InvalidSpecError(field, "the path is empty", "a path inside the share like 'cifar/model.h5'")
    parts = cleaned.split("/")
    for part in parts:
        bad = _FORBIDDEN_IN_FILE_NAME.intersection(part)
        if part in ("", ".", "..") or bad or len(part) > 255 or any(ord(c) < 32 for c in part):
            raise InvalidSpecError(field, f"{path!r} has an invalid segment {part!r}",
                                   "'/'-separated names of 1-255 characters without '..', empty "
                                   "segments, control characters or any of \" \\ : | < > * ?")
    if len(cleaned) > 2048:
        raise InvalidSpecError(field, "the path is longer than 2048 characters", "at most 2048 characters")
    return cleaned


def check_relative_mount_path(path: str, field: str = "relative_mount_path") -> str:
    if not isinstance(path, str) or not _MOUNT_PATH.match(path) or ".." in path.split("/"):
        raise InvalidSpecError(field, f"{path!r} is not a valid relative mount path",
                               "a relative path of letters, digits, '_', '-' or '.', like 'myshare'")
    return path


def check_location(location: str, field: str = "location") -> str:
    normalised = location.replace(" ", "").lower() if isinstance(location, str) else ""
    if not _LOCATION.match(normalised):
        raise InvalidSpecError(field, f"{location!r} is not an Azure region name", "a region like 'eastus'")
    return normalised


def check_admin_user_name(name: str, field: str = "admin_user_name") -> str:
    if not isinstance(name, str) or not _ADMIN_USER.match(name) or name.lower() in ("root", "admin"):
        raise InvalidSpecError(field, f"{name!r} is not a valid admin user name",
                               "1-32 letters, digits, '_', '.' or '-', starting with a letter or '_', "
                               "not 'root' or 'admin'")
    return name


def check_directory_id(value: str, field: str) -> str:
    if not isinstance(value, str) or not _DIRECTORY_ID.match(value):
        raise InvalidSpecError(field, f"{value!r} is not a valid directory id",
                               "1-64 letters, digits or '_' (it becomes part of $AZ_BATCHAI_INPUT_<id>)")
    return value


def check_env_name(name: str, field: str) -> str:
    if not isinstance(name, str) or not _ENV_NAME.match(name):
        raise InvalidSpecError(field, f"{name!r} is not a valid environment variable name",
                               "letters, digits and '_', not starting with a digit")
    return name


def check_vm_size(name: str, field: str = "vm_size") -> str:
    if not isinstance(name, str) or not _VM_SIZE.match(name):
        raise InvalidSpecError(field, f"{name!r} is not an Azure VM size", "a size like 'Standard_NC6'")
    return name


def check_subscription_id(value: Optional[str], field: str = "subscription_id") -> str:
    if not value or not _SUBSCRIPTION.match(value):
        raise InvalidSpecError(field, f"{value!r} is not a subscription id",
                               "a GUID like '00000000-0000-0000-0000-000000000000'")
    return value


def check_items(value: Any, field: str, kinds: Union[type, tuple[type, ...]], valid_form: str) -> tuple[Any, ...]:
    """``value`` as a tuple whose items are all ``kinds``; a lone item (``mounts=share.mount()``)
    or a string is refused rather than iterated."""
    if isinstance(value, (str, bytes, Mapping)) or isinstance(value, kinds) or not hasattr(value, "__iter__"):
        raise InvalidSpecError(field, f"is a {type(value).__name__}, not a sequence", valid_form)
    items = tuple(value)
    for i, item in enumerate(items):
        if not isinstance(item, kinds):
            names = " or ".join(k.__name__ for k in (kinds if isinstance(kinds, tuple) else (kinds,)))
            raise InvalidSpecError(f"{field}[{i}]", f"is a {type(item).__name__}, not {names}", valid_form)
    return items


def check_mapping(value: Any, field: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise InvalidSpecError(field, f"is a {type(value).__name__}, not a mapping", "a dict of NAME: value")
    return value


def check_optional(value: Any, field: str, kind: type, valid_form: str) -> Any:
    if value is not None and not isinstance(value, kind):
        raise InvalidSpecError(field, f"is a {type(value).__name__}, not {kind.__name__}", valid_form)
    return value
