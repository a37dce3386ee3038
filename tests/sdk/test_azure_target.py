"""The Azure target, with HTTP answered by `responses`: the SDK builds https URLs for
management.azure.com and <account>.file.core.windows.net, and sends bearer tokens only to the
management endpoint (shared-key signatures to Files, nothing but the SAS to download links)."""
from __future__ import annotations

import json
import re
from typing import Any

import pytest
import responses
from azure.core.credentials import AccessToken

from horovod_batchai import FileShare, Target, TargetError, Workspace
from horovod_batchai._shared.target import LOCAL_SUBSCRIPTION

SUB = "11111111-2222-3333-4444-555555555555"
ARM = "https://management.azure.com"
FILES = "https://mystorageaccount.file.core.windows.net"
KEY = "a2V5LWZvci10ZXN0cy1vbmx5LWtleS1mb3ItdGVzdHMtb25seQ=="
TOKEN = "token-for-tests-only"


class RecordingCredential:
    """A TokenCredential that records the scopes it was asked for."""

    def __init__(self) -> None:
        self.scopes: list[tuple[str, ...]] = []

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        self.scopes.append(scopes)
        return AccessToken(TOKEN, 4102444800)


def _json(status: int, body: dict) -> tuple[int, dict, str]:
    return status, {"Content-Type": "application/json"}, json.dumps(body)


def _not_found(code: str) -> tuple[int, dict, str]:
    return _json(404, {"error": {"code": code, "message": "not found"}})


@pytest.fixture
def http() -> Any:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


def test_azure_target_urls_and_credentials(http: Any) -> None:
    rg_url = re.compile(rf"{ARM}/subscriptions/{SUB}/resourcegroups/batchai\.horovod\?api-version=.*", re.I)
    ws_url = re.compile(rf"{ARM}/subscriptions/{SUB}/resourceGroups/batchai\.horovod/providers/Microsoft\.BatchAI/"
                        r"workspaces/batchaidev\?api-version=2018-05-01$")
    account_url = re.compile(rf"{ARM}/subscriptions/{SUB}/resourceGroups/batchai\.horovod/providers/"
                             r"Microsoft\.Storage/storageAccounts/mystorageaccount\?api-version=.*")
    keys_url = re.compile(rf"{ARM}/subscriptions/{SUB}/resourceGroups/batchai\.horovod/providers/"
                          r"Microsoft\.Storage/storageAccounts/mystorageaccount/listKeys\?.*")
    rg_body = {"id": f"/subscriptions/{SUB}/resourceGroups/batchai.horovod", "name": "batchai.horovod",
               "location": "eastus", "properties": {"provisioningState": "Succeeded"}}
    ws_body = {"id": f"/subscriptions/{SUB}/resourceGroups/batchai.horovod/providers/Microsoft.BatchAI/workspaces/"
                     "batchaidev", "name": "batchaidev", "type": "Microsoft.BatchAI/workspaces", "location": "eastus",
               "properties": {"provisioningState": "succeeded"}}
    account_body = {"id": f"/subscriptions/{SUB}/resourceGroups/batchai.horovod/providers/Microsoft.Storage/"
                          "storageAccounts/mystorageaccount", "name": "mystorageaccount", "location": "eastus",
                    "sku": {"name": "Standard_LRS"}, "kind": "StorageV2",
                    "properties": {"provisioningState": "Succeeded",
                                   "primaryEndpoints": {"file": f"{FILES}/"}}}
    http.add(responses.GET, rg_url, body=_not_found("ResourceGroupNotFound")[2], status=404,
             content_type="application/json")
    http.add(responses.PUT, rg_url, json=rg_body, status=201)
    http.add(responses.GET, ws_url, body=_not_found("WorkspaceNotFound")[2], status=404,
             content_type="application/json")
    http.add(responses.PUT, ws_url, json=ws_body, status=200)
    http.add(responses.GET, rg_url, json=rg_body, status=200)
    http.add(responses.GET, account_url, body=_not_found("ResourceNotFound")[2], status=404,
             content_type="application/json")
    http.add(responses.PUT, account_url, json=account_body, status=200)
    http.add(responses.POST, keys_url, json={"keys": [{"keyName": "key1", "value": KEY, "permissions": "FULL"}]})
    http.add(responses.PUT, re.compile(rf"{FILES}/myshare\?restype=share$"), status=201,
             headers={"ETag": '"0x1"', "Last-Modified": "Thu, 07 Jun 2018 21:16:00 GMT"})
    http.add(responses.PUT, re.compile(rf"{FILES}/myshare/cifar\?restype=directory$"), status=201,
             headers={"ETag": '"0x2"', "Last-Modified": "Thu, 07 Jun 2018 21:16:00 GMT"})
    sas = "sv=2016-05-31&sr=f&sig=c2lnbmF0dXJl&se=2030-01-01T00%3A00%3A00Z&sp=rl"
    http.add(responses.HEAD, re.compile(rf"{FILES}/myshare/cifar/stdout\.txt\?.*"), status=200,
             headers={"Content-Length": "3", "x-ms-type": "File", "ETag": '"0x3"',
                      "Last-Modified": "Thu, 07 Jun 2018 21:16:00 GMT"})

    credential = RecordingCredential()
    target = Target.azure(SUB, credential)
    ws = Workspace.create(target, "batchai.horovod", "batchaidev", location="East US")
    assert ws.location == "eastus"
    share = FileShare.create(target, "batchai.horovod", "mystorageaccount", "myshare", location="eastus")
    share.create_directory("cifar")
    size = target.file_from_sas_url(f"{FILES}/myshare/cifar/stdout.txt?{sas}").get_file_properties().size
    assert size == 3

    assert credential.scopes and all(s == ("https://management.azure.com/.default",) for s in credential.scopes)
    for call in http.calls:
        request = call.request
        assert request.url.startswith("https://"), request.url
        auth = request.headers.get("Authorization", "")
        if request.url.startswith(ARM):
            assert auth == f"Bearer {TOKEN}", request.url
        elif "sig=" in request.url:
            assert auth == "", "a SAS download carries no other credential"
        else:
            assert request.url.startswith(FILES)
            assert auth.startswith("SharedKey mystorageaccount:"), request.url
            assert TOKEN not in auth and KEY not in auth
    put_ws = next(c.request for c in http.calls if c.request.method == "PUT" and "workspaces" in c.request.url)
    assert json.loads(put_ws.body) == {"location": "eastus"}
    put_account = next(c.request for c in http.calls if c.request.method == "PUT" and "storageAccounts" in c.request.url)
    assert json.loads(put_account.body)["sku"] == {"name": "Standard_LRS"}
    assert KEY not in repr(share)


def test_azure_target_refuses_plain_http() -> None:
    with pytest.raises(TargetError, match="https"):
        Target.azure(SUB, RecordingCredential(), management_endpoint="http://management.azure.com")
    target = Target.azure(SUB, RecordingCredential())
    with pytest.raises(TargetError, match="https"):
        target.share_service("http://mystorageaccount.file.core.windows.net/", KEY)
    with pytest.raises(TargetError, match="https"):
        target.file_from_sas_url("http://mystorageaccount.file.core.windows.net/s/f?sig=x")


def test_target_from_env(tmp_path: Any) -> None:
    local = Target.from_env({})
    assert local.is_local and local.subscription_id == LOCAL_SUBSCRIPTION
    local = Target.from_env({"HOROVOD_BATCHAI_TARGET": "local", "HOROVOD_BATCHAI_STATE_DIR": str(tmp_path)})
    assert local.is_local and "not started" in repr(local)
    with pytest.raises(TargetError, match="AZURE_SUBSCRIPTION_ID"):
        Target.from_env({"HOROVOD_BATCHAI_TARGET": "azure"})
    with pytest.raises(TargetError, match="'cloud'"):
        Target.from_env({"HOROVOD_BATCHAI_TARGET": "cloud"})
    from horovod_batchai import InvalidSpecError
    with pytest.raises(InvalidSpecError, match="subscription_id"):
        Target.azure("not-a-guid", RecordingCredential())


def test_azure_target_repr_shows_no_credential() -> None:
    target = Target.azure(SUB, RecordingCredential())
    assert TOKEN not in repr(target) and "management.azure.com" in repr(target)
