"""Blob storage on the local service, as Microsoft's clients see it: storage accounts publish the
blob endpoint (Azurite), containers are made with azure-storage-blob, keys follow regenerateKey,
deleting an account deletes its containers, and without Node.js only blob features fail."""
from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from azure.core.exceptions import HttpResponseError
from azure.mgmt.storage import StorageManagementClient
from azure.storage.blob import BlobServiceClient

from horovod_batchai.local import LocalService, ServiceSettings
from service_support import FAST, SUBSCRIPTION, client_kwargs
from jobs_support import RG, make_lab, wait_for

needs_node = pytest.mark.skipif(shutil.which("node") is None,
                                reason="blob storage needs Node.js (make install says how)")

ACCOUNT = "blobacct"


def _create_account(storage: StorageManagementClient, name: str = ACCOUNT) -> tuple[str, list[str]]:
    """The account's published blob endpoint and its keys, through the management client."""
    storage.storage_accounts.begin_create(RG, name, {"sku": {"name": "Standard_LRS"}, "kind": "StorageV2",
                                                     "location": "eastus"}).result()
    account = storage.storage_accounts.get_properties(RG, name)
    keys = [k.value for k in storage.storage_accounts.list_keys(RG, name).keys_property]
    return account.primary_endpoints.blob, keys


def _blobs(service: LocalService, url: str, key: str, name: str = ACCOUNT) -> BlobServiceClient:
    return BlobServiceClient(url, credential={"account_name": name, "account_key": key},
                             connection_verify=str(service.info.ca_cert))


@pytest.fixture
def group(resources) -> str:
    resources.resource_groups.create_or_update(RG, {"location": "eastus"})
    return RG


@needs_node
def test_accounts_publish_the_blob_endpoint_where_containers_are_made(service, storage, group) -> None:
    url, keys = _create_account(storage)
    assert url.startswith("https://127.0.0.1:") and url.endswith(f"/{ACCOUNT}/")
    listed = {a.name: a for a in storage.storage_accounts.list_by_resource_group(RG)}
    assert listed[ACCOUNT].primary_endpoints.blob == url
    with _blobs(service, url, keys[0]) as blobs:
        container = blobs.create_container("batchaicontainer")  # the recorded CLI's PUT ?restype=container
        container.upload_blob("scripts/train.py", b"print('hello')\n")
    with _blobs(service, url, keys[1]) as blobs:
        assert blobs.get_container_client("batchaicontainer").download_blob("scripts/train.py").readall() \
            == b"print('hello')\n"


@needs_node
def test_a_regenerated_key_is_the_one_the_blob_endpoint_takes(service, storage, group) -> None:
    url, (old, key2) = _create_account(storage)
    with _blobs(service, url, old) as blobs:
        blobs.create_container("data")
    new = storage.storage_accounts.regenerate_key(RG, ACCOUNT, {"keyName": "key1"}).keys_property[0].value
    assert new != old
    with _blobs(service, url, old) as stale:
        with pytest.raises(HttpResponseError) as caught:
            stale.get_container_client("data").get_container_properties()
        assert caught.value.status_code == 403
    for key in (new, key2):
        with _blobs(service, url, key) as blobs:
            assert [c.name for c in blobs.list_containers()] == ["data"]


@needs_node
def test_deleting_an_account_deletes_its_containers(service, storage, resources, group) -> None:
    url, keys = _create_account(storage)
    with _blobs(service, url, keys[0]) as blobs:
        blobs.create_container("data").upload_blob("x.bin", b"x" * 1000)
    storage.storage_accounts.delete(RG, ACCOUNT)
    url, keys = _create_account(storage)  # the same name again: a new, empty account
    with _blobs(service, url, keys[0]) as blobs:
        assert list(blobs.list_containers()) == []
        blobs.create_container("again")
    # Through the resource group too.
    resources.resource_groups.begin_delete(RG).result()
    resources.resource_groups.create_or_update(RG, {"location": "eastus"})
    url, keys = _create_account(storage)
    with _blobs(service, url, keys[0]) as blobs:
        assert list(blobs.list_containers()) == []


def _azurite_pids(state_dir: Path) -> list[int]:
    """Live Azurite processes keeping their data in this state directory."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            zombie = "State:\tZ" in (entry / "status").read_text()
        except OSError:
            continue
        if not zombie and any(a.endswith(b"launcher.js") for a in argv) and str(state_dir / "blob").encode() in argv:
            found.append(int(entry.name))
    return found


@needs_node
def test_azurite_starts_at_the_first_blob_request_and_again_after_it_exits(service, storage, group) -> None:
    assert _azurite_pids(service.state_dir) == [], "no account yet: no Node.js to pay for"
    _create_account(storage, "unused")
    storage.storage_accounts.delete(RG, "unused")  # Azurite never held data here: nothing to start it for
    url, keys = _create_account(storage)
    assert [a.primary_endpoints.blob for a in storage.storage_accounts.list_by_resource_group(RG)] == [url]
    assert _azurite_pids(service.state_dir) == [], "an account publishes its blob endpoint without Node.js"
    with _blobs(service, url, keys[0]) as blobs:
        blobs.create_container("first")  # waits in the port's queue while Azurite starts
    pid = service.context.blob.require().pid  # once its start has finished (it serves before that)
    assert _azurite_pids(service.state_dir) == [pid]
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: pid not in _azurite_pids(service.state_dir), 30, what="Azurite's end")
    with _blobs(service, url, keys[0]) as blobs:
        blobs.create_container("second")
        assert "second" in [c.name for c in blobs.list_containers()]
    (again,) = _azurite_pids(service.state_dir)
    assert again != pid


@needs_node
def test_a_service_stopped_while_azurite_starts_leaves_no_azurite(tmp_path: Path) -> None:
    with LocalService(tmp_path / "state", settings=FAST) as service:
        assert service.context is not None and service.context.blob is not None
        service.context.blob.start(lambda: {}, wait=False)
        wait_for(lambda: _azurite_pids(tmp_path / "state"), 30, interval=0.01, what="Azurite's process")
    assert _azurite_pids(tmp_path / "state") == []


@needs_node
def test_azurite_starts_and_stops_with_the_service(tmp_path: Path) -> None:
    with LocalService(tmp_path / "state", settings=FAST) as service:
        assert service.context is not None and service.context.blob is not None
        pid = service.context.blob.require().pid
        assert pid is not None and Path(f"/proc/{pid}").exists()
        assert oct((tmp_path / "state" / "blob").stat().st_mode & 0o777) == "0o700"
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists()


# -- without Node.js -------------------------------------------------------------------------------

@pytest.fixture
def nodeless(tmp_path: Path):
    settings = ServiceSettings(provision_delay_s=0.3, deallocation_delay_s=0.1,
                               node_binary=str(tmp_path / "missing" / "node"))
    with LocalService(tmp_path / "state", settings=settings) as service:
        yield service


def test_without_node_blob_mounts_fail_clearly_and_nothing_else_does(nodeless) -> None:
    from azure.mgmt.batchai import BatchAI
    with BatchAI(nodeless.credential(), SUBSCRIPTION, **client_kwargs(nodeless)) as batchai:
        lab = make_lab(nodeless, batchai)  # account, keys and file share work as ever
        with StorageManagementClient(nodeless.credential(), SUBSCRIPTION, **client_kwargs(nodeless)) as storage:
            endpoints = storage.storage_accounts.get_properties(RG, lab.account).primary_endpoints
        assert endpoints.file and endpoints.blob is None  # no blob endpoint is published
        lab.create_cluster()
        lab.submit("files-only", {"customToolkitSettings": {"commandLine": "echo on the share"}})
        assert lab.wait_state("files-only").execution_state == "succeeded"
        assert lab.read("files-only", "stdout.txt") == "on the share\n"
        lab.submit("blob", {"customToolkitSettings": {"commandLine": "echo never"},
                            "mountVolumes": {**lab.share_mount("afs"), **lab.blob_mount("data")}})
        job = lab.wait_state("blob")
        assert job.execution_state == "failed"
        [error] = job.execution_info.errors
        assert error.code == "MountFailed"
        assert "mountVolumes.azureBlobFileSystems[0]: blob storage is not available" in error.message
        assert "Node.js was not found at" in error.message and "make install" in error.message
        assert lab.key not in error.message
