"""The parts of a job spec besides the job itself: its input and output directories, its
container registry, and where a spec read from a job.json came from (so that errors name the
document's properties). ``HorovodJob`` (:mod:`.job_spec`) and its job.json form
(:mod:`.job_json`) both build on them."""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Collection, Mapping, Optional

from .errors import InvalidSpecError
from .names import check_directory_id, check_node_path, check_registry_url, check_text
from .pickling import PicklesWithoutSecrets

__all__ = ["ContainerRegistry", "DEFAULT_MAX_WALL_CLOCK_TIME", "InputDirectory", "JSON_PROPERTIES", "JobOrigin",
           "OutputDirectory", "PATH_FORM"]


#: constraints.maxWallClockTime when a job gives none (the service's default)
DEFAULT_MAX_WALL_CLOCK_TIME = timedelta(days=7)


PATH_FORM = "a path under a mount, e.g. '$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/data'"


#: HorovodJob fields as the job.json properties they are read from.
JSON_PROPERTIES = {
    "script": "horovodSettings.pythonScriptFilePath", "arguments": "horovodSettings.commandLineArgs",
    "node_count": "nodeCount", "process_count": "horovodSettings.processCount",
    "interpreter": "horovodSettings.pythonInterpreterPath",
    "container_image": "containerSettings.imageSourceRegistry.image",
    "container_registry": "containerSettings.imageSourceRegistry", "shm_size": "containerSettings.shmSize",
    "job_preparation": "jobPreparation.commandLine", "mounts": "mountVolumes",
    "std_out_err_path_prefix": "stdOutErrPathPrefix", "environment_variables": "environmentVariables",
    "secrets": "secrets", "input_directories": "inputDirectories", "output_directories": "outputDirectories",
    "max_wall_clock_time": "constraints.maxWallClockTime", "priority": "schedulingPriority",
    "cluster_id": "cluster.id",
}


#: attributes of mounts, directories and the registry as the job.json properties of their items.
_JSON_ATTRIBUTES = {
    "account_name": "accountName", "azure_file_url": "azureFileUrl", "relative_mount_path": "relativeMountPath",
    "account_key": "credentials.accountKey", "file_mode": "fileMode", "directory_mode": "directoryMode",
    "container_name": "containerName", "mount_options": "mountOptions", "file_server_id": "fileServer.id",
    "source_directory": "sourceDirectory", "mount_command": "mountCommand", "id": "id", "path": "path",
    "path_prefix": "pathPrefix", "path_suffix": "pathSuffix", "server_url": "serverUrl",
    "username": "credentials.username", "password": "credentials.password",
}


#: valid forms said in Python terms, and what to say for a job.json instead.
_JSON_FORMS = {"max_wall_clock_time": "a positive ISO 8601 duration like 'PT2H' or 'P7D'"}


_FIELD = re.compile(r"^(?P<name>[a-z_]+)(?P<index>\[[^\]]*\])?(?:\.(?P<attribute>[a-z_.]+))?(?P<note> \(.*\))?\Z")


@dataclass(frozen=True)
class JobOrigin:
    """Where a spec was read from: the job.json ``source``, the prefix its property paths have
    (``"properties."``), the HorovodJob ``fields`` read from it, and the property path of each
    item of a list field (``"mounts[1]"`` -> ``"mountVolumes.azureBlobFileSystems[0]"``; directory
    items also by id). Errors about those fields name the property as the user wrote it."""

    source: str
    prefix: str
    fields: frozenset[str]
    items: Mapping[str, str] = field(default_factory=dict)

    def path(self, field_name: str) -> Optional[str]:
        """The property path of ``field_name`` (a HorovodJob field, with an optional ``[item]`` and
        ``.attribute``), or None when that field did not come from the document."""
        match = _FIELD.match(field_name)
        if match is None or match["name"] not in self.fields:
            return None
        name, index, attribute, note = match["name"], match["index"], match["attribute"], match["note"] or ""
        path = self.items.get(name + index) if index else None
        if path is None:
            path = JSON_PROPERTIES[name] + (index or "")
        if attribute:
            path += "." + ".".join(_JSON_ATTRIBUTES.get(a, a) for a in attribute.split("."))
        return self.prefix + path + note

    def rename(self, err: InvalidSpecError, json_form: Optional[str] = None) -> InvalidSpecError:
        """``err`` naming the property (and the file) when its field came from the document, with
        ``json_form`` (if given) as the valid form."""
        path = self.path(err.field)
        if path is None or err.source is not None:
            return err
        return InvalidSpecError(path, err.problem, json_form or _JSON_FORMS.get(err.field, err.valid_form),
                                source=self.source)

    def without(self, changed: Collection[str]) -> "JobOrigin":
        return dataclasses.replace(self, fields=self.fields - set(changed))


@dataclass(frozen=True, kw_only=True)
class InputDirectory:
    """An input directory the job sees as ``$AZ_BATCHAI_INPUT_<id>``."""

    id: str
    path: str

    def __post_init__(self) -> None:
        check_directory_id(self.id, "input_directories.id")
        check_node_path(self.path, "input_directories.path", PATH_FORM)


@dataclass(frozen=True, kw_only=True)
class OutputDirectory:
    """An output directory the job sees as ``$AZ_BATCHAI_OUTPUT_<id>``; its files are listed by
    :meth:`Job.list_output_files` with ``output_directory_id=id``."""

    id: str
    path_prefix: str
    path_suffix: Optional[str] = None

    def __post_init__(self) -> None:
        check_directory_id(self.id, "output_directories.id", kind="OUTPUT")
        if self.id.lower() == "stdouterr":
            raise InvalidSpecError("output_directories.id", "'stdouterr' is reserved for the job's logs",
                                   "any other id of letters, digits or '_'")
        check_node_path(self.path_prefix, "output_directories.path_prefix", PATH_FORM)
        if self.path_suffix is not None:
            form = "a relative path like 'models' (no leading '/', no '..'), or None"
            check_node_path(self.path_suffix, "output_directories.path_suffix", form)
            if self.path_suffix.startswith("/") or ".." in self.path_suffix.split("/"):
                raise InvalidSpecError("output_directories.path_suffix",
                                       f"{self.path_suffix[:200]!r} is not a relative path", form)


@dataclass(frozen=True, kw_only=True)
class ContainerRegistry(PicklesWithoutSecrets):
    """A private registry for ``container_image``; the password is never shown, nor pickled."""

    _pickle_prefix = "container_registry."

    server_url: Optional[str] = None
    username: str
    password: Optional[str] = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.server_url is not None:
            check_registry_url(self.server_url, "container_registry.server_url")
        check_text(self.username, "container_registry.username", valid_form="the registry user name", max_bytes=1024)
        if self.password is not None:
            check_text(self.password, "container_registry.password", valid_form="the registry password, or None",
                       max_bytes=1024, secret=True)
