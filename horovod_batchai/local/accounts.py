"""Storage accounts as both planes see them.

A storage account is an ARM resource (``Microsoft.Storage/storageAccounts``) whose two access keys
are kept in the store's private column as ``{"keys": [{"keyName": "key1", "value": ...,
"permissions": "FULL"}, {"keyName": "key2", ...}]}``. Account names are globally unique, so the
Files data plane finds an account by name alone.
"""
from __future__ import annotations

import base64
import secrets
import json
from typing import Any, Optional

from .store import Store

__all__ = ["ACCOUNT_TYPE", "find_account", "account_keys", "new_key"]

ACCOUNT_TYPE = "microsoft.storage/storageaccounts"


def new_key() -> str:
    """A fresh account key: 64 random bytes, base64, like Azure's."""
    return base64.b64encode(secrets.token_bytes(64)).decode("ascii")


def find_account(store: Store, name: str) -> Optional[dict[str, Any]]:
    """The account resource named ``name`` (case-insensitive), wherever it lives, or None."""
    rows = store.query("SELECT body FROM resources WHERE type = ? AND substr(key, -?) = ?",
                       (ACCOUNT_TYPE, len(name) + 1, "/" + name.lower()))
    if not rows:
        return None
    return json.loads(rows[0]["body"])


def account_keys(store: Store, name: str) -> list[str]:
    """The account's current key values (key1, key2), or [] if there is no such account."""
    account = find_account(store, name)
    if account is None:
        return []
    private = store.get_private(account["id"])
    return [k["value"] for k in private.get("keys", [])]
