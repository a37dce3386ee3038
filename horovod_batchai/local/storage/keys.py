"""The first key a storage account is created with, derived from the service's secret.

A client that is configured before the account exists -- the Azure CLI after ``eval "$(horovod-batchai
local az-env)"``, whose storage commands read ``AZURE_STORAGE_CONNECTION_STRING`` as Azurite users set
it -- needs the key the account will have. So ``key1`` of a new account is HMAC-SHA512 of its name
under the token secret: 64 bytes, base64, Azure's key length, known to whoever can read the state
directory (who can already act on the service) and to no one else. ``key2`` and every regenerated
key are random. A deleted account that is created again gets the same ``key1``.
"""
from __future__ import annotations

import base64
import hashlib
import hmac

__all__ = ["initial_key1"]


def initial_key1(secret: bytes, account_name: str) -> str:
    digest = hmac.new(secret, b"storage account key1\0" + account_name.lower().encode("ascii"), hashlib.sha512)
    return base64.b64encode(digest.digest()).decode("ascii")
