"""Clusters, their status and the service's errors to and from ``azure.mgmt.batchai.models``, and a
job's status from the service's JSON.

``*_to_rest`` builds the request models Microsoft's client serialises; ``*_from_rest`` reads the
models it deserialises; ``*_from_json`` reads the REST JSON itself (a job is read as JSON, and a
generated model is serialised to it first, so each is read one way). With
:mod:`horovod_batchai._models.job_json` (jobs and mounts, which are also the job.json form),
nothing else in the package touches the generated models' fields.
"""
from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from ..._models.cluster_spec import AutoScale, ClusterSpec
from ..._models.errors import ConflictError, ServiceErrorDetail, redact
from ..._models.job_json import env_to_rest, mounts_from_rest, mounts_to_rest, secrets_to_rest
from ..._models.mounts import AzureBlobMount, AzureFileShareMount, Mount
from ..._models.states import AllocationState, ClusterStatus, ExecutionState, JobStatus, NodeStateCounts
from ..._models.values import OutputFile

if TYPE_CHECKING:
    from azure.mgmt.batchai import models

__all__ = ["cluster_to_rest", "scale_to_rest", "cluster_status_from_rest", "cluster_maximum_nodes", "job_status_from_json",
           "errors_from_json", "output_files_from_json", "conflict_from_service", "CLUSTER_SECRET_FIELDS", "cluster_differences"]


CLUSTER_SECRET_FIELDS = {"adminUserPassword": "admin_password", "setupTaskSecrets": "setup_task.secrets (values)",
                         "mountKeys": "mounts (account_key)"}


def conflict_from_service(what: str, resource: str, err: Any, fields: Mapping[str, str], hint: str) -> ConflictError:
    """The :class:`ConflictError` for the service's 409 to a repeated create: it compared what only it
    holds (secrets, keys, passwords) and found a difference. The fields are named, never values
    (the service's message carries none)."""
    message = str(getattr(getattr(err, "error", None), "message", None) or getattr(err, "message", "") or "")
    named = [ours for theirs, ours in fields.items() if f"(secret) {theirs}" in message]
    differing = ", ".join(named) if named else "settings the service keeps secret"
    said = redact(message.strip().splitlines()[0]) if message.strip() else ""
    return ConflictError(f"{what} already exists with other settings ({differing}); {hint}"
                         + (f" [the service said: {said}]" if said else ""), resource=resource, azure_error=err)


def errors_from_json(errors: Optional[Sequence[Mapping[str, Any]]]) -> tuple[ServiceErrorDetail, ...]:
    """The service's ``BatchAIError`` list, as its REST API writes it."""
    return tuple(ServiceErrorDetail(str(e.get("code") or ""), str(e.get("message") or ""),
                                    [(str(d.get("name") or ""), str(d.get("value") or ""))
                                     for d in e.get("details") or []]) for e in errors or [])


def _serialized(models_: Optional[Sequence[Any]]) -> list[Mapping[str, Any]]:
    """Generated models as their REST JSON, read-only fields included (a service's errors are all
    read-only: without them nothing would be left)."""
    return [model.serialize(keep_readonly=True) for model in models_ or []]


def _time(value: Optional[str]) -> Optional[datetime]:
    return datetime.fromisoformat(value) if value else None


def job_status_from_json(job: Mapping[str, Any]) -> JobStatus:
    """A job's status from its REST description (read-only properties included)."""
    props = job.get("properties") or {}
    info = props.get("executionInfo") or {}
    return JobStatus(
        name=str(job.get("name") or ""),
        execution_state=ExecutionState.parse(props.get("executionState") or "queued"),
        exit_code=info.get("exitCode"),
        errors=errors_from_json(info.get("errors")),
        creation_time=_time(props.get("creationTime")),
        start_time=_time(info.get("startTime")),
        end_time=_time(info.get("endTime")),
        output_directory_path_segment=props.get("jobOutputDirectoryPathSegment"),
    )


def output_files_from_json(files: Sequence[Mapping[str, Any]]) -> list[OutputFile]:
    """``listOutputFiles``' items (``File``: its ``properties`` are absent for a directory)."""
    out = []
    for f in files:
        props = f.get("properties") or {}
        size = props.get("contentLength")
        out.append(OutputFile(name=str(f.get("name") or ""), is_directory=f.get("fileType") == "directory",
                              size=int(size) if size is not None else None, last_modified=_time(props.get("lastModified")),
                              download_url=f.get("downloadUrl")))
    return out


# -- clusters ------------------------------------------------------------------------------------
def scale_to_rest(*, target_node_count: Optional[int] = None, auto_scale: Optional[AutoScale] = None,
                  deallocation_option: str = "requeue") -> models.ScaleSettings:
    from azure.mgmt.batchai import models  # imported when first needed: it is heavy
    if auto_scale is not None:
        return models.ScaleSettings(auto_scale=models.AutoScaleSettings(
            minimum_node_count=auto_scale.minimum, maximum_node_count=auto_scale.maximum,
            initial_node_count=auto_scale.initial))
    return models.ScaleSettings(manual=models.ManualScaleSettings(
        target_node_count=target_node_count or 0, node_deallocation_option=deallocation_option))


def cluster_to_rest(spec: ClusterSpec) -> models.ClusterCreateParameters:
    from azure.mgmt.batchai import models  # imported when first needed: it is heavy
    setup = spec.setup_task
    node_setup = None
    if setup is not None or spec.mounts:
        node_setup = models.NodeSetup(
            setup_task=models.SetupTask(command_line=setup.command_line,
                                        std_out_err_path_prefix=setup.std_out_err_path_prefix,
                                        environment_variables=env_to_rest(setup.environment_variables),
                                        secrets=secrets_to_rest(setup.secrets, True)) if setup else None,
            mount_volumes=mounts_to_rest(spec.mounts))
    image = spec.image
    return models.ClusterCreateParameters(
        vm_size=spec.vm_size,
        vm_priority=spec.vm_priority,
        scale_settings=scale_to_rest(target_node_count=spec.target_node_count, auto_scale=spec.auto_scale),
        virtual_machine_configuration=models.VirtualMachineConfiguration(image_reference=models.ImageReference(
            publisher=image.publisher, offer=image.offer, sku=image.sku, version=image.version,
            virtual_machine_image_id=image.virtual_machine_image_id)) if image else None,
        node_setup=node_setup,
        user_account_settings=models.UserAccountSettings(
            admin_user_name=spec.admin_user_name, admin_user_ssh_public_key=spec.ssh_public_key,
            admin_user_password=spec.admin_password),
    )


def cluster_differences(spec: ClusterSpec, cluster: models.Cluster) -> list[str]:
    """What ``spec`` asks that the existing ``cluster`` does not have, as ``"field (theirs, not
    ours)"``. The scale is left out (it changes through resize), and so are the password, keys and
    secret values, which the service never shows; secret names are compared."""
    vm = cluster.virtual_machine_configuration
    image = vm.image_reference if vm is not None else None
    user = cluster.user_account_settings
    setup = cluster.node_setup.setup_task if cluster.node_setup is not None else None
    task = spec.setup_task
    pairs: list[tuple[str, Any, Any]] = [
        ("vm_size", spec.vm_size.lower(), (cluster.vm_size or "").lower()),
        ("vm_priority", spec.vm_priority, str(getattr(cluster.vm_priority, "value", cluster.vm_priority) or "dedicated")),
        ("admin_user_name", spec.admin_user_name, user.admin_user_name if user else None),
        ("ssh_public_key", spec.ssh_public_key, user.admin_user_ssh_public_key if user else None),
        ("setup_task", (task.command_line, task.std_out_err_path_prefix, dict(task.environment_variables),
                        sorted(task.secrets)) if task else None,
         (setup.command_line, setup.std_out_err_path_prefix, {e.name: e.value for e in setup.environment_variables or []},
          sorted(e.name for e in setup.secrets or [])) if setup else None),
        ("mounts", [_keyless(m) for m in spec.mounts], [_keyless(m) for m in mounts_from_rest(
            cluster.node_setup.mount_volumes if cluster.node_setup else None)]),
    ]
    if spec.image is not None:  # without one, the service chose its default image
        ours = spec.image
        pairs.append(("image", (ours.publisher, ours.offer, ours.sku, ours.version, ours.virtual_machine_image_id),
                      (image.publisher, image.offer, image.sku, image.version, image.virtual_machine_image_id)
                      if image else None))
    shown = {"vm_size": (spec.vm_size, cluster.vm_size), "vm_priority": None, "admin_user_name": None}
    out = []
    for name, ours, theirs in pairs:
        if ours != theirs:
            values = shown.get(name)
            out.append(f"{name} ({values[1]}, not {values[0]})" if values else name)
    return out


def _keyless(mount: Mount) -> Mount:
    import dataclasses
    if isinstance(mount, (AzureFileShareMount, AzureBlobMount)):
        return dataclasses.replace(mount, account_key=None)
    return mount


def cluster_maximum_nodes(cluster: models.Cluster) -> Optional[int]:
    """The most nodes a job can get on ``cluster``: the manual target or the auto-scale maximum."""
    scale = cluster.scale_settings
    if scale is None:
        return None
    if scale.auto_scale is not None:
        return scale.auto_scale.maximum_node_count
    return scale.manual.target_node_count if scale.manual is not None else None


def cluster_status_from_rest(cluster: models.Cluster, *, resource_group: str, workspace: str) -> ClusterStatus:
    counts = cluster.node_state_counts
    scale = cluster.scale_settings
    auto = scale.auto_scale if scale is not None else None
    manual = scale.manual if scale is not None else None
    return ClusterStatus(
        name=cluster.name or "",
        resource_group=resource_group,
        workspace=workspace,
        vm_size=cluster.vm_size or "",
        allocation_state=AllocationState.parse(cluster.allocation_state or "resizing"),
        current_node_count=cluster.current_node_count or 0,
        node_state_counts=NodeStateCounts(
            idle=counts.idle_node_count or 0, running=counts.running_node_count or 0,
            preparing=counts.preparing_node_count or 0, leaving=counts.leaving_node_count or 0,
            unusable=counts.unusable_node_count or 0) if counts else NodeStateCounts(),
        target_node_count=manual.target_node_count if manual is not None and auto is None else None,
        auto_scale=(auto.minimum_node_count, auto.maximum_node_count) if auto is not None else None,
        provisioning_state=str(getattr(cluster.provisioning_state, "value", cluster.provisioning_state) or ""),
        errors=errors_from_json(_serialized(cluster.errors)),
        allocation_state_transition_time=cluster.allocation_state_transition_time,
    )
