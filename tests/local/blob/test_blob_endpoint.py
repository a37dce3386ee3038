"""The service's blob endpoint: Azurite with the service, container checks, listings and links."""
from __future__ import annotations

import socket
from pathlib import Path
from typing import Iterator

import pytest
import requests

from horovod_batchai.local.storage.accounts import new_key
from horovod_batchai.local.blob.azurite import AzuriteError, BlobStorageUnavailable
from horovod_batchai.local.blob.endpoint import BlobCheckFailed, BlobEndpoint
from horovod_batchai.local.core.tls import ensure_certificate

from blob_support import blob_client, needs_node

KEY = new_key()


@pytest.fixture
def endpoint(tmp_path: Path) -> Iterator[BlobEndpoint]:
    cert, key = ensure_certificate(tmp_path)
    blob = BlobEndpoint(tmp_path, cert=cert, key=key)
    try:
        yield blob
    finally:
        blob.stop()


def test_without_node_the_endpoint_is_off_and_says_how_to_install(tmp_path: Path) -> None:
    cert, key = ensure_certificate(tmp_path)
    blob = BlobEndpoint(tmp_path, cert=cert, key=key, node=tmp_path / "missing" / "node")
    blob.start(lambda: {"acct1": [KEY]})  # does not raise: the rest of the service runs on
    assert not blob.available and blob.account_url("acct1") is None
    blob.refresh_accounts()  # nothing to tell, and no error
    with pytest.raises(BlobStorageUnavailable, match=r"Node.js was not found at .*make install"):
        blob.require()
    with pytest.raises(BlobStorageUnavailable):
        blob.check_container("acct1", KEY, "data")
    blob.stop()


@needs_node  # where Node.js is, make install has put Azurite's package, which is looked for first
def test_an_azurite_that_cannot_start_turns_waiting_clients_away_and_says_why(tmp_path: Path) -> None:
    # A Node.js that answers --version but dies on start: the port was already published.
    node = tmp_path / "node"
    node.write_text("#!/bin/sh\n[ \"$1\" = --version ] && { echo v20.0.0; exit 0; }\necho 'out of memory'\nexit 3\n")
    node.chmod(0o755)
    cert, key = ensure_certificate(tmp_path)
    blob = BlobEndpoint(tmp_path, cert=cert, key=key, node=node)
    try:
        blob.start_when_needed(lambda: {"acct1": [KEY]})
        url = blob.account_url("acct1")
        assert url is not None and url.startswith("https://127.0.0.1:")
        port = int(url.split(":")[2].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
            client.settimeout(30)
            try:
                closed = client.recv(1) == b""
            except ConnectionResetError:
                closed = True
            assert closed, "the failed start must turn the waiting client away, not leave it waiting"
        assert blob.wait_ready(30)
        assert blob.account_url("acct1") is None and not blob.available
        with pytest.raises(AzuriteError, match=r"Azurite exited with code 3.*: out of memory"):
            blob.require()
    finally:
        blob.stop()


@needs_node
def test_containers_are_checked_as_a_mount_would(endpoint: BlobEndpoint) -> None:
    endpoint.start(lambda: {"acct1": [KEY]})
    url = endpoint.account_url("acct1")
    assert url is not None and url.startswith("https://127.0.0.1:") and url.endswith("/acct1/")
    with blob_client(url, "acct1", KEY, endpoint.cert) as blobs:
        blobs.create_container("data")
    endpoint.check_container("acct1", KEY, "data")
    with pytest.raises(BlobCheckFailed, match="blob container 'nodata' does not exist in storage account 'acct1'"):
        endpoint.check_container("acct1", KEY, "nodata")
    wrong = new_key()
    with pytest.raises(BlobCheckFailed, match=r"not accepted by the blob endpoint \(403") as caught:
        endpoint.check_container("acct1", wrong, "data")
    assert wrong not in str(caught.value)
    with pytest.raises(BlobCheckFailed, match="'Data_1' is not a valid blob container name"):
        endpoint.check_container("acct1", KEY, "Data_1")


@needs_node
def test_listing_and_links(endpoint: BlobEndpoint) -> None:
    endpoint.start(lambda: {"acct1": [KEY]})
    with endpoint.container_client("acct1", KEY, "out") as container:
        container.create_container()
        container.upload_blob("job/stdouterr/stdout.txt", b"hello\n")
        container.upload_blob("job/stdouterr/stderr.txt", b"")
        container.upload_blob("job/stdouterr/counters/step.txt", b"1")
    entries = endpoint.list_directory("acct1", KEY, "out", "job/stdouterr/")
    assert [(e["name"], e["is_directory"]) for e in entries] == [
        ("counters", True), ("stderr.txt", False), ("stdout.txt", False)]
    assert entries[2]["size"] == 6
    url = endpoint.download_url("acct1", KEY, "out", "job/stdouterr/stdout.txt", expiry_minutes=5)
    assert "sr=b" in url and "sp=r" in url
    answer = requests.get(url, verify=str(endpoint.cert), timeout=30)
    assert answer.status_code == 200 and answer.content == b"hello\n"


@needs_node
def test_deleting_an_account_removes_its_containers_and_mirrors(endpoint: BlobEndpoint, tmp_path: Path) -> None:
    other = new_key()
    endpoint.start(lambda: {"acct1": [KEY], "acct2": [other]})
    for account, key in (("acct1", KEY), ("acct2", other)):
        with endpoint.container_client(account, key, "data") as container:
            container.create_container()
            container.upload_blob("x.txt", b"x")
    endpoint.mirror("acct1", KEY, "data").pull()
    assert (tmp_path / "blob-mounts" / "acct1" / "data" / "files" / "x.txt").exists()
    endpoint.delete_account_data("acct1", KEY)
    assert not (tmp_path / "blob-mounts" / "acct1").exists()
    with blob_client(endpoint.account_url("acct1") or "", "acct1", KEY, endpoint.cert) as blobs:
        assert list(blobs.list_containers()) == []
    with blob_client(endpoint.account_url("acct2") or "", "acct2", other, endpoint.cert) as blobs:
        assert [c.name for c in blobs.list_containers()] == ["data"]


@needs_node
def test_one_mirror_per_container_whatever_the_key(endpoint: BlobEndpoint) -> None:
    key2 = new_key()
    endpoint.start(lambda: {"acct1": [KEY, key2]})
    first = endpoint.mirror("acct1", KEY, "data")
    second = endpoint.mirror("acct1", key2, "data")
    assert first is second and second.container.credential.account_key == key2


@needs_node
def test_a_background_start_takes_account_changes_made_meanwhile(endpoint: BlobEndpoint) -> None:
    accounts = {"acct1": [KEY]}
    endpoint.start(lambda: dict(accounts), wait=False)
    accounts["acct2"] = [new_key()]
    endpoint.refresh_accounts()  # waits for the start, then tells Azurite
    with endpoint.container_client("acct2", accounts["acct2"][0], "late") as container:
        container.create_container()
    assert endpoint.available
