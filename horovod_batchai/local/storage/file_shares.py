"""Microsoft.Storage file services and file shares: ``.../storageAccounts/{account}/fileServices/default``
and ``.../fileServices/default/shares/{share}``, what ``az storage share-rm``, azure-mgmt-storage's
``file_shares``, templates and the portal use.

A share here is the Files data plane's share (``files/store.py``): a share made through either is
the same share through the other, with the same quota, metadata, access tier and protocol, and its
``shareUsageBytes`` (``$expand=stats``) is the bytes its files hold. Wire shapes follow the
Microsoft.Storage specification (``file.json``) and its examples: PUT answers 201 for a new share
and 200 for an existing one (whose given properties it sets), DELETE 200, or 204 when there was no
such share; lists page with ``$maxpagesize`` and a ``nextLink`` carrying ``$skipToken``.

What is not kept, and refused with a clear error rather than accepted and forgotten: share soft
delete (``shareDeleteRetentionPolicy.enabled``), stored access policies (``signedIdentifiers``),
snapshots and leases. ``$expand=deleted`` and ``$expand=snapshots`` therefore list the live shares
only, as Azure does for an account that has none.
"""
from __future__ import annotations

import copy
import re
from datetime import datetime, timezone
from typing import Any, Optional

from werkzeug.wrappers import Response

from .accounts import ROOT_SQUASH, SHARE_ACCESS_TIERS, SHARE_PROTOCOLS, nfs_shares_allowed, share_tiers_for
from .api import existing_account
from .errors import FeatureNotSupportedForAccount, InvalidResourceName
from .records import StorageAccount
from ..core.api_versions import STORAGE_FILE_SERVICES
from ..core.arm_errors import InvalidParameter, InvalidRequestContent, InvalidRequestPropertyValue, ShareNotFound
from ..core.routing import Call, Route, json_response
from ..files.errors import StorageError
from ..files.store import MAX_QUOTA_GIB, ShareInfo, shares_for, validate_metadata, validate_share_name

__all__ = ["ROUTES", "FILE_SERVICE_TYPE"]

FILE_SERVICE_TYPE = "microsoft.storage/storageaccounts/fileservices"
_SHARE_TYPE = "Microsoft.Storage/storageAccounts/fileServices/shares"
#: the largest page a list answers, whatever $maxpagesize asks.
_MAX_PAGE = 5000
_STARTSWITH = re.compile(r"^\s*startswith\(\s*name\s*,\s*'([^']*)'\s*\)\s*$", re.IGNORECASE)


def _arm_time(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _service_id(account: StorageAccount) -> str:
    return f"{account.id}/fileServices/default"


def _share_doc(account: StorageAccount, info: ShareInfo, *, usage: Optional[int] = None) -> dict[str, Any]:
    """A share as ARM answers it (FileShare / FileShareItem)."""
    properties: dict[str, Any] = {
        "lastModifiedTime": _arm_time(info.last_modified),
        "metadata": dict(info.metadata),
        "shareQuota": info.quota_gib,
        "enabledProtocols": info.protocols,
        "accessTier": info.access_tier,
        "leaseStatus": "Unlocked",
        "leaseState": "Available",
    }
    if info.access_tier_changed is not None:
        properties["accessTierChangeTime"] = _arm_time(info.access_tier_changed)
    if info.root_squash:
        properties["rootSquash"] = info.root_squash
    if usage is not None:
        properties["shareUsageBytes"] = usage
    return {"id": f"{_service_id(account)}/shares/{info.name}", "name": info.name, "type": _SHARE_TYPE,
            "etag": info.etag, "properties": properties}


def _expand(call: Call, allowed: tuple[str, ...]) -> set[str]:
    raw = call.request.args.get("$expand")
    if raw is None:
        return set()
    values = {v.strip().lower() for v in raw.split(",") if v.strip()}
    unknown = values - set(allowed)
    if unknown:
        raise InvalidParameter(f"The value '{raw}' is not valid for '$expand'; valid values are "
                               f"{', '.join(allowed)} (comma-separated).", target="$expand")
    return values


def _share_name(name: str) -> str:
    try:
        return validate_share_name(name)
    except StorageError:
        raise InvalidResourceName(
            f"The share name '{name[:80]}' is not valid: use 3-63 lower-case letters, digits and single hyphens, "
            "starting and ending with a letter or digit.", target="shareName") from None


def _choice(value: Any, field: str, allowed: tuple[str, ...]) -> str:
    if isinstance(value, str):
        for member in allowed:
            if member.lower() == value.lower():
                return member
    raise InvalidRequestPropertyValue(f"The value '{value}' is not allowed for property '{field}'. Valid values "
                                      f"are: {', '.join(allowed)}.", target=field)


def _share_request(call: Call, account: StorageAccount, current: Optional[ShareInfo]) -> dict[str, Any]:
    """The settable properties of a PUT or PATCH body, checked against the account and the share
    (``current``, None when it is to be created), as keyword arguments of the share store."""
    body = call.json_object()
    properties = body.get("properties") or {}
    if not isinstance(properties, dict):
        raise InvalidRequestContent("The request content was invalid: 'properties' must be an object.")
    chosen: dict[str, Any] = {}
    quota = properties.get("shareQuota")
    if quota is not None:
        if not isinstance(quota, int) or isinstance(quota, bool) or not 1 <= quota <= MAX_QUOTA_GIB:
            raise InvalidRequestPropertyValue(f"The value '{quota}' is not allowed for property 'shareQuota': it is "
                                              f"an integer from 1 to {MAX_QUOTA_GIB} (GiB).",
                                              target="properties.shareQuota")
        chosen["quota_gib"] = quota
    metadata = properties.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
            raise InvalidRequestPropertyValue("'metadata' must be an object of string values.",
                                              target="properties.metadata")
        try:
            chosen["metadata"] = validate_metadata(metadata)
        except StorageError as err:  # the data plane's rules for names and size: the same share
            raise InvalidRequestPropertyValue(err.message, target="properties.metadata") from None
    tier = properties.get("accessTier")
    if tier is not None:
        tier = _choice(tier, "properties.accessTier", SHARE_ACCESS_TIERS)
        if tier not in share_tiers_for(account.kind):
            raise InvalidRequestPropertyValue(
                f"A share of a {account.kind} account may have the access tier "
                f"{' or '.join(share_tiers_for(account.kind))}, not {tier}.", target="properties.accessTier")
        chosen["access_tier"] = tier
    protocols = properties.get("enabledProtocols")
    if protocols is not None:
        protocols = _choice(protocols, "properties.enabledProtocols", SHARE_PROTOCOLS)
        if current is not None and protocols != current.protocols:
            raise InvalidRequestPropertyValue(f"The share's enabledProtocols is {current.protocols} and can only be "
                                              "chosen when the share is created.",
                                              target="properties.enabledProtocols")
        if protocols == "NFS" and not nfs_shares_allowed(account.kind):
            raise FeatureNotSupportedForAccount("NfsFileShares is not supported for the account: NFS shares need a "
                                                f"premium file account (FileStorage); this one is {account.kind}.")
        if current is None:
            chosen["protocols"] = protocols
    squash = properties.get("rootSquash")
    if squash is not None:
        squash = _choice(squash, "properties.rootSquash", ROOT_SQUASH)
        if (current.protocols if current is not None else chosen.get("protocols", "SMB")) != "NFS":
            raise InvalidRequestPropertyValue("rootSquash applies to NFS shares only.", target="properties.rootSquash")
        chosen["root_squash"] = squash
    if properties.get("signedIdentifiers"):
        raise InvalidRequestPropertyValue("The local service keeps no stored access policies: leave "
                                          "'signedIdentifiers' out and use SAS tokens without 'si'.",
                                          target="properties.signedIdentifiers")
    return chosen


# -- file services ------------------------------------------------------------------------------

def _service_doc(call: Call, account: StorageAccount) -> dict[str, Any]:
    stored = call.context.store.get(_service_id(account))
    properties = copy.deepcopy(stored["properties"]) if stored else {"cors": {"corsRules": []}}
    properties["shareDeleteRetentionPolicy"] = {"enabled": False}
    return {"id": _service_id(account), "name": "default", "type": "Microsoft.Storage/storageAccounts/fileServices",
            "sku": account.doc.get("sku"), "properties": properties}


def list_file_services(call: Call, subscriptionId: str, resourceGroupName: str, accountName: str) -> Response:
    account = existing_account(call.context, subscriptionId, resourceGroupName, accountName)
    return json_response({"value": [_service_doc(call, account)]})


def get_file_service(call: Call, subscriptionId: str, resourceGroupName: str, accountName: str) -> Response:
    account = existing_account(call.context, subscriptionId, resourceGroupName, accountName)
    return json_response(_service_doc(call, account))


def put_file_service(call: Call, subscriptionId: str, resourceGroupName: str, accountName: str) -> Response:
    """Set the file service's CORS rules and protocol settings (kept and answered; a loopback
    service has no browsers to enforce CORS for and no SMB clients to negotiate with)."""
    account = existing_account(call.context, subscriptionId, resourceGroupName, accountName, for_write=True)
    properties = call.json_object().get("properties") or {}
    if not isinstance(properties, dict):
        raise InvalidRequestContent("The request content was invalid: 'properties' must be an object.")
    retention = properties.get("shareDeleteRetentionPolicy") or {}
    if isinstance(retention, dict) and retention.get("enabled"):
        raise FeatureNotSupportedForAccount("Share soft delete is not supported by the local service: a deleted "
                                            "share is gone at once; set shareDeleteRetentionPolicy.enabled to false.")
    kept = {k: properties[k] for k in ("cors", "protocolSettings") if properties.get(k) is not None}
    stored = call.context.store.get(_service_id(account))
    merged = {**(stored["properties"] if stored else {"cors": {"corsRules": []}}), **kept}
    call.context.store.put(_service_id(account), FILE_SERVICE_TYPE, account.id,
                           {"id": _service_id(account), "name": "default", "properties": merged})
    return json_response(_service_doc(call, account))


# -- shares -------------------------------------------------------------------------------------

def _get_share(call: Call, account: StorageAccount, share: str) -> ShareInfo:
    try:
        return shares_for(call.context).get_share(account.name, share)
    except StorageError:
        raise ShareNotFound("The specified share does not exist.") from None


def put_share(call: Call, subscriptionId: str, resourceGroupName: str, accountName: str, shareName: str) -> Response:
    account = existing_account(call.context, subscriptionId, resourceGroupName, accountName, for_write=True)
    name = _share_name(shareName)
    if "snapshots" in _expand(call, ("snapshots",)):  # `az storage share-rm snapshot`: a PUT that snapshots
        raise FeatureNotSupportedForAccount("Share snapshots are not supported by the local service.")
    shares = shares_for(call.context)
    with call.context.lock:  # PUT is create-or-update: two at once must not both create
        try:
            current: Optional[ShareInfo] = shares.get_share(account.name, name)
        except StorageError:
            current = None
        chosen = _share_request(call, account, current)
        if current is None:
            tier = chosen.pop("access_tier", None) or share_tiers_for(account.kind)[0]
            protocols = chosen.pop("protocols", "SMB")
            squash = chosen.pop("root_squash", None) or ("NoRootSquash" if protocols == "NFS" else None)
            info = shares.create_share(account.name, name, access_tier=tier, protocols=protocols, root_squash=squash,
                                       **chosen)
            return json_response(_share_doc(account, info), 201)
        info = shares.update_share(account.name, name, **chosen) if chosen else current
    return json_response(_share_doc(account, info), 200)


def patch_share(call: Call, subscriptionId: str, resourceGroupName: str, accountName: str, shareName: str) -> Response:
    account = existing_account(call.context, subscriptionId, resourceGroupName, accountName, for_write=True)
    current = _get_share(call, account, _share_name(shareName))
    chosen = _share_request(call, account, current)
    info = shares_for(call.context).update_share(account.name, current.name, **chosen) if chosen else current
    return json_response(_share_doc(account, info))


def get_share(call: Call, subscriptionId: str, resourceGroupName: str, accountName: str, shareName: str) -> Response:
    account = existing_account(call.context, subscriptionId, resourceGroupName, accountName)
    if call.request.headers.get("x-ms-snapshot"):
        raise ShareNotFound("The specified share snapshot does not exist: the local service keeps no snapshots.")
    stats = "stats" in _expand(call, ("stats",))
    info = _get_share(call, account, _share_name(shareName))
    usage = shares_for(call.context).share_usage_bytes(account.name, info.name) if stats else None
    return json_response(_share_doc(account, info, usage=usage))


def delete_share(call: Call, subscriptionId: str, resourceGroupName: str, accountName: str, shareName: str) -> Response:
    account = existing_account(call.context, subscriptionId, resourceGroupName, accountName, for_write=True)
    name = _share_name(shareName)
    include = call.request.args.get("$include")
    if include is not None and include.lower() not in ("snapshots", "leased-snapshots", "none"):
        raise InvalidParameter(f"The value '{include}' is not valid for '$include'; valid values are snapshots, "
                               "leased-snapshots, none.", target="$include")
    if call.request.headers.get("x-ms-snapshot"):
        return Response(b"", status=204)  # a snapshot, of which there are none: the share itself stays
    try:
        shares_for(call.context).delete_share(account.name, name)
    except StorageError:
        return Response(b"", status=204)  # no such share: Azure answers 204
    return Response(b"", status=200)


def list_shares(call: Call, subscriptionId: str, resourceGroupName: str, accountName: str) -> Response:
    account = existing_account(call.context, subscriptionId, resourceGroupName, accountName)
    _expand(call, ("deleted", "snapshots"))
    args = call.request.args
    page_size = _MAX_PAGE
    if args.get("$maxpagesize"):
        try:
            page_size = int(args["$maxpagesize"])
        except ValueError:
            page_size = 0
        if not 1 <= page_size <= _MAX_PAGE:
            raise InvalidParameter(f"'$maxpagesize' must be an integer from 1 to {_MAX_PAGE}.", target="$maxpagesize")
    prefix = args.get("$filter") or ""
    matched = _STARTSWITH.match(prefix)
    if matched:
        prefix = matched.group(1)
    skip = (args.get("$skipToken") or "").rsplit("/", 1)[-1]  # /<account>/<first share of the page>
    shares = [s for s in shares_for(call.context).list_shares(account.name)
              if s.name.startswith(prefix) and s.name >= skip]
    page, rest = shares[:page_size], shares[page_size:]
    body: dict[str, Any] = {"value": [_share_doc(account, s) for s in page]}
    if rest:
        query = {"api-version": call.api_version, "$maxpagesize": str(page_size),
                 "$skipToken": f"/{account.name}/{rest[0].name}"}
        for name in ("$filter", "$expand"):
            if args.get(name):
                query[name] = args[name]
        body["nextLink"] = call.url(call.request.path, **query)
    return json_response(body)


_ACCOUNT = ("/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/Microsoft.Storage"
            "/storageAccounts/{accountName}")
_SERVICE = _ACCOUNT + "/fileServices/default"

ROUTES: list[Route] = [
    Route("GET", _ACCOUNT + "/fileServices", list_file_services, STORAGE_FILE_SERVICES),
    Route("GET", _SERVICE, get_file_service, STORAGE_FILE_SERVICES),
    Route("PUT", _SERVICE, put_file_service, STORAGE_FILE_SERVICES),
    Route("GET", _SERVICE + "/shares", list_shares, STORAGE_FILE_SERVICES),
    Route("PUT", _SERVICE + "/shares/{shareName}", put_share, STORAGE_FILE_SERVICES),
    Route("PATCH", _SERVICE + "/shares/{shareName}", patch_share, STORAGE_FILE_SERVICES),
    Route("GET", _SERVICE + "/shares/{shareName}", get_share, STORAGE_FILE_SERVICES),
    Route("DELETE", _SERVICE + "/shares/{shareName}", delete_share, STORAGE_FILE_SERVICES),
]
