"""Microsoft.BatchAI 2018-05-01: the route table and its handlers.

Every operation that ``azure.mgmt.batchai.BatchAI`` 7.0.0 exposes — operations list, usages,
workspaces, experiments, clusters, jobs, file servers — answered in the shapes the 2018 service
used (see ``shared/reference/recordings``): lower-case ``provisioningState``, ``type`` strings like
``Microsoft.BatchAI/workspaces/experiments/jobs``, secrets never echoed (``"credentials": {}``).
Workspace and experiment PUT answer 200 directly; cluster, job and file server PUT, every DELETE
and job terminate answer 202 and a long-running operation (operations.py).

Handlers parse (batchai_validation.py), act on the store, and hand execution to the job scheduler
through the agreed interface (``notify``, ``terminate_job``, ``forget_job``, ``forget_cluster``,
``running_jobs``); the scheduler alone moves ``executionState`` and ``allocationState`` afterwards.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import uuid
from typing import TYPE_CHECKING, Any, Optional

from werkzeug.wrappers import Response

from . import operations
from .batchai_validation import (TOOLKITS, Parsed, check_int_query, check_job_node_count, check_name, parse_cluster_create,
                                 parse_cluster_update, parse_file_server_create, parse_job_create,
                                 parse_workspace_create, parse_workspace_update)
from .errors import ArmError
from .operations import API_VERSION, accepted_response, finish_operation, iso_time, start_operation
from .resources_api import check_subscription_id, normalize_location, require_resource_group
from .routing import Call, Route, json_response
from .store import resource_key
from .vm_sizes import VM_SIZES, lookup_vm_size

if TYPE_CHECKING:
    from .backend import LocalBackend

__all__ = ["ROUTES", "delete_workspace_tree", "WORKSPACE_TYPE", "EXPERIMENT_TYPE", "CLUSTER_TYPE", "JOB_TYPE",
           "FILE_SERVER_TYPE"]

WORKSPACE_TYPE = "Microsoft.BatchAI/workspaces"
EXPERIMENT_TYPE = "Microsoft.BatchAI/workspaces/experiments"
CLUSTER_TYPE = "Microsoft.BatchAI/workspaces/clusters"
JOB_TYPE = "Microsoft.BatchAI/workspaces/experiments/jobs"
FILE_SERVER_TYPE = "Microsoft.BatchAI/workspaces/fileservers"

_TERMINAL = ("succeeded", "failed")
#: first port that listRemoteLoginInformation reports; local nodes have no SSH daemon.
_LOGIN_BASE_PORT = 50000


# -- ids, lookups and small helpers ----------------------------------------------------------------

def _ws_id(sub: str, rg: str, ws: str) -> str:
    return f"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.BatchAI/workspaces/{ws}"


def _etag(doc: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:15].upper()
    return f'"0x{digest}"'


def _answer(doc: dict[str, Any], status: int = 200) -> Response:
    return json_response(doc, status=status, headers={"ETag": _etag(doc)})


def _workspace(call: Call, sub: str, rg: str, ws: str, *, for_write: bool = False) -> dict[str, Any]:
    """The workspace document, after the checks every workspace-scoped request makes first."""
    check_subscription_id(sub)
    check_name(ws, "workspace", "workspaceName")
    require_resource_group(call.backend, sub, rg, for_write=for_write)
    doc = call.backend.store.get(_ws_id(sub, rg, ws))
    if doc is None:
        raise ArmError(404, "WorkspaceNotFound", f"The specified workspace {ws} is not found")
    return doc


def _child(call: Call, parent_id: str, segment: str, name: str, *, what: str, param: str, code: str,
           must_exist: bool = True) -> tuple[str, Optional[dict[str, Any]]]:
    check_name(name, what, param)
    resource_id = f"{parent_id}/{segment}/{name}"
    doc = call.backend.store.get(resource_id)
    if doc is None and must_exist:
        raise ArmError(404, code, f"The specified {what} {name} is not found")
    return resource_id, doc


def _experiment(call: Call, sub: str, rg: str, ws: str, exp: str, *, for_write: bool = False) -> dict[str, Any]:
    workspace = _workspace(call, sub, rg, ws, for_write=for_write)
    _, doc = _child(call, workspace["id"], "experiments", exp, what="experiment", param="experimentName",
                    code="ExperimentNotFound")
    assert doc is not None
    return doc


def _schedule(backend: "LocalBackend", method: str, *args: Any) -> Any:
    """Call the job scheduler (seam 4), when the backend has one (a backend used without a server
    has none, and then there is nothing running to tell)."""
    if backend.scheduler is None:
        return None
    return getattr(backend.scheduler, method)(*args)


def _notify(backend: "LocalBackend") -> None:
    _schedule(backend, "notify")


def _workspace_location(backend: "LocalBackend", resource_id: str) -> str:
    """The region of the workspace a resource lives in (operation URLs name it)."""
    parts = resource_id.strip("/").split("/")
    ws_id = "/" + "/".join(parts[:8])
    doc = backend.store.get(ws_id)
    return doc["location"] if doc else backend.settings.location


def _page(call: Call, items: list[dict[str, Any]]) -> Response:
    """A list answer of at most ``maxresults`` items, with ``nextLink`` when more remain."""
    limit = check_int_query(call.request.args.get("maxresults"), "maxresults", minimum=1, maximum=1000, default=1000)
    skip = check_int_query(call.request.args.get("$skiptoken"), "$skiptoken", minimum=0, maximum=2**31, default=0)
    body: dict[str, Any] = {"value": items[skip:skip + limit]}
    if skip + limit < len(items):
        query = {k: v for k, v in call.request.args.items() if k != "$skiptoken"}
        query["$skiptoken"] = str(skip + limit)
        body["nextLink"] = call.url(call.request.path, **query)
    return json_response(body)


def _run_operation(call: Call, resource_id: str, kind: str, work: Any) -> Response:
    """Start an operation, do ``work()`` (which does the whole change), finish it, answer 202.
    A failure inside ``work`` fails the operation and is answered as an error."""
    op = start_operation(call.backend, location=_workspace_location(call.backend, resource_id),
                         resource_id=resource_id, kind=kind)
    try:
        done = work()
    except ArmError as err:
        finish_operation(call.backend, op.id, error={"code": err.code, "message": err.message})
        raise
    except Exception:
        finish_operation(call.backend, op.id, error={"code": "InternalServerError",
                                                     "message": "The local service failed to complete the operation."})
        raise
    if done is not False:
        finish_operation(call.backend, op.id)
    return accepted_response(call, op)


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


def _conflict(code: str, what: str, name: str, request: dict[str, Any], private: dict[str, Any],
              stored: dict[str, Any], stored_private: dict[str, Any], hint: str) -> None:
    """Refuse a PUT that would change an existing resource in a way the service cannot; the message
    names the differing properties (never secret values)."""
    diffs = _differences(stored, request)
    secret_diffs = sorted(k for k in set(private) | set(stored_private) if private.get(k) != stored_private.get(k))
    diffs += [f"(secret) {k}" for k in secret_diffs]
    if diffs:
        shown = ", ".join(diffs[:8]) + (f" and {len(diffs) - 8} more" if len(diffs) > 8 else "")
        raise ArmError(409, code, f"A {what} named '{name}' already exists with different settings ({shown}). "
                                  f"{hint}")


# -- operations list and usages -------------------------------------------------------------------

def _operation_entries() -> list[dict[str, Any]]:
    rows = [
        ("workspaces", "Batch AI Workspaces", ["read", "write", "delete"]),
        ("workspaces/experiments", "Batch AI Experiments", ["read", "write", "delete"]),
        ("workspaces/experiments/jobs", "Batch AI Jobs",
         ["read", "write", "delete", "terminate/action", "listoutputfiles/action", "listremotelogininformation/action"]),
        ("workspaces/clusters", "Batch AI Clusters", ["read", "write", "delete", "listremotelogininformation/action"]),
        ("workspaces/fileservers", "Batch AI File Servers", ["read", "write", "delete"]),
        ("locations/usages", "Batch AI Usages", ["read"]),
        ("locations/operationresults", "Batch AI Operation Results", ["read"]),
        ("locations/operationstatuses", "Batch AI Operation Statuses", ["read"]),
        ("operations", "Batch AI Operations", ["read"]),
    ]
    out = []
    for resource, title, verbs in rows:
        for verb in verbs:
            action = verb.replace("/action", "")
            out.append({"name": f"Microsoft.BatchAI/{resource}/{verb}",
                        "display": {"provider": "Microsoft Batch AI", "resource": title,
                                    "operation": f"{action.capitalize()} {title}",
                                    "description": f"{action.capitalize()} {title.lower()}"},
                        "origin": "user,system"})
    return out


def list_operations(call: Call) -> Response:
    return _page(call, _operation_entries())


#: quotas the local service reports; like Azure's defaults, they are advisory here.
_CLUSTER_QUOTA = 20
_DEDICATED_CORES_QUOTA = 600
_LOW_PRIORITY_CORES_QUOTA = 150


def list_usages(call: Call, subscriptionId: str, location: str) -> Response:
    """Usage of the region: clusters, and allocated vCPUs per quota family and priority."""
    check_subscription_id(subscriptionId)
    region = location.replace(" ", "").lower()
    store = call.backend.store
    clusters = [c for c in store.list("microsoft.batchai/workspaces/clusters")
                if resource_key(c["id"]).startswith(f"/subscriptions/{subscriptionId.lower()}/")
                and _workspace_location(call.backend, c["id"]).replace(" ", "").lower() == region]
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
    values += [usage(f"{family} Cluster Dedicated vCPUs", cores.get((family, "dedicated"), 0), _DEDICATED_CORES_QUOTA)
               for family in families]
    values.append(usage("Total Cluster LowPriority Regional vCPUs",
                        sum(n for (_, p), n in cores.items() if p == "lowpriority"), _LOW_PRIORITY_CORES_QUOTA,
                        "Total Cluster Low Priority Regional vCPUs"))
    values += [usage(f"{family} Cluster LowPriority vCPUs", cores.get((family, "lowpriority"), 0),
                     _LOW_PRIORITY_CORES_QUOTA, f"{family} Cluster Low Priority vCPUs") for family in families]
    return _page(call, values)


# -- workspaces -----------------------------------------------------------------------------------

def list_workspaces(call: Call, subscriptionId: str) -> Response:
    check_subscription_id(subscriptionId)
    prefix = f"/subscriptions/{subscriptionId.lower()}/"
    items = [w for w in call.backend.store.list("microsoft.batchai/workspaces")
             if resource_key(w["id"]).startswith(prefix)]
    return _page(call, items)


def list_workspaces_by_group(call: Call, subscriptionId: str, resourceGroupName: str) -> Response:
    check_subscription_id(subscriptionId)
    group = require_resource_group(call.backend, subscriptionId, resourceGroupName)
    return _page(call, call.backend.store.list("microsoft.batchai/workspaces", parent=group["id"]))


def get_workspace(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str) -> Response:
    return _answer(_workspace(call, subscriptionId, resourceGroupName, workspaceName))


def put_workspace(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str) -> Response:
    check_subscription_id(subscriptionId)
    check_name(workspaceName, "workspace", "workspaceName")
    group = require_resource_group(call.backend, subscriptionId, resourceGroupName, for_write=True)
    request = parse_workspace_create(call.json())
    try:
        location = normalize_location(request["location"], call.backend, field="location")
    except ArmError as err:
        raise ArmError(400, "InvalidLocation", err.message, target="location") from None
    ws_id = _ws_id(subscriptionId, resourceGroupName, workspaceName)
    store = call.backend.store
    existing = store.get(ws_id)
    if existing is not None:
        if existing["location"] != location:
            raise ArmError(409, "InvalidResourceLocation",
                           f"The workspace '{existing['name']}' already exists in location '{existing['location']}'; "
                           f"it cannot be moved to '{location}'. Delete it first or keep its location.")

        def retag(body: dict[str, Any]) -> None:
            body.pop("tags", None)
            if request.get("tags"):
                body["tags"] = request["tags"]
                body["properties"] = body.pop("properties")  # keep properties last, as the service did
        return _answer(store.update(ws_id, retag) or existing)
    now = iso_time()
    doc: dict[str, Any] = {"id": ws_id, "name": workspaceName, "type": WORKSPACE_TYPE, "location": location}
    if request.get("tags"):
        doc["tags"] = request["tags"]
    doc["properties"] = {"provisioningState": "succeeded", "provisioningStateTransitionTime": now,
                         "creationTime": now}
    store.put(ws_id, "microsoft.batchai/workspaces", group["id"], doc)
    return _answer(doc)


def patch_workspace(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str) -> Response:
    workspace = _workspace(call, subscriptionId, resourceGroupName, workspaceName, for_write=True)
    request = parse_workspace_update(call.json())
    if "tags" not in request:
        return _answer(workspace)

    def retag(body: dict[str, Any]) -> None:
        body.pop("tags", None)
        body["tags"] = request["tags"]
        body["properties"] = body.pop("properties")
    return _answer(call.backend.store.update(workspace["id"], retag) or workspace)


def delete_workspace(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str) -> Response:
    check_subscription_id(subscriptionId)
    check_name(workspaceName, "workspace", "workspaceName")
    require_resource_group(call.backend, subscriptionId, resourceGroupName)
    ws_id = _ws_id(subscriptionId, resourceGroupName, workspaceName)
    if call.backend.store.get(ws_id) is None:
        return Response(b"", status=204)
    return _run_operation(call, ws_id, "workspaces/delete", lambda: delete_workspace_tree(call.backend, ws_id))


def delete_workspace_tree(backend: "LocalBackend", workspace_id: str) -> None:
    """Delete a workspace and everything in it: stop and forget its jobs, free its clusters' nodes,
    remove its file servers' data, then drop the documents. Resource group deletion calls this."""
    store = backend.store
    for job in store.list_under(workspace_id, "microsoft.batchai/workspaces/experiments/jobs"):
        _stop_job(backend, job["id"])
    for cluster in store.list_under(workspace_id, "microsoft.batchai/workspaces/clusters"):
        _schedule(backend, "forget_cluster", cluster["id"])
    for server in store.list_under(workspace_id, "microsoft.batchai/workspaces/fileservers"):
        shutil.rmtree(backend.fileserver_dir(server["id"]), ignore_errors=True)
    store.delete(workspace_id, recursive=True)


def _stop_job(backend: "LocalBackend", job_id: str) -> None:
    job = backend.store.get(job_id)
    if job is not None and job["properties"].get("executionState") not in _TERMINAL:
        _schedule(backend, "terminate_job", job_id)
    _schedule(backend, "forget_job", job_id)


# -- experiments ----------------------------------------------------------------------------------

def list_experiments(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str) -> Response:
    workspace = _workspace(call, subscriptionId, resourceGroupName, workspaceName)
    return _page(call, call.backend.store.list("microsoft.batchai/workspaces/experiments", parent=workspace["id"]))


def get_experiment(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                   experimentName: str) -> Response:
    return _answer(_experiment(call, subscriptionId, resourceGroupName, workspaceName, experimentName))


def put_experiment(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                   experimentName: str) -> Response:
    workspace = _workspace(call, subscriptionId, resourceGroupName, workspaceName, for_write=True)
    body = call.json()
    if not isinstance(body, dict):
        raise ArmError(400, "InvalidRequestContent", "The request body must be a JSON object (or empty).")
    exp_id, existing = _child(call, workspace["id"], "experiments", experimentName, what="experiment",
                              param="experimentName", code="ExperimentNotFound", must_exist=False)
    if existing is not None:
        return _answer(existing)
    now = iso_time()
    doc = {"id": exp_id, "name": experimentName, "type": EXPERIMENT_TYPE,
           "properties": {"provisioningState": "succeeded", "provisioningStateTransitionTime": now,
                          "creationTime": now}}
    call.backend.store.put(exp_id, "microsoft.batchai/workspaces/experiments", workspace["id"], doc)
    return _answer(doc)


def delete_experiment(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                      experimentName: str) -> Response:
    workspace = _workspace(call, subscriptionId, resourceGroupName, workspaceName)
    exp_id, existing = _child(call, workspace["id"], "experiments", experimentName, what="experiment",
                              param="experimentName", code="ExperimentNotFound", must_exist=False)
    if existing is None:
        return Response(b"", status=204)

    def work() -> None:
        for job in call.backend.store.list("microsoft.batchai/workspaces/experiments/jobs", parent=existing["id"]):
            _stop_job(call.backend, job["id"])
        call.backend.store.delete(existing["id"], recursive=True)
    return _run_operation(call, existing["id"], "experiments/delete", work)


# -- clusters -------------------------------------------------------------------------------------

def _cluster(call: Call, sub: str, rg: str, ws: str, name: str, *, must_exist: bool = True,
             for_write: bool = False) -> tuple[dict[str, Any], str, Optional[dict[str, Any]]]:
    workspace = _workspace(call, sub, rg, ws, for_write=for_write)
    cluster_id, doc = _child(call, workspace["id"], "clusters", name, what="cluster", param="clusterName",
                             code="ClusterNotFound", must_exist=must_exist)
    return workspace, cluster_id, doc


_CLUSTER_REQUEST_KEYS = ("vmSize", "vmPriority", "scaleSettings", "virtualMachineConfiguration", "userAccountSettings",
                         "nodeSetup", "subnet")


def get_cluster(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                clusterName: str) -> Response:
    _, _, doc = _cluster(call, subscriptionId, resourceGroupName, workspaceName, clusterName)
    assert doc is not None
    return _answer(doc)


def list_clusters(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str) -> Response:
    workspace = _workspace(call, subscriptionId, resourceGroupName, workspaceName)
    return _page(call, call.backend.store.list("microsoft.batchai/workspaces/clusters", parent=workspace["id"]))


def put_cluster(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                clusterName: str) -> Response:
    workspace, cluster_id, existing = _cluster(call, subscriptionId, resourceGroupName, workspaceName, clusterName,
                                               must_exist=False, for_write=True)
    parsed = parse_cluster_create(call.json())
    store = call.backend.store
    if existing is not None:
        stored = {k: existing["properties"][k] for k in _CLUSTER_REQUEST_KEYS if k in existing["properties"]}
        # scaleSettings change through PATCH, so a retried create need not repeat the current size.
        request = {k: parsed.properties[k] for k in _CLUSTER_REQUEST_KEYS if k in parsed.properties}
        request["scaleSettings"] = stored.get("scaleSettings")
        _conflict("ClusterAlreadyExists", "cluster", existing["name"], request, parsed.private, stored,
                  store.get_private(cluster_id),
                  "A cluster's settings cannot change after creation (only scaleSettings, through PATCH); "
                  "delete the cluster first or create one with another name.")
        return _run_operation(call, cluster_id, "clusters/create", lambda: None)

    def work() -> None:
        now = iso_time()
        props: dict[str, Any] = {
            "provisioningState": "succeeded", "allocationState": "resizing", "creationTime": now,
            "allocationStateTransitionTime": now, "provisioningStateTransitionTime": now,
            "vmSize": parsed.properties["vmSize"], "currentNodeCount": 0,
            "nodeStateCounts": {"runningNodeCount": 0, "idleNodeCount": 0, "unusableNodeCount": 0,
                                "preparingNodeCount": 0, "leavingNodeCount": 0},
        }
        props.update({k: parsed.properties[k] for k in _CLUSTER_REQUEST_KEYS[1:] if k in parsed.properties})
        doc = {"id": cluster_id, "name": clusterName, "type": CLUSTER_TYPE, "properties": props}
        store.put(cluster_id, "microsoft.batchai/workspaces/clusters", workspace["id"], doc, private=parsed.private)
        _notify(call.backend)
    return _run_operation(call, cluster_id, "clusters/create", work)


def patch_cluster(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                  clusterName: str) -> Response:
    _, cluster_id, doc = _cluster(call, subscriptionId, resourceGroupName, workspaceName, clusterName, for_write=True)
    scale = parse_cluster_update(call.json())
    if scale is None:
        assert doc is not None
        return _answer(doc)

    def change(body: dict[str, Any]) -> None:
        props = body["properties"]
        props["scaleSettings"] = scale
        current = int(props.get("currentNodeCount", 0))
        if "manual" in scale:
            off_target = scale["manual"]["targetNodeCount"] != current
        else:
            auto = scale["autoScale"]
            off_target = not auto["minimumNodeCount"] <= current <= auto["maximumNodeCount"]
        if off_target and props.get("allocationState") != "resizing":
            props["allocationState"] = "resizing"
            props["allocationStateTransitionTime"] = iso_time()
    updated = call.backend.store.update(cluster_id, change)
    if updated is None:
        raise ArmError(404, "ClusterNotFound", f"The specified cluster {clusterName} is not found")
    _notify(call.backend)
    return _answer(updated)


def delete_cluster(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                   clusterName: str) -> Response:
    _, cluster_id, doc = _cluster(call, subscriptionId, resourceGroupName, workspaceName, clusterName, must_exist=False)
    if doc is None:
        return Response(b"", status=204)
    running = _schedule(call.backend, "running_jobs", doc["id"]) or []
    if running:
        names = ", ".join(job.rstrip("/").rsplit("/", 1)[-1] for job in running)
        raise ArmError(409, "ClusterInUse",
                       f"The cluster '{doc['name']}' cannot be deleted while jobs run on it ({names}); "
                       "terminate or delete those jobs first.")

    def work() -> None:
        def deleting(body: dict[str, Any]) -> None:
            body["properties"]["provisioningState"] = "deleting"
            body["properties"]["provisioningStateTransitionTime"] = iso_time()
        call.backend.store.update(doc["id"], deleting)
        _schedule(call.backend, "forget_cluster", doc["id"])
        call.backend.store.delete(doc["id"])
    return _run_operation(call, doc["id"], "clusters/delete", work)


def _login_entries(resource_id: str, count: int) -> list[dict[str, Any]]:
    tag = hashlib.sha256(resource_key(resource_id).encode()).hexdigest()[:10]
    return [{"nodeId": f"tvm-{tag}_{i + 1}-local", "ipAddress": "127.0.0.1", "port": _LOGIN_BASE_PORT + i}
            for i in range(count)]


def list_cluster_login(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                       clusterName: str) -> Response:
    """One entry per current node. Local nodes have no SSH daemon: the node ids and ports are stable
    placeholders (port 50000 + node index) so that clients listing them work; nothing listens there."""
    _, _, doc = _cluster(call, subscriptionId, resourceGroupName, workspaceName, clusterName)
    assert doc is not None
    return _page(call, _login_entries(doc["id"], int(doc["properties"].get("currentNodeCount", 0))))


# -- jobs -----------------------------------------------------------------------------------------

_CLUSTER_ID_SHAPE = ("subscriptions", None, "resourcegroups", None, "providers", "microsoft.batchai", "workspaces",
                     None, "clusters", None)


def _resolve_cluster(call: Call, cluster_ref: str, subscription: str) -> dict[str, Any]:
    parts = cluster_ref.strip("/").split("/")
    shaped = len(parts) == len(_CLUSTER_ID_SHAPE) and all(
        want is None or part.lower() == want for part, want in zip(parts, _CLUSTER_ID_SHAPE))
    if not shaped:
        raise ArmError(400, "InvalidParameter",
                       "The property 'properties.cluster.id' must be a cluster resource id, /subscriptions/{sub}/"
                       "resourceGroups/{group}/providers/Microsoft.BatchAI/workspaces/{workspace}/clusters/{cluster}; "
                       f"got {cluster_ref[:300]!r}.", target="properties.cluster.id")
    if parts[1].lower() != subscription.lower():
        raise ArmError(400, "InvalidParameter",
                       "The property 'properties.cluster.id' must name a cluster in the job's subscription "
                       f"({subscription}).", target="properties.cluster.id")
    doc = call.backend.store.get(cluster_ref)
    if doc is None:
        raise ArmError(404, "ClusterNotFound", f"The specified cluster {parts[-1]} is not found",
                       target="properties.cluster.id")
    if doc["properties"].get("provisioningState") != "succeeded":
        raise ArmError(409, "ClusterNotReady",
                       f"The cluster '{doc['name']}' is {doc['properties'].get('provisioningState')}; jobs can be "
                       "submitted only to clusters whose provisioningState is succeeded.")
    return doc


def _job(call: Call, sub: str, rg: str, ws: str, exp: str, name: str, *, must_exist: bool = True,
         for_write: bool = False) -> tuple[dict[str, Any], str, Optional[dict[str, Any]]]:
    experiment = _experiment(call, sub, rg, ws, exp, for_write=for_write)
    job_id, doc = _child(call, experiment["id"], "jobs", name, what="job", param="jobName", code="JobNotFound",
                         must_exist=must_exist)
    return experiment, job_id, doc


def get_job(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str, experimentName: str,
            jobName: str) -> Response:
    _, _, doc = _job(call, subscriptionId, resourceGroupName, workspaceName, experimentName, jobName)
    assert doc is not None
    return _answer(doc)


def list_jobs(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
              experimentName: str) -> Response:
    experiment = _experiment(call, subscriptionId, resourceGroupName, workspaceName, experimentName)
    return _page(call, call.backend.store.list("microsoft.batchai/workspaces/experiments/jobs", parent=experiment["id"]))


#: the order the service answered job properties in (recordings); the rest follow in spec order.
_JOB_LEAD = ("schedulingPriority", "cluster")
_JOB_SERVER_KEYS = ("experimentName", "jobOutputDirectoryPathSegment", "toolType", "creationTime", "provisioningState",
                    "provisioningStateTransitionTime", "executionState", "executionStateTransitionTime",
                    "executionInfo")


def _job_request_view(properties: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in properties.items() if k not in _JOB_SERVER_KEYS}


def put_job(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str, experimentName: str,
            jobName: str) -> Response:
    experiment, job_id, existing = _job(call, subscriptionId, resourceGroupName, workspaceName, experimentName,
                                        jobName, must_exist=False, for_write=True)
    parsed: Parsed = parse_job_create(call.json())
    props = parsed.properties
    store = call.backend.store
    if existing is not None:
        request = _job_request_view(props)
        stored = _job_request_view(existing["properties"])
        _conflict("JobAlreadyExists", "job", existing["name"], request, parsed.private, stored,
                  store.get_private(job_id),
                  "A job cannot be changed once created; delete it first or submit it under another name.")
        return _run_operation(call, job_id, "jobs/create", lambda: None)
    cluster = _resolve_cluster(call, props["cluster"]["id"], subscriptionId)
    check_job_node_count(props["nodeCount"], cluster["name"], cluster["properties"])

    def work() -> None:
        now = iso_time()
        segment = (f"{subscriptionId}/{resourceGroupName}/workspaces/{workspaceName}/experiments/{experimentName}"
                   f"/jobs/{jobName}/{uuid.uuid4()}")
        body: dict[str, Any] = {"experimentName": experiment["name"]}
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
                     "executionState": "queued", "executionStateTransitionTime": now})
        doc = {"id": job_id, "name": jobName, "type": JOB_TYPE, "properties": body}
        store.put(job_id, "microsoft.batchai/workspaces/experiments/jobs", experiment["id"], doc,
                  private=parsed.private)
        _notify(call.backend)
    return _run_operation(call, job_id, "jobs/create", work)


def delete_job(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str, experimentName: str,
               jobName: str) -> Response:
    _, job_id, doc = _job(call, subscriptionId, resourceGroupName, workspaceName, experimentName, jobName,
                          must_exist=False)
    if doc is None:
        return Response(b"", status=204)

    def work() -> None:
        _schedule(call.backend, "forget_job", doc["id"])
        call.backend.store.delete(doc["id"], recursive=True)
    return _run_operation(call, doc["id"], "jobs/delete", work)


def _job_ended(backend: "LocalBackend", job_id: str) -> bool:
    job = backend.store.get(job_id)
    return job is None or job["properties"].get("executionState") in _TERMINAL


def _terminate_done(backend: "LocalBackend", op: operations.Operation) -> Optional[tuple[str, Optional[dict[str, Any]]]]:
    """A terminate operation ends when its job has reached a terminal state (or is gone)."""
    return ("Succeeded", None) if _job_ended(backend, op.resource_id) else None


operations.register_completion_check("jobs/terminate", _terminate_done)


def terminate_job(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                  experimentName: str, jobName: str) -> Response:
    _, job_id, doc = _job(call, subscriptionId, resourceGroupName, workspaceName, experimentName, jobName)
    assert doc is not None

    def work() -> bool:
        if doc["properties"].get("executionState") not in _TERMINAL:
            _schedule(call.backend, "terminate_job", doc["id"])
        # Finished now if the job has ended; otherwise each poll checks again (_terminate_done).
        return _job_ended(call.backend, doc["id"])
    return _run_operation(call, doc["id"], "jobs/terminate", work)


def list_output_files(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                      experimentName: str, jobName: str) -> Response:
    _, job_id, doc = _job(call, subscriptionId, resourceGroupName, workspaceName, experimentName, jobName)
    assert doc is not None
    args = call.request.args
    output_id = args.get("outputdirectoryid")
    if not output_id:
        raise ArmError(400, "MissingRequiredParameter",
                       "The query parameter 'outputdirectoryid' is required: 'stdouterr' or the id of one of the "
                       "job's outputDirectories.", target="outputdirectoryid")
    directory = args.get("directory") or "."
    expiry = check_int_query(args.get("linkexpiryinminutes"), "linkexpiryinminutes", minimum=5, maximum=600,
                             default=call.backend.settings.default_link_expiry_min)
    limit = check_int_query(args.get("maxresults"), "maxresults", minimum=1, maximum=1000, default=1000)
    skip = check_int_query(args.get("$skiptoken"), "$skiptoken", minimum=0, maximum=2**31, default=0)
    from .outputs import list_output_files as list_files  # JOBS's module; imported when first used
    items, next_skip = list_files(call.backend, doc["id"], output_directory_id=output_id, directory=directory,
                                  link_expiry_minutes=expiry, max_results=limit, skip=skip)
    body: dict[str, Any] = {"value": items}
    if next_skip is not None:
        query = {k: v for k, v in args.items() if k != "$skiptoken"}
        query["$skiptoken"] = str(next_skip)
        body["nextLink"] = call.url(call.request.path, **query)
    return json_response(body)


def list_job_login(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                   experimentName: str, jobName: str) -> Response:
    """The nodes a job ran on: one entry per node once it has started (placeholders, as for clusters)."""
    _, _, doc = _job(call, subscriptionId, resourceGroupName, workspaceName, experimentName, jobName)
    assert doc is not None
    props = doc["properties"]
    started = bool((props.get("executionInfo") or {}).get("startTime"))
    count = int(props.get("nodeCount", 0)) if started else 0
    return _page(call, _login_entries(props["cluster"]["id"], count))


# -- file servers ---------------------------------------------------------------------------------

_FILE_SERVER_REQUEST_KEYS = ("vmSize", "sshConfiguration", "dataDisks", "subnet")


def _file_server(call: Call, sub: str, rg: str, ws: str, name: str, *, must_exist: bool = True,
                 for_write: bool = False) -> tuple[dict[str, Any], str, Optional[dict[str, Any]]]:
    workspace = _workspace(call, sub, rg, ws, for_write=for_write)
    fs_id, doc = _child(call, workspace["id"], "fileServers", name, what="file server", param="fileServerName",
                        code="FileServerNotFound", must_exist=must_exist)
    return workspace, fs_id, doc


def get_file_server(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                    fileServerName: str) -> Response:
    _, _, doc = _file_server(call, subscriptionId, resourceGroupName, workspaceName, fileServerName)
    assert doc is not None
    return _answer(doc)


def list_file_servers(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str) -> Response:
    workspace = _workspace(call, subscriptionId, resourceGroupName, workspaceName)
    return _page(call, call.backend.store.list("microsoft.batchai/workspaces/fileservers", parent=workspace["id"]))


def put_file_server(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                    fileServerName: str) -> Response:
    workspace, fs_id, existing = _file_server(call, subscriptionId, resourceGroupName, workspaceName, fileServerName,
                                              must_exist=False, for_write=True)
    parsed = parse_file_server_create(call.json())
    store = call.backend.store
    if existing is not None:
        stored = {k: existing["properties"][k] for k in _FILE_SERVER_REQUEST_KEYS if k in existing["properties"]}
        request = {k: parsed.properties[k] for k in _FILE_SERVER_REQUEST_KEYS if k in parsed.properties}
        _conflict("FileServerAlreadyExists", "file server", existing["name"], request, parsed.private, stored,
                  store.get_private(fs_id), "Delete the file server first or create one with another name.")
        return _run_operation(call, fs_id, "fileservers/create", lambda: None)

    def work() -> None:
        now = iso_time()
        props: dict[str, Any] = {"provisioningState": "creating", "creationTime": now,
                                 "provisioningStateTransitionTime": now}
        props.update({k: parsed.properties[k] for k in _FILE_SERVER_REQUEST_KEYS if k in parsed.properties})
        doc = {"id": fs_id, "name": fileServerName, "type": FILE_SERVER_TYPE, "properties": props}
        store.put(fs_id, "microsoft.batchai/workspaces/fileservers", workspace["id"], doc, private=parsed.private)
        # A local file server is a directory; its "export" is ready once the directory exists.
        call.backend.fileserver_dir(fs_id).mkdir(parents=True, exist_ok=True)

        def ready(body: dict[str, Any]) -> None:
            body["properties"]["provisioningState"] = "succeeded"
            body["properties"]["provisioningStateTransitionTime"] = iso_time()
            body["properties"]["mountSettings"] = {"mountPoint": "/mnt/data", "fileServerPublicIP": "127.0.0.1",
                                                   "fileServerInternalIP": "127.0.0.1"}
        store.update(fs_id, ready)
    return _run_operation(call, fs_id, "fileservers/create", work)


def delete_file_server(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                       fileServerName: str) -> Response:
    _, _, doc = _file_server(call, subscriptionId, resourceGroupName, workspaceName, fileServerName, must_exist=False)
    if doc is None:
        return Response(b"", status=204)

    def work() -> None:
        shutil.rmtree(call.backend.fileserver_dir(doc["id"]), ignore_errors=True)
        call.backend.store.delete(doc["id"])
    return _run_operation(call, doc["id"], "fileservers/delete", work)


# -- the route table ------------------------------------------------------------------------------

_V = frozenset({API_VERSION})
_SUB = "/subscriptions/{subscriptionId}"
_WS = _SUB + "/resourceGroups/{resourceGroupName}/providers/Microsoft.BatchAI/workspaces/{workspaceName}"
_EXP = _WS + "/experiments/{experimentName}"
_JOB = _EXP + "/jobs/{jobName}"
_CLUSTER = _WS + "/clusters/{clusterName}"
_FS = _WS + "/fileServers/{fileServerName}"

ROUTES: list[Route] = [
    Route("GET", "/providers/Microsoft.BatchAI/operations", list_operations, _V),
    Route("GET", _SUB + "/providers/Microsoft.BatchAI/locations/{location}/usages", list_usages, _V),
    *operations.ROUTES,
    Route("GET", _SUB + "/providers/Microsoft.BatchAI/workspaces", list_workspaces, _V),
    Route("GET", _SUB + "/resourceGroups/{resourceGroupName}/providers/Microsoft.BatchAI/workspaces",
          list_workspaces_by_group, _V),
    Route("GET", _WS, get_workspace, _V),
    Route("PUT", _WS, put_workspace, _V),
    Route("PATCH", _WS, patch_workspace, _V),
    Route("DELETE", _WS, delete_workspace, _V),
    Route("GET", _WS + "/experiments", list_experiments, _V),
    Route("GET", _EXP, get_experiment, _V),
    Route("PUT", _EXP, put_experiment, _V),
    Route("DELETE", _EXP, delete_experiment, _V),
    Route("GET", _EXP + "/jobs", list_jobs, _V),
    Route("GET", _JOB, get_job, _V),
    Route("PUT", _JOB, put_job, _V),
    Route("DELETE", _JOB, delete_job, _V),
    Route("POST", _JOB + "/terminate", terminate_job, _V),
    # nextLinks are followed with GET, so the list actions answer GET as well as POST.
    Route("POST", _JOB + "/listOutputFiles", list_output_files, _V),
    Route("GET", _JOB + "/listOutputFiles", list_output_files, _V),
    Route("POST", _JOB + "/listRemoteLoginInformation", list_job_login, _V),
    Route("GET", _JOB + "/listRemoteLoginInformation", list_job_login, _V),
    Route("GET", _WS + "/clusters", list_clusters, _V),
    Route("GET", _CLUSTER, get_cluster, _V),
    Route("PUT", _CLUSTER, put_cluster, _V),
    Route("PATCH", _CLUSTER, patch_cluster, _V),
    Route("DELETE", _CLUSTER, delete_cluster, _V),
    Route("POST", _CLUSTER + "/listRemoteLoginInformation", list_cluster_login, _V),
    Route("GET", _CLUSTER + "/listRemoteLoginInformation", list_cluster_login, _V),
    Route("GET", _WS + "/fileServers", list_file_servers, _V),
    Route("GET", _FS, get_file_server, _V),
    Route("PUT", _FS, put_file_server, _V),
    Route("DELETE", _FS, delete_file_server, _V),
]
