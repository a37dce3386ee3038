"""Microsoft.Resources resource groups on the local service, through azure-mgmt-resource's own client
(and raw HTTPS where the client would refuse to send the bad input under test)."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

from service_support import FAST, SUBSCRIPTION, client_kwargs
from horovod_batchai.local import LocalService
from raw_arm import RawArm

OTHER_SUBSCRIPTION = "11111111-2222-3333-4444-555555555555"
RG_PATH = f"/subscriptions/{SUBSCRIPTION}/resourcegroups"


def _status(pipeline_response, deserialized, headers):
    """``cls=`` hook: what the client got, with the HTTP status it came with."""
    return pipeline_response.http_response.status_code, deserialized


@pytest.fixture
def raw(service):
    with RawArm(service) as arm:
        yield arm


def _wait_gone(resources, name: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while resources.resource_groups.check_existence(name):
        assert time.monotonic() < deadline, f"resource group {name} still exists after {timeout}s"
        time.sleep(0.1)


# -- create, read, update -----------------------------------------------------------------------

def test_create_answers_201_then_200_on_update_with_the_recorded_shape(resources):
    status, group = resources.resource_groups.create_or_update(
        "clitest.rg000001", {"location": "northeurope", "tags": {"cause": "automation"}}, cls=_status)
    assert status == 201
    assert group.id == f"/subscriptions/{SUBSCRIPTION}/resourceGroups/clitest.rg000001"
    assert (group.name, group.location, group.tags) == ("clitest.rg000001", "northeurope", {"cause": "automation"})
    assert group.properties.provisioning_state == "Succeeded"

    status, again = resources.resource_groups.create_or_update("clitest.rg000001", {"location": "northeurope"},
                                                               cls=_status)
    assert status == 200
    assert again.id == group.id and again.tags is None  # a PUT replaces the tags as a whole


def test_get_is_case_insensitive_and_keeps_the_created_casing(resources):
    resources.resource_groups.create_or_update("MyGroup", {"location": "westeurope"})
    group = resources.resource_groups.get("mygroup")
    assert group.name == "MyGroup"
    assert group.id.endswith("/resourceGroups/MyGroup")


def test_display_name_locations_are_normalised(resources):
    group = resources.resource_groups.create_or_update("rg", {"location": "East US"})
    assert group.location == "eastus"


def test_head_answers_204_or_404(resources, raw):
    resources.resource_groups.create_or_update("exists", {"location": "eastus"})
    assert resources.resource_groups.check_existence("exists") is True
    assert resources.resource_groups.check_existence("missing") is False
    assert raw.request("HEAD", f"{RG_PATH}/exists").status_code == 204
    assert raw.request("HEAD", f"{RG_PATH}/missing").status_code == 404


def test_get_of_a_missing_group_is_resource_group_not_found(resources):
    with pytest.raises(ResourceNotFoundError) as err:
        resources.resource_groups.get("nope")
    assert err.value.error.code == "ResourceGroupNotFound"
    assert "'nope'" in err.value.error.message


def test_list_shows_the_subscriptions_groups_only(service, resources):
    resources.resource_groups.create_or_update("a", {"location": "eastus"})
    resources.resource_groups.create_or_update("b", {"location": "westus"})
    from azure.mgmt.resource.resources import ResourceManagementClient
    with ResourceManagementClient(service.credential(), OTHER_SUBSCRIPTION, **client_kwargs(service)) as other:
        other.resource_groups.create_or_update("c", {"location": "eastus"})
        assert [g.name for g in other.resource_groups.list()] == ["c"]
    assert sorted(g.name for g in resources.resource_groups.list()) == ["a", "b"]


def test_patch_replaces_tags_and_keeps_the_rest(resources):
    resources.resource_groups.create_or_update("rg", {"location": "eastus", "tags": {"a": "1"}})
    updated = resources.resource_groups.update("rg", {"tags": {"b": "2"}})
    assert updated.tags == {"b": "2"} and updated.location == "eastus"
    assert resources.resource_groups.get("rg").tags == {"b": "2"}


# -- bad input: proper status and code, nothing stored changes ---------------------------------

def test_moving_a_group_to_another_location_is_refused(resources):
    resources.resource_groups.create_or_update("rg", {"location": "eastus", "tags": {"keep": "me"}})
    with pytest.raises(HttpResponseError) as err:
        resources.resource_groups.create_or_update("rg", {"location": "westus"})
    assert err.value.status_code == 409
    assert err.value.error.code == "InvalidResourceGroupLocation"
    group = resources.resource_groups.get("rg")
    assert (group.location, group.tags) == ("eastus", {"keep": "me"})


# "%0A": a trailing newline once slipped past the pattern's "$".
@pytest.mark.parametrize("name", ["bad name", "ends.with.dot.", "x" * 91, "semi;colon", "trailing%0A"])
def test_invalid_names_are_refused_naming_the_rule(raw, resources, name):
    response = raw.request("PUT", f"{RG_PATH}/{name}", json={"location": "eastus"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "InvalidResourceGroup"
    assert "1 to 90 characters" in error["message"]
    assert list(resources.resource_groups.list()) == []


@pytest.mark.parametrize("body, status, code, mentions", [
    ({}, 400, "LocationRequired", "location"),
    ({"location": "atlantis"}, 400, "LocationNotAvailableForResourceGroup", "eastus"),
    ({"location": 5}, 400, "InvalidRequestContent", "location"),
    ({"location": "eastus", "tags": ["a"]}, 400, "InvalidRequestContent", "tags"),
    ({"location": "eastus", "tags": {"a": 1}}, 400, "InvalidRequestContent", "tag 'a'"),
    ({"location": "eastus", "tags": {f"t{i}": "v" for i in range(51)}}, 400, "InvalidTagCount", "50"),
    ([1, 2], 400, "InvalidRequestContent", "JSON object"),
])
def test_bad_bodies_get_a_clear_error_and_store_nothing(raw, resources, body, status, code, mentions):
    response = raw.request("PUT", f"{RG_PATH}/rg", json=body)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code
    assert mentions in error["message"]
    assert resources.resource_groups.check_existence("rg") is False


def test_malformed_subscription_ids_are_refused(raw):
    response = raw.request("GET", "/subscriptions/not-a-guid/resourcegroups/rg")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "InvalidSubscriptionId"


def test_a_subscription_id_with_a_trailing_newline_is_refused(raw):
    response = raw.request("PUT", f"/subscriptions/{SUBSCRIPTION}%0A/resourcegroups/rg", json={"location": "eastus"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "InvalidSubscriptionId"
    assert raw.request("GET", f"{RG_PATH}").json()["value"] == []


# -- delete ---------------------------------------------------------------------------------------

def test_delete_answers_202_with_a_location_that_reports_until_gone(raw, resources):
    resources.resource_groups.create_or_update("rg", {"location": "northeurope"})
    response = raw.request("DELETE", f"{RG_PATH}/rg")
    assert response.status_code == 202
    location = response.headers["Location"]
    assert location.startswith(f"{raw.endpoint}/subscriptions/{SUBSCRIPTION}/operationresults/")
    assert "api-version=2018-05-01" in location
    assert int(response.headers["Retry-After"]) >= 1
    deadline = time.monotonic() + 30
    while True:
        poll = raw.request("GET", location, api_version=None)  # the Location carries its api-version
        assert poll.status_code in (200, 202)
        if poll.status_code == 200:
            break
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert resources.resource_groups.check_existence("rg") is False


def test_begin_delete_through_the_client_and_delete_of_a_missing_group(resources):
    resources.resource_groups.create_or_update("rg", {"location": "eastus"})
    resources.resource_groups.begin_delete("rg", polling_interval=0.1).result(timeout=60)
    assert resources.resource_groups.check_existence("rg") is False
    with pytest.raises(ResourceNotFoundError):
        resources.resource_groups.begin_delete("rg", polling_interval=0.1)


def test_delete_removes_storage_accounts_their_files_and_other_documents(service, resources, storage):
    resources.resource_groups.create_or_update("rg", {"location": "eastus"})
    resources.resource_groups.create_or_update("kept", {"location": "eastus"})
    for group, account in (("rg", "doomed1"), ("kept", "survivor1")):
        storage.storage_accounts.begin_create(group, account, {"sku": {"name": "Standard_LRS"}, "kind": "StorageV2",
                                                               "location": "eastus"}).result()
        # A share's contents are ordinary files under the files root (see files_store).
        share = service.context.files_root / account / "share"
        (share / "dir").mkdir(parents=True)
        (share / "dir" / "train.py").write_text("print('hi')\n")
    # A workspace document with a child, as BATCHAI stores them, must go with the group.
    workspace_id = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg/providers/Microsoft.BatchAI/workspaces/ws"
    group_id = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg"
    service.context.store.put(workspace_id, "microsoft.batchai/workspaces", group_id,
                              {"id": workspace_id, "name": "ws", "properties": {"provisioningState": "succeeded"}})
    service.context.store.put(workspace_id + "/experiments/exp", "microsoft.batchai/workspaces/experiments",
                              workspace_id, {"id": workspace_id + "/experiments/exp", "name": "exp"})

    resources.resource_groups.begin_delete("rg", polling_interval=0.1).result(timeout=60)

    assert resources.resource_groups.check_existence("rg") is False
    assert [a.name for a in storage.storage_accounts.list()] == ["survivor1"]
    assert not (service.context.files_root / "doomed1").exists()
    assert (service.context.files_root / "survivor1" / "share" / "dir" / "train.py").exists()
    assert service.context.store.list_under(group_id) == []
    with pytest.raises(ResourceNotFoundError):
        storage.storage_accounts.get_properties("rg", "doomed1")


def test_a_failed_teardown_is_reported_and_the_group_stays_usable(service, resources, storage, monkeypatch):
    from horovod_batchai.local.storage import api as storage_api

    resources.resource_groups.create_or_update("rg", {"location": "eastus"})
    storage.storage_accounts.begin_create("rg", "stuck1", {"sku": {"name": "Standard_LRS"}, "kind": "StorageV2",
                                                           "location": "eastus"}).result()

    def refuse(context, account):  # a data-plane cleanup that fails, e.g. a file held open elsewhere
        raise PermissionError("share directory is busy")

    monkeypatch.setattr(storage_api, "delete_account", refuse)
    with pytest.raises(HttpResponseError) as err:
        resources.resource_groups.begin_delete("rg", polling_interval=0.1).result(timeout=60)
    assert err.value.error.code == "ResourceGroupDeletionBlocked"
    assert "busy" not in err.value.error.message  # the reason's class, never raw exception text
    group = resources.resource_groups.get("rg")
    assert group.properties.provisioning_state == "Succeeded"
    assert storage.storage_accounts.get_properties("rg", "stuck1").name == "stuck1"

    monkeypatch.undo()
    resources.resource_groups.begin_delete("rg", polling_interval=0.1).result(timeout=60)
    assert resources.resource_groups.check_existence("rg") is False


def test_a_deletion_interrupted_by_a_restart_finishes_when_the_service_starts(tmp_path: Path):
    from azure.mgmt.resource.resources import ResourceManagementClient

    state = tmp_path / "state"
    group_id = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg"
    with LocalService(state, settings=FAST) as svc:
        with ResourceManagementClient(svc.credential(), SUBSCRIPTION, **client_kwargs(svc)) as resources:
            resources.resource_groups.create_or_update("rg", {"location": "eastus"})
        # What a service killed mid-teardown leaves behind: the group marked Deleting.
        svc.context.store.update(group_id, lambda b: b["properties"].update(provisioningState="Deleting"))
    with LocalService(state, settings=FAST) as svc:
        with ResourceManagementClient(svc.credential(), SUBSCRIPTION, **client_kwargs(svc)) as resources:
            _wait_gone(resources, "rg")


def test_writes_into_a_group_being_deleted_are_refused(service, raw, resources):
    resources.resource_groups.create_or_update("rg", {"location": "eastus"})
    group_id = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg"
    # Hold the group in Deleting without a teardown thread (as between a restart and the resume).
    service.context.store.update(group_id, lambda b: b["properties"].update(provisioningState="Deleting"))
    assert resources.resource_groups.get("rg").properties.provisioning_state == "Deleting"
    response = raw.request("PUT", f"{RG_PATH}/rg", json={"location": "eastus"})
    assert response.status_code == 409 and response.json()["error"]["code"] == "ResourceGroupBeingDeleted"
    response = raw.request("PUT", f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg/providers/Microsoft.Storage/"
                                  "storageAccounts/acct1", api_version="2018-07-01",
                           json={"sku": {"name": "Standard_LRS"}, "kind": "StorageV2", "location": "eastus"})
    assert response.status_code == 409 and response.json()["error"]["code"] == "ResourceGroupBeingDeleted"


# -- the whole tree: workspace, cluster, running job, storage account, share with files ---------

def test_delete_stops_running_jobs_and_removes_the_whole_tree(service, resources, storage, batchai):
    from azure.mgmt.batchai import models as bm
    from azure.storage.fileshare import ShareServiceClient

    resources.resource_groups.create_or_update("rg", {"location": "eastus"})
    account = storage.storage_accounts.begin_create(
        "rg", "treeacct1", {"sku": {"name": "Standard_LRS"}, "kind": "StorageV2", "location": "eastus"}).result()
    key = storage.storage_accounts.list_keys("rg", "treeacct1").keys_property[0].value
    files = ShareServiceClient(account.primary_endpoints.file, credential={"account_name": "treeacct1",
                                                                          "account_key": key},
                               connection_verify=str(service.info.ca_cert))
    share = files.create_share("share")
    share.get_file_client("input.txt").upload_file(b"some data\n")

    batchai.workspaces.begin_create("rg", "ws", bm.WorkspaceCreateParameters(location="eastus")).result()
    batchai.experiments.begin_create("rg", "ws", "exp").result()
    batchai.clusters.begin_create("rg", "ws", "cluster", bm.ClusterCreateParameters(
        vm_size="STANDARD_D1",
        scale_settings=bm.ScaleSettings(manual=bm.ManualScaleSettings(target_node_count=1)),
        user_account_settings=bm.UserAccountSettings(admin_user_name="demo", admin_user_password="Local-Only-1"),
    )).result()
    # The Azure form of the share URL, as job.json files write it; the local service maps it to the share.
    afs = bm.AzureFileShareReference(account_name="treeacct1",
                                     azure_file_url="https://treeacct1.file.core.windows.net/share",
                                     credentials=bm.AzureStorageCredentialsInfo(account_key=key),
                                     relative_mount_path="afs")
    cluster_id = batchai.clusters.get("rg", "ws", "cluster").id
    batchai.jobs.begin_create("rg", "ws", "exp", "job", bm.JobCreateParameters(
        cluster=bm.ResourceId(id=cluster_id), node_count=1,
        std_out_err_path_prefix="$AZ_BATCHAI_JOB_MOUNT_ROOT/afs",
        mount_volumes=bm.MountVolumes(azure_file_shares=[afs]),
        custom_toolkit_settings=bm.CustomToolkitSettings(
            command_line="echo $$ > $AZ_BATCHAI_JOB_MOUNT_ROOT/afs/job.pid && exec sleep 600"),
    )).result()

    pid_file = service.context.files_root / "treeacct1" / "share" / "job.pid"
    deadline = time.monotonic() + 120
    while not (pid_file.exists() and pid_file.read_text().strip()):
        state = batchai.jobs.get("rg", "ws", "exp", "job").execution_state
        assert state in ("queued", "running"), f"job ended early: {state}"
        assert time.monotonic() < deadline, "the job did not start within 120 s"
        time.sleep(0.2)
    pid = int(pid_file.read_text())

    resources.resource_groups.begin_delete("rg", polling_interval=0.2).result(timeout=120)

    assert resources.resource_groups.check_existence("rg") is False
    with pytest.raises(ResourceNotFoundError):
        batchai.workspaces.get("rg", "ws")
    with pytest.raises(ResourceNotFoundError):
        storage.storage_accounts.get_properties("rg", "treeacct1")
    assert not (service.context.files_root / "treeacct1").exists()
    assert _process_gone(pid), f"job process {pid} still runs after its resource group was deleted"


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie waiting for its parent to reap it no longer runs
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True
