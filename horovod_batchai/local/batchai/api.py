"""Microsoft.BatchAI 2018-05-01: the route table and its handlers.

Every operation that ``azure.mgmt.batchai.BatchAI`` 7.0.0 exposes — operations list, usages,
workspaces, experiments, clusters, jobs, file servers — answered in the shapes the 2018 service
used (see ``shared/reference/recordings``): lower-case ``provisioningState``, ``type`` strings like
``Microsoft.BatchAI/workspaces/experiments/jobs``, secrets never echoed (``"credentials": {}``).
Workspace and experiment PUT answer 200 directly; cluster, job and file server PUT, every DELETE
and job terminate answer 202 and a long-running operation (``operations.py``).

Each handler looks up what the path names through the provider (``provider.py``, which owns the
lookups, state, conflicts, quotas, operations and what the job scheduler is told) once, parses the
body (``validation.py``), hands the record (``records.py``) to the provider and serialises its
answer.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from werkzeug.wrappers import Response

from ..core.api_versions import BATCHAI_OPERATIONS, BATCHAI_USAGES
from ..core.arm_errors import InvalidRequestContent, MissingRequiredParameter
from ..core.records import Resource
from ..core.routing import Call, Route, json_response
from ..runner.resource_types import CLUSTER_TYPE, EXPERIMENT_TYPE, FILE_SERVER_TYPE, JOB_TYPE
from . import operations
from .operations import API_VERSION, LongRunningOperation, accepted_response
from .outputs import list_output_files as list_files
from .provider import BatchAIProvider, etag
from .records import Cluster, Experiment, FileServer, Job
from .validation import (check_int_query, parse_cluster_create, parse_cluster_update, parse_file_server_create,
                         parse_job_create, parse_workspace_create, parse_workspace_update)

__all__ = ["ROUTES"]


#: the most items one page of a list answers.
_MAX_RESULTS = 1000


def _provider(call: Call) -> BatchAIProvider:
    return call.context.provider(BatchAIProvider)


def _answer(resource: Resource, status: int = 200) -> Response:
    return json_response(resource.doc, status=status, headers={"ETag": etag(resource.doc)})


def _docs(resources: Sequence[Resource]) -> list[dict[str, Any]]:
    return [resource.doc for resource in resources]


def _accepted_or_gone(call: Call, op: Optional[LongRunningOperation]) -> Response:
    """202 with the operation, or 204 when there was nothing to delete."""
    return Response(b"", status=204) if op is None else accepted_response(call, op)


def _paging(call: Call) -> tuple[int, int]:
    """(skip, limit) of a list request: ``$skiptoken`` and ``maxresults`` (at most 1000)."""
    limit = check_int_query(call.request.args.get("maxresults"), "maxresults", minimum=1, maximum=_MAX_RESULTS,
                            default=_MAX_RESULTS)
    skip = check_int_query(call.request.args.get("$skiptoken"), "$skiptoken", minimum=0, maximum=2**31, default=0)
    return skip, limit


def _list_answer(call: Call, items: list[dict[str, Any]], next_skip: Optional[int]) -> Response:
    """``{"value": items}``, with a ``nextLink`` to the page from ``next_skip`` when there is one."""
    body: dict[str, Any] = {"value": items}
    if next_skip is not None:
        query = {k: v for k, v in call.request.args.items() if k != "$skiptoken"}
        query["$skiptoken"] = str(next_skip)
        body["nextLink"] = call.url(call.request.path, **query)
    return json_response(body)


def _page(call: Call, items: list[dict[str, Any]]) -> Response:
    """A list answer of at most ``maxresults`` items, with ``nextLink`` when more remain."""
    skip, limit = _paging(call)
    return _list_answer(call, items[skip:skip + limit], skip + limit if skip + limit < len(items) else None)


# -- operations list and usages -------------------------------------------------------------------

#: (resource, display title, actions) of the operations list.
_OPERATION_ROWS = [
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


def list_operations(call: Call) -> Response:
    out = []
    for resource, title, verbs in _OPERATION_ROWS:
        for verb in verbs:
            action = verb.replace("/action", "")
            out.append({"name": f"Microsoft.BatchAI/{resource}/{verb}",
                        "display": {"provider": "Microsoft Batch AI", "resource": title,
                                    "operation": f"{action.capitalize()} {title}",
                                    "description": f"{action.capitalize()} {title.lower()}"},
                        "origin": "user,system"})
    return _page(call, out)


def list_usages(call: Call, subscriptionId: str, location: str) -> Response:
    return _page(call, _provider(call).usages(subscriptionId, location))


# -- workspaces -----------------------------------------------------------------------------------

def list_workspaces(call: Call, subscriptionId: str) -> Response:
    return _page(call, _docs(_provider(call).workspaces_of_subscription(subscriptionId)))


def list_workspaces_by_group(call: Call, subscriptionId: str, resourceGroupName: str) -> Response:
    return _page(call, _docs(_provider(call).workspaces_of_group(subscriptionId, resourceGroupName)))


def get_workspace(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str) -> Response:
    return _answer(_provider(call).workspace(subscriptionId, resourceGroupName, workspaceName))


def put_workspace(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str) -> Response:
    provider = _provider(call)
    slot = provider.workspace_slot(subscriptionId, resourceGroupName, workspaceName, for_write=True)
    request = parse_workspace_create(call.json())
    return _answer(provider.put_workspace(slot, request))


def patch_workspace(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str) -> Response:
    provider = _provider(call)
    workspace = provider.workspace(subscriptionId, resourceGroupName, workspaceName, for_write=True)
    return _answer(provider.patch_workspace(workspace, parse_workspace_update(call.json())))


def delete_workspace(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str) -> Response:
    provider = _provider(call)
    slot = provider.workspace_slot(subscriptionId, resourceGroupName, workspaceName)
    return _accepted_or_gone(call, provider.delete_workspace(slot))


# -- experiments ----------------------------------------------------------------------------------

def list_experiments(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str) -> Response:
    provider = _provider(call)
    workspace = provider.workspace(subscriptionId, resourceGroupName, workspaceName)
    return _page(call, _docs(provider.children(Experiment, EXPERIMENT_TYPE, workspace)))


def get_experiment(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                   experimentName: str) -> Response:
    return _answer(_provider(call).experiment(subscriptionId, resourceGroupName, workspaceName, experimentName))


def put_experiment(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                   experimentName: str) -> Response:
    provider = _provider(call)
    slot = provider.experiment_slot(subscriptionId, resourceGroupName, workspaceName, experimentName, for_write=True)
    if not isinstance(call.json(), dict):
        raise InvalidRequestContent("The request body must be a JSON object (or empty).")
    return _answer(provider.put_experiment(slot))


def delete_experiment(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                      experimentName: str) -> Response:
    provider = _provider(call)
    slot = provider.experiment_slot(subscriptionId, resourceGroupName, workspaceName, experimentName)
    return _accepted_or_gone(call, provider.delete_experiment(slot))


# -- clusters -------------------------------------------------------------------------------------

def get_cluster(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                clusterName: str) -> Response:
    return _answer(_provider(call).cluster(subscriptionId, resourceGroupName, workspaceName, clusterName))


def list_clusters(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str) -> Response:
    provider = _provider(call)
    workspace = provider.workspace(subscriptionId, resourceGroupName, workspaceName)
    return _page(call, _docs(provider.children(Cluster, CLUSTER_TYPE, workspace)))


def put_cluster(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                clusterName: str) -> Response:
    provider = _provider(call)
    slot = provider.cluster_slot(subscriptionId, resourceGroupName, workspaceName, clusterName, for_write=True)
    parsed = parse_cluster_create(call.json())
    return accepted_response(call, provider.put_cluster(slot, parsed))


def patch_cluster(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                  clusterName: str) -> Response:
    provider = _provider(call)
    cluster = provider.cluster(subscriptionId, resourceGroupName, workspaceName, clusterName, for_write=True)
    scale = parse_cluster_update(call.json())
    return _answer(cluster if scale is None else provider.scale_cluster(cluster, scale))


def delete_cluster(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                   clusterName: str) -> Response:
    provider = _provider(call)
    slot = provider.cluster_slot(subscriptionId, resourceGroupName, workspaceName, clusterName)
    return _accepted_or_gone(call, provider.delete_cluster(slot))


def list_cluster_login(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                       clusterName: str) -> Response:
    provider = _provider(call)
    cluster = provider.cluster(subscriptionId, resourceGroupName, workspaceName, clusterName)
    return _page(call, provider.cluster_logins(cluster))


# -- jobs -----------------------------------------------------------------------------------------

def get_job(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str, experimentName: str,
            jobName: str) -> Response:
    return _answer(_provider(call).job(subscriptionId, resourceGroupName, workspaceName, experimentName, jobName))


def list_jobs(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
              experimentName: str) -> Response:
    provider = _provider(call)
    experiment = provider.experiment(subscriptionId, resourceGroupName, workspaceName, experimentName)
    return _page(call, _docs(provider.children(Job, JOB_TYPE, experiment)))


def put_job(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str, experimentName: str,
            jobName: str) -> Response:
    provider = _provider(call)
    slot = provider.job_slot(subscriptionId, resourceGroupName, workspaceName, experimentName, jobName, for_write=True)
    parsed = parse_job_create(call.json())
    return accepted_response(call, provider.put_job(slot, parsed))


def delete_job(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str, experimentName: str,
               jobName: str) -> Response:
    provider = _provider(call)
    slot = provider.job_slot(subscriptionId, resourceGroupName, workspaceName, experimentName, jobName)
    return _accepted_or_gone(call, provider.delete_job(slot))


def terminate_job(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                  experimentName: str, jobName: str) -> Response:
    provider = _provider(call)
    slot = provider.job_slot(subscriptionId, resourceGroupName, workspaceName, experimentName, jobName)
    return accepted_response(call, provider.terminate_job(slot))


def list_output_files(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                      experimentName: str, jobName: str) -> Response:
    job = _provider(call).job(subscriptionId, resourceGroupName, workspaceName, experimentName, jobName)
    args = call.request.args
    output_id = args.get("outputdirectoryid")
    if not output_id:
        raise MissingRequiredParameter(
            "The query parameter 'outputdirectoryid' is required: 'stdouterr' or the id of one of the "
            "job's outputDirectories.", target="outputdirectoryid")
    directory = args.get("directory") or "."
    expiry = check_int_query(args.get("linkexpiryinminutes"), "linkexpiryinminutes", minimum=5, maximum=600,
                             default=call.context.settings.default_link_expiry_min)
    skip, limit = _paging(call)
    items, next_skip = list_files(call.context, job, output_directory_id=output_id, directory=directory,
                                  link_expiry_minutes=expiry, max_results=limit, skip=skip)
    return _list_answer(call, items, next_skip)


def list_job_login(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                   experimentName: str, jobName: str) -> Response:
    provider = _provider(call)
    job = provider.job(subscriptionId, resourceGroupName, workspaceName, experimentName, jobName)
    return _page(call, provider.job_logins(job))


# -- file servers ---------------------------------------------------------------------------------

def get_file_server(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                    fileServerName: str) -> Response:
    return _answer(_provider(call).file_server(subscriptionId, resourceGroupName, workspaceName, fileServerName))


def list_file_servers(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str) -> Response:
    provider = _provider(call)
    workspace = provider.workspace(subscriptionId, resourceGroupName, workspaceName)
    return _page(call, _docs(provider.children(FileServer, FILE_SERVER_TYPE, workspace)))


def put_file_server(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                    fileServerName: str) -> Response:
    provider = _provider(call)
    slot = provider.file_server_slot(subscriptionId, resourceGroupName, workspaceName, fileServerName, for_write=True)
    parsed = parse_file_server_create(call.json())
    return accepted_response(call, provider.put_file_server(slot, parsed))


def delete_file_server(call: Call, subscriptionId: str, resourceGroupName: str, workspaceName: str,
                       fileServerName: str) -> Response:
    provider = _provider(call)
    slot = provider.file_server_slot(subscriptionId, resourceGroupName, workspaceName, fileServerName)
    return _accepted_or_gone(call, provider.delete_file_server(slot))


# -- the route table ------------------------------------------------------------------------------

_V = frozenset({API_VERSION})
_SUB = "/subscriptions/{subscriptionId}"
_WS = _SUB + "/resourceGroups/{resourceGroupName}/providers/Microsoft.BatchAI/workspaces/{workspaceName}"
_EXP = _WS + "/experiments/{experimentName}"
_JOB = _EXP + "/jobs/{jobName}"
_CLUSTER = _WS + "/clusters/{clusterName}"
_FS = _WS + "/fileServers/{fileServerName}"

ROUTES: list[Route] = [
    Route("GET", "/providers/Microsoft.BatchAI/operations", list_operations, BATCHAI_OPERATIONS),
    Route("GET", _SUB + "/providers/Microsoft.BatchAI/locations/{location}/usages", list_usages, BATCHAI_USAGES),
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
