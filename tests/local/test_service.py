"""The local service as a whole: in-process and daemon lifecycles, the ``serve`` command, persistence
across restarts, TLS and bearer-token checks, the generic ARM error paths, fault injection, and
that no secret reaches a log."""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, Optional

import pytest
import requests
from azure.core.exceptions import ClientAuthenticationError

from service_support import FAST, SUBSCRIPTION, client_kwargs
from horovod_batchai.local import (STATE_DIR_ENV, LocalService, ServiceAlreadyRunning, ServiceSettings,
                                   default_state_dir, ensure_running, find_running, stop_daemon)
from horovod_batchai.local.core.tokens import mint_token
from raw_arm import STORAGE_VERSION, RawArm

RG = f"/subscriptions/{SUBSCRIPTION}/resourcegroups/rg"
ACCOUNT = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/acct1"
CREATE_ACCOUNT = {"sku": {"name": "Standard_LRS"}, "kind": "StorageV2", "location": "eastus"}


def _resources(svc: LocalService, credential=None):
    from azure.mgmt.resource.resources import ResourceManagementClient
    return ResourceManagementClient(credential or svc.credential(), SUBSCRIPTION, **client_kwargs(svc))


def _storage(svc: LocalService):
    from azure.mgmt.storage import StorageManagementClient
    return StorageManagementClient(svc.credential(), SUBSCRIPTION, **client_kwargs(svc))


@pytest.fixture
def raw(service) -> Iterator[RawArm]:
    with RawArm(service) as arm:
        yield arm


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


# -- in-process lifecycle -------------------------------------------------------------------------

def test_in_process_service_starts_answers_and_stops(tmp_path: Path):
    state = tmp_path / "state"
    with LocalService(state, settings=FAST) as svc:
        assert svc.endpoint.startswith("https://127.0.0.1:")
        port = int(svc.endpoint.rsplit(":", 1)[1])
        info = svc.info
        assert info.ca_cert == state / "tls-cert.pem" and info.ca_cert.exists()
        assert info.pid == os.getpid()
        assert json.loads((state / "service.json").read_text())["endpoint"] == svc.endpoint
        assert find_running(state).endpoint == svc.endpoint
        with _resources(svc) as resources:
            resources.resource_groups.create_or_update("rg", {"location": "eastus"})
            assert [g.name for g in resources.resource_groups.list()] == ["rg"]
    assert not (state / "service.json").exists()
    assert not _port_open(port)
    assert find_running(state) is None


def test_a_second_service_on_the_same_state_dir_is_refused(service: LocalService):
    with pytest.raises(ServiceAlreadyRunning) as err:
        LocalService(service.state_dir, settings=FAST).start()
    assert service.endpoint in str(err.value)
    # The first one is unaffected.
    with _resources(service) as resources:
        assert list(resources.resource_groups.list()) == []


def test_a_port_in_use_is_an_error_that_leaves_the_state_dir_free(tmp_path: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}"):
            LocalService(tmp_path / "state", port=port, settings=FAST).start()
        proc = _serve(tmp_path / "state", port)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 1 and b"error: the local service cannot listen" in err
    # Neither failed start kept the lock: the state directory serves again at once.
    with LocalService(tmp_path / "state", settings=FAST) as svc, _resources(svc) as resources:
        assert list(resources.resource_groups.list()) == []


def test_state_dir_defaults_to_the_environment_variable(tmp_path: Path, monkeypatch):
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "from-env"))
    assert default_state_dir() == tmp_path / "from-env"
    with LocalService(settings=FAST) as svc:
        assert svc.state_dir == tmp_path / "from-env"
        assert (tmp_path / "from-env" / "state.db").exists()
    monkeypatch.delenv(STATE_DIR_ENV)
    assert default_state_dir() == Path.home() / ".horovod-batchai" / "local"


def test_a_restart_loses_nothing(tmp_path: Path):
    state = tmp_path / "state"
    with LocalService(state, settings=FAST) as svc:
        cert = svc.info.ca_cert.read_bytes()
        token = svc.credential().get_token("x").token
        with _resources(svc) as resources, _storage(svc) as storage:
            resources.resource_groups.create_or_update("rg", {"location": "eastus", "tags": {"k": "v"}})
            storage.storage_accounts.begin_create("rg", "acct1", CREATE_ACCOUNT).result()
            keys = [k.value for k in storage.storage_accounts.list_keys("rg", "acct1").keys_property]
        with RawArm(svc) as arm:  # an account PUT whose operation is polled only after the restart
            arm.request("PUT", RG.replace("resourcegroups/rg", "resourceGroups/rg") +
                        "/providers/Microsoft.Storage/storageAccounts/acct2", api_version=STORAGE_VERSION,
                        json=CREATE_ACCOUNT)
            pending = arm.request("PUT", ACCOUNT.replace("acct1", "acct3"), api_version=STORAGE_VERSION,
                                  json=CREATE_ACCOUNT).headers["Location"]
            old_endpoint = svc.endpoint
    with LocalService(state, settings=FAST) as svc:
        assert svc.info.ca_cert.read_bytes() == cert  # clients keep trusting the same certificate
        with _resources(svc) as resources, _storage(svc) as storage:
            group = resources.resource_groups.get("rg")
            assert (group.location, group.tags) == ("eastus", {"k": "v"})
            assert sorted(a.name for a in storage.storage_accounts.list()) == ["acct1", "acct2", "acct3"]
            assert [k.value for k in storage.storage_accounts.list_keys("rg", "acct1").keys_property] == keys
        with RawArm(svc) as arm:
            # A token minted before the restart is still good: the signing secret persisted.
            assert arm.request("GET", RG, token=token).status_code == 200
            poll = arm.request("GET", pending.replace(old_endpoint, svc.endpoint), api_version=None)
            assert poll.status_code == 200 and poll.json()["name"] == "acct3"


# -- TLS, files that hold secrets -----------------------------------------------------------------

def test_the_service_speaks_only_tls_with_a_loopback_certificate(service: LocalService):
    port = int(service.endpoint.rsplit(":", 1)[1])
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}{RG}?api-version=2018-05-01", timeout=10)
    context = ssl.create_default_context(cafile=str(service.info.ca_cert))
    for host in ("127.0.0.1", "localhost"):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            with context.wrap_socket(sock, server_hostname=host) as tls:
                assert tls.version() in ("TLSv1.2", "TLSv1.3")
    # Without the local certificate the system trust store refuses it.
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"{service.endpoint}{RG}?api-version=2018-05-01", timeout=10,
                     verify="/etc/ssl/certs/ca-certificates.crt" if Path("/etc/ssl/certs/ca-certificates.crt").exists()
                     else True)


def test_silent_or_plain_http_clients_do_not_stop_the_service(service: LocalService):
    port = int(service.endpoint.rsplit(":", 1)[1])
    silent = socket.create_connection(("127.0.0.1", port), timeout=10)  # connects, never says hello
    plain = socket.create_connection(("127.0.0.1", port), timeout=10)
    plain.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")  # not TLS at all
    try:
        answer = requests.get(f"{service.endpoint}{RG}?api-version=2018-05-01", timeout=10,
                              verify=str(service.info.ca_cert))
        assert answer.status_code == 401  # answered at once, whatever the other two are doing
    finally:
        silent.close()
        plain.close()


def test_private_files_are_readable_by_their_owner_only(service: LocalService):
    for name in ("tls-key.pem", "token-secret"):
        mode = stat.S_IMODE((service.state_dir / name).stat().st_mode)
        assert mode == 0o600, f"{name} has mode {oct(mode)}"


def test_reprs_hold_no_secret(service: LocalService):
    secret = (service.state_dir / "token-secret").read_text().strip()
    for obj in (service, service.credential(), service.context, service.info):
        assert secret not in repr(obj)


# -- bearer tokens ------------------------------------------------------------------------------------

def test_requests_without_a_token_get_401(raw):
    response = raw.request("GET", RG, token=None)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "AuthenticationFailed"
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("token", ["garbage", "a.b", "", "eyJzdWIiOiJ4In0.forged-signature"])
def test_requests_with_a_bad_token_get_401(raw, token):
    response = raw.request("GET", RG, token=token)
    assert response.status_code == 401
    assert response.json()["error"]["code"] in ("InvalidAuthenticationToken", "AuthenticationFailed")


def test_expired_tokens_and_tokens_of_another_service_get_401(raw, service, tmp_path):
    secret = bytes.fromhex((service.state_dir / "token-secret").read_text().strip())
    expired = mint_token(secret, lifetime_s=60, now=time.time() - 3600).token
    assert raw.request("GET", RG, token=expired).status_code == 401
    from horovod_batchai.local import LocalCredential
    foreign = LocalCredential(tmp_path / "other-state")
    with _resources(service, credential=foreign) as resources:
        with pytest.raises(ClientAuthenticationError):
            resources.resource_groups.create_or_update("rg", {"location": "eastus"})
    with _resources(service) as resources:
        assert resources.resource_groups.check_existence("rg") is False


# -- generic ARM errors: proper status and code, nothing stored changes -------------------------

def test_unknown_api_versions_get_400_listing_the_supported_ones(raw):
    response = raw.request("PUT", RG, api_version="2099-01-01", json={"location": "eastus"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "InvalidApiVersionParameter"
    assert "2099-01-01" in error["message"] and "2018-05-01" in error["message"]
    assert raw.request("HEAD", RG).status_code == 404


def test_unknown_paths_get_404_and_unknown_methods_405(raw):
    response = raw.request("GET", f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Nothing/things")
    assert response.status_code == 404 and response.json()["error"]["code"] == "InvalidResourceType"
    response = raw.request("POST", RG)
    assert response.status_code == 405 and response.json()["error"]["code"] == "MethodNotAllowed"


@pytest.mark.parametrize("payload", [b"{not json", b'{"location": "eastus"', b"\xff\xfe", b'{"location": "eastus"}}',
                                     b"[" * 100_000])  # nested past the parser's recursion limit
def test_malformed_json_gets_400_and_stores_nothing(raw, payload):
    response = raw.request("PUT", RG, data=payload, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "InvalidRequestContent"
    assert raw.request("HEAD", RG).status_code == 404


def test_malformed_json_for_a_storage_account_stores_nothing(raw):
    assert raw.request("PUT", RG, json={"location": "eastus"}).status_code == 201
    response = raw.request("PUT", ACCOUNT, api_version=STORAGE_VERSION, data=b'{"sku": {"name": ',
                           headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and response.json()["error"]["code"] == "InvalidRequestContent"
    listed = raw.request("GET", ACCOUNT.rsplit("/", 1)[0], api_version=STORAGE_VERSION).json()
    assert listed == {"value": []}


def test_oversized_bodies_get_413_and_store_nothing(tmp_path: Path):
    with LocalService(tmp_path / "state", settings=ServiceSettings(max_body_bytes=4096)) as svc, RawArm(svc) as arm:
        big = {"location": "eastus", "tags": {f"t{i}": "v" * 200 for i in range(30)}}
        response = arm.request("PUT", RG, json=big)
        assert response.status_code == 413
        assert response.json()["error"]["code"] == "RequestEntityTooLarge"
        assert arm.request("HEAD", RG).status_code == 404
        # The service carries on.
        assert arm.request("PUT", RG, json={"location": "eastus"}).status_code == 201


# -- fault injection ----------------------------------------------------------------------------------

def _outcomes(state: Path, *, rate: float, seed: int, count: int = 60) -> list[str]:
    """What ``count`` sequential GETs got: a status code, with the Retry-After of 429s, or 'drop'."""
    outcomes = []
    with LocalService(state, settings=ServiceSettings(fault_rate=rate, fault_seed=seed)) as svc, \
            RawArm(svc) as arm:
        for _ in range(count):
            try:
                response = arm.request("GET", f"/subscriptions/{SUBSCRIPTION}/resourcegroups")
            except requests.exceptions.ConnectionError:
                outcomes.append("drop")
                arm.session.close()  # a dropped connection is not reused
                continue
            if response.status_code == 429:
                outcomes.append(f"429 Retry-After {response.headers.get('Retry-After')}")
            else:
                outcomes.append(str(response.status_code))
    return outcomes


def test_fault_injection_is_deterministic_for_a_seed_and_covers_every_kind(tmp_path: Path):
    first = _outcomes(tmp_path / "a", rate=0.5, seed=7)
    second = _outcomes(tmp_path / "b", rate=0.5, seed=7)
    other_seed = _outcomes(tmp_path / "c", rate=0.5, seed=8)
    assert first == second
    assert first != other_seed
    kinds = set(first)
    assert {"200", "429 Retry-After 1", "500", "503", "drop"} <= kinds, kinds
    assert 10 <= first.count("200") <= 50  # about half fail
    assert set(_outcomes(tmp_path / "d", rate=0.0, seed=7, count=20)) == {"200"}


def test_fault_responses_use_each_planes_error_format(tmp_path: Path):
    with LocalService(tmp_path / "state", settings=ServiceSettings(fault_rate=1.0, fault_seed=3)) as svc, \
            RawArm(svc) as arm:
        seen_arm = seen_files = False
        for _ in range(20):
            try:
                arm_answer = arm.request("GET", RG)
                if arm_answer.status_code in (429, 500, 503):
                    assert arm_answer.json()["error"]["code"] == "InjectedFault"
                    seen_arm = True
                files_answer = arm.request("GET", "/acct1/share?restype=share", api_version=None, token=None)
                if files_answer.status_code in (429, 500, 503):
                    assert files_answer.headers["x-ms-error-code"] in ("ServerBusy", "InternalError")
                    assert files_answer.text.startswith("<?xml")
                    seen_files = True
            except requests.exceptions.ConnectionError:
                arm.session.close()
        assert seen_arm and seen_files


def test_sdk_clients_ride_out_injected_faults(tmp_path: Path):
    # 429 (Retry-After 1), 500, 503 and dropped connections are all retried by azure-core.
    settings = ServiceSettings(fault_rate=0.2, fault_seed=11)
    with LocalService(tmp_path / "state", settings=settings) as svc:
        from azure.mgmt.resource.resources import ResourceManagementClient
        with ResourceManagementClient(svc.credential(), SUBSCRIPTION, retry_backoff_factor=0.05,
                                      retry_total=20, **client_kwargs(svc)) as resources:
            for i in range(8):
                resources.resource_groups.create_or_update(f"rg{i}", {"location": "eastus"})
            assert sorted(g.name for g in resources.resource_groups.list()) == [f"rg{i}" for i in range(8)]


# -- the daemon and the serve command -----------------------------------------------------------------

def test_ensure_running_starts_one_daemon_and_reuses_it(tmp_path: Path):
    state = tmp_path / "state"
    try:
        first = ensure_running(state)
        second = ensure_running(state)
        assert (second.endpoint, second.pid) == (first.endpoint, first.pid)
        assert first.pid != os.getpid()
        assert find_running(state) == first
        from azure.mgmt.resource.resources import ResourceManagementClient
        with ResourceManagementClient(first.credential(), SUBSCRIPTION, base_url=first.endpoint,
                                      connection_verify=str(first.ca_cert)) as resources:
            resources.resource_groups.create_or_update("shared", {"location": "eastus"})
        with ResourceManagementClient(second.credential(), SUBSCRIPTION, base_url=second.endpoint,
                                      connection_verify=str(second.ca_cert)) as resources:
            assert [g.name for g in resources.resource_groups.list()] == ["shared"]
    finally:
        stopped = stop_daemon(state)
    assert stopped is True
    assert find_running(state) is None
    with pytest.raises(ProcessLookupError):
        os.kill(first.pid, 0)
    assert stop_daemon(state) is False


def _serve(state: Path, port: int, *extra: str, log: Optional[Path] = None) -> subprocess.Popen:
    out = open(log, "wb") if log else subprocess.PIPE
    return subprocess.Popen([sys.executable, "-m", "horovod_batchai.local", "serve", "--host", "127.0.0.1",
                             "--port", str(port), "--state-dir", str(state), *extra],
                            stdout=out, stderr=subprocess.STDOUT if log else subprocess.PIPE)


def _wait_for_line(path: Path, prefix: str, proc: subprocess.Popen, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith(prefix):
                return line
        assert proc.poll() is None, f"serve exited early:\n{path.read_text(errors='replace')}"
        time.sleep(0.1)
    raise AssertionError(f"serve printed no {prefix!r} within {timeout}s:\n{path.read_text(errors='replace')}")


def _stop(proc: subprocess.Popen) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


def _served_port(log: Path, proc: subprocess.Popen) -> int:
    """The port a ``serve --port 0`` bound, as it printed it (the system chose it: no other
    process can have taken it between a choice and the bind)."""
    endpoint = _wait_for_line(log, "Management endpoint:", proc).split()[-1]
    match = re.fullmatch(r"https://127\.0\.0\.1:(\d+)", endpoint)
    assert match, endpoint
    return int(match.group(1))


def test_serve_prints_its_endpoints_refuses_a_second_copy_and_stops_on_sigterm(tmp_path: Path):
    state, log = tmp_path / "state", tmp_path / "serve.log"
    proc = _serve(state, 0, log=log)
    try:
        port = _served_port(log, proc)
        assert port != 0 and _port_open(port)
        text = log.read_text()
        assert f"Files endpoint:      https://127.0.0.1:{port}/<account>" in text
        assert f"CA certificate:      {state / 'tls-cert.pem'}" in text
        assert find_running(state).endpoint == f"https://127.0.0.1:{port}"
        blob = _wait_for_line(log, "Blob endpoint:", proc).split()[2]
        if shutil.which("node"):
            assert re.fullmatch(r"https://127\.0\.0\.1:\d+/<account>", blob), blob
            blob_port = int(blob.rsplit(":", 1)[1].split("/")[0])

        second = _serve(state, 0)
        out, err = second.communicate(timeout=60)
        assert second.returncode == 1
        assert b"already running" in err
        assert proc.poll() is None
    finally:
        code = _stop(proc)
    assert code == 0
    assert find_running(state) is None and not _port_open(port)
    if shutil.which("node"):
        assert not _port_open(blob_port), "Azurite must stop with the service"


def test_serve_refuses_non_loopback_hosts(tmp_path: Path):
    proc = subprocess.run([sys.executable, "-m", "horovod_batchai.local", "serve", "--host", "0.0.0.0",
                           "--state-dir", str(tmp_path / "state")], capture_output=True, timeout=60)
    assert proc.returncode == 2
    assert b"loopback" in proc.stderr


def test_cli_start_status_stop(tmp_path: Path):
    state = str(tmp_path / "state")

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "horovod_batchai.local", *args, "--state-dir", state],
                              capture_output=True, text=True, timeout=90)

    try:
        assert cli("status").returncode == 3
        started = cli("start")
        assert started.returncode == 0 and "running at https://127.0.0.1:" in started.stdout
        again = cli("start")
        assert again.stdout == started.stdout  # the same daemon, reused
        assert cli("status").returncode == 0
    finally:
        stopped = cli("stop")
    assert stopped.stdout.strip() == "stopped"
    assert cli("status").returncode == 3


@pytest.mark.parametrize("command", ["start", "serve"])
def test_an_unusable_state_dir_is_an_error_line_not_a_traceback(tmp_path: Path, command):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    proc = subprocess.run([sys.executable, "-m", "horovod_batchai.local", command, "--state-dir", str(not_a_dir)],
                          capture_output=True, text=True, timeout=90)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: ") and str(not_a_dir) in proc.stderr and "Traceback" not in proc.stderr


# -- no secret in logs ------------------------------------------------------------------------------

def _secrets_after_traffic(svc: LocalService) -> list[str]:
    """Drive requests that carry every kind of secret; returns the secrets that were in play."""
    with _resources(svc) as resources, _storage(svc) as storage, RawArm(svc) as arm:
        resources.resource_groups.create_or_update("rg", {"location": "eastus"})
        storage.storage_accounts.begin_create("rg", "acct1", CREATE_ACCOUNT).result()
        keys = [k.value for k in storage.storage_accounts.list_keys("rg", "acct1").keys_property]
        keys += [k.value for k in storage.storage_accounts.regenerate_key("rg", "acct1",
                                                                          {"keyName": "key2"}).keys_property]
        arm.request("GET", RG, token="BOGUS-BEARER-TOKEN-VALUE")
        arm.request("GET", "/acct1/share/file.txt?sv=2025-11-05&sr=f&sp=r&se=2030-01-01T00%3A00%3A00Z"
                           "&sig=SASSIGNATUREVALUE123", api_version=None, token=None)
        return keys + [arm.token, "BOGUS-BEARER-TOKEN-VALUE", "SASSIGNATUREVALUE123",
                       (svc.state_dir / "token-secret").read_text().strip()]


def test_no_secret_reaches_the_in_process_logs(service: LocalService, caplog):
    caplog.set_level(logging.DEBUG)
    secrets = _secrets_after_traffic(service)
    service_records = [r for r in caplog.records if r.name.startswith(("horovod_batchai", "werkzeug"))]
    text = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in service_records)
    assert "listKeys -> 200" in text and "-> 401" in text  # the log does record the traffic
    for secret in secrets:
        assert secret not in text


def test_a_malformed_request_line_is_logged_without_its_query(service: LocalService, caplog):
    caplog.set_level(logging.DEBUG)
    port = int(service.endpoint.rsplit(":", 1)[1])
    context = ssl.create_default_context(cafile=str(service.info.ca_cert))
    with socket.create_connection(("127.0.0.1", port), timeout=30) as plain, \
            context.wrap_socket(plain, server_hostname="127.0.0.1") as tls:
        tls.sendall(b"GET /acct1/share/file.txt?sv=2025-11-05&sig=SIGINABADLINE123 extra HTTP/1.1\r\n\r\n")
        assert tls.recv(12) == b"HTTP/1.1 400"
    text = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith(("horovod_batchai", "werkzeug")))
    assert "Malformed Request-Line" in text and "/acct1/share/file.txt?<query redacted>" in text  # still reported
    assert "SIGINABADLINE123" not in text


def test_no_secret_reaches_the_daemon_log(tmp_path: Path):
    state, log = tmp_path / "state", tmp_path / "serve.log"
    proc = _serve(state, 0, log=log)
    try:
        port = _served_port(log, proc)

        class _Daemon:  # what the helpers need of a service, for one started by `serve`
            endpoint = f"https://127.0.0.1:{port}"
            state_dir = state
            info = find_running(state)

            def credential(self):
                return self.info.credential()

        secrets = _secrets_after_traffic(_Daemon())  # type: ignore[arg-type]
    finally:
        _stop(proc)
    text = log.read_text(errors="replace")
    assert "listKeys -> 200" in text and "-> 401" in text
    for secret in secrets:
        assert secret not in text


def test_a_newline_in_a_path_cannot_forge_a_log_line(raw, caplog):
    caplog.set_level(logging.INFO)
    raw.request("GET", f"/subscriptions/{SUBSCRIPTION}/resourcegroups/rg%0AGET%20forged%20-%3E%20200")
    raw.request("GET", "/acct1/share/file%0D%0Aforged.txt", api_version=None, token=None)
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("horovod_batchai.local")]
    assert any("rg\\nGET forged -> 200 -> 404" in m for m in messages), messages
    assert any("file\\r\\nforged.txt ->" in m for m in messages), messages
    assert not any("\n" in m or "\r" in m for m in messages)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "example.com", ""])
def test_a_non_loopback_host_is_refused_unless_allowed(tmp_path: Path, host: str):
    with pytest.raises(ValueError) as err:
        LocalService(tmp_path / "state", host=host)
    assert "host" in str(err.value)
    if host:
        assert "allow_remote=True" in str(err.value)
        assert LocalService(tmp_path / "state", host=host, allow_remote=True).host == host
    assert not (tmp_path / "state").exists()  # refused before anything was made
    for loopback in ("127.0.0.1", "127.0.0.2", "localhost", "::1"):
        assert LocalService(tmp_path / "state", host=loopback).host == loopback


def test_two_starters_at_once_both_get_the_one_daemon(tmp_path: Path):
    for trial in range(2):
        state = tmp_path / f"state{trial}"
        command = [sys.executable, "-m", "horovod_batchai.local", "start", "--state-dir", str(state)]
        try:
            starters = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                        for _ in range(2)]
            results = [starter.communicate(timeout=120) for starter in starters]
            assert [starter.returncode for starter in starters] == [0, 0], results
            running = find_running(state)
            assert running is not None
            for out, err in results:
                assert f"pid {running.pid}," in out and err == ""
        finally:
            stop_daemon(state)


def test_two_sdk_clients_starting_the_service_at_once_both_succeed(tmp_path: Path):
    script = ("import sys\n"
              "from horovod_batchai import Target, Workspace\n"
              "with Target.local(state_dir=sys.argv[1]) as target:\n"
              "    print(len(Workspace.list(target)), target.management_endpoint)\n")
    state = tmp_path / "state"
    try:
        clients = [subprocess.Popen([sys.executable, "-c", script, str(state)], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True) for _ in range(2)]
        results = [client.communicate(timeout=120) for client in clients]
        assert [client.returncode for client in clients] == [0, 0], results
        running = find_running(state)
        assert running is not None
        assert [out.split() for out, _ in results] == [["0", running.endpoint]] * 2
    finally:
        stop_daemon(state)
