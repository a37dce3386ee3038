"""The Microsoft.BatchAI resource provider: workspaces, experiments, clusters, jobs and file
servers as the store keeps them, and everything the service decides about them.

Handlers (``api.py``) parse a request, look up what it names here (once: a typed record, or a
:class:`~.records.Slot` where something may be created), call one method here with it and
serialise what it returns. This module owns the rest: lookups with the checks every scoped
request makes, conflicts between a PUT and what exists, long-running operation bookkeeping
(``operations.py``), quotas, and what is handed to the job scheduler (a
:class:`~.scheduling.JobScheduler`). Errors are raised by name (``errors.py``).
"""
from __future__ import annotations

import hashlib
import json
import logging
import shutil
import uuid
from typing import Any, Callable, Optional, TypeVar

from ..core.arm_errors import (ArmError, InternalServerError, InvalidLocation, InvalidParameter,
                               InvalidResourceLocation)
from ..core.context import ServiceContext
from ..core.records import Resource
from ..core.store import resource_key
from ..resources.api import normalize_location, require_resource_group, check_subscription_id
from ..resources.records import ResourceGroup
from ..runner.resource_types import CLUSTER_TYPE, EXPERIMENT_TYPE, FILE_SERVER_TYPE, JOB_TYPE, WORKSPACE_TYPE
from ..runner.states import AllocationState, ExecutionState, node_state_counts, utc_now
from ..runner.vm_sizes import VM_SIZES, lookup_vm_size
from . import operations
from .errors import (AlreadyExists, ClusterAlreadyExists, ClusterInUse, ClusterNotFound, ClusterNotReady,
                     FileServerAlreadyExists, JobAlreadyExists)
from .operations import LongRunningOperation, finish_operation, start_operation
from .records import BatchAIResource, Cluster, Experiment, FileServer, Job, Scope, Slot, Workspace
from .scheduling import JobScheduler, NoScheduler
from .validation import TOOLKITS, Parsed, check_job_node_count, check_name

log = logging.getLogger(__name__)

__all__ = ["BatchAIProvider", "etag"]

R = TypeVar("R", bound=BatchAIResource)
P = TypeVar("P", bound=BatchAIResource)

#: first port that listRemoteLoginInformation reports; local nodes have no SSH daemon.
_LOGIN_BASE_PORT = 50000
#: quotas the local service reports; like Azure's defaults, they are advisory here.
_CLUSTER_QUOTA = 20
_DEDICATED_CORES_QUOTA = 600
_LOW_PRIORITY_CORES_QUOTA = 150

#: how an operation that a bug of ours broke ends (the log has the rest).
_FAILED_INTERNALLY = {"code": InternalServerError.code,
                      "message": "The local service failed to complete the operation."}

_CLUSTER_REQUEST_KEYS = ("vmSize", "vmPriority", "scaleSettings", "virtualMachineConfiguration", "userAccountSettings",
                         "nodeSetup", "subnet")
_FILE_SERVER_REQUEST_KEYS = ("vmSize", "sshConfiguration", "dataDisks", "subnet")
#: the order the service answered job properties in (recordings); the rest follow in spec order.
_JOB_LEAD = ("schedulingPriority", "cluster")
_JOB_SERVER_KEYS = ("experimentName", "jobOutputDirectoryPathSegment", "toolType", "creationTime", "provisioningState",
                    "provisioningStateTransitionTime", "executionState", "executionStateTransitionTime",
                    "executionInfo")
_CLUSTER_ID_SHAPE = ("subscriptions", None, "resourcegroups", None, "providers", "microsoft.batchai", "workspaces",
                     None, "clusters", None)


def workspace_id(sub: str, rg: str, ws: str) -> str:
    return f"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.BatchAI/workspaces/{ws}"


def etag(doc: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:15].upper()
    return f'"0x{digest}"'


def _differences(old: Any, new: Any, path: str = "properties") -> list[str]:
    """JSON paths where two request bodies differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in list(old) + [k for k in new if k not in old]:
            out += _differences(old.get(key), new.get(key), f"{path}.{key}")
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for i, (a, b) in enumerate(zip(old, new)) for d in _differences(a, b, f"{path}[{i}]")]
    return [] if old == new else [path]


def _refuse_conflict(conflict: type[AlreadyExists], what: str, name: str, request: dict[str, Any], private: dict[str, Any],
                     stored: dict[str, Any], stored_private: dict[str, Any], hint: str) -> None:
    """Refuse a PUT that would change an existing resource in a way the service cannot; the message
    names the differing properties (never secret values)."""
    diffs = _differences(stored, request)
    secret_diffs = sorted(k for k in set(private) | set(stored_private) if private.get(k) != stored_private.get(k))
    diffs += [f"(secret) {k}" for k in secret_diffs]
    if diffs:
        shown = ", ".join(diffs[:8]) + (f" and {len(diffs) - 8} more" if len(diffs) > 8 else "")
        raise conflict(f"A {what} named '{name}' already exists with different settings ({shown}). {hint}")


def _job_request_view(properties: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in properties.items() if k not in _JOB_SERVER_KEYS}


def _login_entries(resource_id: str, count: int) -> list[dict[str, Any]]:
    tag = hashlib.sha256(resource_key(resource_id).encode()).hexdigest()[:10]
    return [{"nodeId": f"tvm-{tag}_{i + 1}-local", "ipAddress": "127.0.0.1", "port": _LOGIN_BASE_PORT + i}
            for i in range(count)]


class BatchAIProvider:
    """Microsoft.BatchAI on one service's state: ``context.provider(BatchAIProvider)``."""

    def __init__(self, context: ServiceContext) -> None:
        self.context = context
        self.store = context.store
        #: whatever runs jobs; the service sets the runner's scheduler when it starts.
        self.scheduler: JobScheduler = NoScheduler()

    # -- long-running operations ----------------------------------------------------------------

    def run_operation(self, slot: Slot[Any, Any], kind: str, work: Callable[[], Any], *,
                      resource_id: Optional[str] = None) -> LongRunningOperation:
        """Start an operation on the resource at ``slot`` (or ``resource_id``: the stored id, where it
        differs in case), do ``work()`` (the whole change), finish it. ``work`` returning False leaves
        it running (a completion check finishes it); a failure inside fails it and is raised."""
        op = start_operation(self.context, location=slot.region, resource_id=resource_id or slot.id, kind=kind)
        try:
            done = work()
        except ArmError as err:
            finish_operation(self.context, op.id, error={"code": err.code, "message": err.message})
            raise
        except Exception:
            finish_operation(self.context, op.id, error=dict(_FAILED_INTERNALLY))
            raise
        if done is not False:
            op = finish_operation(self.context, op.id)
        return op

    def finish_interrupted_operations(self) -> None:
        """Settle the operations a killed service left ``InProgress`` (called at start-up, once the
        scheduler has taken back its jobs, before any request): every piece of work an operation
        does is idempotent, so a delete is carried out to its end and a create succeeds if its
        resource was stored; a create whose resource was not stored fails, saying to send the
        request again. An operation with a completion check (a terminate) ends when its check says
        so, as always."""
        for op in operations.unfinished_operations(self.context):
            if operations.has_completion_check(op.kind):
                operations.refresh_operation(self.context, op)
                continue
            error: Optional[dict[str, Any]] = None
            try:
                if op.kind.endswith("/delete"):
                    self._finish_delete(op.kind, op.resource_id)
                elif op.kind.endswith("/create"):
                    doc = self.store.get(op.resource_id)
                    if doc is None:
                        error = {"code": "OperationInterrupted",
                                 "message": "The local service stopped before the operation finished and nothing "
                                            "was created; send the request again."}
                    elif doc["properties"].get("provisioningState") == "creating":
                        self._finish_file_server(op.resource_id)
                else:
                    error = {"code": "OperationInterrupted",
                             "message": "The local service stopped before the operation finished."}
            except Exception:  # a bug of ours: the operation fails rather than stays InProgress
                log.exception("finishing the interrupted operation %s (%s) failed", op.id, op.kind)
                error = dict(_FAILED_INTERNALLY)
            finish_operation(self.context, op.id, error=error)

    def _finish_delete(self, kind: str, resource_id: str) -> None:
        """What a delete of ``kind`` does once it has been accepted; doing it again, or for a resource
        already gone, is harmless."""
        if kind == "workspaces/delete":
            self.delete_workspace_tree(resource_id)
        elif kind == "experiments/delete":
            for job in self.store.list(JOB_TYPE, parent=resource_id):
                self._stop_job(job["id"])
            self.store.delete(resource_id, recursive=True)
        elif kind == "clusters/delete":
            def deleting(body: dict[str, Any]) -> None:
                body["properties"]["provisioningState"] = "deleting"
                body["properties"]["provisioningStateTransitionTime"] = utc_now()
            self.store.update(resource_id, deleting)
            self.scheduler.forget_cluster(resource_id)
            self.store.delete(resource_id)
        elif kind == "jobs/delete":
            self.scheduler.forget_job(resource_id)
            self.store.delete(resource_id, recursive=True)
        elif kind == "fileservers/delete":
            shutil.rmtree(self.context.fileserver_dir(resource_id), ignore_errors=True)
            self.store.delete(resource_id)
        else:
            raise ValueError(f"unknown delete operation {kind!r}")

    # -- lookups --------------------------------------------------------------------------------
    # Each runs the checks every request scoped to it makes first (subscription id, names, resource
    # group), then reads the store once.

    def workspace_slot(self, sub: str, rg: str, ws: str, *, for_write: bool = False) -> Slot[ResourceGroup, Workspace]:
        check_subscription_id(sub)
        check_name(ws, Workspace.what, "workspaceName")
        group = require_resource_group(self.context, sub, rg, for_write=for_write)
        ws_id = workspace_id(sub, rg, ws)
        doc = self.store.get(ws_id)
        existing = None if doc is None else Workspace(doc)
        return Slot(kind=Workspace, parent=group, id=ws_id, name=ws, existing=existing, scope=Scope(sub, rg, ws),
                    region=existing.location if existing else self.context.settings.location)

    def workspace(self, sub: str, rg: str, ws: str, *, for_write: bool = False) -> Workspace:
        return self.workspace_slot(sub, rg, ws, for_write=for_write).require()

    def _child(self, kind: type[R], within: Slot[Any, P], segment: str, name: str, param: str) -> Slot[P, R]:
        parent = within.require()
        check_name(name, kind.what, param)
        resource_id = f"{parent.id}/{segment}/{name}"
        doc = self.store.get(resource_id)
        return Slot(kind=kind, parent=parent, id=resource_id, name=name,
                    existing=None if doc is None else kind(doc), scope=within.scope, region=within.region)

    def experiment_slot(self, sub: str, rg: str, ws: str, exp: str, *,
                        for_write: bool = False) -> Slot[Workspace, Experiment]:
        workspace = self.workspace_slot(sub, rg, ws, for_write=for_write)
        return self._child(Experiment, workspace, "experiments", exp, "experimentName")

    def experiment(self, sub: str, rg: str, ws: str, exp: str, *, for_write: bool = False) -> Experiment:
        return self.experiment_slot(sub, rg, ws, exp, for_write=for_write).require()

    def cluster_slot(self, sub: str, rg: str, ws: str, name: str, *,
                     for_write: bool = False) -> Slot[Workspace, Cluster]:
        workspace = self.workspace_slot(sub, rg, ws, for_write=for_write)
        return self._child(Cluster, workspace, "clusters", name, "clusterName")

    def cluster(self, sub: str, rg: str, ws: str, name: str, *, for_write: bool = False) -> Cluster:
        return self.cluster_slot(sub, rg, ws, name, for_write=for_write).require()

    def job_slot(self, sub: str, rg: str, ws: str, exp: str, name: str, *,
                 for_write: bool = False) -> Slot[Experiment, Job]:
        experiment = self.experiment_slot(sub, rg, ws, exp, for_write=for_write)
        return self._child(Job, experiment, "jobs", name, "jobName")

    def job(self, sub: str, rg: str, ws: str, exp: str, name: str, *, for_write: bool = False) -> Job:
        return self.job_slot(sub, rg, ws, exp, name, for_write=for_write).require()

    def file_server_slot(self, sub: str, rg: str, ws: str, name: str, *,
                         for_write: bool = False) -> Slot[Workspace, FileServer]:
        workspace = self.workspace_slot(sub, rg, ws, for_write=for_write)
        return self._child(FileServer, workspace, "fileServers", name, "fileServerName")

    def file_server(self, sub: str, rg: str, ws: str, name: str, *, for_write: bool = False) -> FileServer:
        return self.file_server_slot(sub, rg, ws, name, for_write=for_write).require()

    def children(self, kind: type[R], resource_type: str, parent: Resource) -> list[R]:
        return [kind(doc) for doc in self.store.list(resource_type, parent=parent.id)]

    def workspaces_of_subscription(self, sub: str) -> list[Workspace]:
        check_subscription_id(sub)
        prefix = f"/subscriptions/{sub.lower()}/"
        return [Workspace(w) for w in self.store.list(WORKSPACE_TYPE) if resource_key(w["id"]).startswith(prefix)]

    def workspaces_of_group(self, sub: str, rg: str) -> list[Workspace]:
        check_subscription_id(sub)
        group = require_resource_group(self.context, sub, rg)
        return [Workspace(w) for w in self.store.list(WORKSPACE_TYPE, parent=group.id)]

    # -- usages ---------------------------------------------------------------------------------

    def _workspace_location(self, resource_id: str) -> str:
        """The region of the workspace a resource lives in."""
        parts = resource_id.strip("/").split("/")
        doc = self.store.get("/" + "/".join(parts[:8]))
        return doc["location"] if doc else self.context.settings.location

    def usages(self, sub: str, location: str) -> list[dict[str, Any]]:
        """Usage of the region: clusters, and allocated vCPUs per quota family and priority."""
        check_subscription_id(sub)
        region = location.replace(" ", "").lower()
        clusters = [c for c in self.store.list(CLUSTER_TYPE)
                    if resource_key(c["id"]).startswith(f"/subscriptions/{sub.lower()}/")
                    and self._workspace_location(c["id"]).replace(" ", "").lower() == region]
        families = sorted({size.family for size in VM_SIZES.values() if not size.premium_storage})
        cores: dict[tuple[str, str], int] = {}
        for cluster in clusters:
            props = cluster["properties"]
            size = lookup_vm_size(props.get("vmSize", ""))
            if size is None:
                continue
            key = (size.family, props.get("vmPriority", "dedicated"))
            cores[key] = cores.get(key, 0) + size.vcpus * int(props.get("currentNodeCount", 0))

        def usage(name: str, current: int, limit: int, localized: Optional[str] = None) -> dict[str, Any]:
            return {"unit": "Count", "currentValue": current, "limit": limit,
                    "name": {"value": name, "localizedValue": localized or name}}

        values = [usage("Clusters", len(clusters), _CLUSTER_QUOTA),
                  usage("Total Cluster Dedicated Regional vCPUs",
                        sum(n for (_, p), n in cores.items() if p == "dedicated"), _DEDICATED_CORES_QUOTA)]
        values += [usage(f"{family} Cluster Dedicated vCPUs", cores.get((family, "dedicated"), 0),
                         _DEDICATED_CORES_QUOTA) for family in families]
        values.append(usage("Total Cluster LowPriority Regional vCPUs",
                            sum(n for (_, p), n in cores.items() if p == "lowpriority"), _LOW_PRIORITY_CORES_QUOTA,
                            "Total Cluster Low Priority Regional vCPUs"))
        values += [usage(f"{family} Cluster LowPriority vCPUs", cores.get((family, "lowpriority"), 0),
                         _LOW_PRIORITY_CORES_QUOTA, f"{family} Cluster Low Priority vCPUs") for family in families]
        return values

    # -- workspaces -----------------------------------------------------------------------------

    def put_workspace(self, slot: Slot[ResourceGroup, Workspace], request: dict[str, Any]) -> Workspace:
        try:
            location = normalize_location(request["location"], self.context, field="location")
        except ArmError as err:
            raise InvalidLocation(err.message, target="location") from None
        existing = slot.existing
        if existing is not None:
            if existing.location != location:
                raise InvalidResourceLocation(
                    f"The workspace '{existing.name}' already exists in location "
                    f"'{existing.location}'; it cannot be moved to '{location}'. Delete it first or "
                    "keep its location.")
            return self._retag(existing, request.get("tags"))
        now = utc_now()
        doc: dict[str, Any] = {"id": slot.id, "name": slot.name, "type": WORKSPACE_TYPE, "location": location}
        if request.get("tags"):
            doc["tags"] = request["tags"]
        doc["properties"] = {"provisioningState": "succeeded", "provisioningStateTransitionTime": now,
                             "creationTime": now}
        self.store.put(slot.id, WORKSPACE_TYPE, slot.parent.id, doc)
        return Workspace(doc)

    def _retag(self, workspace: Workspace, tags: Optional[dict[str, str]]) -> Workspace:
        def retag(body: dict[str, Any]) -> None:
            body.pop("tags", None)
            if tags:
                body["tags"] = tags
            body["properties"] = body.pop("properties")  # keep properties last, as the service did
        updated = self.store.update(workspace.id, retag)
        return workspace if updated is None else Workspace(updated)

    def patch_workspace(self, workspace: Workspace, request: dict[str, Any]) -> Workspace:
        if "tags" not in request:
            return workspace
        return self._retag(workspace, request["tags"] or {})

    def delete_workspace(self, slot: Slot[ResourceGroup, Workspace]) -> Optional[LongRunningOperation]:
        """None when there is no such workspace."""
        if slot.existing is None:
            return None
        return self.run_operation(slot, "workspaces/delete", lambda: self.delete_workspace_tree(slot.id))

    def delete_workspace_tree(self, ws_id: str) -> None:
        """Delete a workspace and everything in it: stop and forget its jobs, free its clusters' nodes,
        remove its file servers' data, then drop the documents."""
        for job in self.store.list_under(ws_id, JOB_TYPE):
            self._stop_job(job["id"])
        for cluster in self.store.list_under(ws_id, CLUSTER_TYPE):
            self.scheduler.forget_cluster(cluster["id"])
        for server in self.store.list_under(ws_id, FILE_SERVER_TYPE):
            shutil.rmtree(self.context.fileserver_dir(server["id"]), ignore_errors=True)
        self.store.delete(ws_id, recursive=True)

    def delete_group_resources(self, group_id: str) -> None:
        """Every workspace of a resource group, with everything in it (resource group deletion)."""
        for workspace in self.store.list_under(group_id, WORKSPACE_TYPE):
            self.delete_workspace_tree(workspace["id"])

    def _stop_job(self, job_id: str) -> None:
        # Read again: the job may have ended since the delete began.
        if not self._job_ended(job_id):
            self.scheduler.terminate_job(job_id)
        self.scheduler.forget_job(job_id)

    # -- experiments ----------------------------------------------------------------------------

    def put_experiment(self, slot: Slot[Workspace, Experiment]) -> Experiment:
        if slot.existing is not None:
            return slot.existing
        now = utc_now()
        doc = {"id": slot.id, "name": slot.name, "type": EXPERIMENT_TYPE,
               "properties": {"provisioningState": "succeeded", "provisioningStateTransitionTime": now,
                              "creationTime": now}}
        self.store.put(slot.id, EXPERIMENT_TYPE, slot.parent.id, doc)
        return Experiment(doc)

    def delete_experiment(self, slot: Slot[Workspace, Experiment]) -> Optional[LongRunningOperation]:
        return self._delete(slot, "experiments/delete")

    def _delete(self, slot: Slot[Any, Any], kind: str) -> Optional[LongRunningOperation]:
        """A delete's operation, or None when there is nothing to delete."""
        if slot.existing is None:
            return None
        resource_id = slot.existing.id
        return self.run_operation(slot, kind, lambda: self._finish_delete(kind, resource_id), resource_id=resource_id)

    # -- clusters -------------------------------------------------------------------------------

    def put_cluster(self, slot: Slot[Workspace, Cluster], parsed: Parsed) -> LongRunningOperation:
        existing = slot.existing
        if existing is not None:
            stored = {k: existing.properties[k] for k in _CLUSTER_REQUEST_KEYS if k in existing.properties}
            # scaleSettings change through PATCH, so a retried create need not repeat the current size.
            request = {k: parsed.properties[k] for k in _CLUSTER_REQUEST_KEYS if k in parsed.properties}
            request["scaleSettings"] = stored.get("scaleSettings")
            _refuse_conflict(ClusterAlreadyExists, "cluster", existing.name, request, parsed.private, stored,
                             self.store.get_private(slot.id),
                             "A cluster's settings cannot change after creation (only scaleSettings, through "
                             "PATCH); delete the cluster first or create one with another name.")
            return self.run_operation(slot, "clusters/create", lambda: None)

        def work() -> None:
            now = utc_now()
            props: dict[str, Any] = {
                "provisioningState": "succeeded", "allocationState": AllocationState.RESIZING.value,
                "creationTime": now, "allocationStateTransitionTime": now, "provisioningStateTransitionTime": now,
                "vmSize": parsed.properties["vmSize"], "currentNodeCount": 0, "nodeStateCounts": node_state_counts(),
            }
            props.update({k: parsed.properties[k] for k in _CLUSTER_REQUEST_KEYS[1:] if k in parsed.properties})
            doc = {"id": slot.id, "name": slot.name, "type": CLUSTER_TYPE, "properties": props}
            self.store.put(slot.id, CLUSTER_TYPE, slot.parent.id, doc, private=parsed.private)
            self.scheduler.notify()
        return self.run_operation(slot, "clusters/create", work)

    def scale_cluster(self, cluster: Cluster, scale: dict[str, Any]) -> Cluster:
        """New scale settings. The answer shows the cluster as it is until the scheduler starts
        resizing it, as the recorded service answered (a PATCH of a steady cluster answered steady)."""
        def change(body: dict[str, Any]) -> None:
            body["properties"]["scaleSettings"] = scale
        updated = self.store.update(cluster.id, change)
        if updated is None:
            raise ClusterNotFound.named(Cluster.what, cluster.name)
        self.scheduler.notify()
        return Cluster(updated)

    def delete_cluster(self, slot: Slot[Workspace, Cluster]) -> Optional[LongRunningOperation]:
        cluster = slot.existing
        if cluster is not None:
            running = self.scheduler.running_jobs(cluster.id)
            if running:
                names = ", ".join(job.rstrip("/").rsplit("/", 1)[-1] for job in running)
                raise ClusterInUse(
                    f"The cluster '{cluster.name}' cannot be deleted while jobs run on it ({names}); "
                    "terminate or delete those jobs first.")
        return self._delete(slot, "clusters/delete")

    def cluster_logins(self, cluster: Cluster) -> list[dict[str, Any]]:
        """One entry per node the cluster has or is getting (nodes being added are not counted while it
        resizes). Local nodes have no SSH daemon: the node ids and ports are stable placeholders
        (port 50000 + node index) so that clients listing them work."""
        props = cluster.properties
        scale = props.get("scaleSettings") or {}
        wanted = (scale.get("manual") or {}).get("targetNodeCount") \
            or (scale.get("autoScale") or {}).get("minimumNodeCount") or 0
        return _login_entries(cluster.id, max(int(props.get("currentNodeCount", 0)), int(wanted)))

    # -- jobs -----------------------------------------------------------------------------------

    def _resolve_cluster(self, cluster_ref: str, subscription: str) -> Cluster:
        parts = cluster_ref.strip("/").split("/")
        shaped = len(parts) == len(_CLUSTER_ID_SHAPE) and all(
            want is None or part.lower() == want for part, want in zip(parts, _CLUSTER_ID_SHAPE))
        if not shaped:
            raise InvalidParameter(
                "The property 'properties.cluster.id' must be a cluster resource id, /subscriptions/{sub}/"
                "resourceGroups/{group}/providers/Microsoft.BatchAI/workspaces/{workspace}/clusters/"
                f"{{cluster}}; got {cluster_ref[:300]!r}.", target="properties.cluster.id")
        if parts[1].lower() != subscription.lower():
            raise InvalidParameter(
                "The property 'properties.cluster.id' must name a cluster in the job's subscription "
                f"({subscription}).", target="properties.cluster.id")
        doc = self.store.get(cluster_ref)
        if doc is None:
            raise ClusterNotFound.named(Cluster.what, parts[-1], target="properties.cluster.id")
        cluster = Cluster(doc)
        if cluster.provisioning_state != "succeeded":
            raise ClusterNotReady(
                f"The cluster '{cluster.name}' is {cluster.provisioning_state}; jobs can "
                "be submitted only to clusters whose provisioningState is succeeded.")
        return cluster

    def check_job_cluster(self, properties: dict[str, Any], subscription: str) -> None:
        """What a job PUT checks of its cluster (it exists, is ready, has room for ``nodeCount``), for a
        job to be submitted later (a sweep's trials)."""
        cluster = self._resolve_cluster(properties["cluster"]["id"], subscription)
        check_job_node_count(properties["nodeCount"], cluster.name, cluster.properties)

    def put_job(self, slot: Slot[Experiment, Job], parsed: Parsed) -> LongRunningOperation:
        props = parsed.properties
        existing = slot.existing
        if existing is not None:
            _refuse_conflict(JobAlreadyExists, "job", existing.name, _job_request_view(props), parsed.private,
                             _job_request_view(existing.properties), self.store.get_private(slot.id),
                             "A job cannot be changed once created; delete it first or submit it under another name.")
            return self.run_operation(slot, "jobs/create", lambda: None)
        cluster = self._resolve_cluster(props["cluster"]["id"], slot.scope.subscription)
        check_job_node_count(props["nodeCount"], cluster.name, cluster.properties)

        def work() -> None:
            doc = {"id": slot.id, "name": slot.name, "type": JOB_TYPE,
                   "properties": self._new_job_properties(slot, props)}
            self.store.put(slot.id, JOB_TYPE, slot.parent.id, doc, private=parsed.private)
            self.scheduler.notify()
        return self.run_operation(slot, "jobs/create", work)

    @staticmethod
    def _new_job_properties(slot: Slot[Experiment, Job], props: dict[str, Any]) -> dict[str, Any]:
        """A new job's properties in the order the service answered them, with what it set itself."""
        now = utc_now()
        experiment = slot.parent
        scope = slot.scope
        segment = (f"{scope.subscription}/{scope.resource_group}/workspaces/{scope.workspace}/experiments/"
                   f"{experiment.name}/jobs/{slot.name}/{uuid.uuid4()}")
        body: dict[str, Any] = {"experimentName": experiment.name}
        body.update({k: props[k] for k in _JOB_LEAD})
        body["jobOutputDirectoryPathSegment"] = segment
        for key, value in props.items():
            if key in _JOB_LEAD or key in ("toolType", "constraints"):
                continue
            if key in TOOLKITS:
                body["toolType"] = props["toolType"]  # the service put it just before the toolkit's settings
            body[key] = value
        body["constraints"] = props["constraints"]
        body.update({"creationTime": now, "provisioningState": "succeeded", "provisioningStateTransitionTime": now,
                     "executionState": ExecutionState.QUEUED.value, "executionStateTransitionTime": now})
        return body

    def delete_job(self, slot: Slot[Experiment, Job]) -> Optional[LongRunningOperation]:
        return self._delete(slot, "jobs/delete")

    def _job_ended(self, job_id: str) -> bool:
        """Whether the job, read now, has ended (or is gone)."""
        doc = self.store.get(job_id)
        return doc is None or Job(doc).ended

    def terminate_job(self, slot: Slot[Experiment, Job]) -> LongRunningOperation:
        job = slot.require()

        def work() -> bool:
            if not job.ended:
                self.scheduler.terminate_job(job.id)
            # Finished now if the job has ended; otherwise each poll checks again (_terminate_done).
            return self._job_ended(job.id)
        return self.run_operation(slot, "jobs/terminate", work, resource_id=job.id)

    def job_logins(self, job: Job) -> list[dict[str, Any]]:
        """The nodes a job ran on: one entry per node once it has started (placeholders)."""
        return _login_entries(job.cluster_id, int(job.properties.get("nodeCount", 0)) if job.started else 0)

    # -- file servers ---------------------------------------------------------------------------

    def put_file_server(self, slot: Slot[Workspace, FileServer], parsed: Parsed) -> LongRunningOperation:
        existing = slot.existing
        if existing is not None:
            stored = {k: existing.properties[k] for k in _FILE_SERVER_REQUEST_KEYS if k in existing.properties}
            request = {k: parsed.properties[k] for k in _FILE_SERVER_REQUEST_KEYS if k in parsed.properties}
            _refuse_conflict(FileServerAlreadyExists, "file server", existing.name, request, parsed.private,
                             stored, self.store.get_private(slot.id),
                             "Delete the file server first or create one with another name.")
            return self.run_operation(slot, "fileservers/create", lambda: None)

        def work() -> None:
            now = utc_now()
            props: dict[str, Any] = {"provisioningState": "creating", "creationTime": now,
                                     "provisioningStateTransitionTime": now}
            props.update({k: parsed.properties[k] for k in _FILE_SERVER_REQUEST_KEYS if k in parsed.properties})
            doc = {"id": slot.id, "name": slot.name, "type": FILE_SERVER_TYPE, "properties": props}
            self.store.put(slot.id, FILE_SERVER_TYPE, slot.parent.id, doc, private=parsed.private)
            self._finish_file_server(slot.id)
        return self.run_operation(slot, "fileservers/create", work)

    def _finish_file_server(self, fs_id: str) -> None:
        """A local file server is a directory; its "export" is ready once the directory exists."""
        self.context.fileserver_dir(fs_id).mkdir(parents=True, exist_ok=True)

        def ready(body: dict[str, Any]) -> None:
            body["properties"]["provisioningState"] = "succeeded"
            body["properties"]["provisioningStateTransitionTime"] = utc_now()
            body["properties"]["mountSettings"] = {"mountPoint": "/mnt/data", "fileServerPublicIP": "127.0.0.1",
                                                   "fileServerInternalIP": "127.0.0.1"}
        self.store.update(fs_id, ready)

    def delete_file_server(self, slot: Slot[Workspace, FileServer]) -> Optional[LongRunningOperation]:
        return self._delete(slot, "fileservers/delete")


def _terminate_done(context: ServiceContext,
                    op: LongRunningOperation) -> Optional[tuple[str, Optional[dict[str, Any]]]]:
    """A terminate operation ends when its job has reached a terminal state (or is gone)."""
    return ("Succeeded", None) if context.provider(BatchAIProvider)._job_ended(op.resource_id) else None


operations.register_completion_check("jobs/terminate", _terminate_done)
