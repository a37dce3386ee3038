"""File shares through Azure Resource Manager (``.../storageAccounts/{account}/fileServices/default/shares``),
driven by azure-mgmt-storage's ``file_shares`` and ``file_services``, and raw HTTPS for the wire shape of
the specification's examples and for what the client would not send. A share made through ARM is the
Files data plane's share and the other way round."""
from __future__ import annotations

import re

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.mgmt.storage.models import CorsRule, CorsRules, FileServiceProperties, FileShare

from files_support import Account, share_service
from raw_arm import RawArm
from service_support import SUBSCRIPTION

RG = "rg"
ACCOUNT = "shareacct"
ACCOUNT_ID = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RG}/providers/Microsoft.Storage/storageAccounts/{ACCOUNT}"
SHARES = ACCOUNT_ID + "/fileServices/default/shares"
SHARE_TYPE = "Microsoft.Storage/storageAccounts/fileServices/shares"
#: what the project's azure-mgmt-storage range (21.0.0 .. 25.3.0) and azure-cli 2.91.0 (share-rm) send
CLIENT_VERSIONS = ("2022-09-01", "2024-01-01", "2026-09-01")


@pytest.fixture
def account(service, resources, storage) -> Account:
    resources.resource_groups.create_or_update(RG, {"location": "eastus"})
    created = storage.storage_accounts.begin_create(
        RG, ACCOUNT, {"sku": {"name": "Standard_LRS"}, "kind": "StorageV2", "location": "eastus"}).result()
    key = storage.storage_accounts.list_keys(RG, ACCOUNT).keys_property[0].value
    return Account(ACCOUNT, key, created.id)


@pytest.fixture
def data_plane(service, account):
    return share_service(service, account)


@pytest.fixture
def raw(service):
    with RawArm(service) as arm:
        yield arm


# -- one share, two planes -----------------------------------------------------------------------

def test_a_share_created_through_arm_is_the_data_planes_share(storage, account, data_plane):
    created = storage.file_shares.create(RG, ACCOUNT, "arm-made", FileShare(
        share_quota=100, metadata={"Owner": "pipeline"}, access_tier="Cool"))
    assert created.id == f"{SHARES}/arm-made" and created.type == SHARE_TYPE
    assert (created.share_quota, created.metadata, created.access_tier) == (100, {"Owner": "pipeline"}, "Cool")
    assert created.enabled_protocols == "SMB" and created.etag.startswith('"0x')

    props = data_plane.get_share_client("arm-made").get_share_properties()
    assert (props.quota, props.metadata, props.access_tier) == (100, {"Owner": "pipeline"}, "Cool")
    assert props.protocols == ["SMB"] and props.etag == created.etag
    assert [s.name for s in data_plane.list_shares()] == ["arm-made"]

    # PATCH changes what it names, on both planes; the ETag moves.
    updated = storage.file_shares.update(RG, ACCOUNT, "arm-made", FileShare(share_quota=200, access_tier="Hot"))
    assert (updated.share_quota, updated.access_tier, updated.metadata) == (200, "Hot", {"Owner": "pipeline"})
    assert updated.etag != created.etag and updated.access_tier_change_time is not None
    props = data_plane.get_share_client("arm-made").get_share_properties()
    assert (props.quota, props.access_tier) == (200, "Hot")

    storage.file_shares.delete(RG, ACCOUNT, "arm-made")
    with pytest.raises(ResourceNotFoundError):
        data_plane.get_share_client("arm-made").get_share_properties()
    with pytest.raises(ResourceNotFoundError) as err:
        storage.file_shares.get(RG, ACCOUNT, "arm-made")
    assert err.value.error.code == "ShareNotFound"


def test_a_share_created_on_the_data_plane_is_seen_through_arm_with_its_usage(storage, account, data_plane):
    share = data_plane.create_share("data-made", quota=7, metadata={"stage": "raw"})
    share.get_directory_client("cifar").create_directory()
    share.get_file_client("cifar/train.bin").upload_file(b"x" * 5000)
    share.get_file_client("top.txt").upload_file(b"hello")

    got = storage.file_shares.get(RG, ACCOUNT, "data-made")
    assert (got.name, got.share_quota, got.metadata, got.access_tier) == ("data-made", 7, {"stage": "raw"},
                                                                          "TransactionOptimized")
    assert got.share_usage_bytes is None  # only with $expand=stats
    assert storage.file_shares.get(RG, ACCOUNT, "data-made", expand="stats").share_usage_bytes == 5005
    assert [s.name for s in storage.file_shares.list(RG, ACCOUNT)] == ["data-made"]

    # A metadata change on the data plane shows through ARM, and one through ARM on the data plane.
    share.set_share_metadata({"stage": "cooked"})
    assert storage.file_shares.get(RG, ACCOUNT, "data-made").metadata == {"stage": "cooked"}
    storage.file_shares.update(RG, ACCOUNT, "data-made", FileShare(metadata={"stage": "served"}))
    assert share.get_share_properties().metadata == {"stage": "served"}


def test_put_of_an_existing_share_answers_200_and_sets_what_it_names(raw, account, data_plane):
    data_plane.create_share("existing", quota=3)
    response = raw.request("PUT", f"{SHARES}/existing", api_version="2024-01-01",
                           json={"properties": {"shareQuota": 9}})
    assert response.status_code == 200, response.text
    assert response.json()["properties"]["shareQuota"] == 9
    assert data_plane.get_share_client("existing").get_share_properties().quota == 9


def test_list_pages_filters_and_expands(storage, account, data_plane):
    for name in ("alpha", "beta-1", "beta-2", "beta-3", "gamma"):
        data_plane.create_share(name)
    pages = list(storage.file_shares.list(RG, ACCOUNT, maxpagesize="2").by_page())
    assert [[s.name for s in page] for page in pages] == [["alpha", "beta-1"], ["beta-2", "beta-3"], ["gamma"]]
    assert [s.name for s in storage.file_shares.list(RG, ACCOUNT, filter="beta")] == ["beta-1", "beta-2", "beta-3"]
    # Nothing is soft-deleted and there are no snapshots: the live shares, as for an account that has none.
    assert len(list(storage.file_shares.list(RG, ACCOUNT, expand="deleted,snapshots"))) == 5


@pytest.mark.parametrize("api_version", CLIENT_VERSIONS)
def test_the_wire_shape_of_the_specification_examples(raw, account, api_version):
    # FileSharesPut.json: an empty body creates a share (201), a second PUT answers 200.
    first = raw.request("PUT", f"{SHARES}/share6185", api_version=api_version, json={})
    assert first.status_code == 201, first.text
    body = first.json()
    assert (body["id"], body["name"], body["type"]) == (f"{SHARES}/share6185", "share6185", SHARE_TYPE)
    assert re.fullmatch(r'"0x8[0-9A-F]{14}"', body["etag"])
    props = body["properties"]
    assert props["shareQuota"] == 5120 and props["accessTier"] == "TransactionOptimized"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", props["lastModifiedTime"])
    assert raw.request("PUT", f"{SHARES}/share6185", api_version=api_version, json={}).status_code == 200
    # FileSharesGet_Stats.json, FileSharesList.json
    stats = raw.request("GET", f"{SHARES}/share6185?$expand=stats", api_version=api_version).json()
    assert stats["properties"]["shareUsageBytes"] == 0
    listed = raw.request("GET", SHARES, api_version=api_version).json()
    assert [s["name"] for s in listed["value"]] == ["share6185"] and "nextLink" not in listed
    # FileSharesDelete.json: 200, then 204 for a share that is not there.
    assert raw.request("DELETE", f"{SHARES}/share6185", api_version=api_version).status_code == 200
    assert raw.request("DELETE", f"{SHARES}/share6185", api_version=api_version).status_code == 204


def test_a_version_from_before_file_services_is_refused(raw, account):
    response = raw.request("GET", SHARES, api_version="2018-11-01")
    assert response.status_code == 400 and response.json()["error"]["code"] == "InvalidApiVersionParameter"


# -- the file service -------------------------------------------------------------------------------

def test_file_service_properties_round_trip_and_soft_delete_is_refused(storage, account):
    service = storage.file_services.get_service_properties(RG, ACCOUNT)
    assert service.id == ACCOUNT_ID + "/fileServices/default" and service.name == "default"
    assert service.share_delete_retention_policy.enabled is False and service.sku.name == "Standard_LRS"
    rule = CorsRule(allowed_origins=["https://example.com"], allowed_methods=["GET"], max_age_in_seconds=100,
                    exposed_headers=["x-ms-meta-*"], allowed_headers=["*"])
    storage.file_services.set_service_properties(RG, ACCOUNT, FileServiceProperties(cors=CorsRules(cors_rules=[rule])))
    again = storage.file_services.get_service_properties(RG, ACCOUNT)
    assert again.cors.cors_rules[0].allowed_origins == ["https://example.com"]
    assert [s.name for s in storage.file_services.list(RG, ACCOUNT).value] == ["default"]

    from azure.mgmt.storage.models import DeleteRetentionPolicy
    with pytest.raises(HttpResponseError) as err:
        storage.file_services.set_service_properties(RG, ACCOUNT, FileServiceProperties(
            share_delete_retention_policy=DeleteRetentionPolicy(enabled=True, days=7)))
    assert err.value.status_code == 400 and err.value.error.code == "FeatureNotSupportedForAccount"


def test_deleting_the_account_takes_its_shares_and_file_service(storage, raw, account, data_plane):
    storage.file_shares.create(RG, ACCOUNT, "goes", FileShare())
    storage.file_services.set_service_properties(RG, ACCOUNT, FileServiceProperties(cors=CorsRules(cors_rules=[])))
    storage.storage_accounts.delete(RG, ACCOUNT)
    storage.storage_accounts.begin_create(
        RG, ACCOUNT, {"sku": {"name": "Standard_LRS"}, "kind": "StorageV2", "location": "eastus"}).result()
    assert list(storage.file_shares.list(RG, ACCOUNT)) == []
    assert raw.request("GET", ACCOUNT_ID + "/fileServices/default",
                       api_version="2024-01-01").json()["properties"]["cors"] == {"corsRules": []}


# -- NFS, tiers and bad input -----------------------------------------------------------------------

def test_nfs_shares_exist_on_premium_file_accounts_only(service, storage, account, data_plane):
    with pytest.raises(HttpResponseError) as err:
        storage.file_shares.create(RG, ACCOUNT, "nfs", FileShare(enabled_protocols="NFS"))
    assert err.value.status_code == 400 and err.value.error.code == "FeatureNotSupportedForAccount"
    assert list(data_plane.list_shares()) == []

    storage.storage_accounts.begin_create(
        RG, "premiumfiles", {"sku": {"name": "Premium_LRS"}, "kind": "FileStorage", "location": "eastus"}).result()
    nfs = storage.file_shares.create(RG, "premiumfiles", "nfs", FileShare(enabled_protocols="NFS", share_quota=100))
    assert (nfs.enabled_protocols, nfs.root_squash, nfs.access_tier) == ("NFS", "NoRootSquash", "Premium")
    squashed = storage.file_shares.update(RG, "premiumfiles", "nfs", FileShare(root_squash="AllSquash"))
    assert squashed.root_squash == "AllSquash"
    with pytest.raises(HttpResponseError) as err:
        storage.file_shares.update(RG, "premiumfiles", "nfs", FileShare(enabled_protocols="SMB"))
    assert err.value.error.code == "InvalidRequestPropertyValue"
    key = storage.storage_accounts.list_keys(RG, "premiumfiles").keys_property[0].value
    props = share_service(service, Account("premiumfiles", key, "")).get_share_client("nfs").get_share_properties()
    assert (props.protocols, props.root_squash, props.access_tier) == (["NFS"], "AllSquash", "Premium")


@pytest.mark.parametrize("body, code, target", [
    ({"properties": {"shareQuota": 0}}, "InvalidRequestPropertyValue", "properties.shareQuota"),
    ({"properties": {"shareQuota": 102401}}, "InvalidRequestPropertyValue", "properties.shareQuota"),
    ({"properties": {"accessTier": "Premium"}}, "InvalidRequestPropertyValue", "properties.accessTier"),
    ({"properties": {"accessTier": "Archive"}}, "InvalidRequestPropertyValue", "properties.accessTier"),
    ({"properties": {"rootSquash": "RootSquash"}}, "InvalidRequestPropertyValue", "properties.rootSquash"),
    ({"properties": {"metadata": {"n": 1}}}, "InvalidRequestPropertyValue", "properties.metadata"),
    ({"properties": {"metadata": {"not-an-identifier": "v"}}}, "InvalidRequestPropertyValue", "properties.metadata"),
    ({"properties": {"metadata": {"big": "x" * 9000}}}, "InvalidRequestPropertyValue", "properties.metadata"),
    ({"properties": {"signedIdentifiers": [{"id": "p1", "accessPolicy": {"permission": "r"}}]}},
     "InvalidRequestPropertyValue", "properties.signedIdentifiers"),
])
def test_bad_properties_are_refused_before_anything_is_created(raw, account, data_plane, body, code, target):
    response = raw.request("PUT", f"{SHARES}/refused", api_version="2024-01-01", json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["code"], error.get("target")) == (code, target)
    assert list(data_plane.list_shares()) == []


def test_bad_names_missing_shares_and_accounts(raw, account):
    bad = raw.request("PUT", f"{SHARES}/Bad_Name", api_version="2024-01-01", json={})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "InvalidResourceName"
    missing = raw.request("GET", f"{SHARES}/nothere", api_version="2024-01-01")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "ShareNotFound"
    patch = raw.request("PATCH", f"{SHARES}/nothere", api_version="2024-01-01", json={"properties": {}})
    assert patch.status_code == 404 and patch.json()["error"]["code"] == "ShareNotFound"
    no_account = raw.request("GET", SHARES.replace(ACCOUNT, "noaccount"), api_version="2024-01-01")
    assert no_account.status_code == 404 and no_account.json()["error"]["code"] == "ResourceNotFound"
    expand = raw.request("GET", f"{SHARES}/nothere?$expand=everything", api_version="2024-01-01")
    assert expand.status_code == 400 and expand.json()["error"]["code"] == "InvalidParameter"
    # `az storage share-rm snapshot` is a PUT with $expand=snapshots: there are no snapshots here.
    snapshot = raw.request("PUT", f"{SHARES}/snapped?$expand=snapshots", api_version="2024-01-01", json={})
    assert snapshot.status_code == 400 and snapshot.json()["error"]["code"] == "FeatureNotSupportedForAccount"
    assert raw.request("GET", f"{SHARES}/snapped", api_version="2024-01-01").status_code == 404
    # Deleting a snapshot (x-ms-snapshot) never deletes the share itself.
    assert raw.request("PUT", f"{SHARES}/kept", api_version="2024-01-01", json={}).status_code == 201
    gone_snapshot = raw.request("DELETE", f"{SHARES}/kept", api_version="2024-01-01",
                                headers={"x-ms-snapshot": "2024-01-01T00:00:00.0000000Z"})
    assert gone_snapshot.status_code == 204
    assert raw.request("GET", f"{SHARES}/kept", api_version="2024-01-01").status_code == 200


def test_tier_and_protocol_set_on_the_data_plane_are_arms_and_checked_alike(storage, account, data_plane):
    share = data_plane.create_share("tiered", access_tier="Hot")
    assert storage.file_shares.get(RG, ACCOUNT, "tiered").access_tier == "Hot"
    share.set_share_properties(access_tier="Cool")
    got = storage.file_shares.get(RG, ACCOUNT, "tiered")
    assert got.access_tier == "Cool" and got.access_tier_change_time is not None
    # Premium is a premium file account's tier, NFS its protocol: refused on StorageV2 on both planes.
    with pytest.raises(HttpResponseError) as err:
        data_plane.create_share("premium", access_tier="Premium")
    assert (err.value.status_code, err.value.error_code) == (400, "InvalidHeaderValue")
    with pytest.raises(HttpResponseError) as err:
        data_plane.create_share("nfs", protocols="NFS")
    assert (err.value.status_code, err.value.error_code) == (400, "InvalidHeaderValue")
    assert [s.name for s in storage.file_shares.list(RG, ACCOUNT)] == ["tiered"]
