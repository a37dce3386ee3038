"""Conformance with the recorded 2018 service and with the spec's examples.

1. ``test_recording_replays_like_the_real_service`` replays every recording in
   ``shared/reference/recordings/`` against a fresh local service with :class:`RecordingReplay`
   (``recording_replay.py`` says what is adapted and what counts as a match) and reports, per
   recording, how many interactions matched (printed in the test summary). A recording passes when
   every interaction matches or differs only in the documented ``KNOWN_DIFFERENCES``.

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
from typing import Any

import pytest

from raw_arm import RawArm
from recording_replay import RecordingReplay, load

REFERENCE = Path(__file__).resolve().parents[4] / "shared" / "reference"
RECORDINGS = sorted((REFERENCE / "recordings").glob("*.json"))
EXAMPLES = REFERENCE / "batchai-api-2018-05-01" / "examples"

pytestmark = pytest.mark.skipif(not RECORDINGS, reason="shared/reference is not checked out beside the repo")

#: recording file name -> (matched, differing only in known ways, interactions), for the test summary.
CONFORMANCE: dict[str, tuple[int, int, int]] = {}


def _wait(fetch, done, what: str, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if done(value):
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.mark.parametrize("recording", RECORDINGS, ids=[p.stem for p in RECORDINGS])
def test_recording_replays_like_the_real_service(service, recording: Path):
    interactions = load(recording)
    with RawArm(service) as arm:
        outcomes = RecordingReplay(service, arm, interactions).run()
    matched = sum(o.matched for o in outcomes)
    known = sum(o.known_only for o in outcomes)
    CONFORMANCE[recording.name] = (matched, known, len(outcomes))
    assert matched + known == len(outcomes), "\n".join(str(o) for o in outcomes
                                                       if not o.matched and not o.known_only)


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
