"""Storage accounts as the api-versions before SKUs describe them (2015-05-01-preview, 2015-06-15).

Those versions name the replication type ``properties.accountType`` (``Standard_LRS``, ...) where later
ones have ``sku`` and ``kind``, and answer listKeys and regenerateKey with ``{"key1": ..., "key2": ...}``
instead of ``{"keys": [{"keyName", "value", "permissions"}]}`` (the 2015-06-15 specification, and the
models azure-mgmt-storage still generates from it). The service keeps one account document in the
current shape; these functions translate at the edge, in and out.
"""
from __future__ import annotations

import copy
from typing import Any

from ..core.api_versions import STORAGE_CLASSIC
from ..core.arm_errors import InvalidRequestContent

__all__ = ["is_classic", "request_from_classic", "account_for_version", "keys_for_version"]

#: the account types of the classic versions (a classic account is general-purpose v1: kind Storage).
CLASSIC_ACCOUNT_TYPES = ("Standard_LRS", "Standard_ZRS", "Standard_GRS", "Standard_RAGRS", "Premium_LRS")


def is_classic(api_version: str) -> bool:
    return api_version in STORAGE_CLASSIC


def request_from_classic(request: dict[str, Any], *, for_create: bool) -> dict[str, Any]:
    """A classic PUT (``for_create``) or PATCH body in today's shape: ``properties.accountType``
    becomes ``sku`` (and a new account is general-purpose v1, kind ``Storage``). Mistakes are
    named as the caller wrote them: ``properties.accountType``."""
    converted = copy.deepcopy(request)
    properties = converted.get("properties")
    account_type = properties.pop("accountType", None) if isinstance(properties, dict) else None
    if account_type is None:
        if for_create:
            raise InvalidRequestContent("The request content was invalid: 'properties.accountType' "
                                        "is required, e.g. \"Standard_LRS\".")
        return converted
    if account_type not in CLASSIC_ACCOUNT_TYPES:
        raise InvalidRequestContent(
            f"The value '{account_type}' is not allowed for property 'properties.accountType'. Valid values "
            f"are: {', '.join(CLASSIC_ACCOUNT_TYPES)}.")
    converted["sku"] = {"name": account_type}
    if for_create:
        converted["kind"] = "Storage"
    return converted


def account_for_version(account: dict[str, Any], api_version: str) -> dict[str, Any]:
    """The stored account as ``api_version`` shows it."""
    if not is_classic(api_version):
        return account
    shown = copy.deepcopy(account)
    sku = shown.pop("sku", None) or {}
    shown.pop("kind", None)
    shown.setdefault("properties", {})["accountType"] = sku.get("name")
    return shown


def keys_for_version(keys: dict[str, Any], api_version: str) -> dict[str, Any]:
    """A ``{"keys": [...]}`` body as ``api_version`` shows it."""
    if not is_classic(api_version):
        return keys
    return {k["keyName"]: k["value"] for k in keys.get("keys", [])}
