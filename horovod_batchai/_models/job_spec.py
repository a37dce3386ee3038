"""What a Horovod job is: a frozen, keyword-only spec that validates itself when built.

``HorovodJob(...)`` in Python and ``HorovodJob.from_file("job.json")`` (the tutorial's file,
verbatim) build the same thing; :mod:`._conversions` turns it into the service's request.
``$AZ_BATCHAI_*`` variables are left as they are: the node expands them.
"""
from __future__ import annotations

import dataclasses
import inspect
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Collection, Iterable, Mapping, Optional, Protocol, Sequence, Union

from .constants import JOB_SCHEMA_URL
from .errors import InvalidSpecError
from .job_parts import (DEFAULT_MAX_WALL_CLOCK_TIME, PATH_FORM, ContainerRegistry, InputDirectory, JobOrigin,
                        OutputDirectory)
from .mounts import (ACCOUNT_PLACEHOLDER, KEY_PLACEHOLDER, AzureBlobMount, AzureFileShareMount, FileServerMount, Mount,
                     UnmanagedMount)
from .names import (MAX_INT32, check_cluster_id, check_command_text, check_container_image, check_env_name,
                    check_env_value, check_environment_size, check_items, check_mapping, check_node_path,
                    check_optional, check_shm_size, check_storage_account, check_text, describe_value)
from .pickling import PicklesWithoutSecrets

__all__ = ["HorovodJob", "StorageAccountSource", "JOB_MOUNT_ROOT", "CLUSTER_MOUNT_ROOT", "PRIORITIES", "mount_of_path",
           "place_in_job_mount"]

JOB_MOUNT_ROOT = "$AZ_BATCHAI_JOB_MOUNT_ROOT"
CLUSTER_MOUNT_ROOT = "$AZ_BATCHAI_MOUNT_ROOT"
PRIORITIES = ("low", "normal", "high")
_MOUNT_TYPES = (AzureFileShareMount, AzureBlobMount, FileServerMount, UnmanagedMount)

_INPUT_VARIABLE = re.compile(r"^\$(?:\{AZ_BATCHAI_INPUT_(?P<braced>\w+)\}|AZ_BATCHAI_INPUT_(?P<id>\w+))(?:/|\Z)",
                             re.ASCII)


class StorageAccountSource(Protocol):
    """Anything that can name a storage account and produce its key (a :class:`FileShare`)."""

    @property
    def account_name(self) -> str: ...

    def get_account_key(self) -> str: ...


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
    if ".." in rest.split("/"):  # it would climb out of whatever mount it starts in
        return None
    mounts = job_mounts if root == JOB_MOUNT_ROOT else cluster_mounts if root == CLUSTER_MOUNT_ROOT else ()
    for mount in mounts:
        rel = mount.relative_mount_path.strip("/")
        if rest == rel or rest.startswith(rel + "/"):
            return mount
    return None


def place_in_job_mount(path: str, job_mounts: Sequence[Mount]) -> Optional[tuple[Mount, str]]:
    """The job mount ``path`` (under ``$AZ_BATCHAI_JOB_MOUNT_ROOT``) lies in, and the path inside
    it ('' for the mount itself); None for any other path."""
    root, rest = _split_root(path)
    mount = mount_of_path(path, job_mounts) if root == JOB_MOUNT_ROOT else None
    if mount is None:
        return None
    return mount, rest[len(mount.relative_mount_path.strip("/")):].strip("/")


@dataclass(frozen=True, kw_only=True)
class HorovodJob(PicklesWithoutSecrets):
    """A Horovod job: ``horovodrun`` runs ``script`` with ``arguments`` as ``process_count``
    processes (default: one per node) on ``node_count`` nodes.

    Paths are as the node sees them, e.g. ``$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar/train.py``
    for a share mounted at ``myshare``. Vary a spec with :meth:`replace`. A spec pickles (to hand
    it to another process) once it holds no secret: see :meth:`without_secrets`.

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
        horovod_batchai._models.errors.InvalidSpecError: node_count: 0 is not a positive integer (valid: 1 or more)
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
    #: cluster.id: when a job.json names its cluster, submit checks that it is the cluster given
    cluster_id: Optional[str] = None

    #: where the spec was read from, when it came from a job.json (errors then name its properties)
    _origin: ClassVar[Optional[JobOrigin]] = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # normalising a frozen instance while it is being built
        check_node_path(self.script, "script", "the script's path on the node, e.g. "
                        "'$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar/train.py'")
        arguments_form = "'--dir=$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare' or ['--epochs', '2']"
        if not isinstance(self.arguments, str):
            if not isinstance(self.arguments, Iterable) or isinstance(self.arguments, (bytes, Mapping)):
                raise InvalidSpecError("arguments", f"{describe_value(self.arguments)} is not a string or list of "
                                       "strings", arguments_form)
            items = list(self.arguments)
            for i, item in enumerate(items):
                if isinstance(item, bool) or not isinstance(item, (str, int, float)):
                    raise InvalidSpecError(f"arguments[{i}]", f"is {describe_value(item)}", "a string or a number")
            set_(self, "arguments", join_arguments(str(a) for a in items))
        check_command_text(self.arguments, "arguments", nonempty=False, valid_form=arguments_form)
        _check_count(self.node_count, "node_count", "1 or more")
        if self.process_count is not None:
            _check_count(self.process_count, "process_count", "1 or more, or None for one per node")
        if self.interpreter is not None:
            check_node_path(self.interpreter, "interpreter", "the interpreter's path on the node, e.g. "
                            "'/usr/bin/python3', or None for the node's python")
        if self.priority not in PRIORITIES:
            raise InvalidSpecError("priority", f"{self.priority!r} is not a priority", " | ".join(PRIORITIES))
        if self.max_wall_clock_time is not None and (
                not isinstance(self.max_wall_clock_time, timedelta) or self.max_wall_clock_time <= timedelta(0)):
            raise InvalidSpecError("max_wall_clock_time", f"{self.max_wall_clock_time!r} is not a positive duration",
                                   "a datetime.timedelta, e.g. timedelta(hours=2)")
        if self.cluster_id is not None:
            check_cluster_id(self.cluster_id, "cluster_id")
        self._check_container()
        if self.job_preparation is not None:
            check_command_text(self.job_preparation, "job_preparation",
                               valid_form="a shell command line run on each node before the script, e.g. "
                               "'pip install keras', or None for none")
        set_(self, "mounts", check_items(self.mounts, "mounts", _MOUNT_TYPES,
                                         "a sequence of AzureFileShareMount, AzureBlobMount, FileServerMount or "
                                         "UnmanagedMount, e.g. mounts=(share.mount(),)"))
        paths: dict[str, int] = {}
        for i, mount in enumerate(self.mounts):
            if mount.relative_mount_path in paths:
                raise InvalidSpecError(f"mounts[{i}].relative_mount_path", f"repeats {mount.relative_mount_path!r} "
                                       f"of mounts[{paths[mount.relative_mount_path]}]",
                                       "a distinct relative_mount_path for each mount")
            paths[mount.relative_mount_path] = i
        set_(self, "input_directories", check_items(self.input_directories, "input_directories", InputDirectory,
                                                    "a sequence of InputDirectory(id=..., path=...)"))
        set_(self, "output_directories", check_items(self.output_directories, "output_directories", OutputDirectory,
                                                     "a sequence of OutputDirectory(id=..., path_prefix=...)"))
        ids: dict[str, str] = {}
        directories: list[tuple[str, Union[InputDirectory, OutputDirectory]]] = [
            *((f"input_directories[{i}]", d) for i, d in enumerate(self.input_directories)),
            *((f"output_directories[{i}]", d) for i, d in enumerate(self.output_directories))]
        for where, directory in directories:
            if directory.id.upper() in ids:  # the node sees $AZ_BATCHAI_INPUT_<ID> / _OUTPUT_<ID>
                raise InvalidSpecError(f"{where}.id", f"repeats the id {directory.id!r} of "
                                       f"{ids[directory.id.upper()]}", "distinct ids (case does not count)")
            ids[directory.id.upper()] = where
        self._check_variables()
        if self.std_out_err_path_prefix is None:
            if not self.mounts:
                raise InvalidSpecError("std_out_err_path_prefix", "is not set and the job mounts nothing",
                                       "a path under a mount, e.g. '$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/logs', "
                                       "or a mount to default to")
            set_(self, "std_out_err_path_prefix", f"{JOB_MOUNT_ROOT}/{self.mounts[0].relative_mount_path}")
        check_node_path(self.std_out_err_path_prefix, "std_out_err_path_prefix", PATH_FORM)
        self._check_job_mount_paths()

    _pickle_hint = ("spec.without_secrets() (keys, passwords and secret values left out); the receiving process "
                    "fills them in: spec.with_storage(share) for keys, spec.replace(...) for the rest")

    def _pickle_error(self, fields: Collection[str]) -> InvalidSpecError:
        return InvalidSpecError(", ".join(self._name(f) for f in fields),
                                "holds a secret, and secrets are never pickled", self._pickle_hint)

    def without_secrets(self) -> "HorovodJob":
        """A copy without storage keys, the registry password and secret environment values (as
        the service reports a job back): what can be pickled. An unmanaged mount's command is a
        secret that is also the mount itself, so such a mount is kept, and pickling refuses it.

        :returns: a new :class:`HorovodJob`."""
        mounts = tuple(_without_key(m) for m in self.mounts)
        registry = self.container_registry
        if registry is not None and registry.password is not None:
            registry = dataclasses.replace(registry, password=None)
        return self._replace(self._origin, {"mounts": mounts, "container_registry": registry, "secrets": {}})

    def _check_container(self) -> None:
        if self.container_image is not None:
            check_container_image(self.container_image, "container_image")
        check_optional(self.container_registry, "container_registry", ContainerRegistry,
                       "ContainerRegistry(server_url=..., username=..., password=...)")
        if self.shm_size is not None:
            check_shm_size(self.shm_size, "shm_size")
        for name in ("container_registry", "shm_size"):
            if getattr(self, name) is not None and self.container_image is None:
                raise InvalidSpecError(name, "is set but container_image is not: it applies to a container",
                                       "container_image='tensorflow/tensorflow:1.8.0-gpu' too, or no " + name)

    def _check_variables(self) -> None:
        check_mapping(self.environment_variables, "environment_variables")
        check_mapping(self.secrets, "secrets")
        for kind, variables in (("environment_variables", self.environment_variables), ("secrets", self.secrets)):
            for name, value in variables.items():
                check_env_name(name, kind)
                check_env_value(name, value, f"{kind}[{name!r}]", secret=kind == "secrets")
        overlap = set(self.environment_variables) & set(self.secrets)
        if overlap:
            raise InvalidSpecError("secrets", f"{sorted(overlap)} also appear in environment_variables",
                                   "each name in one of the two")
        check_environment_size({**self.environment_variables, **self.secrets}, "environment_variables and secrets")
        object.__setattr__(self, "environment_variables", MappingProxyType(dict(self.environment_variables)))
        object.__setattr__(self, "secrets", MappingProxyType(dict(self.secrets)))

    def _check_job_mount_paths(self) -> None:
        """Paths under $AZ_BATCHAI_JOB_MOUNT_ROOT must fall in one of this job's mounts, and paths
        under $AZ_BATCHAI_INPUT_<id> name one of its input directories; cluster mounts are checked
        at submit, when the cluster is known."""
        inputs = [d.id for d in self.input_directories]
        for name, path in self._mounted_paths():
            root, rest = _split_root(path)
            if root == JOB_MOUNT_ROOT and mount_of_path(path, self.mounts) is None:
                raise InvalidSpecError(name, f"{path!r} is outside every mount of the job",
                                       _mounted_forms(self.mounts, ()))
            if root == "$AZ_BATCHAI_INPUT":
                match = _INPUT_VARIABLE.match(rest)
                if match is None or (match["id"] or match["braced"]) not in inputs or ".." in rest.split("/"):
                    raise InvalidSpecError(name, f"{path!r} is not under an input directory of the job",
                                           "a path under $AZ_BATCHAI_INPUT_<id> for an id of input_directories "
                                           f"({', '.join(inputs) or 'there are none'}), without '..'")

    def _mounted_paths(self) -> list[tuple[str, str]]:
        paths = [("script", self.script), ("std_out_err_path_prefix", self.std_out_err_path_prefix or "")]
        paths += [(f"output_directories[{d.id}].path_prefix", d.path_prefix) for d in self.output_directories]
        paths += [(f"input_directories[{d.id}].path", d.path) for d in self.input_directories]
        return paths

    # -- checks at submit, when the cluster is known ---------------------------------------------
    def field_error(self, field_name: str, problem: str, valid_form: str = "",
                    json_form: Optional[str] = None) -> InvalidSpecError:
        """The error for ``field_name`` as the user wrote it: the job.json property (and file, and
        ``json_form`` when the valid form reads differently there) when the field was read from
        one, the Python name otherwise.

        :param str field_name: the field's Python name.
        :param str problem: what is wrong with it.
        :param str valid_form: what a valid value looks like.
        :param str json_form: the valid form as job.json writes it, when it reads differently.
        :returns: the :class:`InvalidSpecError` (not raised)."""
        err = InvalidSpecError(field_name, problem, valid_form)
        return self._origin.rename(err, json_form) if self._origin is not None else err

    def check_resolved(self) -> None:
        """Raise unless every mount has its storage account name and key."""
        for i, mount in enumerate(self.mounts):
            if not mount.is_resolved:
                from .mounts import describe
                raise self.field_error(f"mounts[{i}]", f"({describe(mount)}) has no storage account name or key",
                                       "HorovodJob.from_file(..., storage=share) or spec.with_storage(share)",
                                       "accountName and credentials.accountKey in the file, or the storage account "
                                       "given when loading it (HorovodJob.from_file(..., storage=share), or "
                                       "--storage-account-name)")

    def check_cluster(self, cluster_id: str, cluster_name: str, maximum_node_count: Optional[int]) -> None:
        """Raise unless the job can run on that cluster: the one it names (if any), with room for
        ``node_count`` nodes.

        :param str cluster_id: the cluster's ARM id.
        :param str cluster_name: the cluster's name.
        :param maximum_node_count: the most nodes the cluster can have (None: not known).
        :raises InvalidSpecError: when the job names another cluster or needs more nodes."""
        if self.cluster_id is not None and self.cluster_id.lower() != cluster_id.lower():
            raise self.field_error("cluster_id", f"names cluster {self.cluster_id!r}, but the job is submitted "
                                   f"to {cluster_id!r}", "the id of the cluster given to submit(), or no cluster")
        if maximum_node_count is not None and self.node_count > maximum_node_count:
            raise self.field_error("node_count", f"{self.node_count} is more than cluster {cluster_name!r} can have "
                                   f"({maximum_node_count})", f"1..{maximum_node_count}, or resize the cluster first")

    def check_paths_against(self, cluster_mounts: Sequence[Mount]) -> None:
        """Raise unless the script, stdOutErrPathPrefix and directories all lie in a mount of the
        job or of the cluster (``$AZ_BATCHAI_MOUNT_ROOT/...``) or under an input directory.

        :param cluster_mounts: the cluster's mounts.
        :raises InvalidSpecError: for a path outside every mount and input directory."""
        for name, path in self._mounted_paths():
            root, _ = _split_root(path)
            if root == "$AZ_BATCHAI_INPUT" and name != "std_out_err_path_prefix":
                continue
            if mount_of_path(path, self.mounts, cluster_mounts) is None:
                raise self.field_error(name, f"{path!r} is outside every mount of the job and the cluster",
                                       _mounted_forms(self.mounts, cluster_mounts))

    def differences(self, other: "HorovodJob", *, other_secret_names: Optional[Collection[str]] = None) -> list[str]:
        """The fields whose settings differ from ``other``'s, naming them as the user wrote them.
        Secret values and keys are not compared (the service never returns them): secrets by name
        only (``other_secret_names`` when ``other`` was read back without its values), mounts and
        the registry without their keys and password.

        :param HorovodJob other: the spec to compare with.
        :keyword other_secret_names: the names of ``other``'s secrets, when it was read back without them.
        :returns: the differing fields' names."""
        def plain(spec: "HorovodJob", secret_names: Collection[str]) -> dict[str, Any]:
            return {
                "script": spec.script, "arguments": spec.arguments, "node_count": spec.node_count,
                "process_count": spec.process_count or spec.node_count, "interpreter": spec.interpreter,
                "container_image": spec.container_image, "shm_size": spec.shm_size,
                "container_registry": (spec.container_registry.server_url, spec.container_registry.username)
                if spec.container_registry else None,
                "job_preparation": spec.job_preparation,
                "mounts": [_without_key(m) for m in spec.mounts],
                "std_out_err_path_prefix": spec.std_out_err_path_prefix,
                "environment_variables": dict(spec.environment_variables), "secrets": sorted(secret_names),
                "input_directories": spec.input_directories, "output_directories": spec.output_directories,
                "max_wall_clock_time": spec.max_wall_clock_time or DEFAULT_MAX_WALL_CLOCK_TIME,
                "priority": spec.priority,
            }
        mine = plain(self, self.secrets)
        theirs = plain(other, other.secrets if other_secret_names is None else other_secret_names)
        return [self._name(k) for k in mine if mine[k] != theirs[k]]

    def _name(self, field_name: str) -> str:
        path = self._origin.path(field_name) if self._origin is not None else None
        return path or field_name

    # -- building and varying -------------------------------------------------------------------
    def replace(self, **changes: Any) -> "HorovodJob":
        """A copy with ``changes`` applied (and validated), e.g. ``spec.replace(node_count=2)``.
        Fields changed here are named as Python arguments in later errors, even for a job.json.

        :returns: a new :class:`HorovodJob`.
        :raises InvalidSpecError: for a bad value."""
        return self._replace(self._origin.without(changes) if self._origin is not None else None, changes)

    def _replace(self, origin: Optional[JobOrigin], changes: Mapping[str, Any]) -> "HorovodJob":
        try:
            spec = dataclasses.replace(self, **changes)
        except InvalidSpecError as err:
            raise (origin.rename(err) if origin is not None else err) from None
        if origin is not None:
            object.__setattr__(spec, "_origin", origin)
        return spec

    @property
    def needs_storage(self) -> bool:
        """True while a mount still carries a storage placeholder or lacks its key."""
        return not all(m.is_resolved for m in self.mounts)

    def with_storage(self, storage: Optional[StorageAccountSource] = None, *,
                     account_name: Optional[str] = None, account_key: Optional[str] = None) -> "HorovodJob":
        """Fill ``<AZURE_BATCHAI_STORAGE_ACCOUNT>`` / ``<AZURE_BATCHAI_STORAGE_KEY>`` (and missing
        account names or keys) in file share and blob mounts from ``storage`` (a :class:`FileShare`)
        or from ``account_name`` + ``account_key`` -- as ``az batchai job create
        --storage-account-name`` did, but without listing the subscription's accounts.

        :param storage: the :class:`FileShare` whose account fills the placeholders.
        :keyword str account_name: the storage account, instead of ``storage``.
        :keyword str account_key: its key, instead of ``storage``.
        :returns: a new :class:`HorovodJob`.
        :raises InvalidSpecError: for a bad account name or key."""
        if storage is not None and (account_name or account_key):
            raise InvalidSpecError("storage", "give a FileShare or account_name/account_key, not both",
                                   "with_storage(share) or with_storage(account_name=..., account_key=...)")
        if storage is not None:
            if inspect.iscoroutinefunction(storage.get_account_key):
                raise InvalidSpecError("storage", "is a horovod_batchai.aio FileShare, whose account key is awaited",
                                       "account_name=share.account_name, account_key=await share.get_account_key()")
            account_name = storage.account_name
        if account_name is None:
            raise InvalidSpecError("storage", "no storage account given", "a FileShare, or account_name and account_key")
        check_storage_account(account_name, "account_name")
        if account_key is not None:
            check_text(account_key, "account_key", valid_form="the storage account's key", max_bytes=1024, secret=True)
        key_source = (storage.get_account_key if storage is not None else (lambda: account_key))
        mounts: list[Mount] = []
        for mount in self.mounts:
            if isinstance(mount, (AzureFileShareMount, AzureBlobMount)):
                mount = _fill_mount(mount, account_name, key_source)
            mounts.append(mount)
        # The mounts are still the ones the document described: errors keep naming its properties.
        return self._replace(self._origin, {"mounts": tuple(mounts)})

    @classmethod
    def from_dict(cls, document: Mapping[str, Any], *, storage: Optional[StorageAccountSource] = None,
                  storage_account_name: Optional[str] = None, storage_account_key: Optional[str] = None,
                  source: str = "job document") -> "HorovodJob":
        """From a job.json document (``{"$schema": ..., "properties": {...}}``, or the bare
        properties), validated against the official 2018-05-01 schema it names. Every property a
        Horovod job may have is checked, and any other is refused; errors name the property path
        as written and ``source``.

        :param document: the job.json document.
        :keyword storage: a :class:`FileShare` that fills the storage placeholders.
        :keyword str storage_account_name: the storage account, instead of ``storage``.
        :keyword str storage_account_key: its key, instead of ``storage``.
        :keyword str source: where the document came from, named in errors.
        :returns: the :class:`HorovodJob`.
        :raises InvalidSpecError: for a document that is not a valid Horovod job."""
        from .job_json import job_from_properties
        from .job_schemas import validate_job_document
        if storage_account_key is not None and storage is None and storage_account_name is None:
            raise InvalidSpecError("storage_account_key", "given without storage_account_name",
                                   "both, or a FileShare as storage=")
        properties, prefix = validate_job_document(document, source=source)
        spec = job_from_properties(cls, properties, source=source, prefix=prefix)
        if storage is not None or storage_account_name is not None:
            spec = spec.with_storage(storage, account_name=storage_account_name, account_key=storage_account_key)
        return spec

    @classmethod
    def from_file(cls, path: Union[str, Path], *, storage: Optional[StorageAccountSource] = None,
                  storage_account_name: Optional[str] = None,
                  storage_account_key: Optional[str] = None) -> "HorovodJob":
        """From a job.json file such as the tutorial's, accepted verbatim. Storage placeholders are
        filled from ``storage`` (a :class:`FileShare`) or the explicit account name and key; without
        them they stay, and :meth:`with_storage` fills them later.

        :param path: the job.json file.
        :keyword storage: a :class:`FileShare` that fills the storage placeholders.
        :keyword str storage_account_name: the storage account, instead of ``storage``.
        :keyword str storage_account_key: its key, instead of ``storage``.
        :returns: the :class:`HorovodJob`.
        :raises InvalidSpecError: for a file that cannot be read or is not a valid Horovod job."""
        from .job_schemas import read_job_file
        path = Path(path)
        return cls.from_dict(read_job_file(path), storage=storage, storage_account_name=storage_account_name,
                             storage_account_key=storage_account_key, source=str(path))

    def to_dict(self) -> dict[str, Any]:
        """The job.json form (``{"$schema", "properties"}``), with every key and secret value
        replaced by a placeholder -- safe to print or save.

        :returns: the job.json document, placeholders for secrets."""
        from .job_json import job_to_properties
        return {"$schema": JOB_SCHEMA_URL,
                "properties": job_to_properties(self, cluster_id=self.cluster_id, reveal_secrets=False)}


def _without_key(mount: Mount) -> Mount:
    if isinstance(mount, AzureBlobMount):
        return dataclasses.replace(mount, account_key=None, sas_token=None)
    if isinstance(mount, AzureFileShareMount):
        return dataclasses.replace(mount, account_key=None)
    return mount


def _check_count(value: Any, field_name: str, valid_form: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidSpecError(field_name, f"{value!r} is not a positive integer", valid_form)
    if value > MAX_INT32:
        raise InvalidSpecError(field_name, f"{value} is more than the service can count",
                               f"1 to {MAX_INT32} (the service's integers are int32)")


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
    if named == account_name and (not mount.account_key or mount.account_key == KEY_PLACEHOLDER) and not getattr(
            mount, "sas_token", None):
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


def _mounted_forms(job_mounts: Sequence[Mount], cluster_mounts: Sequence[Mount]) -> str:
    forms = [f"{JOB_MOUNT_ROOT}/{m.relative_mount_path}/..." for m in job_mounts]
    forms += [f"{CLUSTER_MOUNT_ROOT}/{m.relative_mount_path}/..." for m in cluster_mounts]
    return "a path under " + (" or ".join(forms) if forms else "a mount (the job and cluster mount nothing)")
