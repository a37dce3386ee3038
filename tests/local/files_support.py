"""Helpers shared by the Files data-plane tests: storage accounts, Microsoft's share clients pointed
at the local service, and raw HTTPS requests for what the SDK will not send (bad paths, forged
signatures)."""
from __future__ import annotations

import http.client
import ssl
from dataclasses import dataclass
from typing import Optional

from azure.storage.fileshare import ShareServiceClient

from horovod_batchai.local import LocalService
from horovod_batchai.local.storage.accounts import new_key

SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"


@dataclass(frozen=True)
class Account:
    name: str
    key: str
    id: str


def create_account(service: LocalService, name: str = "teststorage", rg: str = "files-rg") -> Account:
    """A storage account made the real way: ARM resource group + storage account, then listKeys."""
    from azure.mgmt.resource.resources import ResourceManagementClient
    from azure.mgmt.storage import StorageManagementClient
    kwargs = {"base_url": service.endpoint, "connection_verify": str(service.info.ca_cert)}
    with ResourceManagementClient(service.credential(), SUBSCRIPTION, **kwargs) as resources:
        resources.resource_groups.create_or_update(rg, {"location": "eastus"})
    with StorageManagementClient(service.credential(), SUBSCRIPTION, **kwargs) as storage:
        account = storage.storage_accounts.begin_create(
            rg, name, {"sku": {"name": "Standard_LRS"}, "kind": "StorageV2", "location": "eastus"}).result()
        key = storage.storage_accounts.list_keys(rg, name).keys_property[0].value
    return Account(name, key, account.id)


def put_account(service: LocalService, name: str = "teststorage", rg: str = "files-rg") -> Account:
    """A storage account written straight into the store, the way storage_api keeps one."""
    rg_id = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{rg}"
    account_id = f"{rg_id}/providers/Microsoft.Storage/storageAccounts/{name}"
    keys = [new_key(), new_key()]
    body = {"id": account_id, "name": name, "type": "Microsoft.Storage/storageAccounts",
            "location": "eastus", "kind": "StorageV2", "sku": {"name": "Standard_LRS", "tier": "Standard"},
            "properties": {"provisioningState": "Succeeded",
                           "primaryEndpoints": {"file": f"{service.endpoint}/{name}/"}}}
    private = {"keys": [{"keyName": "key1", "value": keys[0], "permissions": "FULL"},
                        {"keyName": "key2", "value": keys[1], "permissions": "FULL"}]}
    assert service.context is not None
    service.context.store.put(account_id, "Microsoft.Storage/storageAccounts", rg_id, body, private=private)
    return Account(name, keys[0], account_id)


def share_service(service: LocalService, account: Account, *, credential: Optional[object] = None,
                  **kwargs: object) -> ShareServiceClient:
    """Microsoft's ShareServiceClient for ``account`` on the local service (path-style URL)."""
    return ShareServiceClient(f"{service.endpoint}/{account.name}",
                              credential=account.key if credential is None else credential,
                              connection_verify=str(service.info.ca_cert), **kwargs)


def raw_request(service: LocalService, method: str, target: str, headers: Optional[dict[str, str]] = None,
                body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """One HTTPS request with the target sent byte for byte (no client-side path normalisation)."""
    context = ssl.create_default_context(cafile=str(service.info.ca_cert))
    host, port = service.endpoint.removeprefix("https://").rsplit(":", 1)
    conn = http.client.HTTPSConnection(host, int(port), context=context, timeout=30)
    try:
        conn.putrequest(method, target, skip_accept_encoding=True,
                        skip_host=any(k.lower() == "host" for k in (headers or {})))
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        if body or method in ("PUT", "POST"):
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders()
        if body:
            conn.send(body)
        response = conn.getresponse()
        data = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data
    finally:
        conn.close()
