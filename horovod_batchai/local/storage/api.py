"""Microsoft.Storage: storage accounts, their keys, and name availability.

Wire shapes follow the recorded traffic: PUT answers 202 with a ``Location`` to
``/subscriptions/{sub}/providers/Microsoft.Storage/locations/{loc}/asyncoperations/{id}?monitor=true``,
which answers 200 with the account once it exists; ``listKeys`` answers
``{"keys": [{"keyName": "key1", "value", "permissions": "FULL"}, ...]}``. A local account is ready
as soon as it is stored, so the first poll already finds it; the operation is kept in SQLite so a
poll after a restart still answers.

What differs from Azure, on purpose: ``primaryEndpoints`` names ``file`` and ``blob`` only, both
path-style (``https://127.0.0.1:PORT/<account>/``) because loopback has no per-account host names;
``ShareServiceClient`` and ``BlobServiceClient(account_url=...)`` work with them unchanged. The blob
endpoint is Azurite's (see ``blob/``), on a port of its own that changes when the service restarts,
so it is filled in whenever an account is answered; without Node.js it is left out, like the queue
and table endpoints, which the local service does not serve. Azurite knows every account and its
current keys: it is told whenever an account is created or deleted or a key is regenerated.

Account names are global: 3 to 24 lower-case letters and digits, unique across every subscription
and resource group (409 ``StorageAccountAlreadyTaken`` otherwise). The two keys live in the store's
private column (see ``accounts.py``) and leave the service only in listKeys/regenerateKey bodies.
"""
from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Any, Optional

from werkzeug.wrappers import Response

from .accounts import ACCOUNT_TYPE, find_account, new_key
from ..blob.azurite import AzuriteError
from ..core.api_versions import STORAGE
from ..core.arm_errors import (InvalidRequestContent, InvalidRequestPropertyValue, InvalidResourceLocation,
                               ResourceNotFound)
from .records import StorageAccount
from .errors import AccountNameInvalid, StorageAccountAlreadyTaken, StorageAccountKindChangeNotAllowed
from ..core.context import ServiceContext
from ..core.routing import Call, Route, json_response
from ..core.store import resource_key
from ..files.store import delete_account_data
from ..resources.api import (check_subscription_id, normalize_location, require_resource_group, utc_timestamp,
                             validate_tags)
from .keys import initial_key1
from .shapes import account_for_version, is_classic, keys_for_version, request_from_classic

__all__ = ["ROUTES", "API_VERSIONS", "ACCOUNT_TYPE", "SKU_NAMES", "KINDS", "check_account_name", "delete_account",
           "existing_account"]

#: every published version (see core/api_versions.py); the classic ones (2015) are translated at the edge
#: by shapes.py, the others only add fields over the years.
API_VERSIONS = STORAGE

SKU_NAMES = ("Standard_LRS", "Standard_GRS", "Standard_RAGRS", "Standard_ZRS", "Premium_LRS", "Premium_ZRS",
             "Standard_GZRS", "Standard_RAGZRS")
KINDS = ("Storage", "StorageV2", "BlobStorage", "FileStorage", "BlockBlobStorage")
_ACCESS_TIERS = ("Hot", "Cool", "Cold", "Premium")
_TLS_VERSIONS = ("TLS1_0", "TLS1_1", "TLS1_2", "TLS1_3")
#: Properties a caller may set, and the type each must have; others are ignored, as ARM does.
_SETTABLE: dict[str, tuple[type, Optional[tuple[str, ...]]]] = {
    "supportsHttpsTrafficOnly": (bool, None),
    "allowBlobPublicAccess": (bool, None),
    "accessTier": (str, _ACCESS_TIERS),
    "minimumTlsVersion": (str, _TLS_VERSIONS),
}

log = logging.getLogger(__name__)

_ACCOUNT_NAME = re.compile(r"^[a-z0-9]{3,24}\Z")
_KEY_NAMES = ("key1", "key2")


def check_account_name(name: str) -> Optional[str]:
    """None for a valid storage account name, else why it is not (the message Azure gives)."""
    if _ACCOUNT_NAME.match(name):
        return None
    return (f"{name} is not a valid storage account name. Storage account name must be between 3 and 24 "
            "characters in length and use numbers and lower-case letters only.")


def _account_id(subscription_id: str, group_name: str, account_name: str) -> str:
    return (f"/subscriptions/{subscription_id}/resourceGroups/{group_name}"
            f"/providers/Microsoft.Storage/storageAccounts/{account_name}")


def _not_found(account_name: str, group_name: str) -> ResourceNotFound:
    return ResourceNotFound(
        f"The Resource 'Microsoft.Storage/storageAccounts/{account_name}' under resource group "
        f"'{group_name}' was not found.")


def _published(context: ServiceContext, doc: dict[str, Any]) -> dict[str, Any]:
    """An account's document as answered: with the blob endpoint where Azurite runs."""
    blob = context.blob.account_url(doc["name"]) if context.blob is not None else None
    if blob is None:
        return doc
    endpoints = {**doc["properties"].get("primaryEndpoints", {}), "blob": blob}
    return {**doc, "properties": {**doc["properties"], "primaryEndpoints": endpoints}}


def _tell_blob_endpoint(context: ServiceContext) -> None:
    """Azurite learns the accounts and keys as they are now; a failure there fails no ARM request."""
    if context.blob is None:
        return
    try:
        context.blob.refresh_accounts()
    except AzuriteError as exc:
        log.warning("the blob endpoint could not take the new account set: %s", exc)


def _enum(value: Any, field: str, allowed: tuple[str, ...]) -> str:
    """``value`` as the canonical member of ``allowed`` (matched case-insensitively, as Azure does)."""
    if isinstance(value, str):
        for member in allowed:
            if member.lower() == value.lower():
                return member
    raise InvalidRequestPropertyValue(
        f"The value '{value}' is not allowed for property '{field}'. Valid values are: "
        f"{', '.join(allowed)}.")


def _sku(value: Any) -> dict[str, str]:
    if value is None:
        raise InvalidRequestContent(
            "The request content was invalid: 'sku' is required, e.g. {\"name\": \"Standard_LRS\"}.")
    if not isinstance(value, dict):
        raise InvalidRequestContent(
            "The request content was invalid: 'sku' must be an object such as {\"name\": \"Standard_LRS\"}.")
    name = _enum(value.get("name"), "sku.name", SKU_NAMES)
    return {"name": name, "tier": name.split("_", 1)[0]}


def _settable_properties(properties: Any) -> dict[str, Any]:
    if properties is None:
        return {}
    if not isinstance(properties, dict):
        raise InvalidRequestContent("The request content was invalid: 'properties' must be an object.")
    chosen: dict[str, Any] = {}
    for field, (kind, allowed) in _SETTABLE.items():
        if field not in properties or properties[field] is None:
            continue
        value = properties[field]
        if not isinstance(value, kind):
            raise InvalidRequestContent(
                f"The request content was invalid: 'properties.{field}' must be a "
                f"{'boolean' if kind is bool else 'string'}.")
        chosen[field] = _enum(value, f"properties.{field}", allowed) if allowed else value
    return chosen


def _account_body(account_id: str, name: str, location: str, sku: dict[str, str], kind: str,
                  tags: dict[str, str], settable: dict[str, Any], base_url: str, created: str) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "networkAcls": {"bypass": "AzureServices", "virtualNetworkRules": [], "ipRules": [], "defaultAction": "Allow"},
        "supportsHttpsTrafficOnly": True,
        "encryption": {"services": {"file": {"enabled": True, "lastEnabledTime": created},
                                    "blob": {"enabled": True, "lastEnabledTime": created}},
                       "keySource": "Microsoft.Storage"},
        "provisioningState": "Succeeded",
        "creationTime": created,
        "primaryEndpoints": {"file": f"{base_url}/{name}/"},
        "primaryLocation": location,
        "statusOfPrimary": "available",
    }
    if kind in ("StorageV2", "BlobStorage"):
        properties["accessTier"] = "Hot"
    properties.update(settable)
    return {"sku": sku, "kind": kind, "id": account_id, "name": name, "type": "Microsoft.Storage/storageAccounts",
            "location": location, "tags": tags, "properties": properties}


def _keys_body(private: dict[str, Any]) -> dict[str, Any]:
    return {"keys": [{"keyName": k["keyName"], "value": k["value"], "permissions": k["permissions"],
                      **({"creationTime": k["creationTime"]} if "creationTime" in k else {})}
                     for k in private.get("keys", [])]}


# -- handlers -----------------------------------------------------------------------------------

def put_account(call: Call, subscriptionId: str, resourceGroupName: str, accountName: str) -> Response:
    group = require_resource_group(call.context, subscriptionId, resourceGroupName, for_write=True)
    problem = check_account_name(accountName)
    if problem:
        raise AccountNameInvalid(problem)
    request = call.json_object()
    if is_classic(call.api_version):
        request = request_from_classic(request, for_create=True)
    sku = _sku(request.get("sku"))
    kind = _enum(request.get("kind", "StorageV2"), "kind", KINDS)
    location = normalize_location(request.get("location"), call.context)
    tags = validate_tags(request.get("tags"))
    settable = _settable_properties(request.get("properties"))
    context = call.context
    account_id = _account_id(subscriptionId, group.name, accountName)
    # Check-then-create under the context lock: account names are global, and two groups may race.
    with context.lock:
        holder = find_account(context.store, accountName)
        if holder is not None and resource_key(holder["id"]) != resource_key(account_id):
            raise StorageAccountAlreadyTaken(f"The storage account named {accountName} is already taken.")
        if holder is not None:
            if holder["location"] != location:
                raise InvalidResourceLocation(
                    f"The resource '{accountName}' already exists in location '{holder['location']}' in "
                    f"resource group '{group.name}'. A resource with the same name cannot be created "
                    f"in location '{location}'. Please select a new resource name.")
            if holder["kind"] != kind:
                raise StorageAccountKindChangeNotAllowed(
                    f"The kind of storage account {accountName} is '{holder['kind']}' and cannot be changed "
                    f"to '{kind}' by a PUT; create a new account instead.")
            # An existing account of the caller's: PUT updates it and answers at once, as Azure does.
            body = _account_body(holder["id"], holder["name"], location, sku, kind,
                                 tags if tags is not None else holder.get("tags", {}), settable,
                                 call.base_url, holder["properties"]["creationTime"])
            context.store.put(holder["id"], ACCOUNT_TYPE, group.id, body)
            return json_response(account_for_version(_published(context, body), call.api_version), 200)
        created = utc_timestamp()
        body = _account_body(account_id, accountName, location, sku, kind, tags or {}, settable,
                             call.base_url, created)
        # key1 is derived, so a client configured before the account exists knows it (keys.py).
        first = initial_key1(context.token_secret, accountName)
        keys = [{"keyName": name, "value": first if name == "key1" else new_key(), "permissions": "FULL",
                 "creationTime": created} for name in _KEY_NAMES]
        context.store.put(account_id, ACCOUNT_TYPE, group.id, body, private={"keys": keys})
    _tell_blob_endpoint(context)
    operation_id = str(uuid.uuid4())
    with context.store.transaction() as db:
        db.execute("INSERT INTO storage_async_operations (id, account, created) VALUES (?, ?, ?)",
                   (operation_id, resource_key(account_id), time.time()))
    location_url = call.url(f"/subscriptions/{subscriptionId}/providers/Microsoft.Storage/locations/{location}"
                            f"/asyncoperations/{operation_id}", monitor="true", **{"api-version": call.api_version})
    return Response(b"", status=202, headers={"Location": location_url, "Retry-After": "1"},
                    content_type="text/plain; charset=utf-8")


def get_async_operation(call: Call, subscriptionId: str, location: str, operationId: str) -> Response:
    check_subscription_id(subscriptionId)
    store = call.context.store
    rows = store.query("SELECT account FROM storage_async_operations WHERE id = ?", (operationId,))
    if not rows:
        raise ResourceNotFound(f"The async operation '{operationId}' was not found.")
    account = store.get(rows[0]["account"])
    if account is None:
        raise ResourceNotFound(
            "The storage account this operation created no longer exists.")
    return json_response(account_for_version(_published(call.context, account), call.api_version))


def get_account(call: Call, subscriptionId: str, resourceGroupName: str, accountName: str) -> Response:
    account = existing_account(call.context, subscriptionId, resourceGroupName, accountName)
    return json_response(account_for_version(_published(call.context, account.doc), call.api_version))


def existing_account(context: ServiceContext, subscription_id: str, group_name: str, account_name: str, *,
              for_write: bool = False) -> StorageAccount:
    group = require_resource_group(context, subscription_id, group_name, for_write=for_write)
    doc = context.store.get(_account_id(subscription_id, group.name, account_name))
    if doc is None:
        raise _not_found(account_name, group.name)
    return StorageAccount(doc)


def patch_account(call: Call, subscriptionId: str, resourceGroupName: str, accountName: str) -> Response:
    account = existing_account(call.context, subscriptionId, resourceGroupName, accountName, for_write=True)
    request = call.json_object()
    if is_classic(call.api_version):
        request = request_from_classic(request, for_create=False)
    sku = _sku(request["sku"]) if request.get("sku") is not None else None
    tags = validate_tags(request.get("tags"))
    settable = _settable_properties(request.get("properties"))
    if request.get("kind") is not None:
        kind = _enum(request["kind"], "kind", KINDS)
        if kind != account.kind and not (account.kind == "Storage" and kind == "StorageV2"):
            raise StorageAccountKindChangeNotAllowed(
                f"A storage account of kind '{account.kind}' can only be upgraded to 'StorageV2'.")
    else:
        kind = None

    def change(body: dict[str, Any]) -> None:
        if sku is not None:
            body["sku"] = sku
        if kind is not None:
            body["kind"] = kind
            if kind == "StorageV2":
                body["properties"].setdefault("accessTier", "Hot")
        if tags is not None:
            body["tags"] = tags
        body["properties"].update(settable)

    updated = call.context.store.update(account.id, change)
    if updated is None:
        raise _not_found(accountName, resourceGroupName)
    return json_response(account_for_version(_published(call.context, updated), call.api_version))


def delete_accounts_in_group(context: ServiceContext, group_id: str) -> None:
    """Every storage account of a resource group, with its data (resource group deletion)."""
    for doc in context.store.list_under(group_id, ACCOUNT_TYPE):
        delete_account(context, StorageAccount(doc))


def delete_account(context: ServiceContext, account: StorageAccount) -> None:
    """Delete an account document, its shares and files, and its blob containers."""
    delete_account_data(context, account.name)
    keys = [k["value"] for k in context.store.get_private(account.id).get("keys", [])]
    if context.blob is not None and keys:
        try:
            # While Azurite still knows the account: its key is what opens the containers.
            context.blob.delete_account_data(account.name, keys[0])
        except AzuriteError as exc:
            log.warning("the blob containers of account %s could not be deleted: %s", account.name, exc)
    context.store.delete(account.id, recursive=True)  # with its file service's settings
    _tell_blob_endpoint(context)




def delete_account_handler(call: Call, subscriptionId: str, resourceGroupName: str, accountName: str) -> Response:
    group = require_resource_group(call.context, subscriptionId, resourceGroupName)
    doc = call.context.store.get(_account_id(subscriptionId, group.name, accountName))
    if doc is None:
        return Response(b"", status=204)  # already gone: Azure answers 204
    delete_account(call.context, StorageAccount(doc))
    return Response(b"", status=200)


def list_accounts_in_group(call: Call, subscriptionId: str, resourceGroupName: str) -> Response:
    group = require_resource_group(call.context, subscriptionId, resourceGroupName)
    accounts = call.context.store.list(ACCOUNT_TYPE, parent=group.id)
    return json_response({"value": [account_for_version(_published(call.context, a), call.api_version)
                                    for a in accounts]})


def list_accounts(call: Call, subscriptionId: str) -> Response:
    check_subscription_id(subscriptionId)
    prefix = f"/subscriptions/{subscriptionId}/".lower()
    accounts = [a for a in call.context.store.list(ACCOUNT_TYPE) if a["id"].lower().startswith(prefix)]
    return json_response({"value": [account_for_version(_published(call.context, a), call.api_version)
                                    for a in accounts]})


def list_keys(call: Call, subscriptionId: str, resourceGroupName: str, accountName: str) -> Response:
    account = existing_account(call.context, subscriptionId, resourceGroupName, accountName)
    return json_response(keys_for_version(_keys_body(call.context.store.get_private(account.id)), call.api_version))


def regenerate_key(call: Call, subscriptionId: str, resourceGroupName: str, accountName: str) -> Response:
    account = existing_account(call.context, subscriptionId, resourceGroupName, accountName, for_write=True)
    request = call.json_object()
    key_name = request.get("keyName")
    if not isinstance(key_name, str) or key_name.lower() not in _KEY_NAMES:
        raise InvalidRequestPropertyValue(
            f"The value '{key_name}' is not allowed for property 'keyName'. Valid values are: key1, key2.")
    store = call.context.store
    with call.context.lock:
        private = store.get_private(account.id)
        for key in private.get("keys", []):
            if key["keyName"] == key_name.lower():
                key["value"] = new_key()
                key["creationTime"] = utc_timestamp()
        store.update_private(account.id, private)
    _tell_blob_endpoint(call.context)
    return json_response(keys_for_version(_keys_body(private), call.api_version))


def check_name_availability(call: Call, subscriptionId: str) -> Response:
    check_subscription_id(subscriptionId)
    request = call.json_object()
    name, rtype = request.get("name"), request.get("type", "Microsoft.Storage/storageAccounts")
    if not isinstance(name, str):
        raise InvalidRequestContent(
            "The request content was invalid: 'name' must be a string, the account name to check.")
    if not isinstance(rtype, str) or rtype.lower() != ACCOUNT_TYPE:
        raise InvalidRequestPropertyValue(
            f"The value '{rtype}' is not allowed for property 'type'. Valid values are: "
            "Microsoft.Storage/storageAccounts.")
    problem = check_account_name(name)
    if problem:
        return json_response({"nameAvailable": False, "reason": "AccountNameInvalid", "message": problem})
    if find_account(call.context.store, name) is not None:
        return json_response({"nameAvailable": False, "reason": "AlreadyExists",
                              "message": f"The storage account named {name} is already taken."})
    return json_response({"nameAvailable": True})


_SUB = "/subscriptions/{subscriptionId}"
_ACCOUNTS = _SUB + "/resourceGroups/{resourceGroupName}/providers/Microsoft.Storage/storageAccounts"
_ACCOUNT = _ACCOUNTS + "/{accountName}"

ROUTES: list[Route] = [
    Route("POST", _SUB + "/providers/Microsoft.Storage/checkNameAvailability", check_name_availability, API_VERSIONS),
    Route("GET", _SUB + "/providers/Microsoft.Storage/storageAccounts", list_accounts, API_VERSIONS),
    Route("GET", _SUB + "/providers/Microsoft.Storage/locations/{location}/asyncoperations/{operationId}",
          get_async_operation, API_VERSIONS),
    Route("GET", _ACCOUNTS, list_accounts_in_group, API_VERSIONS),
    Route("PUT", _ACCOUNT, put_account, API_VERSIONS),
    Route("GET", _ACCOUNT, get_account, API_VERSIONS),
    Route("PATCH", _ACCOUNT, patch_account, API_VERSIONS),
    Route("DELETE", _ACCOUNT, delete_account_handler, API_VERSIONS),
    Route("POST", _ACCOUNT + "/listKeys", list_keys, API_VERSIONS),
    Route("POST", _ACCOUNT + "/regenerateKey", regenerate_key, API_VERSIONS),
]
