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
from urllib.parse import urlparse

from ..core.store import Store

__all__ = ["ACCOUNT_TYPE", "find_account", "account_keys", "all_account_keys", "new_key", "parse_share_url",
           "SHARE_URL_FORMS", "SHARE_ACCESS_TIERS", "SHARE_PROTOCOLS", "ROOT_SQUASH", "share_tiers_for",
           "nfs_shares_allowed"]

ACCOUNT_TYPE = "microsoft.storage/storageaccounts"

#: a share's access tiers, as both planes name them; which an account offers depends on its kind.
SHARE_ACCESS_TIERS = ("TransactionOptimized", "Hot", "Cool", "Premium")
SHARE_PROTOCOLS = ("SMB", "NFS")
#: an NFS share's root squash.
ROOT_SQUASH = ("NoRootSquash", "RootSquash", "AllSquash")


def share_tiers_for(kind: str) -> tuple[str, ...]:
    """The tiers a share of an account of ``kind`` may have, its default first: a premium file
    account (FileStorage) has Premium only, every other kind the three standard tiers."""
    return ("Premium",) if kind == "FileStorage" else ("TransactionOptimized", "Hot", "Cool")


def nfs_shares_allowed(kind: str) -> bool:
    """NFS shares exist on premium file accounts only."""
    return kind == "FileStorage"


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


def all_account_keys(store: Store) -> dict[str, list[str]]:
    """Every account's name and current keys: what the blob endpoint (Azurite) must know."""
    found: dict[str, list[str]] = {}
    for row in store.query("SELECT body, private FROM resources WHERE type = ?", (ACCOUNT_TYPE,)):
        body = json.loads(row["body"])
        private = json.loads(row["private"]) if row["private"] else {}
        found[body["name"]] = [k["value"] for k in private.get("keys", [])]
    return found


SHARE_URL_FORMS = "'https://<account>.file.core.windows.net/<share>' or '<local endpoint>/<account>/<share>'"


def parse_share_url(url: str, base_url: str = "") -> tuple[str, str]:
    """(account, share) of a file share URL: Azure's ``https://<account>.file.core.windows.net/<share>``
    or the local service's path-style ``{endpoint}/<account>/<share>``. Raises ValueError otherwise."""
    parsed = urlparse(url)
    host = (parsed.hostname or "").lower()
    parts = [p for p in parsed.path.split("/") if p]
    if ".file." in host and len(parts) == 1:
        return host.split(".", 1)[0], parts[0]
    local_host = (urlparse(base_url).hostname or "127.0.0.1").lower()
    if host in (local_host, "127.0.0.1", "localhost", "::1") and len(parts) == 2:
        return parts[0], parts[1]
    raise ValueError(f"azureFileUrl {url[:200]!r} is not an Azure file share URL; expected {SHARE_URL_FORMS}")
