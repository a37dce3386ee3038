"""Validation of names, paths and the shape of spec fields, before anything is sent.

Each check raises :class:`InvalidSpecError` naming the field and the valid form, and returns the
value (normalised where Azure itself is case-insensitive, e.g. locations).
"""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from .errors import InvalidSpecError

__all__ = [
    "check_resource_group", "check_batchai_name", "check_storage_account", "check_share_name",
    "check_share_path", "check_relative_mount_path", "check_location", "check_admin_user_name",
    "check_directory_id", "check_env_name", "check_vm_size", "check_subscription_id", "check_items",
    "check_mapping", "check_optional", "check_text", "check_node_path", "check_command_text", "check_env_value",
    "check_environment_size", "check_container_image", "check_shm_size", "check_registry_url", "check_cluster_id",
    "check_container_name", "check_count", "describe_value", "MAX_PATH_BYTES", "MAX_COMMAND_BYTES",
    "MAX_ARGUMENT_BYTES", "MAX_ENVIRONMENT_BYTES", "MAX_INT32", "local_destination", "local_directory", "check_mode",
    "check_sweep_name", "check_objective", "check_seed",
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
_CONTAINER = _SHARE  # blob container names follow the share rule
_IMAGE_PATH_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*\Z")
_IMAGE_DOMAIN = re.compile(r"^(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])"
                           r"(?:\.(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]))*(?::[0-9]+)?\Z")
_IMAGE_TAG = re.compile(r"^[\w][\w.-]{0,127}\Z", re.ASCII)
_IMAGE_DIGEST = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}\Z")
# docker's --shm-size grammar (go-units RAMInBytes): a number, an optional space, then k/m/g/t/p, 'i', 'b'
_SHM_SIZE = re.compile(r"^(\d+(?:\.\d+)?) ?([kKmMgGtTpP])?[iI]?[bB]?\Z", re.ASCII)
_HOST_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)\Z")
_CLUSTER_ID = re.compile(r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.BatchAI/workspaces/[^/]+"
                         r"/clusters/[^/]+\Z", re.IGNORECASE)

#: Bounds on what the service passes to a process. Linux refuses a single argument or NAME=value
#: environment string longer than 131072 bytes (MAX_ARG_STRLEN, its NUL included), and all of them
#: together beyond ARG_MAX (2 MiB with the default 8 MiB stack). The service runs a job's command
#: as one argument of ``/bin/bash -c``, so a script path, interpreter path and arguments share it.
MAX_ARGUMENT_BYTES = 131072
#: commandLineArgs and jobPreparation.commandLine: half of one argument, leaving the rest to the
#: launcher's own words and the interpreter and script paths that share the command.
MAX_COMMAND_BYTES = 65536
#: paths on the node: Linux's PATH_MAX.
MAX_PATH_BYTES = 4096
#: environment variables and secrets together: half of ARG_MAX, leaving the rest to the command
#: line and to the variables the service itself sets.
MAX_ENVIRONMENT_BYTES = 1024 * 1024
#: node and process counts: the service's integers are int32.
MAX_INT32 = 2**31 - 1
_BOUND_REASON = {
    MAX_COMMAND_BYTES: "the service runs the job's command as one process argument, which Linux caps at "
                       f"{MAX_ARGUMENT_BYTES} bytes, and the launcher and paths need the rest",
    MAX_PATH_BYTES: "Linux's PATH_MAX",
}

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
    """A path inside a share, relative to its root, with '/' separators; returns it without a
    trailing slash. An absolute path is refused (only the root itself may be written '/')."""
    if not isinstance(path, str):
        raise InvalidSpecError(field, f"{path!r} is not a path", "a string like 'cifar/data/file.bin'")
    cleaned = path.strip("/")
    if cleaned in ("", "."):
        if allow_root:
            return ""
        raise InvalidSpecError(field, "the path is empty", "a path inside the share like 'cifar/model.h5'")
    if path.startswith("/"):
        # Not made relative silently: '/etc/passwd' would land at etc/passwd in the share.
        raise InvalidSpecError(field, f"{path!r} is absolute; paths in a share are relative to its root",
                               f"a path inside the share like {cleaned!r}")
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


def check_directory_id(value: str, field: str, *, kind: str = "INPUT") -> str:
    """An input (``kind="INPUT"``) or output (``"OUTPUT"``) directory's id, which names the
    variable ``$AZ_BATCHAI_<kind>_<id>`` the job sees."""
    if not isinstance(value, str) or not _DIRECTORY_ID.match(value):
        raise InvalidSpecError(field, f"{value!r} is not a valid directory id",
                               f"1-64 letters, digits or '_' (it becomes part of $AZ_BATCHAI_{kind}_<id>)")
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


def describe_value(value: Any, *, secret: bool = False) -> str:
    """What a value is, for a message; a secret's value is never shown."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean" if secret else f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return "a number" if secret else f"the number {value!r}"
    if isinstance(value, str):
        return "a string" if secret or len(value) > 60 else f"the string {value!r}"
    if isinstance(value, (list, tuple)):
        return "an array" if isinstance(value, list) else "a tuple"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


def check_text(value: Any, field: str, *, valid_form: str, max_bytes: int, nonempty: bool = True,
               multiline: bool = False, secret: bool = False, why: str = "") -> str:
    """A string the service will place in a process argument, a path or an environment variable:
    Unicode text (no unpaired surrogate), no NUL (no argument or variable can hold one), no other
    control character unless ``multiline``, at most ``max_bytes`` of UTF-8, and not blank when
    ``nonempty``. Messages give positions, never a secret's text."""
    if not isinstance(value, str):
        raise InvalidSpecError(field, f"is {describe_value(value, secret=secret)}, not a string", valid_form)
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as err:
        raise InvalidSpecError(field, f"holds an unpaired surrogate (\\u{ord(value[err.start]):04x}) at character "
                               f"{err.start}, which is not Unicode text", valid_form) from None
    for i, char in enumerate(value):
        if char == "\0" or (not multiline and (ord(char) < 32 or ord(char) == 127)):
            name = "a NUL character" if char == "\0" else f"the control character {char!r}"
            raise InvalidSpecError(field, f"holds {name} at character {i}", valid_form + (
                "; no path, command or variable can hold a NUL" if char == "\0" else "; no control characters"))
    if nonempty and not value.strip():
        raise InvalidSpecError(field, "is empty" if not value else "is only whitespace", valid_form)
    if size > max_bytes:
        reason = why or _BOUND_REASON.get(max_bytes, "")
        raise InvalidSpecError(field, f"is {size} bytes long", f"at most {max_bytes} bytes"
                               + (f" ({reason})" if reason else ""))
    return value


def check_node_path(value: Any, field: str, valid_form: str = "a path on the node, e.g. "
                    "'$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar'") -> str:
    return check_text(value, field, valid_form=valid_form, max_bytes=MAX_PATH_BYTES)


def check_command_text(value: Any, field: str, *, valid_form: str, nonempty: bool = True) -> str:
    return check_text(value, field, valid_form=valid_form, max_bytes=MAX_COMMAND_BYTES, nonempty=nonempty,
                      multiline=True)


def check_env_value(name: str, value: Any, field: str, *, secret: bool = False) -> str:
    """An environment variable's value: any text but NUL, with ``NAME=value`` within one argument."""
    return check_text(value, field, valid_form="a string (it may be empty)", nonempty=False, multiline=True,
                      secret=secret, max_bytes=MAX_ARGUMENT_BYTES - 2 - len(name.encode("utf-8")),
                      why=f"'NAME=value' must fit in {MAX_ARGUMENT_BYTES} bytes, Linux's MAX_ARG_STRLEN")


def check_environment_size(variables: Mapping[str, str], field: str) -> None:
    total = sum(len(k.encode("utf-8")) + len(v.encode("utf-8")) + 2 for k, v in variables.items())
    if total > MAX_ENVIRONMENT_BYTES:
        raise InvalidSpecError(field, f"hold {total} bytes of NAME=value in all",
                               f"at most {MAX_ENVIRONMENT_BYTES} bytes together: half of Linux's ARG_MAX, leaving "
                               "the rest to the command line and the service's own variables")


def check_count(value: Any, field: str, *, minimum: int = 1, valid_form: str = "") -> int:
    """A node or process count: a JSON/Python integer (not a boolean, not 4.0) within int32."""
    form = valid_form or f"an integer from {minimum} to {MAX_INT32}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidSpecError(field, f"{describe_value(value)} is not an integer", form)
    if not minimum <= value <= MAX_INT32:
        raise InvalidSpecError(field, f"{value} is out of range", form)
    return value


def check_container_image(value: Any, field: str) -> str:
    """A docker image reference, ``[registry[:port]/]name[:tag][@digest]``, by docker's grammar."""
    form = ("a docker image like 'tensorflow/tensorflow:1.8.0-gpu' or 'myregistry.azurecr.io/team/train:2' "
            "(lower-case repository, optional :tag, optional @sha256:digest)")
    check_text(value, field, valid_form=form, max_bytes=1024)
    rest, _, digest = value.partition("@")
    name, tag = rest, ""
    if ":" in rest.rsplit("/", 1)[-1]:
        name, tag = rest.rsplit(":", 1)
    components = name.split("/")
    if len(components) > 1 and ("." in components[0] or ":" in components[0] or components[0] == "localhost"):
        domain, components = components[0], components[1:]
        if not _IMAGE_DOMAIN.match(domain):
            raise InvalidSpecError(field, f"{value!r} has an invalid registry host {domain!r}", form)
    bad = next((c for c in components if not _IMAGE_PATH_COMPONENT.match(c)), None)
    if bad is not None:
        why = "must be lower-case" if _IMAGE_PATH_COMPONENT.match(bad.lower()) else "is not a valid name"
        raise InvalidSpecError(field, f"{value!r}: the repository part {bad!r} {why}", form)
    if "@" in value and not _IMAGE_DIGEST.match(digest):
        raise InvalidSpecError(field, f"{value!r} has an invalid digest", form)
    if (":" in rest.rsplit("/", 1)[-1] and not _IMAGE_TAG.match(tag)) or len(name) > 255:
        raise InvalidSpecError(field, f"{value!r} has an invalid tag or a name over 255 characters", form)
    return value


def check_shm_size(value: Any, field: str) -> str:
    """docker's ``--shm-size``: a positive number with an optional unit (b, k, m, g, ...)."""
    form = "a size docker accepts for --shm-size, like '2g', '512m', '1.5gb' or '1073741824' (bytes)"
    check_text(value, field, valid_form=form, max_bytes=64)
    match = _SHM_SIZE.match(value)
    if match is None or float(match.group(1)) <= 0:
        raise InvalidSpecError(field, f"{value!r} is not a size", form)
    return value


def check_registry_url(value: Any, field: str) -> str:
    """A container registry's address: a host name, optionally with https:// (or http://) and a port."""
    from urllib.parse import urlsplit
    form = "a registry address like 'https://myregistry.azurecr.io' or 'myregistry.azurecr.io:5000'"
    check_text(value, field, valid_form=form, max_bytes=2048)
    parts = urlsplit(value if "://" in value else "https://" + value)
    if "@" in parts.netloc:  # user:password@host: a credential, so the value is not repeated
        raise InvalidSpecError(field, "holds a user name or password before '@'",
                               form + "; credentials belong in credentials.username and credentials.password")
    if any(c.isspace() for c in value):
        raise InvalidSpecError(field, f"{value[:200]!r} holds whitespace", form)
    try:
        port = parts.port
    except ValueError:
        port = -1
    labels = (parts.hostname or "").split(".")
    if (parts.scheme not in ("https", "http") or port == -1 or parts.query or parts.fragment
            or not all(_HOST_LABEL.match(label) for label in labels)):
        raise InvalidSpecError(field, f"{value[:200]!r} is not a registry address", form)
    return value


def check_cluster_id(value: Any, field: str) -> str:
    form = ("a cluster's resource id, '/subscriptions/<subscription>/resourceGroups/<group>/providers/"
            "Microsoft.BatchAI/workspaces/<workspace>/clusters/<cluster>'")
    check_text(value, field, valid_form=form, max_bytes=2048)
    if not _CLUSTER_ID.match(value):
        raise InvalidSpecError(field, f"{value[:200]!r} is not a cluster resource id", form)
    segments = value.split("/")
    for part, name, check in (("subscription", segments[2], check_subscription_id),
                              ("resource group", segments[4], check_resource_group),
                              ("workspace", segments[8], lambda n, f: check_batchai_name(n, f)),
                              ("cluster", segments[10], lambda n, f: check_batchai_name(n, f))):
        try:
            check(name, field)
        except InvalidSpecError as err:
            raise InvalidSpecError(field, f"names the {part} {name[:100]!r}, which is not valid",
                                   f"{form}, where the {part} is {err.valid_form}") from None
    return value


def check_container_name(name: Any, field: str) -> str:
    if not isinstance(name, str) or not _CONTAINER.match(name):
        raise InvalidSpecError(field, f"{describe_value(name)} is not a valid blob container name",
                               "3-63 lower-case letters, digits or single hyphens, starting and ending with a "
                               "letter or digit")
    return name


_DESTINATION_FORM = ("a file path in a directory you can write, or a directory to put it in (an existing one, or "
                     "one written with a trailing '/', which is created)")


def local_directory(dest: Any, field: str = "dest", *, valid_form: str = "", named: Any = None) -> Path:
    """``dest`` as a local directory that exists (created with its parents if missing) and can be
    written; :class:`InvalidSpecError` naming ``named`` (default ``dest``) and why otherwise."""
    form = valid_form or "a directory you can write (created if missing)"
    if not isinstance(dest, (str, os.PathLike)) or not os.fspath(dest):
        raise InvalidSpecError(field, f"{describe_value(dest)} is not a local path", form)
    path = Path(dest)
    shown = str(named if named is not None else dest)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
        reason = (f"{str(blocker)!r} is a file, not a directory" if blocker is not None
                  else f"{str(err.filename or path)!r} cannot be created: {err.strerror or type(err).__name__}")
        raise InvalidSpecError(field, f"{shown!r} cannot be written ({reason})", form) from None
    try:
        with tempfile.TemporaryFile(dir=path):  # only writing tells (root, read-only mounts, /sys)
            pass
    except OSError as err:
        raise InvalidSpecError(field, f"{shown!r} cannot be written ({str(path)!r} takes no new files: "
                               f"{err.strerror or type(err).__name__})", form) from None
    return path


def local_destination(dest: Any, name: str, field: str = "dest") -> Path:
    """Where a download of the file ``name`` lands: ``dest/name`` when ``dest`` is a directory
    (existing, or written with a trailing separator), ``dest`` itself otherwise. Its directory is
    created and must be writable, and the file must not be a directory; :class:`InvalidSpecError`
    naming ``dest`` otherwise -- before anything is downloaded."""
    if not isinstance(dest, (str, os.PathLike)) or not os.fspath(dest):
        raise InvalidSpecError(field, f"{describe_value(dest)} is not a local path", _DESTINATION_FORM)
    text = os.fspath(dest)
    path = Path(text)
    target = path / name if path.is_dir() or text.endswith(("/", os.sep)) else path
    local_directory(target.parent, field, valid_form=_DESTINATION_FORM, named=dest)
    if target.is_dir():
        raise InvalidSpecError(field, f"{str(target)!r} is a directory, so the file cannot be written there",
                               _DESTINATION_FORM)
    return target


_MODES = ("max", "min")


def check_mode(mode: Any, field_name: str = "mode") -> str:
    """A metric's direction: 'max' or 'min'."""
    if mode not in _MODES:
        raise InvalidSpecError(field_name, f"{mode!r} is not a direction", "'max' (e.g. accuracy) or 'min' (e.g. loss)")
    return mode


def check_sweep_name(name: Any, maximum: int, trial_names: str) -> str:
    """A sweep's name: a Batch AI name short enough for its trials' job names (``trial_names``:
    their form, e.g. ``'<name>-<n>'``)."""
    check_batchai_name(name, "name")
    if len(name) > maximum:
        raise InvalidSpecError("name", f"{name!r} has {len(name)} characters",
                               f"at most {maximum}, so that its trials' names ({trial_names}) are valid job names")
    return str(name)


def check_objective(metric: Any, recorded_in: str) -> str:
    """A sweep's objective: a metric name the trials record (``recorded_in`` says where)."""
    if not isinstance(metric, str) or not metric:
        raise InvalidSpecError("metric", f"{describe_value(metric)} is not a metric name",
                               f"a {recorded_in}, e.g. 'val_accuracy'")
    return metric


def check_seed(seed: Any) -> Optional[int]:
    """A sampler's seed: an integer >= 0, or None."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise InvalidSpecError("seed", f"{describe_value(seed)} is not a seed", "an integer >= 0, or None")
    return seed
