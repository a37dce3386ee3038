"""The seam between this package's specs and azure-ai-ml's entities.

``check_*`` refuse, before any request, every Batch AI field Azure ML cannot express, naming it;
``*_entity`` build what azure-ai-ml sends; ``*_record`` read what it returns.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Mapping, Optional, Union

from ..._models.cluster_spec import AutoScale, ClusterSpec
from ..._models.errors import InvalidSpecError, ServiceErrorDetail
from ..._models.job_json import job_from_properties, job_to_properties
from ..._models.job_spec import HorovodJob
from ..._models.mounts import AzureBlobMount, AzureFileShareMount
from ..._models.states import ClusterStatus, JobStatus, NodeStateCounts
from ..._models.sweep_job import PLACEHOLDER
from .command import input_placeholder, node_command, output_placeholder, swept_variables
from .states import allocation_state, execution_state
from .vm_sizes import canonical_vm_size, check_amlcompute_vm_size

__all__ = ["check_cluster_spec", "check_job_spec", "check_scale", "compute_entity", "command_job_entity",
           "datastore_name", "blob_datastore_name", "output_name", "node_field", "cluster_status_from_rest",
           "job_status_from_entity", "spec_property", "read_spec_property", "TIERS", "SPEC_PROPERTY",
           "DatastoreIdentity", "mount_datastore", "datastore_identity", "datastore_entity"]

#: ClusterSpec.vm_priority -> AmlCompute tier
TIERS = {"dedicated": "dedicated", "lowpriority": "low_priority"}
#: the job property that keeps the submitted spec (no keys, no secrets) so it can be read back
SPEC_PROPERTY = "horovod_batchai.spec"
_AML_JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,254}\Z")
_OUTPUT_NAME = re.compile(r"[^A-Za-z0-9_]")


def datastore_name(account_name: str, share_name: str) -> str:
    """The datastore registered for a share: letters, digits and '_' only, as Azure ML requires."""
    return f"{account_name}_{share_name}".replace("-", "_").lower()


def blob_datastore_name(account_name: str, container_name: str) -> str:
    """The datastore registered for a blob container. Its double '_' keeps it apart from every
    share's datastore: a share name cannot make one (no '_', no '--', no leading '-')."""
    return f"{account_name}__{container_name}".replace("-", "_").lower()


def output_name(relative_mount_path: str, index: int) -> str:
    """The job input or output that mounts a datastore, named after where the job sees it."""
    return f"mount{index}_" + _OUTPUT_NAME.sub("_", relative_mount_path)


@dataclass(frozen=True)
class DatastoreIdentity:
    """What a datastore is: its type, storage account and share or container. Two datastores
    with the same identity reach the same data, whatever their credentials."""

    kind: str
    account: str
    place: str

    def describe(self) -> str:
        what = {"AzureFile": "file share", "AzureBlob": "blob container"}.get(self.kind, "storage")
        return f"{self.kind} ({what} {self.place!r} of storage account {self.account!r})"

    def differences(self, other: "DatastoreIdentity") -> list[str]:
        """What differs from ``other`` (the wanted identity), in words; names compare as Azure
        compares them, without regard to case."""
        found = []
        if self.kind.lower() != other.kind.lower():
            found.append(f"type {self.kind}, not {other.kind}")
        if self.account.lower() != other.account.lower():
            found.append(f"storage account {self.account!r}, not {other.account!r}")
        if self.place.lower() != other.place.lower():
            noun = "share" if other.kind == "AzureFile" else "container"
            found.append(f"{noun} {self.place!r}, not {other.place!r}")
        return found


def mount_datastore(mount: Union[AzureFileShareMount, AzureBlobMount]) -> tuple[str, DatastoreIdentity]:
    """The datastore a mount needs: its name and identity."""
    if isinstance(mount, AzureFileShareMount):
        return (datastore_name(mount.account_name, mount.share_name),
                DatastoreIdentity("AzureFile", mount.account_name, mount.share_name))
    return (blob_datastore_name(mount.account_name, mount.container_name),
            DatastoreIdentity("AzureBlob", mount.account_name, mount.container_name))


def datastore_identity(entity: Any) -> DatastoreIdentity:
    """The identity of azure-ai-ml's datastore entity, whatever its type."""
    kind = _text(getattr(entity, "type", None)) or type(entity).__name__
    place = (getattr(entity, "file_share_name", None) or getattr(entity, "container_name", None)
             or getattr(entity, "filesystem", None) or getattr(entity, "store_name", None) or "")
    return DatastoreIdentity(kind, str(getattr(entity, "account_name", None) or ""), str(place))


def datastore_entity(mount: Union[AzureFileShareMount, AzureBlobMount], *, description: str) -> Any:
    """The azure-ai-ml datastore for a mount, with the mount's credential: the account key, a
    SAS token (blob only), or none (blob only: identity-based)."""
    from azure.ai.ml.entities import (AccountKeyConfiguration, AzureBlobDatastore, AzureFileDatastore,
                                      SasTokenConfiguration)
    name, _ = mount_datastore(mount)
    if isinstance(mount, AzureFileShareMount):
        assert mount.account_key
        return AzureFileDatastore(name=name, account_name=mount.account_name, file_share_name=mount.share_name,
                                  description=description,
                                  credentials=AccountKeyConfiguration(account_key=mount.account_key))
    credentials: Any = None
    if mount.account_key:
        credentials = AccountKeyConfiguration(account_key=mount.account_key)
    elif mount.sas_token:
        credentials = SasTokenConfiguration(sas_token=mount.sas_token)
    return AzureBlobDatastore(name=name, account_name=mount.account_name, container_name=mount.container_name,
                              description=description, credentials=credentials)


# -- clusters ------------------------------------------------------------------------------------
def check_cluster_spec(spec: ClusterSpec) -> str:
    """The VM size as Azure spells it, once every field is known to be expressible."""
    size = check_amlcompute_vm_size(spec.vm_size)
    if spec.setup_task is not None:
        raise InvalidSpecError("setup_task", "AmlCompute runs no command when a node joins",
                               "None; put the commands in the job's job_preparation instead")
    if spec.mounts:
        raise InvalidSpecError("mounts", "AmlCompute clusters mount nothing themselves",
                               "(); mount the share in the job (its job.json mountVolumes)")
    if spec.image is not None:
        raise InvalidSpecError("image", "AmlCompute nodes run Azure ML's own OS image; jobs choose their "
                               "container", "None; give the job a container_image instead")
    if spec.auto_scale is not None:
        check_scale(spec.auto_scale)
    return size


def check_scale(auto_scale: AutoScale) -> None:
    if auto_scale.initial not in (0, auto_scale.minimum):
        raise InvalidSpecError("auto_scale.initial", "AmlCompute starts at its minimum; it has no initial count",
                               "0 (or the minimum)")


def compute_entity(name: str, spec: ClusterSpec) -> Any:
    from azure.ai.ml.entities import AmlCompute, AmlComputeSshSettings
    size = check_cluster_spec(spec)
    idle: Optional[int] = None
    if spec.auto_scale is not None:
        minimum, maximum = spec.auto_scale.minimum, spec.auto_scale.maximum
        if spec.auto_scale.idle_time_before_scale_down is not None:
            idle = int(spec.auto_scale.idle_time_before_scale_down.total_seconds())
    else:
        minimum = maximum = int(spec.target_node_count or 0)
    ssh = AmlComputeSshSettings(admin_username=spec.admin_user_name, ssh_key_value=spec.ssh_public_key,
                                admin_password=spec.admin_password)
    options: dict[str, Any] = {} if idle is None else {"idle_time_before_scale_down": idle}
    # Batch AI nodes were always reachable over SSH (remote_login_info); so are these.
    return AmlCompute(name=name, size=size, tier=TIERS[spec.vm_priority], min_instances=minimum,
                      max_instances=maximum, ssh_settings=ssh, ssh_public_access_enabled=True, **options)


def cluster_status_from_rest(resource: Any, *, resource_group: str, workspace: str,
                             nodes: Optional[list[Any]] = None) -> ClusterStatus:
    """A ClusterStatus from the generated ``ComputeResource`` of an AmlCompute (and, when given,
    its node list, which then provides the node counts). While the compute is being created the
    service sends null counts and allocation state: no nodes, resizing."""
    outer = resource.properties
    props = getattr(outer, "properties", None)
    scale = getattr(props, "scale_settings", None)
    minimum = getattr(scale, "min_node_count", None)
    maximum = getattr(scale, "max_node_count", None)
    if nodes is not None:
        counts = _count_nodes(nodes)
    else:
        raw = getattr(props, "node_state_counts", None)
        counts = NodeStateCounts(idle=int(getattr(raw, "idle_node_count", 0) or 0),
                                 running=int(getattr(raw, "running_node_count", 0) or 0),
                                 preparing=int(getattr(raw, "preparing_node_count", 0) or 0),
                                 leaving=int(getattr(raw, "leaving_node_count", 0) or 0),
                                 unusable=int(getattr(raw, "unusable_node_count", 0) or 0)
                                 + int(getattr(raw, "preempted_node_count", 0) or 0))
    fixed = minimum is not None and minimum == maximum
    errors = [ServiceErrorDetail(str(getattr(getattr(e, "error", e), "code", "") or ""),
                                 str(getattr(getattr(e, "error", e), "message", "") or ""))
              for e in (getattr(props, "errors", None) or []) + (getattr(outer, "provisioning_errors", None) or [])]
    state = _text(getattr(outer, "provisioning_state", None))
    if state.lower() == "failed" and not errors:
        errors.append(ServiceErrorDetail("ProvisioningFailed", "the compute's provisioningState is Failed"))
    return ClusterStatus(
        name=str(resource.name or ""), resource_group=resource_group, workspace=workspace,
        vm_size=canonical_vm_size(str(getattr(props, "vm_size", "") or "")),
        allocation_state=allocation_state(getattr(props, "allocation_state", None)),
        current_node_count=int(getattr(props, "current_node_count", 0) or 0) if nodes is None else counts.total,
        node_state_counts=counts,
        target_node_count=int(minimum or 0) if fixed else None,
        auto_scale=None if fixed else (int(minimum or 0), int(maximum or 0)),
        provisioning_state=state.lower(), errors=tuple(errors),
        allocation_state_transition_time=getattr(props, "allocation_state_transition_time", None))


def node_field(node: Any, name: str) -> Any:
    """A field of azure-ai-ml's AmlComputeNodeInfo. Version 1.35.2 fills it from a model whose
    as_dict() keeps the wire's camelCase keys, leaving the snake_case attributes None."""
    value = getattr(node, name, None)
    if value is None:
        head, *rest = name.split("_")
        value = vars(node).get(head + "".join(part.title() for part in rest))
    return value


def _text(value: object) -> str:
    """An enum's value or a string, as text ('' for None)."""
    return str(getattr(value, "value", value) or "")


def _count_nodes(nodes: list[Any]) -> NodeStateCounts:
    tally = {"idle": 0, "running": 0, "preparing": 0, "leaving": 0, "unusable": 0}
    for node in nodes:
        state = _text(node_field(node, "node_state")).lower()
        tally["unusable" if state in ("unusable", "preempted") else state if state in tally else "preparing"] += 1
    return NodeStateCounts(**tally)


# -- jobs ----------------------------------------------------------------------------------------
def check_job_spec(spec: HorovodJob, job_name: str, *, sweep_trial: bool = False) -> None:
    """Refuse what an Azure ML command job cannot express, naming the field. A sweep's trial
    (``sweep_trial``) may name its parameters in its arguments, ``${{search_space.<name>}}``."""
    if not _AML_JOB_NAME.match(job_name):
        raise InvalidSpecError("name", f"{job_name!r} is not an Azure ML job name",
                               "a letter or digit, then letters, digits, '_' or '-'")
    for i, mount in enumerate(spec.mounts):
        if not isinstance(mount, (AzureFileShareMount, AzureBlobMount)):
            raise spec.field_error(f"mounts[{i}]", f"Azure ML jobs here mount Azure file shares and blob containers "
                                   f"(as datastores), not a {type(mount).__name__}",
                                   "AzureFileShareMount or AzureBlobMount (mountVolumes.azureFileShares or "
                                   "azureBlobFileSystems)")
        if isinstance(mount, AzureBlobMount) and mount.mount_options:
            raise spec.field_error(f"mounts[{i}].mount_options", f"{mount.mount_options!r}: Azure ML mounts a blob "
                                   "datastore itself and takes no blobfuse options",
                                   "None, or '-o ro' (read_only=True) for a read-only input")
    spec.check_paths_against(())  # AmlCompute has no cluster mounts: $AZ_BATCHAI_MOUNT_ROOT paths lead nowhere
    if spec.priority != "normal":
        raise spec.field_error("priority", f"{spec.priority!r}: Azure ML command jobs on AmlCompute have no "
                               "scheduling priority", "normal")
    if spec.output_directories:
        raise spec.field_error("output_directories", "Azure ML has no Batch AI output directories",
                               "() ; write under a mounted share and read it with FileShare")
    if spec.secrets:
        raise spec.field_error("secrets", "an Azure ML job's environment variables are readable by anyone who "
                               "can read the job, so they cannot hold secrets",
                               "{} ; keep secrets in the workspace's Key Vault and read them in the script")
    if spec.container_registry is not None:
        raise spec.field_error("container_registry", "Azure ML reaches private registries through a workspace "
                               "connection, not job credentials", "None, with an image Azure ML can pull")
    if spec.process_count is not None and spec.process_count % spec.node_count:
        raise spec.field_error("process_count", f"{spec.process_count} processes cannot be spread evenly over "
                               f"{spec.node_count} nodes: Azure ML runs the same number on every node",
                               f"a multiple of node_count ({spec.node_count})")
    for name, text in (("script", spec.script), ("arguments", spec.arguments),
                       ("job_preparation", spec.job_preparation or ""), ("interpreter", spec.interpreter or "")):
        if sweep_trial and name == "arguments":
            text = PLACEHOLDER.sub("", text)
        if "${{" in text:
            raise spec.field_error(name, "contains '${{', which Azure ML would replace with a job input or output",
                                   "text without '${{'")


def command_job_entity(spec: HorovodJob, *, job_name: str, experiment: str, compute: str,
                       environment: Any, sweep_trial: bool = False) -> Any:
    """The azure-ai-ml command job for ``spec`` on the AmlCompute ``compute`` (for a sweep's
    trial: the command its trials share, see :mod:`.command`)."""
    from azure.ai.ml import Input, MpiDistribution, Output, command
    check_job_spec(spec, job_name, sweep_trial=sweep_trial)
    inputs: dict[str, Any] = {}
    outputs: dict[str, Any] = {}
    places: dict[str, str] = {}
    for i, mount in enumerate(spec.mounts):
        assert isinstance(mount, (AzureFileShareMount, AzureBlobMount))
        name = output_name(mount.relative_mount_path, i)
        path = f"azureml://datastores/{mount_datastore(mount)[0]}/paths/"
        if isinstance(mount, AzureBlobMount) and mount.read_only:
            inputs[name] = Input(type="uri_folder", mode="ro_mount", path=path)
            places[mount.relative_mount_path] = input_placeholder(name)
        else:
            outputs[name] = Output(type="uri_folder", mode="rw_mount", path=path)
            places[mount.relative_mount_path] = output_placeholder(name)
    per_node = (spec.process_count or spec.node_count) // spec.node_count
    wall_clock: Optional[timedelta] = spec.max_wall_clock_time
    job = command(
        name=job_name, display_name=job_name, experiment_name=experiment, compute=compute,
        command=node_command(spec, job_name=job_name, mounts=places, sweep_trial=sweep_trial), environment=environment,
        environment_variables={k: v for k, v in spec.environment_variables.items()
                               if not (sweep_trial and k in swept_variables(spec.environment_variables))} or None,
        inputs=inputs or None,
        outputs=outputs or None,
        instance_count=spec.node_count, distribution=MpiDistribution(process_count_per_instance=per_node),
        shm_size=spec.shm_size, timeout=int(wall_clock.total_seconds()) if wall_clock else None,
        properties={SPEC_PROPERTY: spec_property(spec)})
    return job


def spec_property(spec: HorovodJob) -> str:
    """The spec as Batch AI job properties, without account keys or SAS tokens (secrets are
    refused earlier)."""
    properties = job_to_properties(spec, cluster_id=None, reveal_secrets=False)
    volumes = properties.get("mountVolumes") or {}
    for mount in (volumes.get("azureFileShares") or []) + (volumes.get("azureBlobFileSystems") or []):
        mount.pop("credentials", None)
    return json.dumps(properties, sort_keys=True, separators=(",", ":"))


def read_spec_property(properties: Optional[Mapping[str, Any]], job_name: str) -> HorovodJob:
    text = (properties or {}).get(SPEC_PROPERTY)
    if not text:
        raise InvalidSpecError(f"jobs/{job_name}", "was not submitted by horovod-batchai: it carries no spec",
                               "a job submitted with Experiment.submit")
    return job_from_properties(HorovodJob, json.loads(text), source=f"job {job_name}", prefix="properties.")


def job_status_from_entity(job: Any, errors: tuple[ServiceErrorDetail, ...] = ()) -> JobStatus:
    created = getattr(getattr(job, "creation_context", None), "created_at", None)
    return JobStatus(name=str(job.name or ""), execution_state=execution_state(job.status), exit_code=None,
                     errors=errors, creation_time=created if not isinstance(created, str) else None,
                     output_directory_path_segment=None)
