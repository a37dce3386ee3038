"""Subscriptions and tenants as clients read them after signing in, every published api-version in its
own shape."""
from __future__ import annotations

import pytest

from horovod_batchai.local import LocalService
from horovod_batchai.local.core.jwt_tokens import TENANT_ID
from horovod_batchai.local.resources.subscriptions import API_VERSIONS

from raw_arm import RawArm
from service_support import SUBSCRIPTION

OTHER = "11111111-2222-3333-4444-555555555555"


def test_the_local_subscription_and_tenant(service: LocalService):
    # (azure-mgmt-resource 25 no longer ships SubscriptionClient; the client-version and az tests drive
    # the ones that do.)
    with RawArm(service) as arm:
        [listed] = arm.request("GET", "/subscriptions", api_version="2022-12-01").json()["value"]
        assert listed["subscriptionId"] == SUBSCRIPTION and listed["tenantId"] == TENANT_ID
        other = arm.request("GET", f"/subscriptions/{OTHER}", api_version="2022-12-01").json()
        assert other["subscriptionId"] == OTHER and other["state"] == "Enabled"
        tenants = arm.request("GET", "/tenants", api_version="2022-12-01").json()["value"]
        assert [t["tenantId"] for t in tenants] == [TENANT_ID]


def test_a_subscription_that_holds_a_group_is_listed(service: LocalService):
    with RawArm(service) as arm:
        assert arm.request("PUT", f"/subscriptions/{OTHER}/resourcegroups/rg", json={"location": "eastus"}).ok
        listed = arm.request("GET", "/subscriptions", api_version="2022-12-01").json()["value"]
        assert [s["subscriptionId"] for s in listed] == [SUBSCRIPTION, OTHER]


@pytest.mark.parametrize("version", sorted(API_VERSIONS))
def test_each_version_answers_in_its_own_shape(service: LocalService, version: str):
    with RawArm(service) as arm:
        body = arm.request("GET", f"/subscriptions/{SUBSCRIPTION}", api_version=version).json()
        listed = arm.request("GET", "/subscriptions", api_version=version).json()["value"]
        tenants = arm.request("GET", "/tenants", api_version=version).json()["value"]
    assert listed == [body]
    assert body["id"] == f"/subscriptions/{SUBSCRIPTION}" and body["state"] == "Enabled"
    assert ("authorizationSource" in body) == (version >= "2016-06-01")
    assert ("tenantId" in body) == (version >= "2018-06-01")
    assert ("managedByTenants" in body) == (version >= "2019-06-01")
    assert ("tags" in body) == (version >= "2019-11-01")
    assert tenants[0]["tenantId"] == TENANT_ID
    assert ("tenantCategory" in tenants[0]) == (version >= "2019-06-01")
    assert ("defaultDomain" in tenants[0]) == (version >= "2021-01-01")


def test_bad_requests_are_refused(service: LocalService):
    with RawArm(service) as arm:
        assert arm.request("GET", "/subscriptions", api_version="2017-01-01").json()["error"]["code"] == \
            "InvalidApiVersionParameter"
        assert arm.request("GET", "/subscriptions/not-a-guid", api_version="2022-12-01").json()["error"]["code"] == \
            "InvalidSubscriptionId"
        assert arm.request("GET", "/tenants", api_version="2022-12-01", token=None).status_code == 401
