"""Microsoft.Resources subscriptions and tenants: what a client asks right after signing in.

``az login`` lists ``GET /subscriptions`` to choose a default subscription, and azure-identity's and
azure-mgmt-resource's ``SubscriptionClient`` read ``/subscriptions/{id}`` and ``/tenants``. The local
service has one tenant, and every well-formed subscription id names a subscription of it (as
resource paths always did); the list shows the SDK's default local subscription and every other one
that holds a resource group.

Each api-version answers in its own shape -- the fields the specification of that version has
(azure-rest-api-specs, Microsoft.Resources/subscriptions, and the models generated from it):

========================  ====================================================================
api-version               Subscription fields beyond id, subscriptionId, displayName, state,
                          subscriptionPolicies
========================  ====================================================================
2015-11-01                none (and no subscriptionPolicies.spendingLimit)
2016-06-01                authorizationSource
2018-06-01                + tenantId
2019-06-01                + managedByTenants
2019-11-01 and later      + tags
========================  ====================================================================

Tenants: ``id`` and ``tenantId``; from 2018-06-01 ``displayName`` and ``domains``; from 2019-06-01
``tenantCategory``; from 2021-01-01 ``defaultDomain``.
"""
from __future__ import annotations

from typing import Any

from werkzeug.wrappers import Response

from ..core.api_versions import SUBSCRIPTIONS
from ..core.jwt_tokens import TENANT_ID
from ..core.routing import Call, Route, json_response
from .api import RESOURCE_GROUP_TYPE, check_subscription_id

__all__ = ["ROUTES", "API_VERSIONS", "DEFAULT_SUBSCRIPTION_ID", "subscription_body", "tenant_body"]

API_VERSIONS = SUBSCRIPTIONS
#: the subscription the SDK addresses the local service with unless told otherwise.
DEFAULT_SUBSCRIPTION_ID = "00000000-0000-0000-0000-000000000000"
DISPLAY_NAME = "horovod-batchai local"
TENANT_DOMAIN = "local.horovod-batchai"


def subscription_body(subscription_id: str, api_version: str) -> dict[str, Any]:
    """A subscription as ``api_version`` describes it (the versions compare as ISO dates)."""
    policies = {"locationPlacementId": "Public_2014-09-01", "quotaId": "Local_2018-05-01"}
    body: dict[str, Any] = {"id": f"/subscriptions/{subscription_id}", "subscriptionId": subscription_id,
                            "displayName": DISPLAY_NAME, "state": "Enabled", "subscriptionPolicies": policies}
    if api_version >= "2016-06-01":
        policies["spendingLimit"] = "Off"
        body["authorizationSource"] = "RoleBased"
    if api_version >= "2018-06-01":
        body["tenantId"] = TENANT_ID
    if api_version >= "2019-06-01":
        body["managedByTenants"] = []
    if api_version >= "2019-11-01":
        body["tags"] = {}
    return body


def tenant_body(api_version: str) -> dict[str, Any]:
    body: dict[str, Any] = {"id": f"/tenants/{TENANT_ID}", "tenantId": TENANT_ID}
    if api_version >= "2018-06-01":
        body.update(displayName=DISPLAY_NAME, domains=[TENANT_DOMAIN])
    if api_version >= "2019-06-01":
        body["tenantCategory"] = "Home"
    if api_version >= "2021-01-01":
        body["defaultDomain"] = TENANT_DOMAIN
    return body


def _subscription_ids(call: Call) -> list[str]:
    ids = {DEFAULT_SUBSCRIPTION_ID}
    for group in call.context.store.list(RESOURCE_GROUP_TYPE):
        ids.add(group["id"].split("/")[2].lower())
    return sorted(ids)


def list_subscriptions(call: Call) -> Response:
    return json_response({"value": [subscription_body(s, call.api_version) for s in _subscription_ids(call)]})


def get_subscription(call: Call, subscriptionId: str) -> Response:
    check_subscription_id(subscriptionId)
    return json_response(subscription_body(subscriptionId.lower(), call.api_version))


def list_tenants(call: Call) -> Response:
    return json_response({"value": [tenant_body(call.api_version)]})


ROUTES: list[Route] = [
    Route("GET", "/subscriptions", list_subscriptions, API_VERSIONS),
    Route("GET", "/subscriptions/{subscriptionId}", get_subscription, API_VERSIONS),
    Route("GET", "/tenants", list_tenants, API_VERSIONS),
]
