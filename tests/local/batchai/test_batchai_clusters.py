"""Clusters through azure-mgmt-batchai's client: create (202 + LRO), the recorded body, PATCH resize and
auto-scale, remote login information, re-create conflicts, delete, and persistence across a restart."""
from __future__ import annotations

import time

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.mgmt.batchai import BatchAI
from azure.mgmt.batchai import models as m

from batchai_helpers import ACCOUNT_KEY, RG, WS, cluster_params, job_params, make_cluster, make_workspace, raw, ws_path
from service_support import FAST, SUBSCRIPTION, client_kwargs
from horovod_batchai.local import LocalService


def _wait(predicate, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_cluster_create_is_202_then_poll_then_the_recorded_body(resources, batchai):
    make_workspace(resources, batchai, experiment=None)
    path = ws_path() + "/clusters/cluster"
    body = {"properties": {"scaleSettings": {"manual": {"targetNodeCount": 1}},
                           "userAccountSettings": {"adminUserName": "DemoUser", "adminUserPassword": "DemoPa$$w0rd"},
                           "nodeSetup": {"mountVolumes": {"azureFileShares": [{
                               "azureFileUrl": "https://clitest000002.file.core.windows.net/share",
                               "relativeMountPath": "azfiles", "credentials": {"accountKey": ACCOUNT_KEY},
                               "directoryMode": "0777", "fileMode": "0777", "accountName": "clitest000002"}]}},
                           "vmSize": "STANDARD_D1"}}
    first = raw(batchai, "PUT", path, json=body)
    assert first.status_code == 202 and first.text() == ""
    poll = raw(batchai, "GET", first.headers["Azure-AsyncOperation"], api_version=None).json()
    assert poll["status"] == "Succeeded"
    assert poll["properties"]["resourceId"] == f"{SUBSCRIPTION}${RG}${WS}$cluster"
    cluster = raw(batchai, "GET", path).json()
    props = cluster["properties"]
    assert cluster["type"] == "Microsoft.BatchAI/workspaces/clusters" and "location" not in cluster
    assert list(props) == ["provisioningState", "allocationState", "creationTime", "allocationStateTransitionTime",
                           "provisioningStateTransitionTime", "vmSize", "currentNodeCount", "nodeStateCounts",
                           "vmPriority", "scaleSettings", "virtualMachineConfiguration", "userAccountSettings",
                           "nodeSetup"]
    assert props["provisioningState"] == "succeeded" and props["vmSize"] == "STANDARD_D1"
    assert props["vmPriority"] == "dedicated"
    assert props["scaleSettings"] == {"manual": {"targetNodeCount": 1, "nodeDeallocationOption": "requeue"}}
    assert props["virtualMachineConfiguration"] == {"imageReference": {
        "publisher": "Canonical", "offer": "UbuntuServer", "sku": "16.04-LTS", "version": "latest"}}
    assert props["userAccountSettings"] == {"adminUserName": "DemoUser"}  # no password echoed
    share = props["nodeSetup"]["mountVolumes"]["azureFileShares"][0]
    assert share["credentials"] == {} and list(share) == ["accountName", "azureFileUrl", "credentials",
                                                          "relativeMountPath", "fileMode", "directoryMode"]
    assert ACCOUNT_KEY not in first.text() + str(cluster) and "DemoPa$$w0rd" not in str(cluster)


def test_secrets_stay_private_in_the_store(service, resources, batchai):
    make_workspace(resources, batchai, experiment=None)
    cluster = make_cluster(batchai)
    private = service.context.store.get_private(cluster.id)
    assert private["mountKeys"] == {"clitest000002/share": ACCOUNT_KEY}
    assert private["adminUserPassword"] == "DemoPa$$w0rd"
    assert ACCOUNT_KEY not in str(service.context.store.get(cluster.id))


def test_cluster_reaches_steady_with_idle_nodes_and_lists_login_information(resources, batchai):
    make_workspace(resources, batchai, experiment=None)
    make_cluster(batchai, nodes=2, vm_size="Standard_NC6", mounts=False)
    cluster = _wait(lambda: (c := batchai.clusters.get(RG, WS, "cluster")).allocation_state == "steady"
                    and c.node_state_counts.idle_node_count == 2 and c, "a steady cluster of 2 idle nodes")
    assert cluster.current_node_count == 2
    logins = list(batchai.clusters.list_remote_login_information(RG, WS, "cluster"))
    assert [(x.ip_address, x.port) for x in logins] == [("127.0.0.1", 50000), ("127.0.0.1", 50001)]
    assert len({x.node_id for x in logins}) == 2
    assert [x.node_id for x in batchai.clusters.list_remote_login_information(RG, WS, "cluster")] == \
           [x.node_id for x in logins]  # stable
    assert [c.name for c in batchai.clusters.list_by_workspace(RG, WS)] == ["cluster"]


def test_patch_resizes_synchronously_and_validates(resources, batchai):
    make_workspace(resources, batchai, experiment=None)
    make_cluster(batchai, nodes=1, mounts=False)
    _wait(lambda: batchai.clusters.get(RG, WS, "cluster").allocation_state == "steady", "steady")
    resized = batchai.clusters.update(RG, WS, "cluster", m.ClusterUpdateParameters(scale_settings=m.ScaleSettings(
        manual=m.ManualScaleSettings(target_node_count=0, node_deallocation_option="requeue"))))
    # As recorded: the PATCH answer shows the cluster as it was; the scheduler resizes it afterwards.
    assert resized.allocation_state == "steady" and resized.current_node_count == 1
    assert resized.scale_settings.manual.target_node_count == 0
    _wait(lambda: (c := batchai.clusters.get(RG, WS, "cluster")).allocation_state == "steady"
          and c.current_node_count == 0, "scaled to zero")
    auto = batchai.clusters.update(RG, WS, "cluster", m.ClusterUpdateParameters(scale_settings=m.ScaleSettings(
        auto_scale=m.AutoScaleSettings(minimum_node_count=0, maximum_node_count=10))))
    assert auto.scale_settings.auto_scale.initial_node_count == 0 and auto.scale_settings.manual is None
    for bad, field in ((
            {"manual": {"targetNodeCount": 1}, "autoScale": {"minimumNodeCount": 0, "maximumNodeCount": 1}},
            "properties.scaleSettings"),
            ({"manual": {"targetNodeCount": -1}}, "properties.scaleSettings.manual.targetNodeCount"),
            ({"manual": {"targetNodeCount": 1, "nodeDeallocationOption": "later"}},
             "properties.scaleSettings.manual.nodeDeallocationOption"),
            ({"autoScale": {"minimumNodeCount": 5, "maximumNodeCount": 2}},
             "properties.scaleSettings.autoScale.minimumNodeCount")):
        answer = raw(batchai, "PATCH", ws_path() + "/clusters/cluster", json={"properties": {"scaleSettings": bad}})
        assert answer.status_code == 400, bad
        assert field in answer.json()["error"]["message"]
    assert batchai.clusters.get(RG, WS, "cluster").scale_settings.auto_scale.maximum_node_count == 10
    with pytest.raises(ResourceNotFoundError) as err:
        batchai.clusters.update(RG, WS, "nocluster", m.ClusterUpdateParameters())
    assert err.value.error.code == "ClusterNotFound"


@pytest.mark.parametrize("scale, field", [
    ({"manual": {"targetNodeCount": 10**12}}, "properties.scaleSettings.manual.targetNodeCount"),
    ({"autoScale": {"minimumNodeCount": 0, "maximumNodeCount": 10**20}},
     "properties.scaleSettings.autoScale.maximumNodeCount"),
])
def test_node_counts_past_the_local_limit_are_refused_not_provisioned(resources, batchai, scale, field):
    # Such a count once made the scheduler insert node rows without end, and the service stopped answering.
    make_workspace(resources, batchai, experiment=None)
    make_cluster(batchai, nodes=0, mounts=False)
    body = {"properties": {"vmSize": "STANDARD_D1", "scaleSettings": scale,
                           "userAccountSettings": {"adminUserName": "u", "adminUserPassword": "p"}}}
    for method, path, sent in (("PATCH", "cluster", {"properties": {"scaleSettings": scale}}), ("PUT", "big", body)):
        answer = raw(batchai, method, ws_path() + f"/clusters/{path}", json=sent)
        assert answer.status_code == 400, answer.text()
        message = answer.json()["error"]["message"]
        assert field in message and "between" in message and "at most 100" in message, message
    assert batchai.clusters.get(RG, WS, "cluster").scale_settings.manual.target_node_count == 0
    assert raw(batchai, "GET", ws_path() + "/clusters/big").status_code == 404


def test_recreate_same_settings_is_accepted_different_settings_conflict(resources, batchai):
    make_workspace(resources, batchai, experiment=None)
    first = make_cluster(batchai)
    again = make_cluster(batchai)
    assert again.creation_time == first.creation_time
    with pytest.raises(HttpResponseError) as err:
        make_cluster(batchai, vm_size="Standard_NC6")
    assert err.value.status_code == 409 and err.value.error.code == "ClusterAlreadyExists"
    assert "properties.vmSize" in err.value.error.message
    with pytest.raises(HttpResponseError) as err:
        batchai.clusters.begin_create(RG, WS, "cluster", cluster_params(user_account_settings=m.UserAccountSettings(
            admin_user_name="DemoUser", admin_user_password="Zq9-changed-pw"))).result()
    assert err.value.status_code == 409 and "Zq9-changed-pw" not in err.value.error.message
    assert "adminUserPassword" in err.value.error.message
    assert batchai.clusters.get(RG, WS, "cluster").vm_size == "STANDARD_D1"


def test_low_priority_and_auto_scale_and_blob_mounts_are_accepted(resources, batchai):
    make_workspace(resources, batchai, experiment=None)
    params = m.ClusterCreateParameters(
        vm_size="Standard_NC6", vm_priority="lowpriority",
        scale_settings=m.ScaleSettings(auto_scale=m.AutoScaleSettings(minimum_node_count=0, maximum_node_count=2)),
        user_account_settings=m.UserAccountSettings(admin_user_name="u", admin_user_ssh_public_key="ssh-rsa AAAA"),
        node_setup=m.NodeSetup(mount_volumes=m.MountVolumes(azure_blob_file_systems=[m.AzureBlobFileSystemReference(
            account_name="bai000002", container_name="batchaicontainer", relative_mount_path="autobfs",
            credentials=m.AzureStorageCredentialsInfo(account_key=ACCOUNT_KEY))])))
    cluster = batchai.clusters.begin_create(RG, WS, "auto", params).result()
    assert cluster.vm_priority == "lowpriority"
    assert cluster.user_account_settings.admin_user_ssh_public_key == "ssh-rsa AAAA"  # a public key is not secret
    blob = cluster.node_setup.mount_volumes.azure_blob_file_systems[0]
    assert blob.container_name == "batchaicontainer" and blob.credentials.account_key is None


def test_delete_refuses_while_jobs_run_then_succeeds(resources, batchai):
    make_workspace(resources, batchai)
    cluster = make_cluster(batchai, mounts=False)
    batchai.jobs.begin_create(RG, WS, "experiment", "sleeper", job_params(cluster.id, command="sleep 60")).result()
    _wait(lambda: batchai.jobs.get(RG, WS, "experiment", "sleeper").execution_state == "running", "a running job")
    with pytest.raises(HttpResponseError) as err:
        batchai.clusters.begin_delete(RG, WS, "cluster").result()
    assert err.value.status_code == 409 and "sleeper" in err.value.error.message
    batchai.jobs.begin_terminate(RG, WS, "experiment", "sleeper").result()
    assert batchai.jobs.get(RG, WS, "experiment", "sleeper").execution_state == "failed"
    batchai.clusters.begin_delete(RG, WS, "cluster").result()
    assert list(batchai.clusters.list_by_workspace(RG, WS)) == []
    assert raw(batchai, "DELETE", ws_path() + "/clusters/cluster").status_code == 204


def test_clusters_jobs_and_operations_survive_a_restart(tmp_path, resources, batchai, service):
    make_workspace(resources, batchai)
    cluster = make_cluster(batchai)
    batchai.jobs.begin_create(RG, WS, "experiment", "job", job_params(cluster.id, command="true")).result()
    started = raw(batchai, "PUT", ws_path() + "/clusters/second", json=cluster_params().serialize())
    operation_url = started.headers["Azure-AsyncOperation"]
    state_dir = service.state_dir
    service.stop()
    with LocalService(state_dir, settings=FAST) as again:
        with BatchAI(again.credential(), SUBSCRIPTION, **client_kwargs(again)) as client:
            assert {c.name for c in client.clusters.list_by_workspace(RG, WS)} == {"cluster", "second"}
            assert client.jobs.get(RG, WS, "experiment", "job").cluster.id == cluster.id
            path = operation_url.split("/subscriptions/", 1)[1]
            poll = raw(client, "GET", "/subscriptions/" + path, api_version=None)
            assert poll.status_code == 200 and poll.json()["status"] == "Succeeded"
    service.start()  # the fixture stops it again
