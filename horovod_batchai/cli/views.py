"""What a command returns (``Result``, a ``Table``) and the JSON and table views of the SDK's
objects."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Optional, Sequence

from .. import InvalidSpecError
from .context import EXIT_OK

if TYPE_CHECKING:
    from .. import (ClusterStatus, Experiment, FileShare, GpuCluster, Job, JobStatus, OutputFile, ShareItem,
                    Workspace)


# -- what a command returns -----------------------------------------------------------------------
@dataclass
class Table:
    headers: Sequence[str]
    rows: Sequence[Sequence[Any]]
    #: column indexes printed right-aligned
    numeric: frozenset[int] = frozenset()

    def render(self) -> str:
        cells = [["" if v is None else str(v) for v in row] for row in self.rows]
        widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(self.headers)]

        def line(values: Sequence[str]) -> str:
            return "  ".join(v.rjust(w) if i in self.numeric else v.ljust(w)
                             for i, (v, w) in enumerate(zip(values, widths))).rstrip()

        return "\n".join([line(self.headers), "  ".join("-" * w for w in widths)] + [line(r) for r in cells])


@dataclass
class Result:
    """What a command prints: ``data`` for ``--output json`` (and ``--query``), ``table`` for
    ``--output table`` (``data`` as JSON when there is no table); ``exit_code`` and ``error``
    (printed to stderr) when the command ran but what it reports is a failure."""

    data: Any = None
    table: Optional[Table] = None
    exit_code: int = EXIT_OK
    error: Optional[str] = None
    quiet: bool = False  # the command already wrote its output (job stream)

    def json_data(self) -> Any:
        """``data``; a callable ``data`` is called here, when the JSON is printed (a job's
        properties are read from the service's description only for JSON)."""
        return self.data() if callable(self.data) else self.data


# -- JSON views of the SDK's objects (camelCase, as the service names things) ----------------------
def _time(value: Optional[datetime]) -> Optional[str]:
    return value.isoformat() if value is not None else None


def _errors(errors: Sequence[Any]) -> list[dict[str, Any]]:
    return [{"code": e.code, "message": e.message, "details": [{"name": n, "value": v} for n, v in e.details]}
            for e in errors]


def workspace_data(ws: Workspace) -> dict[str, Any]:
    return {"id": ws.id, "name": ws.name, "resourceGroup": ws.resource_group, "location": ws.location}


def workspace_table(items: Sequence[Workspace]) -> Table:
    return Table(["Name", "Resource Group", "Location"], [[w.name, w.resource_group, w.location] for w in items])


def experiment_data(exp: Experiment) -> dict[str, Any]:
    return {"id": exp.id, "name": exp.name, "workspace": exp.workspace.name,
            "resourceGroup": exp.workspace.resource_group}


def experiment_table(items: Sequence[Experiment]) -> Table:
    return Table(["Name", "Resource Group", "Workspace"],
                 [[e.name, e.workspace.resource_group, e.workspace.name] for e in items])


def node_counts_data(status: ClusterStatus) -> dict[str, int]:
    c = status.node_state_counts
    return {"idleNodeCount": c.idle, "leavingNodeCount": c.leaving, "preparingNodeCount": c.preparing,
            "runningNodeCount": c.running, "unusableNodeCount": c.unusable}


def cluster_data(cluster: GpuCluster, status: ClusterStatus) -> dict[str, Any]:
    scale: dict[str, Any]
    if status.auto_scale is not None:
        scale = {"autoScale": {"minimumNodeCount": status.auto_scale[0], "maximumNodeCount": status.auto_scale[1]}}
    else:
        scale = {"manual": {"targetNodeCount": status.target_node_count}}
    return {"id": cluster.id, "name": status.name, "resourceGroup": status.resource_group,
            "workspace": status.workspace, "vmSize": status.vm_size, "provisioningState": status.provisioning_state,
            "allocationState": status.allocation_state.value,
            "allocationStateTransitionTime": _time(status.allocation_state_transition_time),
            "currentNodeCount": status.current_node_count, "scaleSettings": scale,
            "nodeStateCounts": node_counts_data(status), "errors": _errors(status.errors)}


def cluster_table(statuses: Sequence[ClusterStatus]) -> Table:
    """The tutorial's ``az batchai cluster show --output table``."""
    rows = [[s.name, s.resource_group, s.workspace, s.vm_size.upper(), s.allocation_state.value,
             s.node_state_counts.idle, s.node_state_counts.running, s.node_state_counts.preparing,
             s.node_state_counts.leaving, s.node_state_counts.unusable] for s in statuses]
    return Table(["Name", "Resource Group", "Workspace", "VM Size", "State", "Idle", "Running", "Preparing",
                  "Leaving", "Unusable"], rows, frozenset(range(5, 10)))


def job_data(job: Job, status: JobStatus) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": job.id, "name": job.name, "experiment": job.experiment.name,
        "workspace": job.experiment.workspace.name, "resourceGroup": job.experiment.workspace.resource_group,
        "executionState": status.execution_state.value, "exitCode": status.exit_code,
        "errors": _errors(status.errors), "creationTime": _time(status.creation_time),
        "startTime": _time(status.start_time), "endTime": _time(status.end_time),
        "jobOutputDirectoryPathSegment": status.output_directory_path_segment}
    try:
        # As submitted, with every key and secret value replaced by a placeholder.
        data["properties"] = job.spec.to_dict()["properties"]
    except InvalidSpecError:
        pass  # not a Horovod job (made by another client): the state above is all we show
    return data


def job_table(items: Sequence[tuple[Job, JobStatus]]) -> Table:
    return Table(["Name", "Experiment", "State", "Exit Code", "Created", "Ended"],
                 [[j.name, j.experiment.name, s.execution_state.value, s.exit_code, _time(s.creation_time),
                   _time(s.end_time)] for j, s in items], frozenset({3}))


def output_files_data(files: Sequence[OutputFile]) -> list[dict[str, Any]]:
    # download_url is a SAS link, i.e. a credential: `job file download` fetches files instead.
    return [{"name": f.name, "fileType": "directory" if f.is_directory else "file", "contentLength": f.size,
             "lastModified": _time(f.last_modified)} for f in files]


def output_files_table(files: Sequence[OutputFile]) -> Table:
    """The tutorial's ``az batchai job file list --output table``."""
    return Table(["Name", "Type", "Size", "Modified"],
                 [[f.name, "directory" if f.is_directory else "file", f.size, _time(f.last_modified)] for f in files],
                 frozenset({2}))


def share_items_data(items: Sequence[ShareItem]) -> list[dict[str, Any]]:
    return [{"path": i.path, "type": "directory" if i.is_directory else "file", "size": i.size} for i in items]


def share_items_table(items: Sequence[ShareItem]) -> Table:
    return Table(["Path", "Type", "Size"], [[i.path, "directory" if i.is_directory else "file", i.size]
                                            for i in items], frozenset({2}))


def share_data(share: FileShare) -> dict[str, Any]:
    return {"accountName": share.account_name, "shareName": share.share_name, "resourceGroup": share.resource_group,
            "url": share.url}


def service_data(info: Any) -> dict[str, Any]:
    return {"running": True, "endpoint": info.endpoint, "pid": info.pid, "stateDir": str(info.state_dir),
            "caCert": str(info.ca_cert), "nodeRuntime": info.node_runtime}


def service_table(data: dict[str, Any]) -> Table:
    return Table(["Running", "Endpoint", "PID", "State Directory", "Node Runtime"],
                 [[str(data["running"]).lower(), data.get("endpoint"), data.get("pid"), data["stateDir"],
                   data.get("nodeRuntime")]])
