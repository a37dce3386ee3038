"""What a Horovod job is: a frozen, keyword-only spec that validates itself when built.

``HorovodJob(...)`` in Python and ``HorovodJob.from_file("job.json")`` (the tutorial's file,
verbatim) build the same thing; :mod:`._conversions` turns it into the service's request.
``$AZ_BATCHAI_*`` variables are left as they are: the node expands them.
"""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Optional, Protocol, Sequence, Union

from ._errors import InvalidSpecError
from ._mounts import (ACCOUNT_PLACEHOLDER, KEY_PLACEHOLDER, AzureBlobMount, AzureFileShareMount, FileServerMount,
                      Mount, UnmanagedMount)
from ._names import check_directory_id, check_env_name, check_items, check_mapping, check_optional, check_storage_account

__all__ = ["HorovodJob", "InputDirectory", "OutputDirectory", "ContainerRegistry", "StorageAccountSource",
           "JOB_MOUNT_ROOT", "CLUSTER_MOUNT_ROOT", "PRIORITIES", "mount_of_path"]

JOB_MOUNT_ROOT = "$AZ_BATCHAI_JOB_MOUNT_ROOT"
CLUSTER_MOUNT_ROOT = "$AZ_BATCHAI_MOUNT_ROOT"
PRIORITIES = ("low", "normal", "high")
_MOUNT_TYPES = (AzureFileShareMount, AzureBlobMount, FileServerMount, UnmanagedMount)


class StorageAccountSource(Protocol):
    """Anything that can name a storage account and produce its key (a :class:`FileShare`)."""

    @property
    def account_name(self) -> str: ...

    def get_account_key(self) -> str: ...


@dataclass(frozen=True, kw_only=True)
class InputDirectory:
    """An input directory the job sees as ``$AZ_BATCHAI_INPUT_<id>``."""

    id: str
    path: str

    def __post_init__(self) -> None:
        check_directory_id(self.id, "input_directories.id")
        if not self.path:
            raise InvalidSpecError("input_directories.path", "is empty", "a path under a mount")


@dataclass(frozen=True, kw_only=True)
class OutputDirectory:
    """An output directory the job sees as ``$AZ_BATCHAI_OUTPUT_<id>``; its files are listed by
    :meth:`Job.list_output_files` with ``output_directory_id=id``."""

    id: str
    path_prefix: str
    path_suffix: Optional[str] = None

    def __post_init__(self) -> None:
        check_directory_id(self.id, "output_directories.id")
        if self.id.lower() == "stdouterr":
            raise InvalidSpecError("output_directories.id", "'stdouterr' is reserved for the job's logs",
                                   "any other id of letters, digits or '_'")
        if not self.path_prefix:
            raise InvalidSpecError("output_directories.path_prefix", "is empty", "a path under a mount")


@dataclass(frozen=True, kw_only=True)
class ContainerRegistry:
    """A private registry for ``container_image``; the password is never shown."""

    server_url: Optional[str] = None
    username: str
    password: Optional[str] = field(default=None, repr=False)


def _split_root(path: str) -> tuple[str, str]:
    """``("$AZ_BATCHAI_JOB_MOUNT_ROOT", "myshare/x.py")`` for ``$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/x.py``
    (also ``${...}``); ``("", path)`` when the path starts with no Batch AI variable."""
    for root in (JOB_MOUNT_ROOT, CLUSTER_MOUNT_ROOT):
        name = root[1:]
        for spelled in (root, "${" + name + "}"):
            if path == spelled or path.startswith(spelled + "/"):
                return root, path[len(spelled):].lstrip("/")
    if path.startswith("$AZ_BATCHAI_INPUT_") or path.startswith("${AZ_BATCHAI_INPUT_"):
        return "$AZ_BATCHAI_INPUT", path
    return "", path


def mount_of_path(path: str, job_mounts: Sequence[Mount], cluster_mounts: Sequence[Mount] = ()) -> Optional[Mount]:
    """The mount ``path`` lies in, or None. Paths under ``$AZ_BATCHAI_INPUT_<id>`` count as mounted
    (they resolve to a mount on the node) and return the first job mount or None."""
    root, rest = _split_root(path)
    mounts = job_mounts if root == JOB_MOUNT_ROOT else cluster_mounts if root == CLUSTER_MOUNT_ROOT else ()
    for mount in mounts:
        rel = mount.relative_mount_path.strip("/")
        if rest == rel or rest.startswith(rel + "/"):
            return mount
    return None


@dataclass(frozen=True, kw_only=True)
class HorovodJob:
    """A Horovod job: ``horovodrun`` runs ``script`` with ``arguments`` as ``process_count``
    processes (default: one per node) on ``node_count`` nodes.

    Paths are as the node sees them, e.g. ``$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar/train.py``
    for a share mounted at ``myshare``. Vary a spec with :meth:`replace`.

    The tutorial's ``job.json``, verbatim; the storage account is filled in from a share (or named)::

        >>> spec = HorovodJob.from_file("examples/job.json")
        >>> spec.node_count, spec.container_image, spec.needs_storage
        (4, 'tensorflow/tensorflow:1.8.0-gpu', True)
        >>> spec = spec.with_storage(account_name="mystorageaccount", account_key="a2V5")
        >>> spec.mounts[0].azure_file_url
        'https://mystorageaccount.file.core.windows.net/myshare'
        >>> spec.replace(node_count=2).node_count
        2

    The same in Python; mistakes are caught when the spec is built, naming the field::

        >>> share = AzureFileShareMount(account_name="mystorageaccount", relative_mount_path="myshare",
        ...                             azure_file_url="https://mystorageaccount.file.core.windows.net/myshare")
        >>> spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar/cifar_cnn_distributed.py",
        ...                   arguments="--dir=$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar",
        ...                   node_count=4, mounts=(share,))
        >>> spec.std_out_err_path_prefix
        '$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare'
        >>> spec.replace(node_count=0)
        Traceback (most recent call last):
        ...
        horovod_batchai._errors.InvalidSpecError: node_count: 0 is not a positive integer (valid: 1 or more)
    """

    #: pythonScriptFilePath: the script, under a mount
    script: str
    #: commandLineArgs: a string, or a sequence joined by join_arguments ($AZ_BATCHAI_* still expand)
    arguments: str = ""
    #: nodeCount: nodes the job is gang-scheduled on
    node_count: int = 1
    #: processCount: horovod processes in all (the service defaults it to node_count)
    process_count: Optional[int] = None
    #: pythonInterpreterPath
    interpreter: Optional[str] = None
    #: containerSettings.imageSourceRegistry.image, e.g. "tensorflow/tensorflow:1.8.0-gpu"
    container_image: Optional[str] = None
    container_registry: Optional[ContainerRegistry] = None
    #: containerSettings.shmSize, e.g. "2g"
    shm_size: Optional[str] = None
    #: jobPreparation.commandLine, run on each node before the script
    job_preparation: Optional[str] = None
    mounts: tuple[Mount, ...] = ()
    #: stdOutErrPathPrefix; default: the first job mount, $AZ_BATCHAI_JOB_MOUNT_ROOT/<its path>
    std_out_err_path_prefix: Optional[str] = None
    environment_variables: Mapping[str, str] = field(default_factory=dict)
    #: secrets: environment variables whose values the service never reports back
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    input_directories: tuple[InputDirectory, ...] = ()
    output_directories: tuple[OutputDirectory, ...] = ()
    #: constraints.maxWallClockTime (the service's default is 7 days)
    max_wall_clock_time: Optional[timedelta] = None
    #: schedulingPriority: low | normal | high
    priority: str = "normal"

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # normalising a frozen instance while it is being built
        if not isinstance(self.script, str) or not self.script.strip():
            raise InvalidSpecError("script", "is empty", "the script's path on the node, e.g. "
                                   "'$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar/train.py'")
        if not isinstance(self.arguments, str):
            if isinstance(self.arguments, Iterable):
                set_(self, "arguments", join_arguments(str(a) for a in self.arguments))
            else:
                raise InvalidSpecError("arguments", f"{self.arguments!r} is not a string or list of strings",
                                       "'--dir=$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare' or ['--epochs', '2']")
        if not _positive_int(self.node_count):
            raise InvalidSpecError("node_count", f"{self.node_count!r} is not a positive integer", "1 or more")
        if self.process_count is not None and not _positive_int(self.process_count):
            raise InvalidSpecError("process_count", f"{self.process_count!r} is not a positive integer",
                                   "1 or more, or None for one per node")
        if self.priority not in PRIORITIES:
            raise InvalidSpecError("priority", f"{self.priority!r} is not a priority", " | ".join(PRIORITIES))
        if self.max_wall_clock_time is not None and (
                not isinstance(self.max_wall_clock_time, timedelta) or self.max_wall_clock_time <= timedelta(0)):
            raise InvalidSpecError("max_wall_clock_time", f"{self.max_wall_clock_time!r} is not a positive duration",
                                   "a datetime.timedelta, e.g. timedelta(hours=2)")
        set_(self, "mounts", check_items(self.mounts, "mounts", _MOUNT_TYPES,
                                         "a sequence of AzureFileShareMount, AzureBlobMount, FileServerMount or "
                                         "UnmanagedMount, e.g. mounts=(share.mount(),)"))
        check_optional(self.container_registry, "container_registry", ContainerRegistry,
                       "ContainerRegistry(server_url=..., username=..., password=...)")
        paths = [m.relative_mount_path for m in self.mounts]
        if len(set(paths)) != len(paths):
            raise InvalidSpecError("mounts", f"two mounts share a relative_mount_path: {paths}",
                                   "a distinct relative_mount_path for each mount")
        set_(self, "input_directories", check_items(self.input_directories, "input_directories", InputDirectory,
                                                    "a sequence of InputDirectory(id=..., path=...)"))
        set_(self, "output_directories", check_items(self.output_directories, "output_directories", OutputDirectory,
                                                     "a sequence of OutputDirectory(id=..., path_prefix=...)"))
        check_mapping(self.environment_variables, "environment_variables")
        check_mapping(self.secrets, "secrets")
        ids = [d.id for d in self.input_directories] + [d.id for d in self.output_directories]
        if len({i.lower() for i in ids}) != len(ids):
            raise InvalidSpecError("input_directories/output_directories", f"ids repeat: {ids}", "distinct ids")
        for name in list(self.environment_variables) + list(self.secrets):
            check_env_name(name, "environment_variables" if name in self.environment_variables else "secrets")
        overlap = set(self.environment_variables) & set(self.secrets)
        if overlap:
            raise InvalidSpecError("secrets", f"{sorted(overlap)} also appear in environment_variables",
                                   "each name in one of the two")
        set_(self, "environment_variables", MappingProxyType({str(k): str(v) for k, v in self.environment_variables.items()}))
        set_(self, "secrets", MappingProxyType({str(k): str(v) for k, v in self.secrets.items()}))
        if self.std_out_err_path_prefix is None:
            if not self.mounts:
                raise InvalidSpecError("std_out_err_path_prefix", "is not set and the job mounts nothing",
                                       "a path under a mount, e.g. '$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/logs', "
                                       "or a mount to default to")
            set_(self, "std_out_err_path_prefix", f"{JOB_MOUNT_ROOT}/{self.mounts[0].relative_mount_path}")
        self._check_job_mount_paths()

    def _check_job_mount_paths(self) -> None:
        """Paths under $AZ_BATCHAI_JOB_MOUNT_ROOT must fall in one of this job's mounts; the rest
        (cluster mounts, input directories) are checked at submit, when the cluster is known."""
        for name, path in self._mounted_paths():
            root, _ = _split_root(path)
            if root == JOB_MOUNT_ROOT and mount_of_path(path, self.mounts) is None:
                raise InvalidSpecError(name, f"{path!r} is outside every mount of the job",
                                       _mounted_forms(self.mounts, ()))

    def _mounted_paths(self) -> list[tuple[str, str]]:
        paths = [("script", self.script), ("std_out_err_path_prefix", self.std_out_err_path_prefix or "")]
        paths += [(f"output_directories[{d.id}].path_prefix", d.path_prefix) for d in self.output_directories]
        paths += [(f"input_directories[{d.id}].path", d.path) for d in self.input_directories]
        return paths

    def check_paths_against(self, cluster_mounts: Sequence[Mount]) -> None:
        """Raise unless the script, stdOutErrPathPrefix and directories all lie in a mount of the
        job or of the cluster (``$AZ_BATCHAI_MOUNT_ROOT/...``) or under an input directory."""
        for name, path in self._mounted_paths():
            root, _ = _split_root(path)
            if root == "$AZ_BATCHAI_INPUT" and name != "std_out_err_path_prefix":
                continue
            if mount_of_path(path, self.mounts, cluster_mounts) is None:
                raise InvalidSpecError(name, f"{path!r} is outside every mount of the job and the cluster",
                                       _mounted_forms(self.mounts, cluster_mounts))

    # -- building and varying -------------------------------------------------------------------
    def replace(self, **changes: Any) -> "HorovodJob":
        """A copy with ``changes`` applied (and validated), e.g. ``spec.replace(node_count=2)``."""
        return dataclasses.replace(self, **changes)

    @property
    def needs_storage(self) -> bool:
        """True while a mount still carries a storage placeholder or lacks its key."""
        return not all(m.is_resolved for m in self.mounts)

    def with_storage(self, storage: Optional[StorageAccountSource] = None, *,
                     account_name: Optional[str] = None, account_key: Optional[str] = None) -> "HorovodJob":
        """Fill ``<AZURE_BATCHAI_STORAGE_ACCOUNT>`` / ``<AZURE_BATCHAI_STORAGE_KEY>`` (and missing
        account names or keys) in file share and blob mounts from ``storage`` (a :class:`FileShare`)
        or from ``account_name`` + ``account_key`` -- as ``az batchai job create
        --storage-account-name`` did, but without listing the subscription's accounts."""
        if storage is not None and (account_name or account_key):
            raise InvalidSpecError("storage", "give a FileShare or account_name/account_key, not both",
                                   "with_storage(share) or with_storage(account_name=..., account_key=...)")
        if storage is not None:
            account_name = storage.account_name
        if account_name is None:
            raise InvalidSpecError("storage", "no storage account given", "a FileShare, or account_name and account_key")
        check_storage_account(account_name, "account_name")
        key_source = (storage.get_account_key if storage is not None else (lambda: account_key))
        mounts: list[Mount] = []
        for mount in self.mounts:
            if isinstance(mount, (AzureFileShareMount, AzureBlobMount)):
                mount = _fill_mount(mount, account_name, key_source)
            mounts.append(mount)
        return self.replace(mounts=tuple(mounts))

    @classmethod
    def from_dict(cls, document: Mapping[str, Any], *, storage: Optional[StorageAccountSource] = None,
                  storage_account_name: Optional[str] = None, storage_account_key: Optional[str] = None,
                  source: str = "job document") -> "HorovodJob":
        """From a job.json document (``{"$schema": ..., "properties": {...}}``, or the bare
        properties), validated against the official 2018-05-01 schema it names."""
        from ._conversions import job_from_properties
        from ._schemas import validate_job_document
        properties = validate_job_document(document, source=source)
        spec = job_from_properties(properties)
        if storage is not None or storage_account_name is not None:
            spec = spec.with_storage(storage, account_name=storage_account_name, account_key=storage_account_key)
        elif storage_account_key is not None:
            raise InvalidSpecError("storage_account_key", "given without storage_account_name",
                                   "both, or a FileShare as storage=")
        return spec

    @classmethod
    def from_file(cls, path: Union[str, Path], *, storage: Optional[StorageAccountSource] = None,
                  storage_account_name: Optional[str] = None,
                  storage_account_key: Optional[str] = None) -> "HorovodJob":
        """From a job.json file such as the tutorial's, accepted verbatim. Storage placeholders are
        filled from ``storage`` (a :class:`FileShare`) or the explicit account name and key; without
        them they stay, and :meth:`with_storage` fills them later."""
        path = Path(path)
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InvalidSpecError("path", f"{str(path)!r} does not exist", "the path of a job.json file") from None
        except UnicodeDecodeError as err:
            raise InvalidSpecError(str(path), f"is not UTF-8 text (byte {err.start})", "a job.json document") from None
        except OSError as err:  # a directory, no permission
            raise InvalidSpecError("path", f"{str(path)!r} cannot be read ({err.strerror or type(err).__name__})",
                                   "the path of a readable job.json file") from None
        except json.JSONDecodeError as err:
            raise InvalidSpecError(str(path), f"is not valid JSON: {err.msg} at line {err.lineno} column {err.colno}",
                                   "a job.json document") from None
        if not isinstance(document, dict):
            raise InvalidSpecError(str(path), "is not a JSON object", '{"$schema": ..., "properties": {...}}')
        return cls.from_dict(document, storage=storage, storage_account_name=storage_account_name,
                             storage_account_key=storage_account_key, source=str(path))

    def to_dict(self) -> dict[str, Any]:
        """The job.json form (``{"$schema", "properties"}``), with every key and secret value
        replaced by a placeholder -- safe to print or save."""
        from ._conversions import job_to_properties
        from ._schemas import JOB_SCHEMA_URL
        return {"$schema": JOB_SCHEMA_URL, "properties": job_to_properties(self, cluster_id=None, reveal_secrets=False)}


def _fill_mount(mount: Any, account_name: str, key_source: Any) -> Any:
    changes: dict[str, Any] = {}
    named = mount.account_name
    if isinstance(mount, AzureFileShareMount):
        if ACCOUNT_PLACEHOLDER in mount.azure_file_url:
            changes["azure_file_url"] = mount.azure_file_url.replace(ACCOUNT_PLACEHOLDER, account_name)
        named = changes.get("azure_file_url", mount.azure_file_url).split("://", 1)[-1].split(".", 1)[0]
        if mount.account_name == ACCOUNT_PLACEHOLDER:
            changes["account_name"] = named
    elif mount.account_name == ACCOUNT_PLACEHOLDER:
        changes["account_name"] = named = account_name
    # Keys are filled only for the account we were given; another account's mount needs its own key.
    if named == account_name and (not mount.account_key or mount.account_key == KEY_PLACEHOLDER):
        changes["account_key"] = key_source()
    return dataclasses.replace(mount, **changes) if changes else mount


_SAFE_ARGUMENT = re.compile(r"^[\w@%+=:,./${}-]+\Z")


def join_arguments(arguments: Iterable[str]) -> str:
    """A command line from separate arguments. Unlike ``shlex.join`` it quotes with double quotes,
    so ``$AZ_BATCHAI_*`` variables inside an argument are still expanded on the node."""
    def quote(arg: str) -> str:
        if arg and _SAFE_ARGUMENT.match(arg):
            return arg
        return '"' + re.sub(r'(["\\`])', r"\\\1", arg) + '"'
    return " ".join(quote(a) for a in arguments)


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _mounted_forms(job_mounts: Sequence[Mount], cluster_mounts: Sequence[Mount]) -> str:
    forms = [f"{JOB_MOUNT_ROOT}/{m.relative_mount_path}/..." for m in job_mounts]
    forms += [f"{CLUSTER_MOUNT_ROOT}/{m.relative_mount_path}/..." for m in cluster_mounts]
    return "a path under " + (" or ".join(forms) if forms else "a mount (the job and cluster mount nothing)")
