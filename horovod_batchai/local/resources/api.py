"""Microsoft.Resources: resource groups, and the checks every resource-group-scoped request shares.

Wire shapes follow the recorded 2018 traffic (``recordings/*.json``): PUT answers 201 on create and
200 on update with ``{"id", "name", "type", "location", ["tags"], "properties": {"provisioningState"}}``;
HEAD answers 204 or 404; DELETE answers 202 with a ``Location`` to
``/subscriptions/{sub}/operationresults/<opaque>``, which answers 202 while the group is being torn
down and 200 once it is gone.

Deleting a group deletes everything in it, in the order that keeps running work from writing into
freed places: each resource provider deletes its resources in the group, in the order the service
registered them in ``group_deleters`` (Batch AI first: jobs stopped, then clusters and file servers;
then storage accounts with their shares, files and containers), then whatever documents are left,
then the group. This module imports no other provider.
The teardown runs on a thread so the DELETE answers at once, as ARM does; the group shows
``provisioningState: "Deleting"`` meanwhile and refuses writes. Deletion operations are kept in
SQLite, and a group found ``Deleting`` when the service starts is torn down again, so a restart in
the middle of a delete loses nothing.
"""
from __future__ import annotations

import base64
import binascii
import datetime
import json
import logging
import re
import threading
import time
import uuid
from typing import Any, Optional

from werkzeug.wrappers import Response

from ..core.api_versions import RESOURCES
from ..core.arm_errors import InvalidLocation, InvalidRequestContent, OperationNotFound
from .records import ResourceGroup
from .errors import (InvalidResourceGroup, InvalidResourceGroupLocation, InvalidSubscriptionId, InvalidTagCount,
                     InvalidTagLength, InvalidTagNameCharacters, LocationNotAvailableForResourceGroup, LocationRequired,
                     ResourceGroupBeingDeleted, ResourceGroupDeletionBlocked, ResourceGroupNotFound)
from ..core.context import ServiceContext
from ..core.routing import Call, Route, json_response
from ..core.store import resource_key

__all__ = ["ROUTES", "API_VERSIONS", "RESOURCE_GROUP_TYPE", "KNOWN_LOCATIONS", "utc_timestamp",
           "check_subscription_id", "normalize_location", "validate_tags", "resource_group_id",
           "require_resource_group", "resume_deletions"]

log = logging.getLogger(__name__)

#: every published version (see core/api_versions.py); one shape for all of them: later versions only add
#: fields (managedBy from 2016-09-01, type from 2018-05-01), which the service always sends.
API_VERSIONS = RESOURCES

RESOURCE_GROUP_TYPE = "microsoft.resources/resourcegroups"

#: Public Azure regions by their normalised name; ARM also accepts the display name ("East US").
KNOWN_LOCATIONS = frozenset({
    "eastus", "eastus2", "westus", "westus2", "westus3", "centralus", "northcentralus", "southcentralus",
    "westcentralus", "canadacentral", "canadaeast", "brazilsouth", "brazilsoutheast", "mexicocentral",
    "northeurope", "westeurope", "uksouth", "ukwest", "francecentral", "francesouth", "germanywestcentral",
    "germanynorth", "norwayeast", "norwaywest", "switzerlandnorth", "switzerlandwest", "swedencentral",
    "polandcentral", "italynorth", "spaincentral", "eastasia", "southeastasia", "japaneast", "japanwest",
    "koreacentral", "koreasouth", "centralindia", "southindia", "westindia", "australiaeast",
    "australiasoutheast", "australiacentral", "australiacentral2", "newzealandnorth", "uaenorth",
    "uaecentral", "qatarcentral", "israelcentral", "southafricanorth", "southafricawest",
})

_SUBSCRIPTION_ID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
# ARM's rule: 1-90 letters (any script), digits, '-', '_', '.', '(' or ')', not ending in '.'.
_RESOURCE_GROUP_NAME = re.compile(r"^[-\w.()]{1,90}\Z")
_MAX_TAGS, _MAX_TAG_NAME, _MAX_TAG_VALUE = 50, 512, 256
# Seconds a client waits between polls of a group deletion (integers: what every client parses).
_POLL_RETRY_AFTER = "1"


# -- shared checks ------------------------------------------------------------------------------

def utc_timestamp() -> str:
    """Now, as ARM writes times: ISO 8601 with 7 fractional digits and a Z."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f") + "0Z"


def check_subscription_id(subscription_id: str) -> None:
    """Any well-formed subscription id names a subscription of the local service."""
    if not _SUBSCRIPTION_ID.match(subscription_id):
        raise InvalidSubscriptionId(
            f"The provided subscription identifier '{subscription_id}' is malformed or invalid. "
            "It must be a GUID such as 00000000-0000-0000-0000-000000000000.")


def normalize_location(value: Any, context: ServiceContext, *, field: str = "location") -> str:
    """A region name as ARM stores it ("East US" -> "eastus"); unknown regions are refused."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise LocationRequired(f"The '{field}' property is required for this definition.")
    if not isinstance(value, str):
        raise InvalidRequestContent(
            f"The request content was invalid: '{field}' must be a string such as \"eastus\".")
    location = value.replace(" ", "").lower()
    if location not in KNOWN_LOCATIONS and location != context.settings.location.lower():
        unknown = LocationNotAvailableForResourceGroup if field == "location" else InvalidLocation
        raise unknown(f"The provided location '{value}' is not available. Use an Azure region name such as "
                      "'eastus', 'westeurope' or 'northeurope'.")
    return location


def validate_tags(tags: Any) -> Optional[dict[str, str]]:
    """Tags as ARM allows them: an object of at most 50 string names (<= 512) to string values (<= 256)."""
    if tags is None:
        return None
    if not isinstance(tags, dict):
        raise InvalidRequestContent(
            "The request content was invalid: 'tags' must be an object of string names to string values.")
    if len(tags) > _MAX_TAGS:
        raise InvalidTagCount(f"The number of tags ({len(tags)}) exceeds the limit of {_MAX_TAGS}.")
    for name, value in tags.items():
        if not isinstance(value, str):
            raise InvalidRequestContent(
                f"The request content was invalid: the value of tag '{name}' must be a string.")
        if not name or len(name) > _MAX_TAG_NAME or len(value) > _MAX_TAG_VALUE:
            refused = InvalidTagNameCharacters if not name else InvalidTagLength
            raise refused(f"Tag names must have 1 to {_MAX_TAG_NAME} characters and tag values at most "
                          f"{_MAX_TAG_VALUE}; tag '{name[:40]}' does not.")
    return dict(tags)


def resource_group_id(subscription_id: str, resource_group_name: str) -> str:
    return f"/subscriptions/{subscription_id}/resourceGroups/{resource_group_name}"


def require_resource_group(context: ServiceContext, subscription_id: str, resource_group_name: str, *,
                           for_write: bool = False) -> ResourceGroup:
    """The group, as every group-scoped request needs it first.

    Raises 404 ``ResourceGroupNotFound`` when there is no such group and, with ``for_write``,
    409 ``ResourceGroupBeingDeleted`` while it is being deleted (ARM refuses writes into it)."""
    check_subscription_id(subscription_id)
    doc = context.store.get(resource_group_id(subscription_id, resource_group_name))
    if doc is None:
        raise ResourceGroupNotFound.named(resource_group_name)
    group = ResourceGroup(doc)
    if for_write and group.deleting:
        raise ResourceGroupBeingDeleted.named(group.name)
    return group


def _check_group_name(name: str) -> None:
    if not _RESOURCE_GROUP_NAME.match(name) or name.endswith("."):
        raise InvalidResourceGroup(
            f"The provided resource group name '{name}' is invalid. The name must have 1 to 90 "
            "characters, each a letter, digit, '-', '.', '(', ')' or '_', and must not end in '.'.")


# -- resource groups ----------------------------------------------------------------------------

def _group_body(group_id: str, name: str, location: str, tags: Optional[dict[str, str]],
                managed_by: Optional[str], state: str = "Succeeded") -> dict[str, Any]:
    body: dict[str, Any] = {"id": group_id, "name": name, "type": "Microsoft.Resources/resourceGroups",
                            "location": location}
    if tags is not None:
        body["tags"] = tags
    if managed_by is not None:
        body["managedBy"] = managed_by
    body["properties"] = {"provisioningState": state}
    return body


def put_resource_group(call: Call, subscriptionId: str, resourceGroupName: str) -> Response:
    check_subscription_id(subscriptionId)
    _check_group_name(resourceGroupName)
    request = call.json_object()
    location = normalize_location(request.get("location"), call.context)
    tags = validate_tags(request.get("tags"))
    managed_by = request.get("managedBy")
    if managed_by is not None and not isinstance(managed_by, str):
        raise InvalidRequestContent("The request content was invalid: 'managedBy' must be a string.")
    store = call.context.store
    group_id = resource_group_id(subscriptionId, resourceGroupName)
    with call.context.lock:
        existing = store.get(group_id)
        if existing is not None:
            if existing["properties"].get("provisioningState") == "Deleting":
                raise ResourceGroupBeingDeleted.named(existing["name"])
            if existing["location"] != location:
                raise InvalidResourceGroupLocation.moving(location, existing["location"])
            # The group keeps the casing it was created with; a PUT replaces tags (absent: cleared).
            body = _group_body(existing["id"], existing["name"], location, tags,
                               managed_by if managed_by is not None else existing.get("managedBy"))
            store.put(existing["id"], RESOURCE_GROUP_TYPE, f"/subscriptions/{subscriptionId}", body)
            return json_response(body, 200)
        body = _group_body(group_id, resourceGroupName, location, tags, managed_by)
        store.put(group_id, RESOURCE_GROUP_TYPE, f"/subscriptions/{subscriptionId}", body)
    return json_response(body, 201)


def get_resource_group(call: Call, subscriptionId: str, resourceGroupName: str) -> Response:
    return json_response(require_resource_group(call.context, subscriptionId, resourceGroupName).doc)


def head_resource_group(call: Call, subscriptionId: str, resourceGroupName: str) -> Response:
    check_subscription_id(subscriptionId)
    exists = call.context.store.get(resource_group_id(subscriptionId, resourceGroupName)) is not None
    return Response(b"", status=204 if exists else 404)


def patch_resource_group(call: Call, subscriptionId: str, resourceGroupName: str) -> Response:
    group = require_resource_group(call.context, subscriptionId, resourceGroupName, for_write=True)
    request = call.json_object()
    if "location" in request and request["location"] is not None:
        location = normalize_location(request["location"], call.context)
        if location != group.location:
            raise InvalidResourceGroupLocation.moving(location, group.location)
    tags = validate_tags(request.get("tags"))
    managed_by = request.get("managedBy")
    if managed_by is not None and not isinstance(managed_by, str):
        raise InvalidRequestContent("The request content was invalid: 'managedBy' must be a string.")

    def change(body: dict[str, Any]) -> None:
        if body["properties"].get("provisioningState") == "Deleting":
            raise ResourceGroupBeingDeleted.named(body["name"])
        if tags is not None:  # PATCH replaces the tags it names the way ARM does: as a whole
            body["tags"] = tags
        if managed_by is not None:
            body["managedBy"] = managed_by

    updated = call.context.store.update(group.id, change)
    if updated is None:
        raise ResourceGroupNotFound.named(resourceGroupName)
    return json_response(updated)


def list_resource_groups(call: Call, subscriptionId: str) -> Response:
    check_subscription_id(subscriptionId)
    groups = call.context.store.list(RESOURCE_GROUP_TYPE, parent=f"/subscriptions/{subscriptionId}")
    return json_response({"value": groups})


# -- deleting a resource group ------------------------------------------------------------------

class _Deletions:
    """Which groups have a teardown thread running, per state directory (one service each)."""

    _lock = threading.Lock()
    _running: dict[str, set[str]] = {}

    @classmethod
    def claim(cls, context: ServiceContext, group_key: str) -> bool:
        with cls._lock:
            running = cls._running.setdefault(str(context.state_dir.resolve()), set())
            if group_key in running:
                return False
            running.add(group_key)
            return True

    @classmethod
    def release(cls, context: ServiceContext, group_key: str) -> None:
        with cls._lock:
            cls._running.get(str(context.state_dir.resolve()), set()).discard(group_key)


def _operation_token(operation_id: str, group_name: str, location: str) -> str:
    # Shaped like ARM's opaque token: base64 of {"jobId": "RESOURCEGROUPDELETIONJOB-...", "jobLocation"}.
    job = {"jobId": f"RESOURCEGROUPDELETIONJOB-{group_name.upper()}|{operation_id}", "jobLocation": location}
    return base64.urlsafe_b64encode(json.dumps(job).encode()).decode("ascii").rstrip("=")


def _operation_id(token: str) -> Optional[str]:
    try:
        job = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return str(job["jobId"]).rpartition("|")[2] or None
    except (ValueError, KeyError, TypeError, binascii.Error):
        return None


def delete_resource_group(call: Call, subscriptionId: str, resourceGroupName: str) -> Response:
    group = require_resource_group(call.context, subscriptionId, resourceGroupName)
    context = call.context
    operation_id = uuid.uuid4().hex

    def mark_deleting(body: dict[str, Any]) -> None:
        body["properties"]["provisioningState"] = "Deleting"

    with context.store.transaction() as db:
        db.execute("INSERT INTO resource_group_deletions (id, resource_group, status, started) VALUES (?, ?, ?, ?)",
                   (operation_id, resource_key(group.id), "InProgress", time.time()))
    context.store.update(group.id, mark_deleting)
    _start_teardown(context, group.id)
    location = call.url(f"/subscriptions/{subscriptionId}/operationresults/"
                        f"{_operation_token(operation_id, group.name, group.location)}",
                        **{"api-version": call.api_version})
    return Response(b"", status=202, headers={"Location": location, "Retry-After": _POLL_RETRY_AFTER})


def get_deletion_result(call: Call, subscriptionId: str, operationToken: str) -> Response:
    check_subscription_id(subscriptionId)
    context = call.context
    operation_id = _operation_id(operationToken)
    rows = context.store.query("SELECT * FROM resource_group_deletions WHERE id = ?", (operation_id or "",))
    if not rows:
        raise OperationNotFound("The operation could not be found; it may have expired.")
    row = rows[0]
    if row["status"] == "Succeeded":
        return Response(b"", status=200)
    if row["status"] == "Failed":
        raise ResourceGroupDeletionBlocked(
            f"Deletion of the resource group failed: {row['error']}")
    group = context.store.get(row["resource_group"])
    if group is None:  # gone already; the thread is about to record it
        return Response(b"", status=200)
    _start_teardown(context, group["id"])  # no-op unless a restart interrupted it
    return Response(b"", status=202, headers={"Location": call.request.url, "Retry-After": _POLL_RETRY_AFTER})


def resume_deletions(context: ServiceContext) -> None:
    """Tear down again every group a stopped service left ``Deleting``; called when a service starts."""
    for group in context.store.list(RESOURCE_GROUP_TYPE):
        if group["properties"].get("provisioningState") == "Deleting":
            log.info("resuming deletion of resource group %s", group["name"])
            _start_teardown(context, group["id"])


def _start_teardown(context: ServiceContext, group_id: str) -> None:
    key = resource_key(group_id)
    if not _Deletions.claim(context, key):
        return
    threading.Thread(target=_teardown, args=(context, group_id), name=f"delete-{key.rsplit('/', 1)[-1]}",
                     daemon=True).start()


def _teardown(context: ServiceContext, group_id: str) -> None:
    key = resource_key(group_id)
    store = context.store
    try:
        for delete_resources_in in context.group_deleters:
            delete_resources_in(group_id)
        store.delete(group_id, recursive=True)
        with store.transaction() as db:
            db.execute("UPDATE resource_group_deletions SET status = 'Succeeded', ended = ? "
                       "WHERE resource_group = ? AND status = 'InProgress'", (time.time(), key))
        log.info("deleted resource group %s", group_id)
    except Exception as exc:  # noqa: BLE001 - recorded for the poller; the group stays, usable again
        log.exception("deleting resource group %s failed", group_id)
        reason = f"{type(exc).__name__} while deleting the resources in the group; the group and what is " \
                 "left in it were kept."
        try:
            store.update(group_id, lambda body: body["properties"].update(provisioningState="Succeeded"))
            with store.transaction() as db:
                db.execute("UPDATE resource_group_deletions SET status = 'Failed', error = ?, ended = ? "
                           "WHERE resource_group = ? AND status = 'InProgress'", (reason, time.time(), key))
        except Exception:  # noqa: BLE001 - the store is closing (service stopping): resumed at next start
            log.warning("could not record the failed deletion of %s; it resumes when the service starts", group_id)
    finally:
        _Deletions.release(context, key)


_RG = "/subscriptions/{subscriptionId}/resourcegroups/{resourceGroupName}"

ROUTES: list[Route] = [
    Route("GET", "/subscriptions/{subscriptionId}/resourcegroups", list_resource_groups, API_VERSIONS),
    Route("PUT", _RG, put_resource_group, API_VERSIONS),
    Route("GET", _RG, get_resource_group, API_VERSIONS),
    Route("HEAD", _RG, head_resource_group, API_VERSIONS),
    Route("PATCH", _RG, patch_resource_group, API_VERSIONS),
    Route("DELETE", _RG, delete_resource_group, API_VERSIONS),
    Route("GET", "/subscriptions/{subscriptionId}/operationresults/{operationToken}", get_deletion_result,
          API_VERSIONS),
]
