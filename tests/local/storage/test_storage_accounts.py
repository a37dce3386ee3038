"""Microsoft.Storage accounts on the local service, through azure-mgmt-storage's own client
(and raw HTTPS for the wire shape and for input the client would refuse to send)."""
from __future__ import annotations

import base64
import json
import re
import shutil
import threading

import pytest
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.mgmt.storage.models import KeyPermission

from service_support import SUBSCRIPTION, client_kwargs
from horovod_batchai.local.storage.accounts import account_keys
from raw_arm import STORAGE_VERSION, RawArm

OTHER_SUBSCRIPTION = "11111111-2222-3333-4444-555555555555"
ACCOUNTS = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts"
CREATE = {"sku": {"name": "Standard_LRS"}, "kind": "StorageV2", "location": "eastus"}


@pytest.fixture
def rg(resources):
    resources.resource_groups.create_or_update("rg", {"location": "eastus"})
    return "rg"


@pytest.fixture
def raw(service):
    with RawArm(service) as arm:
        yield arm


def _create(storage, name: str, group: str = "rg", **overrides):
    return storage.storage_accounts.begin_create(group, name, {**CREATE, **overrides}).result()


# -- create and read ------------------------------------------------------------------------------

def test_put_answers_202_with_a_monitor_location_that_answers_the_account(raw, rg, service):
    # The recorded request, verbatim (api-version 2018-07-01).
    response = raw.request("PUT", f"{ACCOUNTS}/clitest000002", api_version=STORAGE_VERSION,
                           json={"sku": {"name": "Standard_LRS"}, "kind": "Storage", "location": "northeurope",
                                 "properties": {"supportsHttpsTrafficOnly": False}})
    assert response.status_code == 202 and response.content == b""
    location = response.headers["Location"]
    assert re.fullmatch(re.escape(service.endpoint) + f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Storage/"
                        r"locations/northeurope/asyncoperations/[0-9a-f-]{36}\?monitor=true&api-version=2018-07-01",
                        location), location
    poll = raw.request("GET", location, api_version=None)
    assert poll.status_code == 200
    account = poll.json()
    assert account["id"] == f"{ACCOUNTS}/clitest000002"
    assert account["type"] == "Microsoft.Storage/storageAccounts"
    assert account["sku"] == {"name": "Standard_LRS", "tier": "Standard"}
    assert account["kind"] == "Storage" and account["location"] == "northeurope"
    props = account["properties"]
    assert props["provisioningState"] == "Succeeded"
    assert props["supportsHttpsTrafficOnly"] is False
    endpoints = props["primaryEndpoints"]
    assert endpoints["file"] == f"{service.endpoint}/clitest000002/"
    # The blob endpoint is Azurite's: path-style like the Files endpoint, on a port of its own
    # (without Node.js there is none, as for queue and table).
    assert set(endpoints) == ({"file", "blob"} if shutil.which("node") else {"file"})
    if "blob" in endpoints:
        assert re.fullmatch(r"https://127\.0\.0\.1:\d+/clitest000002/", endpoints["blob"])
        assert endpoints["blob"] != endpoints["file"]
    assert props["primaryLocation"] == "northeurope" and props["statusOfPrimary"] == "available"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z", props["creationTime"])


def test_begin_create_get_and_defaults(storage, rg, service):
    account = _create(storage, "acct1")
    assert account.provisioning_state == "Succeeded"
    assert account.primary_endpoints.file == f"{service.endpoint}/acct1/"
    assert account.access_tier == "Hot" and account.enable_https_traffic_only is True
    fetched = storage.storage_accounts.get_properties("rg", "acct1")
    assert fetched.id == account.id and fetched.creation_time == account.creation_time


def test_kind_defaults_to_storage_v2_and_enums_match_case_insensitively(raw, rg):
    response = raw.request("PUT", f"{ACCOUNTS}/acct1", api_version=STORAGE_VERSION,
                           json={"sku": {"name": "standard_grs"}, "location": "West Europe"})
    assert response.status_code == 202
    account = raw.request("GET", f"{ACCOUNTS}/acct1", api_version=STORAGE_VERSION).json()
    assert account["kind"] == "StorageV2"
    assert account["sku"] == {"name": "Standard_GRS", "tier": "Standard"}
    assert account["location"] == "westeurope"


def test_lists_by_group_and_by_subscription(service, storage, resources, rg):
    resources.resource_groups.create_or_update("rg2", {"location": "eastus"})
    _create(storage, "acct1")
    _create(storage, "acct2", group="rg2")
    from azure.mgmt.resource.resources import ResourceManagementClient
    from azure.mgmt.storage import StorageManagementClient
    with ResourceManagementClient(service.credential(), OTHER_SUBSCRIPTION, **client_kwargs(service)) as res2, \
            StorageManagementClient(service.credential(), OTHER_SUBSCRIPTION, **client_kwargs(service)) as st2:
        res2.resource_groups.create_or_update("rg", {"location": "eastus"})
        _create(st2, "elsewhere1")
        assert [a.name for a in st2.storage_accounts.list()] == ["elsewhere1"]
    assert [a.name for a in storage.storage_accounts.list_by_resource_group("rg")] == ["acct1"]
    assert [a.name for a in storage.storage_accounts.list_by_resource_group("rg2")] == ["acct2"]
    assert sorted(a.name for a in storage.storage_accounts.list()) == ["acct1", "acct2"]


def test_update_changes_tags_and_sku(storage, rg):
    _create(storage, "acct1", tags={"a": "1"})
    updated = storage.storage_accounts.update("rg", "acct1", {"tags": {"b": "2"}, "sku": {"name": "Standard_ZRS"}})
    assert updated.tags == {"b": "2"} and updated.sku.name == "Standard_ZRS"
    assert storage.storage_accounts.get_properties("rg", "acct1").tags == {"b": "2"}


def test_put_of_an_existing_own_account_updates_it_and_keeps_its_keys(raw, storage, rg):
    _create(storage, "acct1")
    keys_before = [k.value for k in storage.storage_accounts.list_keys("rg", "acct1").keys_property]
    response = raw.request("PUT", f"{ACCOUNTS}/acct1", api_version=STORAGE_VERSION,
                           json={**CREATE, "sku": {"name": "Standard_RAGRS"}, "tags": {"x": "y"}})
    assert response.status_code == 200
    assert response.json()["sku"]["name"] == "Standard_RAGRS" and response.json()["tags"] == {"x": "y"}
    assert [k.value for k in storage.storage_accounts.list_keys("rg", "acct1").keys_property] == keys_before


# -- keys -----------------------------------------------------------------------------------------

def test_list_keys_gives_two_random_full_keys_kept_where_the_data_plane_reads_them(service, storage, rg):
    _create(storage, "acct1")
    _create(storage, "acct2")
    result = storage.storage_accounts.list_keys("rg", "acct1")
    keys = result.keys_property
    assert [k.key_name for k in keys] == ["key1", "key2"]
    # "FULL" as recorded (and as Azure still answers); the client's enum spells it "Full" and is
    # case-insensitive by name, which is how callers should compare it.
    assert all(k.permissions == "FULL" and KeyPermission[k.permissions] is KeyPermission.FULL for k in keys)
    assert all(len(base64.b64decode(k.value)) == 64 for k in keys)
    values = [k.value for k in keys]
    other = [k.value for k in storage.storage_accounts.list_keys("rg", "acct2").keys_property]
    assert len(set(values + other)) == 4
    assert [k.value for k in storage.storage_accounts.list_keys("rg", "acct1").keys_property] == values
    assert account_keys(service.context.store, "acct1") == values


def test_regenerate_key_replaces_only_the_named_key(service, storage, rg):
    _create(storage, "acct1")
    key1, key2 = (k.value for k in storage.storage_accounts.list_keys("rg", "acct1").keys_property)
    answer = storage.storage_accounts.regenerate_key("rg", "acct1", {"keyName": "key1"})
    new1, same2 = (k.value for k in answer.keys_property)
    assert new1 != key1 and same2 == key2
    assert [k.value for k in storage.storage_accounts.list_keys("rg", "acct1").keys_property] == [new1, key2]
    assert account_keys(service.context.store, "acct1") == [new1, key2]  # the data plane sees it at once
    storage.storage_accounts.regenerate_key("rg", "acct1", {"keyName": "key2"})
    assert account_keys(service.context.store, "acct1")[1] != key2


def test_regenerate_key_refuses_unknown_key_names(raw, storage, rg):
    _create(storage, "acct1")
    before = [k.value for k in storage.storage_accounts.list_keys("rg", "acct1").keys_property]
    for body in ({"keyName": "key3"}, {"keyName": 1}, {}):
        response = raw.request("POST", f"{ACCOUNTS}/acct1/regenerateKey", api_version=STORAGE_VERSION, json=body)
        assert response.status_code == 400
        assert "key1, key2" in response.json()["error"]["message"]
    assert [k.value for k in storage.storage_accounts.list_keys("rg", "acct1").keys_property] == before


def test_keys_never_appear_in_account_documents(raw, storage, rg):
    _create(storage, "acct1")
    values = [k.value for k in storage.storage_accounts.list_keys("rg", "acct1").keys_property]
    answers = [raw.request("GET", f"{ACCOUNTS}/acct1", api_version=STORAGE_VERSION).text,
               raw.request("GET", ACCOUNTS, api_version=STORAGE_VERSION).text,
               raw.request("GET", f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Storage/storageAccounts",
                           api_version=STORAGE_VERSION).text]
    for text in answers:
        assert not any(v in text for v in values)


# -- names ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, available, reason", [
    ("fresh123", True, None),
    ("ab", False, "AccountNameInvalid"),
    ("a" * 25, False, "AccountNameInvalid"),
    ("UpperCase", False, "AccountNameInvalid"),
    ("with-dash", False, "AccountNameInvalid"),
    ("taken1", False, "AlreadyExists"),
])
def test_check_name_availability(storage, rg, name, available, reason):
    _create(storage, "taken1")
    result = storage.storage_accounts.check_name_availability(
        {"name": name, "type": "Microsoft.Storage/storageAccounts"})
    assert result.name_available is available
    assert result.reason == reason
    if not available:
        assert name in result.message


def test_names_are_global_across_groups_and_subscriptions(service, storage, resources, rg):
    resources.resource_groups.create_or_update("rg2", {"location": "eastus"})
    _create(storage, "shared1")
    with pytest.raises(ResourceExistsError) as err:
        _create(storage, "shared1", group="rg2")
    assert err.value.error.code == "StorageAccountAlreadyTaken"
    from azure.mgmt.resource.resources import ResourceManagementClient
    from azure.mgmt.storage import StorageManagementClient
    with ResourceManagementClient(service.credential(), OTHER_SUBSCRIPTION, **client_kwargs(service)) as res2, \
            StorageManagementClient(service.credential(), OTHER_SUBSCRIPTION, **client_kwargs(service)) as st2:
        res2.resource_groups.create_or_update("rg", {"location": "eastus"})
        with pytest.raises(ResourceExistsError):
            _create(st2, "shared1")
    assert [a.id for a in storage.storage_accounts.list()] == [f"{ACCOUNTS}/shared1"]


def test_concurrent_creates_of_one_name_in_two_groups_leave_one_owner(storage, resources, rg):
    resources.resource_groups.create_or_update("rg2", {"location": "eastus"})
    outcomes: list[str] = []

    def create(group: str) -> None:
        try:
            _create(storage, "race1", group=group)
            outcomes.append("created")
        except ResourceExistsError:
            outcomes.append("taken")

    threads = [threading.Thread(target=create, args=(g,)) for g in ("rg", "rg2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(outcomes) == ["created", "taken"]
    assert len(list(storage.storage_accounts.list())) == 1


@pytest.mark.parametrize("name, body, status, code, mentions", [
    ("ab", CREATE, 400, "AccountNameInvalid", "between 3 and 24"),
    ("Upper1", CREATE, 400, "AccountNameInvalid", "lower-case"),
    ("newline1%0A", CREATE, 400, "AccountNameInvalid", "lower-case"),
    ("acct1", {**CREATE, "sku": {"name": "Gold_LRS"}}, 400, "InvalidRequestPropertyValue", "sku.name"),
    ("acct1", {**CREATE, "sku": None}, 400, "InvalidRequestContent", "'sku' is required"),
    ("acct1", {**CREATE, "sku": "Standard_LRS"}, 400, "InvalidRequestContent", "'sku' must be an object"),
    ("acct1", {**CREATE, "kind": "Tape"}, 400, "InvalidRequestPropertyValue", "StorageV2"),
    ("acct1", {**CREATE, "location": None}, 400, "LocationRequired", "location"),
    ("acct1", {**CREATE, "location": "moon"}, 400, "LocationNotAvailableForResourceGroup", "eastus"),
    ("acct1", {**CREATE, "tags": "a=b"}, 400, "InvalidRequestContent", "tags"),
    ("acct1", {**CREATE, "properties": {"supportsHttpsTrafficOnly": "yes"}}, 400, "InvalidRequestContent",
     "properties.supportsHttpsTrafficOnly"),
    ("acct1", {**CREATE, "properties": {"accessTier": "Lukewarm"}}, 400, "InvalidRequestPropertyValue", "Hot"),
])
def test_bad_input_gets_a_clear_error_and_stores_nothing(raw, storage, rg, name, body, status, code, mentions):
    response = raw.request("PUT", f"{ACCOUNTS}/{name}", api_version=STORAGE_VERSION, json=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code
    assert mentions in error["message"]
    assert list(storage.storage_accounts.list()) == []


def test_accounts_need_an_existing_group(storage, resources):
    with pytest.raises(ResourceNotFoundError) as err:
        _create(storage, "orphan1", group="nogroup")
    assert err.value.error.code == "ResourceGroupNotFound"
    with pytest.raises(ResourceNotFoundError):
        storage.storage_accounts.get_properties("nogroup", "orphan1")


def test_get_of_a_missing_account(storage, rg):
    with pytest.raises(ResourceNotFoundError) as err:
        storage.storage_accounts.get_properties("rg", "missing1")
    assert err.value.error.code == "ResourceNotFound"
    assert "missing1" in err.value.error.message


# -- delete ---------------------------------------------------------------------------------------

def test_delete_removes_the_account_its_keys_and_its_files(raw, service, storage, rg):
    _create(storage, "acct1")
    _create(storage, "acct2")
    share = service.context.files_root / "acct1" / "share"
    share.mkdir(parents=True)
    (share / "model.h5").write_bytes(b"\0" * 16)
    response = raw.request("DELETE", f"{ACCOUNTS}/acct1", api_version=STORAGE_VERSION)
    assert response.status_code == 200
    with pytest.raises(ResourceNotFoundError):
        storage.storage_accounts.get_properties("rg", "acct1")
    assert not (service.context.files_root / "acct1").exists()
    assert account_keys(service.context.store, "acct1") == []
    assert [a.name for a in storage.storage_accounts.list()] == ["acct2"]
    # Deleting again is not an error: 204, as Azure answers.
    assert raw.request("DELETE", f"{ACCOUNTS}/acct1", api_version=STORAGE_VERSION).status_code == 204
    storage.storage_accounts.delete("rg", "acct1")
    # The name is free again.
    assert storage.storage_accounts.check_name_availability(
        {"name": "acct1", "type": "Microsoft.Storage/storageAccounts"}).name_available is True


def test_the_account_endpoint_reaches_the_files_data_plane(service, storage, rg):
    from azure.storage.fileshare import ShareServiceClient
    account = _create(storage, "acct1")
    key = storage.storage_accounts.list_keys("rg", "acct1").keys_property[0].value
    files = ShareServiceClient(account.primary_endpoints.file,
                               credential={"account_name": "acct1", "account_key": key},
                               connection_verify=str(service.info.ca_cert))
    files.create_share("share").get_file_client("hello.txt").upload_file(b"hello\n")
    assert files.get_share_client("share").get_file_client("hello.txt").download_file().readall() == b"hello\n"
    # A regenerated key takes effect at once: the old key is refused.
    storage.storage_accounts.regenerate_key("rg", "acct1", {"keyName": "key1"})
    stale = ShareServiceClient(account.primary_endpoints.file,
                               credential={"account_name": "acct1", "account_key": key},
                               connection_verify=str(service.info.ca_cert))
    with pytest.raises(HttpResponseError) as err:
        stale.get_share_client("share").get_file_client("hello.txt").download_file().readall()
    assert err.value.status_code == 403


def test_async_operation_of_an_unknown_id_is_not_found(raw):
    response = raw.request("GET", f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Storage/locations/eastus/"
                                  "asyncoperations/00000000-1111-2222-3333-444444444444", api_version=STORAGE_VERSION)
    assert response.status_code == 404
    assert json.loads(response.text)["error"]["code"] == "ResourceNotFound"
