"""Workspaces, experiments, the operations list and usages, through azure-mgmt-batchai's own client."""
from __future__ import annotations

import time

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.mgmt.batchai import models as m

from batchai_helpers import EXP, RG, WS, make_cluster, make_group, make_workspace, raw, ws_path
from service_support import SUBSCRIPTION


def _status(pipeline_response, deserialized, headers):
    return pipeline_response.http_response.status_code, deserialized


def test_workspace_put_answers_200_directly_in_the_recorded_shape(resources, batchai):
    make_group(resources)
    status, _ = batchai.workspaces._create_initial(RG, WS, m.WorkspaceCreateParameters(location="northeurope"),
                                                   cls=_status)
    assert status == 200  # as recorded: no 202 for workspaces
    body = raw(batchai, "GET", ws_path()).json()
    assert body["id"] == ws_path() and body["name"] == WS
    assert body["type"] == "Microsoft.BatchAI/workspaces"
    assert body["location"] == "northeurope"
    assert set(body["properties"]) == {"provisioningState", "provisioningStateTransitionTime", "creationTime"}
    assert body["properties"]["provisioningState"] == "succeeded"


def test_workspace_put_is_idempotent_and_keeps_its_creation_time(resources, batchai):
    make_workspace(resources, batchai, experiment=None)
    first = batchai.workspaces.get(RG, WS)
    again = batchai.workspaces.begin_create(RG, WS, m.WorkspaceCreateParameters(location="North Europe",
                                                                                tags={"a": "b"})).result()
    assert again.creation_time == first.creation_time
    assert again.tags == {"a": "b"}
    assert [w.name for w in batchai.workspaces.list_by_resource_group(RG)] == [WS]


def test_workspace_cannot_move_to_another_location(resources, batchai):
    make_workspace(resources, batchai, experiment=None)
    with pytest.raises(HttpResponseError) as err:
        batchai.workspaces.begin_create(RG, WS, m.WorkspaceCreateParameters(location="westeurope")).result()
    assert err.value.status_code == 409 and err.value.error.code == "InvalidResourceLocation"
    assert batchai.workspaces.get(RG, WS).location == "northeurope"


def test_workspace_lists_by_subscription_and_group_and_patch_sets_tags(resources, batchai):
    make_workspace(resources, batchai, experiment=None)
    make_workspace(resources, batchai, rg="other", ws="second", experiment=None)
    assert sorted(w.name for w in batchai.workspaces.list()) == ["second", WS]
    assert [w.name for w in batchai.workspaces.list_by_resource_group("other")] == ["second"]
    patched = batchai.workspaces.update(RG, WS, m.WorkspaceUpdateParameters(tags={"key1": "value1"}))
    assert patched.tags == {"key1": "value1"}
    assert batchai.workspaces.get(RG, WS).tags == {"key1": "value1"}


def test_lists_page_with_maxresults_and_next_link(resources, batchai):
    make_group(resources)
    for i in range(5):
        batchai.workspaces.begin_create(RG, f"ws{i}", m.WorkspaceCreateParameters(location="northeurope")).result()
    first = raw(batchai, "GET", f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.BatchAI/workspaces?maxresults=2")
    body = first.json()
    assert [w["name"] for w in body["value"]] == ["ws0", "ws1"] and "nextLink" in body
    # The client follows nextLink on its own.
    names = [w.name for w in batchai.workspaces.list(workspaces_list_options=m.WorkspacesListOptions(max_results=2))]
    assert names == [f"ws{i}" for i in range(5)]


def test_missing_group_and_workspace_answer_their_404_codes(resources, batchai):
    with pytest.raises(ResourceNotFoundError) as err:
        batchai.workspaces.get("nogroup", WS)
    assert err.value.error.code == "ResourceGroupNotFound"
    make_group(resources)
    with pytest.raises(ResourceNotFoundError) as err:
        batchai.workspaces.get(RG, "nows")
    assert err.value.error.code == "WorkspaceNotFound"
    assert "nows" in err.value.error.message
    with pytest.raises(ResourceNotFoundError) as err:
        batchai.experiments.get(RG, "nows", EXP)
    assert err.value.error.code == "WorkspaceNotFound"


def test_workspace_delete_is_a_long_running_operation_and_removes_everything_inside(resources, batchai):
    make_workspace(resources, batchai)
    make_cluster(batchai)
    first = raw(batchai, "DELETE", ws_path())
    assert first.status_code == 202 and first.text() == ""
    async_url, location = first.headers["Azure-AsyncOperation"], first.headers["Location"]
    assert "/providers/Microsoft.BatchAI/locations/northeurope/operationresults/" in async_url
    assert "/operationstatuses/" in location and location.endswith("?api-version=2018-05-01")
    poll = raw(batchai, "GET", async_url, api_version=None).json()
    assert poll["status"] == "Succeeded" and poll["name"] in async_url
    assert poll["properties"]["resourceId"] == f"{SUBSCRIPTION}${RG}${WS}"
    assert set(poll) == {"id", "name", "status", "startTime", "endTime", "properties"}
    assert raw(batchai, "GET", location, api_version=None).status_code == 200
    with pytest.raises(ResourceNotFoundError):
        batchai.workspaces.get(RG, WS)
    assert list(batchai.workspaces.list()) == []
    # Deleting what is already gone succeeds (204), as ARM's DELETE does.
    assert raw(batchai, "DELETE", ws_path()).status_code == 204
    batchai.workspaces.begin_delete(RG, WS).result()


def test_experiments_create_list_get_delete(resources, batchai):
    make_workspace(resources, batchai, experiment=None)
    status, _ = batchai.experiments._create_initial(RG, WS, EXP, cls=_status)
    assert status == 200
    exp = batchai.experiments.get(RG, WS, EXP)
    assert exp.type == "Microsoft.BatchAI/workspaces/experiments" and exp.provisioning_state == "succeeded"
    again = batchai.experiments.begin_create(RG, WS, EXP).result()
    assert again.creation_time == exp.creation_time
    assert [e.name for e in batchai.experiments.list_by_workspace(RG, WS)] == [EXP]
    with pytest.raises(ResourceNotFoundError) as err:
        batchai.experiments.get(RG, WS, "other")
    assert err.value.error.code == "ExperimentNotFound"
    batchai.experiments.begin_delete(RG, WS, EXP).result()
    assert list(batchai.experiments.list_by_workspace(RG, WS)) == []


def test_experiment_delete_deletes_its_jobs(resources, batchai):
    make_workspace(resources, batchai)
    cluster = make_cluster(batchai)
    from batchai_helpers import job_params
    batchai.jobs.begin_create(RG, WS, EXP, "job", job_params(cluster.id)).result()
    batchai.experiments.begin_delete(RG, WS, EXP).result()
    batchai.experiments.begin_create(RG, WS, EXP).result()
    assert list(batchai.jobs.list_by_experiment(RG, WS, EXP)) == []


def test_operations_list_names_every_resource_type(batchai):
    names = {op.name for op in batchai.operations.list()}
    for resource in ("workspaces", "workspaces/experiments", "workspaces/experiments/jobs", "workspaces/clusters",
                     "workspaces/fileservers"):
        assert f"Microsoft.BatchAI/{resource}/read" in names
    assert "Microsoft.BatchAI/workspaces/experiments/jobs/terminate/action" in names
    first = next(iter(batchai.operations.list()))
    assert first.display.provider == "Microsoft Batch AI" and first.origin == "user,system"


def test_usages_count_clusters_and_their_allocated_vcpus(resources, batchai):
    make_workspace(resources, batchai, experiment=None)
    before = {u.name.value: u for u in batchai.usages.list("northeurope")}
    assert before["Clusters"].current_value == 0 and before["Clusters"].unit == "Count"
    make_cluster(batchai, "gpu", nodes=2, vm_size="Standard_NC6")
    deadline = time.monotonic() + 60
    while batchai.clusters.get(RG, WS, "gpu").current_node_count < 2:
        assert time.monotonic() < deadline, "the cluster never got its 2 nodes"
        time.sleep(0.2)
    usages = {u.name.value: u for u in batchai.usages.list("northeurope")}
    assert usages["Clusters"].current_value == 1
    assert usages["Standard NC Family Cluster Dedicated vCPUs"].current_value == 12  # 2 nodes x 6 vCPUs
    assert usages["Total Cluster Dedicated Regional vCPUs"].current_value == 12
    assert usages["Total Cluster LowPriority Regional vCPUs"].current_value == 0
    # Another region sees none of it.
    elsewhere = {u.name.value: u for u in batchai.usages.list("westus")}
    assert elsewhere["Clusters"].current_value == 0
