"""Storage accounts and their file shares' clients, through azure-mgmt-storage and
azure-storage-file-share: the same on every Azure-shaped place, written once as operations
(:mod:`.._shared.steps`) that every place's operations class takes in.

A :class:`FileShare` reaches its account through these (create, read its file endpoint, list its
keys, delete) and its files through the data-plane client :meth:`share_service` hands out, kept
by the connection so that closing the target closes it.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Optional, cast

from azure.core.exceptions import ResourceNotFoundError

from .._models.errors import NotFoundError, azure_errors
from .._shared.lro import poll_options, resume_token
from .._shared.steps import Done, Mapped, Steps
from .arm import resource_group_id
from .base import IDEMPOTENT_POST

if TYPE_CHECKING:
    from .connection import Connection

__all__ = ["StorageAccountOperations", "file_endpoint", "full_key", "storage_account_id"]

log = logging.getLogger(__name__)
if TYPE_CHECKING:

    pass



def storage_account_id(subscription_id: str, resource_group: str, account_name: str) -> str:
    return f"{resource_group_id(subscription_id, resource_group)}/providers/Microsoft.Storage/storageAccounts/" \
           f"{account_name}"


class StorageAccountOperations:
    """The storage account operations of a place, on its connection (an operations class of a
    place takes them in; an aio place may also run them alone, over an aio connection)."""

    def __init__(self, connection: "Connection") -> None:
        self._connection = connection

    def _account_id(self, resource_group: str, account_name: str) -> str:
        return storage_account_id(self._connection.subscription_id, resource_group, account_name)

    def _endpoint_of(self, account: Any, account_name: str) -> str:
        return file_endpoint(account) or self._connection.default_file_endpoint(account_name)

    def begin_create_storage_account(self, resource_group: str, account_name: str, location: str, sku: str, *,
                                     continuation_token: Optional[str] = None,
                                     polling_interval: Optional[float] = None) -> "Steps[Any]":
        """Get-or-create of a StorageV2 account; the poller's result is its file endpoint."""
        action, resource = "creating storage account", self._account_id(resource_group, account_name)
        client = yield self._connection.storage()
        with azure_errors(action, resource):
            if continuation_token is not None:
                inner = resume_token(continuation_token, action=action, resource=resource)
                if inner is None:
                    account = yield client.storage_accounts.get_properties(resource_group, account_name)
                    return (yield Done(self._endpoint_of(account, account_name), action, resource))
                # the parameters went with the first request; a resumed poller only polls
                poller = yield client.storage_accounts.begin_create(resource_group, account_name, cast(Any, None),
                                                                    continuation_token=inner,
                                                                    **poll_options(polling_interval))
            else:
                try:
                    account = yield client.storage_accounts.get_properties(resource_group, account_name)
                    log.info("storage account %s exists; using it", account_name)
                    return (yield Done(self._endpoint_of(account, account_name), action, resource))
                except ResourceNotFoundError:
                    pass
                log.info("creating storage account %s (%s) in %s", account_name, sku, location)
                from azure.mgmt.storage import models
                params = models.StorageAccountCreateParameters(sku=models.Sku(name=sku), kind="StorageV2",
                                                               location=location)
                poller = yield client.storage_accounts.begin_create(resource_group, account_name, params,
                                                                    **poll_options(polling_interval))
        return (yield Mapped(poller, lambda account: self._endpoint_of(account, account_name), action, resource))

    def get_file_endpoint(self, resource_group: str, account_name: str) -> "Steps[str]":
        """The account's Files endpoint; NotFoundError when there is no such account."""
        client = yield self._connection.storage()
        with azure_errors("reading storage account", self._account_id(resource_group, account_name)):
            account = yield client.storage_accounts.get_properties(resource_group, account_name)
        return self._endpoint_of(account, account_name)

    def get_account_key(self, resource_group: str, account_name: str) -> "Steps[str]":
        """The account's first full-permission key, from ``listKeys``."""
        resource = self._account_id(resource_group, account_name)
        client = yield self._connection.storage()
        with azure_errors("listing keys of", resource):
            result = yield client.storage_accounts.list_keys(resource_group, account_name,
                                                             **IDEMPOTENT_POST)  # type: ignore[arg-type]
        return full_key(result, account_name, resource)

    def delete_storage_account(self, resource_group: str, account_name: str) -> "Steps[None]":
        """Delete the account with everything in it (ARM answers at once, also when it is gone)."""
        client = yield self._connection.storage()
        with azure_errors("deleting storage account", self._account_id(resource_group, account_name)):
            log.info("deleting storage account %s", account_name)
            yield client.storage_accounts.delete(resource_group, account_name)

    # -- the data plane's client (no request) ---------------------------------------------------
    def share_service(self, account_url: str, account_key: str) -> Any:
        """A ``ShareServiceClient`` (sync or aio, as the connection is) signing with the shared
        key, closed with the target unless :meth:`release_client` hands it back first."""
        return self._connection.share_service(account_url, account_key)

    def keep_client(self, client: Any) -> None:
        """Close ``client`` with the target."""
        self._connection.adopt(client)

    def release_client(self, client: Any) -> None:
        """The caller closes ``client`` itself."""
        self._connection.disown(client)

    def keeps_client(self, client: Any) -> bool:
        """Whether ``client`` is kept and was not closed since (by closing the target)."""
        return self._connection.holds(client)


def full_key(result: object, account_name: str, account_id: str) -> str:
    """The first full-permission key of a ``listKeys`` answer."""
    # azure-mgmt-storage 25 renamed the list to keys_property (its models are mappings, whose
    # keys() is a method); older releases, which setup.py allows too, call it keys.
    listed = list(getattr(result, "keys_property", None) or getattr(result, "keys", None) or [])
    keys = [k for k in listed if str(k.permissions or "").upper() == "FULL"] or listed
    if not keys or not keys[0].value:
        raise NotFoundError(f"storage account {account_name} returned no keys", resource=account_id)
    return str(keys[0].value)


def file_endpoint(account: object) -> Optional[str]:
    endpoints = getattr(account, "primary_endpoints", None)
    url = getattr(endpoints, "file", None) if endpoints is not None else None
    return str(url) if url else None
