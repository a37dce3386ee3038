"""The job.json form of a :class:`HorovodJob`: Batch AI 2018-05-01's ``JobCreateParameters``,
through ``azure.mgmt.batchai.models``.

A job.json's ``properties`` are the REST body's, so reading a file (``HorovodJob.from_file``),
writing one (``to_dict``) and the request a Batch AI backend sends are one conversion, here.
``*_to_rest`` builds the models Microsoft's client serialises; ``*_from_rest`` reads the models it
deserialises. Nothing here imports the spec's own module: the class to build is handed in.
"""
from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence

from .errors import InvalidSpecError
from .job_parts import (DEFAULT_MAX_WALL_CLOCK_TIME, JSON_PROPERTIES, ContainerRegistry, InputDirectory, JobOrigin,
                        OutputDirectory)
from .mounts import (ACCOUNT_PLACEHOLDER, KEY_PLACEHOLDER, AzureBlobMount, AzureFileShareMount, FileServerMount, Mount,
                     UnmanagedMount)

if TYPE_CHECKING:
    from azure.mgmt.batchai import models

    from .job_spec import HorovodJob

__all__ = ["job_to_rest", "job_from_rest", "job_from_json", "job_to_properties", "job_from_properties", "mounts_to_rest",
           "mounts_from_rest", "env_to_rest", "secrets_to_rest", "MOUNT_KINDS", "SECRET_FIELDS"]


_SECRET_PLACEHOLDER = "<SECRET>"


# -- mounts --------------------------------------------------------------------------------------
def mounts_to_rest(mounts: Sequence[Mount], *, reveal_secrets: bool = True) -> Optional[models.MountVolumes]:
    from azure.mgmt.batchai import models  # imported when first needed: it is heavy
    if not mounts:
        return None

    def key(value: Optional[str]) -> models.AzureStorageCredentialsInfo:
        return models.AzureStorageCredentialsInfo(account_key=value if reveal_secrets else KEY_PLACEHOLDER)

    volumes = models.MountVolumes()
    for mount in mounts:
        if isinstance(mount, AzureFileShareMount):
            volumes.azure_file_shares = (volumes.azure_file_shares or []) + [models.AzureFileShareReference(
                account_name=mount.account_name, azure_file_url=mount.azure_file_url, credentials=key(mount.account_key),
                relative_mount_path=mount.relative_mount_path, file_mode=mount.file_mode,
                directory_mode=mount.directory_mode)]
        elif isinstance(mount, AzureBlobMount):
            volumes.azure_blob_file_systems = (volumes.azure_blob_file_systems or []) + [
                models.AzureBlobFileSystemReference(
                    account_name=mount.account_name, container_name=mount.container_name,
                    credentials=key(mount.account_key), relative_mount_path=mount.relative_mount_path,
                    mount_options=mount.blobfuse_options)]
        elif isinstance(mount, FileServerMount):
            volumes.file_servers = (volumes.file_servers or []) + [models.FileServerReference(
                file_server=models.ResourceId(id=mount.file_server_id), source_directory=mount.source_directory,
                relative_mount_path=mount.relative_mount_path, mount_options=mount.mount_options)]
        else:
            volumes.unmanaged_file_systems = (volumes.unmanaged_file_systems or []) + [
                models.UnmanagedFileSystemReference(
                    mount_command=mount.mount_command if reveal_secrets else _SECRET_PLACEHOLDER,
                    relative_mount_path=mount.relative_mount_path)]
    return volumes


#: the mountVolumes lists, in the order their mounts are listed in a spec
MOUNT_KINDS = ("azureFileShares", "azureBlobFileSystems", "fileServers", "unmanagedFileSystems")


def mounts_from_rest(volumes: Optional[models.MountVolumes], *, origin: Optional[JobOrigin] = None) -> tuple[Mount, ...]:
    """Mounts as the request or the service describes them. The service never returns keys, so
    mounts read from a GET have ``account_key=None``. With ``origin`` (a job.json), an error names
    the mount's property path."""
    if volumes is None:
        return ()
    mounts: list[Mount] = []
    builders: tuple[tuple[Optional[list[Any]], Callable[[Any], Mount]], ...] = (
        (volumes.azure_file_shares, _file_share_mount), (volumes.azure_blob_file_systems, _blob_mount),
        (volumes.file_servers, _file_server_mount), (volumes.unmanaged_file_systems, _unmanaged_mount))
    for items, build in builders:
        for item in items or []:
            try:
                mounts.append(build(item))
            except InvalidSpecError as err:
                if origin is None:
                    raise
                here = f"mounts[{len(mounts)}]" + err.field[len("mount"):]
                raise origin.rename(InvalidSpecError(here, err.problem, err.valid_form)) from None
    return tuple(mounts)


def _key(credentials: Optional[models.AzureStorageCredentialsInfo]) -> Optional[str]:
    return credentials.account_key if credentials is not None else None


def _file_share_mount(share: models.AzureFileShareReference) -> Mount:
    return AzureFileShareMount(
        account_name=share.account_name or _url_account(share.azure_file_url or ""),
        azure_file_url=share.azure_file_url or "", relative_mount_path=share.relative_mount_path or "",
        account_key=_key(share.credentials), file_mode=share.file_mode or "0777",
        directory_mode=share.directory_mode or "0777")


def _blob_mount(blob: models.AzureBlobFileSystemReference) -> Mount:
    # A job.json may leave the account to be filled in, as it may for a file share.
    return AzureBlobMount(account_name=blob.account_name or ACCOUNT_PLACEHOLDER,
                          container_name=blob.container_name or "", relative_mount_path=blob.relative_mount_path or "",
                          account_key=_key(blob.credentials), mount_options=blob.mount_options)


def _file_server_mount(server: models.FileServerReference) -> Mount:
    return FileServerMount(file_server_id=server.file_server.id if server.file_server else "",
                           relative_mount_path=server.relative_mount_path or "",
                           source_directory=server.source_directory, mount_options=server.mount_options)


def _unmanaged_mount(other: models.UnmanagedFileSystemReference) -> Mount:
    return UnmanagedMount(mount_command=other.mount_command or "", relative_mount_path=other.relative_mount_path or "")


def _url_account(url: str) -> str:
    host = url.split("://", 1)[-1]
    return ACCOUNT_PLACEHOLDER if host.startswith(ACCOUNT_PLACEHOLDER) else host.split(".", 1)[0]


def env_to_rest(values: Mapping[str, str]) -> Optional[list[models.EnvironmentVariable]]:
    from azure.mgmt.batchai import models  # imported when first needed: it is heavy
    return [models.EnvironmentVariable(name=k, value=v) for k, v in values.items()] or None


def secrets_to_rest(values: Mapping[str, str], reveal: bool) -> Optional[list[models.EnvironmentVariableWithSecretValue]]:
    from azure.mgmt.batchai import models  # imported when first needed: it is heavy
    return [models.EnvironmentVariableWithSecretValue(name=k, value=v if reveal else _SECRET_PLACEHOLDER)
            for k, v in values.items()] or None


# -- jobs ----------------------------------------------------------------------------------------
def job_to_rest(spec: "HorovodJob", *, cluster_id: Optional[str], reveal_secrets: bool = True) -> models.JobCreateParameters:
    """The PUT body for ``spec`` on the cluster ``cluster_id``."""
    from azure.mgmt.batchai import models  # imported when first needed: it is heavy
    container = None
    if spec.container_image:
        registry = spec.container_registry
        credentials = None
        if registry is not None:
            password = registry.password if reveal_secrets or registry.password is None else _SECRET_PLACEHOLDER
            credentials = models.PrivateRegistryCredentials(username=registry.username, password=password)
        container = models.ContainerSettings(
            image_source_registry=models.ImageSourceRegistry(
                image=spec.container_image, server_url=registry.server_url if registry else None,
                credentials=credentials),
            shm_size=spec.shm_size)
    return models.JobCreateParameters(
        scheduling_priority=spec.priority,
        cluster=models.ResourceId(id=cluster_id) if cluster_id else None,
        mount_volumes=mounts_to_rest(spec.mounts, reveal_secrets=reveal_secrets),
        node_count=spec.node_count,
        container_settings=container,
        horovod_settings=models.HorovodSettings(
            python_script_file_path=spec.script, python_interpreter_path=spec.interpreter,
            command_line_args=spec.arguments or None, process_count=spec.process_count),
        job_preparation=models.JobPreparation(command_line=spec.job_preparation) if spec.job_preparation else None,
        std_out_err_path_prefix=spec.std_out_err_path_prefix,
        input_directories=[models.InputDirectory(id=d.id, path=d.path) for d in spec.input_directories] or None,
        output_directories=[models.OutputDirectory(id=d.id, path_prefix=d.path_prefix, path_suffix=d.path_suffix)
                            for d in spec.output_directories] or None,
        environment_variables=env_to_rest(spec.environment_variables),
        secrets=secrets_to_rest(spec.secrets, reveal_secrets),
        constraints=models.JobBasePropertiesConstraints(max_wall_clock_time=spec.max_wall_clock_time)
        if spec.max_wall_clock_time else None,
    )


def job_from_rest(spec_class: "type[HorovodJob]", job: Any, *, origin: Optional[JobOrigin] = None) -> "HorovodJob":
    """A spec from a ``JobCreateParameters`` or a ``Job`` the service returned (secret values
    and keys, which the service never returns, are absent). With ``origin`` (a job.json), errors
    name the document's properties."""
    horovod = job.horovod_settings
    if horovod is None:
        raise InvalidSpecError("horovodSettings", "the job is not a Horovod job",
                               '"horovodSettings": {"pythonScriptFilePath": ...}')
    container = job.container_settings
    registry = container.image_source_registry if container else None
    creds = registry.credentials if registry else None
    constraints = job.constraints
    wall_clock = constraints.max_wall_clock_time if constraints is not None else None
    if wall_clock is not None and not isinstance(wall_clock, timedelta):
        raise InvalidSpecError("constraints.maxWallClockTime", f"{wall_clock!r} is not a duration",
                               "an ISO 8601 duration like 'PT2H' or 'P7D'")
    fields: dict[str, Any] = dict(
        script=horovod.python_script_file_path,
        arguments=horovod.command_line_args or "",
        node_count=job.node_count if job.node_count is not None else 1,
        process_count=horovod.process_count,
        interpreter=horovod.python_interpreter_path,
        container_image=registry.image if registry else None,
        container_registry=ContainerRegistry(server_url=registry.server_url, username=creds.username or "",
                                             password=creds.password) if creds and registry else None,
        shm_size=container.shm_size if container else None,
        job_preparation=job.job_preparation.command_line if job.job_preparation else None,
        mounts=mounts_from_rest(job.mount_volumes, origin=origin),
        std_out_err_path_prefix=job.std_out_err_path_prefix,
        environment_variables={e.name: e.value for e in job.environment_variables or []},
        secrets={s.name: s.value for s in job.secrets or [] if s.value is not None},
        input_directories=tuple(InputDirectory(id=d.id, path=d.path) for d in job.input_directories or []),
        output_directories=tuple(OutputDirectory(id=d.id, path_prefix=d.path_prefix, path_suffix=d.path_suffix)
                                 for d in job.output_directories or []),
        # the service reports its default; a document says what it says
        max_wall_clock_time=wall_clock if wall_clock and (origin is not None or wall_clock != DEFAULT_MAX_WALL_CLOCK_TIME)
        else None,
        priority=str(getattr(job.scheduling_priority, "value", job.scheduling_priority) or "normal"),
        cluster_id=job.cluster.id if job.cluster is not None else None,
    )
    if origin is None:
        return spec_class(**fields)
    try:
        spec = spec_class(**fields)
    except InvalidSpecError as err:
        raise origin.rename(err) from None
    object.__setattr__(spec, "_origin", origin)
    return spec


def job_from_json(spec_class: "type[HorovodJob]", job: Mapping[str, Any]) -> "HorovodJob":
    """A spec from a job as the service's REST API describes it (a GET's JSON)."""
    from azure.mgmt.batchai import models  # imported when first needed: it is heavy
    return job_from_rest(spec_class, models.Job.deserialize(dict(job)))


def job_from_properties(spec_class: "type[HorovodJob]", properties: Mapping[str, Any], *, source: str,
                        prefix: str) -> "HorovodJob":
    """A spec from a job.json's ``properties`` (already validated by ``_schemas``), remembering
    which fields came from the document so that later errors name its properties."""
    from azure.mgmt.batchai import models  # imported when first needed: it is heavy
    origin = _origin_of(properties, source, prefix)
    try:
        parameters = models.JobCreateParameters.deserialize({"properties": dict(properties)})
    except Exception as err:  # msrest's own reading; the checks before it should leave it nothing to refuse
        raise InvalidSpecError(prefix.rstrip(".") or "the document", f"could not be read: {type(err).__name__}",
                               "a job.json that matches the 2018-05-01 job schema", source=source) from None
    return job_from_rest(spec_class, parameters, origin=origin)


def _origin_of(properties: Mapping[str, Any], source: str, prefix: str) -> JobOrigin:
    def present(path: str) -> bool:
        node: Any = properties
        for key in path.split("."):
            if not isinstance(node, Mapping) or key not in node:
                return False
            node = node[key]
        return True
    fields = {name for name, path in JSON_PROPERTIES.items() if present(path)}
    if present("containerSettings.imageSourceRegistry"):
        fields.add("container_registry")
    items: dict[str, str] = {}
    volumes = properties.get("mountVolumes") or {}
    index = 0
    for kind in MOUNT_KINDS:
        for i, _ in enumerate(volumes.get(kind) or []):
            items[f"mounts[{index}]"] = f"mountVolumes.{kind}[{i}]"
            index += 1
    for name, kind, key in (("input_directories", "inputDirectories", "id"),
                            ("output_directories", "outputDirectories", "id"),
                            ("environment_variables", "environmentVariables", "name"),
                            ("secrets", "secrets", "name")):
        for i, item in enumerate(properties.get(kind) or []):
            items[f"{name}[{i}]"] = f"{kind}[{i}]"
            items[f"{name}[{item[key]}]"] = items[f"{name}[{item[key]!r}]"] = f"{kind}[{i}]"
    return JobOrigin(source=source, prefix=prefix, fields=frozenset(fields), items=items)


def job_to_properties(spec: "HorovodJob", *, cluster_id: Optional[str], reveal_secrets: bool) -> dict[str, Any]:
    body: dict[str, Any] = job_to_rest(spec, cluster_id=cluster_id, reveal_secrets=reveal_secrets).serialize()
    return dict(body.get("properties", {}))


#: the settings a service keeps but never shows, by the name its 409 gives them, as the SDK names them
SECRET_FIELDS = {"secrets": "secrets (values)", "mountKeys": "mounts (account_key)",
                 "registryPassword": "container_registry.password"}
