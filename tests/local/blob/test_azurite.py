"""Azurite as the local service runs it, driven by Microsoft's azure-storage-blob over HTTPS.

These start the real Azurite that ``make install`` puts in ./node_modules (pinned by package.json);
without Node.js on the machine they are skipped, except the ones about what happens then.
"""
from __future__ import annotations

import datetime
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Iterator

import pytest
import requests
from azure.core.exceptions import HttpResponseError
from azure.storage.blob import BlobServiceClient, generate_blob_sas

from horovod_batchai.local.storage.accounts import new_key
from horovod_batchai.local.blob.azurite import (AZURITE_DIR_ENV, AZURITE_VERSION, NODE_ENV, PROJECT_ROOT, Azurite,
                                                AzuriteError, BlobStorageUnavailable, find_azurite)
from horovod_batchai.local.core.tls import ensure_certificate

from blob_support import blob_client, needs_node



@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return ensure_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def azurite(tls: tuple[Path, Path], tmp_path: Path) -> Iterator[Azurite]:
    cert, key = tls
    server = Azurite(find_azurite(), cert=cert, key=key, location=tmp_path / "blob")
    try:
        yield server
    finally:
        server.stop()


def client(server: Azurite, account: str, key: str, cert: Path) -> BlobServiceClient:
    return blob_client(server.account_url(account), account, key, cert)


# -- what is installed ---------------------------------------------------------------------------

def test_package_json_pins_the_azurite_this_module_runs() -> None:
    manifest = json.loads((PROJECT_ROOT / "package.json").read_text())
    lock = json.loads((PROJECT_ROOT / "package-lock.json").read_text())
    assert manifest["dependencies"] == {"azurite": AZURITE_VERSION}
    assert lock["packages"]["node_modules/azurite"]["version"] == AZURITE_VERSION


@needs_node
def test_make_install_put_azurite_into_the_project() -> None:
    install = find_azurite()
    assert install.package_dir == PROJECT_ROOT / "node_modules" / "azurite"
    assert install.version == AZURITE_VERSION
    assert install.node_version.startswith("v")


# -- Node.js or Azurite missing ------------------------------------------------------------------

def test_a_missing_node_binary_says_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(BlobStorageUnavailable) as caught:
        find_azurite(node=tmp_path / "bin" / "node")
    message = str(caught.value)
    assert f"Node.js was not found at '{tmp_path / 'bin' / 'node'}'" in message
    assert "make install" in message and "apt-get install nodejs npm" in message


def test_no_node_on_path_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NODE_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BlobStorageUnavailable, match=r"Node.js was not found on PATH\. .*make install"):
        find_azurite()


def test_the_node_environment_variable_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NODE_ENV, str(tmp_path / "nowhere" / "node"))
    with pytest.raises(BlobStorageUnavailable, match="nowhere"):
        find_azurite()


def test_a_node_too_old_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "node"
    fake.write_text("#!/bin/sh\necho v16.20.2\n")
    fake.chmod(0o755)
    with pytest.raises(BlobStorageUnavailable, match=r"Node.js v16.20.2 .* is too old\. Blob storage needs Node.js 20"):
        find_azurite(node=fake)


@needs_node
def test_a_missing_azurite_package_says_make_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(BlobStorageUnavailable, match=r"Azurite is not installed at .*make install"):
        find_azurite(package_dir=tmp_path / "node_modules" / "azurite")
    monkeypatch.setenv(AZURITE_DIR_ENV, str(tmp_path / "elsewhere"))
    with pytest.raises(BlobStorageUnavailable, match="elsewhere"):
        find_azurite()


@needs_node
def test_another_azurite_version_is_refused(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text(json.dumps({"name": "azurite", "version": "3.37.0"}))
    with pytest.raises(BlobStorageUnavailable, match=f"azurite 3.37.0, not azurite {AZURITE_VERSION}"):
        find_azurite(package_dir=tmp_path)


# -- accounts ------------------------------------------------------------------------------------

@needs_node
def test_containers_and_blobs_with_either_key(azurite: Azurite, tls: tuple[Path, Path]) -> None:
    cert, _ = tls
    key1, key2 = new_key(), new_key()
    azurite.start({"acct1": [key1, key2]})
    assert azurite.endpoint.startswith("https://127.0.0.1:")
    with client(azurite, "acct1", key1, cert) as blobs:
        blobs.create_container("data")
        blobs.get_container_client("data").upload_blob("dir/hello.txt", b"hello blob")
    with client(azurite, "acct1", key2, cert) as blobs:
        container = blobs.get_container_client("data")
        assert [b.name for b in container.list_blobs()] == ["dir/hello.txt"]
        assert container.download_blob("dir/hello.txt").readall() == b"hello blob"


@needs_node
def test_a_wrong_key_or_an_unknown_account_is_refused(azurite: Azurite, tls: tuple[Path, Path]) -> None:
    cert, _ = tls
    key = new_key()
    azurite.start({"acct1": [key]})
    with client(azurite, "acct1", key, cert) as blobs:
        blobs.create_container("data")
    with client(azurite, "acct1", new_key(), cert) as wrong:
        with pytest.raises(HttpResponseError) as caught:
            wrong.get_container_client("data").get_container_properties()
        assert caught.value.status_code == 403 and caught.value.error_code == "AuthorizationFailure"
    with client(azurite, "acct2", key, cert) as unknown:
        with pytest.raises(HttpResponseError):
            unknown.create_container("data")


@needs_node
def test_the_public_emulator_account_is_never_enabled(azurite: Azurite, tls: tuple[Path, Path]) -> None:
    cert, _ = tls
    azurite.start({})  # no accounts yet: Azurite alone would fall back to devstoreaccount1
    well_known = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==")
    with client(azurite, "devstoreaccount1", well_known, cert) as blobs:
        with pytest.raises(HttpResponseError):
            blobs.create_container("data")


@needs_node
def test_accounts_change_in_place(azurite: Azurite, tls: tuple[Path, Path]) -> None:
    cert, _ = tls
    old, other = new_key(), new_key()
    azurite.start({"acct1": [old, other]})
    pid = azurite.pid
    with client(azurite, "acct1", old, cert) as blobs:
        blobs.create_container("data")
    new = new_key()
    azurite.set_accounts({"acct1": [new, other], "acct2": [new_key()]})  # key1 regenerated, acct2 created
    assert azurite.pid == pid, "a change of accounts must not restart Azurite"
    with client(azurite, "acct1", old, cert) as stale:
        with pytest.raises(HttpResponseError) as caught:
            stale.get_container_client("data").get_container_properties()
        assert caught.value.status_code == 403
    with client(azurite, "acct1", new, cert) as blobs:
        assert [c.name for c in blobs.list_containers()] == ["data"]
    azurite.set_accounts({"acct2": [new_key()]})  # acct1 deleted
    with client(azurite, "acct1", new, cert) as gone:
        with pytest.raises(HttpResponseError):
            gone.get_container_client("data").get_container_properties()


@needs_node
def test_account_names_and_keys_are_checked_before_anything_runs(tls: tuple[Path, Path], tmp_path: Path) -> None:
    cert, key = tls
    server = Azurite(find_azurite(), cert=cert, key=key, location=tmp_path / "blob")
    secret = "not base64 but secret!"
    with pytest.raises(ValueError, match="storage account name 'a;b:c' must be 3 to 24 lower-case letters"):
        server.start({"a;b:c": [new_key()]})
    with pytest.raises(ValueError) as caught:
        server.start({"acct1": [secret]})
    assert "acct1" in str(caught.value) and secret not in str(caught.value)
    assert not server.running and not (tmp_path / "blob").exists()


# -- persistence, links, secrets -----------------------------------------------------------------

@needs_node
def test_data_survives_a_restart_and_a_new_process(azurite: Azurite, tls: tuple[Path, Path], tmp_path: Path) -> None:
    cert, key = tls
    account_key = new_key()
    azurite.start({"acct1": [account_key]})
    endpoint = azurite.endpoint
    with client(azurite, "acct1", account_key, cert) as blobs:
        blobs.create_container("kept")
        blobs.get_container_client("kept").upload_blob("model.h5", b"weights" * 1000)
    azurite.restart({"acct1": [account_key]})
    assert azurite.endpoint == endpoint
    azurite.stop()
    with Azurite(find_azurite(), cert=cert, key=key, location=tmp_path / "blob").start({"acct1": [account_key]}) as again:
        with client(again, "acct1", account_key, cert) as blobs:
            assert blobs.get_container_client("kept").download_blob("model.h5").readall() == b"weights" * 1000
    mode = stat.S_IMODE((tmp_path / "blob").stat().st_mode)
    assert mode == 0o700, oct(mode)


@needs_node
def test_a_blob_sas_link_downloads_by_ranges(azurite: Azurite, tls: tuple[Path, Path]) -> None:
    cert, _ = tls
    key = new_key()
    azurite.start({"acct1": [key]})
    with client(azurite, "acct1", key, cert) as blobs:
        blobs.create_container("out")
        blobs.get_container_client("out").upload_blob("logs/stdout.txt", b"epoch 1\nepoch 2\n")
    expiry = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=10)
    sas = generate_blob_sas("acct1", "out", "logs/stdout.txt", account_key=key, permission="r", expiry=expiry)
    url = f"{azurite.account_url('acct1')}/out/logs/stdout.txt?{sas}"
    answer = requests.get(url, headers={"Range": "bytes=8-"}, verify=str(cert), timeout=30)
    assert answer.status_code == 206 and answer.content == b"epoch 2\n"
    forged = generate_blob_sas("acct1", "out", "logs/stdout.txt", account_key=new_key(), permission="r", expiry=expiry)
    refused = requests.get(f"{azurite.account_url('acct1')}/out/logs/stdout.txt?{forged}", verify=str(cert), timeout=30)
    assert refused.status_code == 403


@needs_node
def test_keys_are_neither_on_the_command_line_nor_in_the_environment(azurite: Azurite) -> None:
    key = new_key()
    azurite.start({"acct1": [key]})
    proc = Path("/proc") / str(azurite.pid)
    assert key.encode() not in (proc / "cmdline").read_bytes()
    assert key.encode() not in (proc / "environ").read_bytes()
    assert key not in repr(azurite)


@needs_node
def test_a_port_in_use_fails_with_azurites_reason(tls: tuple[Path, Path], tmp_path: Path) -> None:
    cert, key = tls
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = Azurite(find_azurite(), cert=cert, key=key, location=tmp_path / "blob", port=taken.getsockname()[1])
        with pytest.raises(AzuriteError, match="EADDRINUSE"):
            server.start({"acct1": [new_key()]})
        assert not server.running


# -- no orphans ----------------------------------------------------------------------------------

@needs_node
def test_azurite_stops_when_its_owner_is_killed(tls: tuple[Path, Path], tmp_path: Path) -> None:
    cert, key = tls
    owner_script = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from horovod_batchai.local.blob.azurite import Azurite, find_azurite
        server = Azurite(find_azurite(), cert=Path({str(cert)!r}), key=Path({str(key)!r}),
                         location=Path({str(tmp_path / 'blob')!r}))
        server.start({{}})
        print(server.pid, flush=True)
        time.sleep(600)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")]))
    owner = subprocess.Popen([sys.executable, "-c", owner_script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = owner.stdout.readline() if owner.stdout else ""
        assert line.strip().isdigit(), f"the owner did not start Azurite: {line!r}"
        node_pid = int(line)
        assert Path(f"/proc/{node_pid}").exists()
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        deadline = time.monotonic() + 20
        while _alive(node_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(node_pid), "Azurite outlived the process that started it"
    finally:
        owner.kill()
        owner.wait()


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return status.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited; its parent reaps it
