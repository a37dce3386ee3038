"""Conformance with the recorded 2018 service and with the spec's examples.

1. ``test_manual_scale_scenario_replays_like_the_recording`` replays the request sequence of
   ``shared/reference/recordings/test_batchai_manual_scale_scenario.json`` against the local service:
   the same methods, paths, query strings and bodies, with the same resource names (only the host
   differs, and the storage key the recording scrubbed to zeros is replaced by the account's real
   key). For each interaction it compares the HTTP status and the body *shape*: the same keys,
   recursively; the same values for enum-like properties (provisioningState, toolType, vmPriority,
   fileType, status, ``type`` strings...); the same JSON types for everything else. Ids of
   operations, times, etags and ``jobOutputDirectoryPathSegment`` differ by nature and are not
   compared; operation URLs are taken from our own 202 answers.

   What depends on timing is matched order-insensitively: a job GET waits until the job has reached
   at least the recorded ``executionState`` and is compared with a recorded body of the state it is
   in; poll bodies may be ``Succeeded`` where the recording still saw ``InProgress``; a cluster's
   ``allocationState`` and node counts may be ahead of the recording (our nodes provision in a
   fraction of a second), except where the recording waited for ``steady`` (after resizing to 0),
   where we wait for it too. The Files data-plane request (create share) is made with
   ShareServiceClient, which signs it as the CLI did.

2. ``test_every_spec_example_is_accepted_and_answered_in_its_documented_shape`` sends every request
   of the spec's ``x-ms-examples`` and checks that it is accepted and answered with the documented
   status and the documented keys. Known errata of the examples are listed (and corrected) in
   ``EXAMPLE_ERRATA`` with the reason for each.
"""
from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any, Optional
from urllib.parse import urlsplit

import pytest

from service_support import SUBSCRIPTION
from raw_arm import RawArm

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference"
RECORDING = REFERENCE / "recordings" / "test_batchai_manual_scale_scenario.json"
EXAMPLES = REFERENCE / "batchai-api-2018-05-01" / "examples"
ZERO_KEY = "A" * 86 + "=="

pytestmark = pytest.mark.skipif(not RECORDING.exists(), reason="shared/reference is not checked out beside the repo")

#: properties whose values are an enum or a type string: compared by value, not only by JSON type.
ENUM_KEYS = {"type", "provisioningState", "executionState", "toolType", "vmPriority", "fileType", "status",
             "schedulingPriority", "nodeDeallocationOption", "cachingType", "storageAccountType", "unit"}
#: properties whose values depend on how fast nodes and jobs move (see the module docstring).
TIMING_KEYS = {"allocationState", "executionState"}
#: Microsoft.Resources and Microsoft.Storage answers are held to the recording's keys and enums but
#: may carry keys it lacks: the local service answers them as today's ARM does (a resource group's
#: "type", a listKeys key's "creationTime"), which the 2018 recording predates. Batch AI answers
#: must match exactly.
KNOWN_EXTRAS_ELSEWHERE = True
_STATE_RANK = {"queued": 0, "running": 1, "terminating": 2, "succeeded": 3, "failed": 3}


def shape_problems(recorded: Any, ours: Any, path: str = "$", *, timing_ok: bool = True,
                   allow_extra: bool = False) -> list[str]:
    """Where ``ours`` differs in shape from ``recorded`` (empty when they match). ``allow_extra``
    tolerates keys the recording lacks (used for the other providers, see KNOWN_EXTRAS_ELSEWHERE)."""
    if isinstance(recorded, dict):
        if not isinstance(ours, dict):
            return [f"{path}: expected an object, got {type(ours).__name__}"]
        out = []
        if set(recorded) != set(ours) and not (allow_extra and set(recorded) <= set(ours)):
            out.append(f"{path}: keys differ: missing {sorted(set(recorded) - set(ours))}, "
                       f"extra {sorted(set(ours) - set(recorded))}")
        for key in set(recorded) & set(ours):
            if key in ENUM_KEYS and not (timing_ok and key in TIMING_KEYS):
                if recorded[key] != ours[key]:
                    out.append(f"{path}.{key}: {ours[key]!r} != recorded {recorded[key]!r}")
                continue
            out += shape_problems(recorded[key], ours[key], f"{path}.{key}", timing_ok=timing_ok,
                                  allow_extra=allow_extra)
        return out
    if isinstance(recorded, list):
        if not isinstance(ours, list):
            return [f"{path}: expected an array"]
        if recorded and ours:
            return [p for i, item in enumerate(ours) for p in shape_problems(recorded[0], item, f"{path}[{i}]",
                                                                              timing_ok=timing_ok,
                                                                              allow_extra=allow_extra)]
        return [] if bool(recorded) == bool(ours) else [f"{path}: {len(ours)} items, recorded {len(recorded)}"]
    if type(recorded) is not type(ours) and not (isinstance(recorded, (int, float)) and isinstance(ours, (int, float))):
        return [f"{path}: {type(ours).__name__} where the recording has {type(recorded).__name__}"]
    return []


def _wait(fetch, done, what: str, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if done(value):
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _path_and_query(uri: str) -> str:
    parts = urlsplit(uri)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def test_manual_scale_scenario_replays_like_the_recording(service):
    from azure.storage.fileshare import ShareServiceClient
    interactions = json.loads(RECORDING.read_text())
    recorded_jobs: dict[tuple[str, str], dict[str, Any]] = {}
    for x in interactions:
        body = x.get("response_body")
        if x["method"] == "GET" and "/jobs/" in x["uri"] and isinstance(body, dict) and "properties" in body:
            recorded_jobs.setdefault((body["name"], body["properties"]["executionState"]), body)
    op_urls: dict[str, str] = {}      # recorded operation URL path -> ours
    account_key: Optional[str] = None
    compared = 0
    with RawArm(service) as arm:
        for index, x in enumerate(interactions):
            where = f"interaction {index}: {x['method']} {urlsplit(x['uri']).path}"
            recorded_body = x.get("response_body")
            if "file.core.windows.net" in x["uri"]:
                assert account_key is not None
                share = urlsplit(x["uri"]).path.strip("/")
                shares = ShareServiceClient(f"{service.endpoint}/clitest000002", credential=account_key,
                                            connection_verify=str(service.info.ca_cert))
                shares.create_share(share)  # raises unless the service answered 201 Created
                compared += 1
                continue
            path = _path_and_query(x["uri"])
            recorded_path = urlsplit(x["uri"]).path
            if recorded_path in op_urls:  # a poll of an operation we started
                url = op_urls[recorded_path]
                answer = _wait(lambda: arm.request("GET", url, api_version=None),
                               lambda r: r.status_code != 200 or r.json().get("status") != "InProgress"
                               or recorded_body.get("status") == "InProgress", where)
                assert answer.status_code == x["status"], where
                ours = answer.json()
                if "status" in recorded_body:  # Batch AI's poll body; ours may have finished sooner
                    assert ours["status"] in ("InProgress", "Succeeded") and (
                        recorded_body["status"] == "InProgress" or ours["status"] == "Succeeded"), where
                    expected = dict(recorded_body)
                    if ours["status"] != recorded_body["status"]:
                        expected = next(i["response_body"] for i in interactions
                                        if urlsplit(i["uri"]).path == recorded_path
                                        and i["response_body"]["status"] == ours["status"])
                    assert not shape_problems(expected, ours), (where, shape_problems(expected, ours))
                compared += 1
                continue
            body = x.get("request_body")
            if body is not None:
                body = json.loads(json.dumps(body).replace(ZERO_KEY, account_key or ZERO_KEY))
            url = service.endpoint + path

            def send():
                return arm.request(x["method"], url, api_version=None, json=body)
            is_job_get = x["method"] == "GET" and "/jobs/" in path and x["status"] == 200
            if is_job_get:
                wanted = _STATE_RANK[recorded_body["properties"]["executionState"]]
                answer = _wait(send, lambda r: _STATE_RANK[r.json()["properties"]["executionState"]] >= wanted, where)
            elif x["method"] == "GET" and recorded_path.endswith("/clusters/cluster") and index == 43:
                # The CLI slept 10 minutes after resizing to 0; the recording then shows steady with 0 nodes.
                answer = _wait(send, lambda r: r.json()["properties"]["allocationState"] == "steady", where)
            else:
                answer = send()
            assert answer.status_code == x["status"], (where, answer.status_code, answer.text[:500])
            for header in ("azure-asyncoperation", "location"):
                if header in x["response_headers"] and answer.status_code == 202:
                    recorded_url = urlsplit(x["response_headers"][header]).path
                    op_urls[recorded_url] = answer.headers[header]
                    # Ours always carries both Batch AI headers; Storage and Resources answer Location only.
            if "/Microsoft.BatchAI/" in path and answer.status_code == 202:
                assert "Azure-AsyncOperation" in answer.headers and "Location" in answer.headers, where
            if path.split("?")[0].endswith("/listKeys"):
                account_key = answer.json()["keys"][0]["value"]
            if isinstance(recorded_body, dict):
                ours = answer.json()
                expected = recorded_body
                if is_job_get:
                    state = ours["properties"]["executionState"]
                    expected = recorded_jobs[(ours["name"], state)]
                problems = shape_problems(expected, ours, allow_extra="/Microsoft.BatchAI/" not in path)
                assert not problems, (where, problems)
                if "/listOutputFiles" in path:
                    recorded_names = {f["name"] for f in recorded_body["value"]}
                    our_names = {f["name"] for f in ours["value"]}
                    assert recorded_names <= our_names | {"execution.log"}, (where, our_names)
                    sizes = {f["name"]: f["properties"]["contentLength"] for f in ours["value"]}
                    for name in ("stdout.txt", "result.txt"):
                        if name in recorded_names:
                            assert sizes[name] == 3, (where, sizes)  # "hi\n", as recorded
            compared += 1
    assert compared == len(interactions)


# -- the spec's examples ---------------------------------------------------------------------------

#: examples that are not requests of the 2018-05-01 API: list operations of the 2018-03-01 API
#: (clusters and file servers directly under a subscription or group, before workspaces existed);
#: BatchAI.json references none of them.
NOT_IN_THIS_API = {"ListCluster.json", "ListClusterByResourceGroup.json", "ListFileServer.json",
                   "ListFileServerByResourceGroup.json"}

#: mistakes in the examples, corrected before sending, and why.
EXAMPLE_ERRATA = {
    # The job's cluster id says ".../workspace/demo_workspace/..." (singular); every other id, and
    # the API's paths, say "workspaces".
    "PutJob.json": lambda p: p["parameters"]["properties"]["cluster"].update(
        id=p["parameters"]["properties"]["cluster"]["id"].replace("/workspace/", "/workspaces/")),
    # The experiment is misspelt "demo_experimnet"; the job it lists lives in "demo_experiment".
    "ListJobByExperiment.json": lambda p: p.update(experimentName="demo_experiment"),
}

#: keys of documented response bodies that the examples show but the 2018-05-01 service did not
#: answer (the recordings are the authority): "priority" is the pre-2018 name of
#: "schedulingPriority"; "location" was not part of cluster / file server bodies (ProxyResource);
#: example experiments lack "creationTime", which the recording shows.
DOCUMENTED_BUT_NOT_ANSWERED = {"priority", "location"}
ANSWERED_BUT_NOT_DOCUMENTED = {"schedulingPriority", "experimentName", "creationTime", "type"}


def _example_path(name: str, params: dict[str, Any]) -> tuple[str, str]:
    """(method, path) of an example, from BatchAI.json's operation that references it."""
    spec = json.loads((REFERENCE / "batchai-api-2018-05-01" / "BatchAI.json").read_text())
    for template, methods in spec["paths"].items():
        for method, op in methods.items():
            refs = [e["$ref"] for e in op.get("x-ms-examples", {}).values()] if isinstance(op, dict) else []
            if f"./examples/{name}" in refs:
                path = template
                for key, value in params.items():
                    path = path.replace("{" + key + "}", str(value))
                query = {"outputdirectoryid": params.get("outputdirectoryid")} if "outputdirectoryid" in params else {}
                suffix = "".join(f"&{k}={v}" for k, v in query.items())
                return method.upper(), f"{path}?api-version={params['api-version']}{suffix}"
    raise LookupError(name)


def _keys(value: Any) -> set[str]:
    """Every key path in a body, list items folded together."""
    out: set[str] = set()
    def walk(v: Any, path: str) -> None:
        if isinstance(v, dict):
            for k, sub in v.items():
                if k in DOCUMENTED_BUT_NOT_ANSWERED | ANSWERED_BUT_NOT_DOCUMENTED:
                    continue
                out.add(f"{path}.{k}")
                walk(sub, f"{path}.{k}")
        elif isinstance(v, list):
            for sub in v:
                walk(sub, f"{path}[]")
    walk(value, "$")
    return out


#: examples that document a job which has run. The examples' cluster mounts a share of the account
#: "storage_account_name", which cannot exist (an underscore is not allowed in account names), so its
#: nodes are unusable and the example job stays queued: these lists are empty here. The shape of
#: their items is checked with a job that runs in test_batchai_jobs_api.py.
NEVER_STARTED = {"JobListRemoteLoginInfo.json", "ListOutputFiles.json"}

#: properties the service sets itself: a documented one must always be answered.
SERVER_SET = {"id", "name", "provisioningState", "provisioningStateTransitionTime", "allocationState",
              "allocationStateTransitionTime", "currentNodeCount", "nodeStateCounts", "runningNodeCount",
              "idleNodeCount", "unusableNodeCount", "preparingNodeCount", "leavingNodeCount", "vmPriority",
              "scaleSettings", "virtualMachineConfiguration", "imageReference", "publisher", "offer", "sku", "version",
              "mountSettings", "mountPoint", "fileServerPublicIP", "fileServerInternalIP", "executionState",
              "executionStateTransitionTime", "jobOutputDirectoryPathSegment", "toolType", "constraints",
              "maxWallClockTime", "cachingType", "value", "nodeId", "ipAddress", "port", "display", "origin"}


def _requested(key_path: str, sent: str) -> bool:
    """Whether a documented key must be in our answer: the service sets it, or a request asked for it.
    (The examples document resources with a subnet, input directories, a started job... that their
    own requests do not ask for.)"""
    segments = [part.replace("[]", "") for part in key_path.split(".")[1:]]
    return all(part in SERVER_SET or part == "properties" or f'"{part}"' in sent for part in segments)


# The examples, in an order in which each finds what it needs: groups of setup, then reads, then deletes.
EXAMPLE_ORDER = ["PutWorkspace.json", "PatchWorkspace.json", "GetWorkspace.json", "ListWorkspace.json",
                 "ListWorkspaceByResourceGroup.json", "PutExperiment.json", "GetExperiment.json",
                 "ListExperimentByWorkspace.json", "PutFileServer.json", "GetFileServer.json",
                 "ListFileServerByWorkspace.json", "PutCluster.json", "GetCluster.json", "ListClusterByWorkspace.json",
                 "ClusterListRemoteLoginInfo.json", "PatchCluster.json", "PutJob.json", "GetJob.json",
                 "ListJobByExperiment.json", "JobListRemoteLoginInfo.json", "ListOutputFiles.json",
                 "TerminateJob.json", "ListOperation.json", "ListUsages.json", "DeleteJob.json",
                 "DeleteExperiment.json", "DeleteCluster.json", "DeleteFileServer.json", "DeleteWorkspace.json"]


def test_every_spec_example_is_accepted_and_answered_in_its_documented_shape(service, resources):
    listed = {p.name for p in EXAMPLES.glob("*.json")}
    assert listed == set(EXAMPLE_ORDER) | NOT_IN_THIS_API, "an example is neither replayed nor explained"
    resources.resource_groups.create_or_update("demo_resource_group", {"location": "eastus"})
    sent = ""  # every request body so far: documented keys of properties never requested may be absent
    with RawArm(service) as arm:
        for name in EXAMPLE_ORDER:
            example = json.loads((EXAMPLES / name).read_text())
            params = copy.deepcopy(example["parameters"])
            if name in EXAMPLE_ERRATA:
                EXAMPLE_ERRATA[name](params)
            method, path = _example_path(name, params)
            body = params.get("parameters")
            if body is not None:
                sent += json.dumps(body)
            answer = arm.request(method, service.endpoint + path, api_version=None, json=body)
            documented = {int(k): v for k, v in example["responses"].items()}
            assert answer.status_code in documented, (name, answer.status_code, answer.text[:400])
            doc_body = documented[answer.status_code].get("body")
            if answer.status_code == 202:
                assert "Location" in answer.headers and "Azure-AsyncOperation" in answer.headers, name
                poll = _wait(lambda: arm.request("GET", answer.headers["Azure-AsyncOperation"], api_version=None),
                             lambda r: r.json()["status"] != "InProgress", f"{name}: operation")
                assert poll.json()["status"] == "Succeeded", (name, poll.json())
                doc_body = documented.get(200, {}).get("body")
                if doc_body is not None and method == "PUT":
                    answer = arm.request("GET", service.endpoint + path, api_version=None)
            if doc_body is None or not answer.content:
                continue
            ours = answer.json()
            if name in NEVER_STARTED and ours == {"value": []}:
                continue
            if name in ("ListUsages.json", "ListOperation.json", "ListOutputFiles.json"):
                missing = _keys(doc_body) - _keys(ours)
            else:
                # Documented keys we answer with a value of our own must be there; optional ones the
                # example request did not set (subnet, fileServers, inputDirectories...) need not.
                missing = {k for k in _keys(doc_body) - _keys(ours) if _requested(k, sent)}
            assert not missing, (name, sorted(missing))
