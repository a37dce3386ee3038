"""Every published api-version of each served resource type is accepted, as ARM does, and answered in
that version's shape where the shapes differ; versions nobody published are refused, listing the
ones that are. (Whole Microsoft clients at each end of setup.py's ranges: tests/client_versions.)"""
from __future__ import annotations

import time

import pytest
import requests

from horovod_batchai.local import LocalService
from horovod_batchai.local.core.api_versions import (BATCHAI, BATCHAI_OPERATIONS, BATCHAI_USAGES, RESOURCES, STORAGE,
                                                STORAGE_CLASSIC)

from raw_arm import RawArm
from service_support import SUBSCRIPTION

SUB = f"/subscriptions/{SUBSCRIPTION}"


def _wait(arm: RawArm, response: requests.Response, version: str) -> requests.Response:
    """Follow a 202's Location until it answers something else."""
    for _ in range(100):
        if response.status_code != 202:
            return response
        time.sleep(float(response.headers.get("Retry-After", "0.1")) / 10)
        response = arm.request("GET", response.headers["Location"], api_version=None)
    raise AssertionError(f"{version}: still 202 after 100 polls")


def test_every_resources_version_runs_a_resource_groups_whole_life(service: LocalService):
    with RawArm(service) as arm:
        for version in sorted(RESOURCES):
            group = f"{SUB}/resourcegroups/rg-{version}"
            created = arm.request("PUT", group, api_version=version, json={"location": "eastus"})
            assert created.status_code == 201, (version, created.text)
            assert arm.request("GET", group, api_version=version).json()["name"] == f"rg-{version}"
            assert arm.request("HEAD", group, api_version=version).status_code == 204
            assert f"rg-{version}" in {g["name"] for g in
                                       arm.request("GET", f"{SUB}/resourcegroups", api_version=version).json()["value"]}
            deleted = _wait(arm, arm.request("DELETE", group, api_version=version), version)
            assert deleted.status_code == 200, (version, deleted.text)


def _create_account(arm: RawArm, group: str, name: str, version: str) -> dict:
    body = ({"location": "eastus", "properties": {"accountType": "Standard_LRS"}} if version in STORAGE_CLASSIC
            else {"location": "eastus", "sku": {"name": "Standard_LRS"}, "kind": "StorageV2"})
    created = _wait(arm, arm.request("PUT", f"{group}/providers/Microsoft.Storage/storageAccounts/{name}",
                                     api_version=version, json=body), version)
    assert created.status_code == 200, (version, created.text)
    return created.json()


def test_every_storage_version_manages_an_account_in_its_own_shape(service: LocalService):
    with RawArm(service) as arm:
        group = f"{SUB}/resourcegroups/storage-rg"
        assert arm.request("PUT", group, json={"location": "eastus"}).ok
        for number, version in enumerate(sorted(STORAGE)):
            name = f"acct{number:02d}"
            account_path = f"{group}/providers/Microsoft.Storage/storageAccounts/{name}"
            classic = version in STORAGE_CLASSIC
            available = arm.request("POST", f"{SUB}/providers/Microsoft.Storage/checkNameAvailability",
                                    api_version=version, json={"name": name, "type": "Microsoft.Storage/storageAccounts"})
            assert available.json()["nameAvailable"] is True, (version, available.text)
            created = _create_account(arm, group, name, version)
            shown = arm.request("GET", account_path, api_version=version).json()
            listed = arm.request("GET", f"{SUB}/providers/Microsoft.Storage/storageAccounts", api_version=version)
            keys = arm.request("POST", f"{account_path}/listKeys", api_version=version).json()
            regenerated = arm.request("POST", f"{account_path}/regenerateKey", api_version=version,
                                      json={"keyName": "key2"}).json()
            if classic:
                assert "sku" not in shown and "kind" not in shown, version
                assert created["properties"]["accountType"] == shown["properties"]["accountType"] == "Standard_LRS"
                assert set(keys) == {"key1", "key2"} and regenerated["key1"] == keys["key1"]
                assert regenerated["key2"] != keys["key2"]
            else:
                assert shown["sku"]["name"] == "Standard_LRS" and "accountType" not in shown["properties"], version
                assert [k["keyName"] for k in keys["keys"]] == ["key1", "key2"]
                assert regenerated["keys"][0]["value"] == keys["keys"][0]["value"]
                assert regenerated["keys"][1]["value"] != keys["keys"][1]["value"]
            assert shown in listed.json()["value"], version
            assert arm.request("DELETE", account_path, api_version=version).status_code == 200, version


def test_a_classic_request_names_the_classic_field(service: LocalService):
    with RawArm(service) as arm:
        group = f"{SUB}/resourcegroups/classic-rg"
        assert arm.request("PUT", group, json={"location": "eastus"}).ok
        wrong = arm.request("PUT", f"{group}/providers/Microsoft.Storage/storageAccounts/classic1",
                            api_version="2015-06-15", json={"location": "eastus", "properties": {"accountType": "Fast"}})
        assert wrong.status_code == 400 and "properties.accountType" in wrong.json()["error"]["message"]
        # An account made by a current client reads as a classic one, and back.
        modern = _create_account(arm, group, "modern1", "2026-09-01")
        path = f"{group}/providers/Microsoft.Storage/storageAccounts/modern1"
        assert arm.request("GET", path, api_version="2015-06-15").json()["properties"]["accountType"] == \
            modern["sku"]["name"]


def test_batchai_versions_per_type(service: LocalService):
    with RawArm(service) as arm:
        for version in sorted(BATCHAI_OPERATIONS):
            assert arm.request("GET", "/providers/Microsoft.BatchAI/operations", api_version=version).ok, version
        for version in sorted(BATCHAI_USAGES):
            assert arm.request("GET", f"{SUB}/providers/Microsoft.BatchAI/locations/eastus/usages",
                               api_version=version).ok, version
        assert arm.request("PUT", f"{SUB}/resourcegroups/ws-rg", json={"location": "eastus"}).ok
        workspace = f"{SUB}/resourceGroups/ws-rg/providers/Microsoft.BatchAI/workspaces/ws"
        for version in ("2017-09-01-preview", "2018-03-01"):
            refused = arm.request("PUT", workspace, api_version=version, json={"location": "eastus"})
            assert refused.status_code == 400 and "2018-05-01" in refused.json()["error"]["message"], version
        assert sorted(BATCHAI) == ["2018-05-01"]


@pytest.mark.parametrize("path, version", [
    (f"{SUB}/resourcegroups", "2021-05-01"),
    (f"{SUB}/resourcegroups", "2099-01-01"),
    (f"{SUB}/providers/Microsoft.Storage/storageAccounts", "2021-05-01"),
    (f"{SUB}/providers/Microsoft.Storage/storageAccounts", "2024-11-01"),
])
def test_unpublished_versions_are_refused_listing_the_published(service: LocalService, path: str, version: str):
    with RawArm(service) as arm:
        refused = arm.request("GET", path, api_version=version)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "InvalidApiVersionParameter"
    assert "2022-09-01" in refused.json()["error"]["message"]
