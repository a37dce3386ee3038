"""Bad input on the local Files data plane: traversal in paths, symlinks out of a share, oversized
bodies, malformed headers and unknown operations. Each gets its status and code, nothing stored
changes, and the service keeps answering."""
from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import requests
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.storage.fileshare import generate_file_sas, generate_share_sas

from files_support import create_account, raw_request, share_service


@pytest.fixture
def account(service):
    return create_account(service)


@pytest.fixture
def share(service, account):
    share = share_service(service, account).create_share("share")
    share.get_file_client("kept.txt").upload_file(b"kept")
    return share


def _tree(root: Path) -> dict[str, bytes | None]:
    """Everything under ``root``: path -> bytes (files) or None (directories)."""
    found: dict[str, bytes | None] = {}
    for dirpath, dirs, files in os.walk(root):
        for d in dirs:
            found[os.path.relpath(os.path.join(dirpath, d), root)] = None
        for f in files:
            found[os.path.relpath(os.path.join(dirpath, f), root)] = Path(dirpath, f).read_bytes()
    return found


def _still_answers(share) -> None:
    assert share.get_file_client("kept.txt").download_file().readall() == b"kept"


CREATE_FILE = {"x-ms-type": "file", "x-ms-content-length": "10", "x-ms-version": "2025-11-05"}


@pytest.mark.parametrize("target, code", [
    ("/{a}/share/../escape.txt", "InvalidResourceName"),
    ("/{a}/share/dir/../../escape.txt", "InvalidResourceName"),
    ("/{a}/share/%2e%2e/escape.txt", "InvalidResourceName"),
    ("/{a}/share/%2E%2E%2Fescape.txt", "InvalidResourceName"),
    ("/{a}/share/..%2F..%2F..%2Fescape.txt", "InvalidResourceName"),
    ("/{a}/share//escape.txt", "InvalidResourceName"),
    ("/{a}/share/a%5C..%5Cescape.txt", "InvalidResourceName"),
    ("/{a}/share/evil%00.txt", "InvalidResourceName"),
    ("/{a}/share/new%0Aline", "InvalidResourceName"),
    ("/{a}/share/" + "n" * 256, "InvalidResourceName"),
    ("/{a}/share/" + "/".join(["d"] * 251), "InvalidResourceName"),
    ("/{a}/share/bad%ffutf8", "InvalidUri"),
    ("/{a}/share%0A/escape.txt", "InvalidResourceName"),
    ("/{a}%0A/share/escape.txt", "InvalidUri"),
    ("/{a}/../escape.txt", "InvalidResourceName"),
    ("/{a}/%2e%2e/escape.txt", "InvalidResourceName"),
    ("/../escape.txt", "InvalidUri"),
    ("/{a}//share/escape.txt", "InvalidResourceName"),
    ("/", "InvalidUri"),
])
def test_traversal_and_bad_names_are_refused_before_anything_is_touched(service, account, share, tmp_path,
                                                                       target, code):
    root = service.context.state_dir.parent
    before = _tree(root)
    status, headers, body = raw_request(service, "PUT", target.format(a=account.name), CREATE_FILE)
    assert status == 400, body
    assert headers["x-ms-error-code"] == code
    assert f"<Code>{code}</Code>".encode() in body
    after = _tree(root)
    assert {k for k in after if "state.db" not in k and "service" not in k} == \
        {k for k in before if "state.db" not in k and "service" not in k}
    assert not list(tmp_path.rglob("escape.txt"))
    _still_answers(share)


def test_symlinks_out_of_a_share_are_not_followed(service, account, share, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"outside the share")
    share_dir = service.context.files_root / account.name / "share"
    # A job could leave such links behind in a share it mounted.
    os.symlink(outside, share_dir / "escape")
    os.symlink(outside / "secret.txt", share_dir / "leak.txt")
    os.symlink(share_dir / "kept.txt", share_dir / "inner-link.txt")  # stays inside: allowed
    for path in ("escape/secret.txt", "leak.txt"):
        with pytest.raises(ResourceNotFoundError):
            share.get_file_client(path).download_file().readall()
    with pytest.raises(ResourceNotFoundError):
        list(share.list_directories_and_files("escape"))
    assert sorted(e.name for e in share.list_directories_and_files()) == ["inner-link.txt", "kept.txt"]
    assert share.get_file_client("inner-link.txt").download_file().readall() == b"kept"
    with pytest.raises(ResourceNotFoundError) as err:
        share.get_file_client("escape/new.txt").upload_file(b"planted")
    assert err.value.error_code == "ParentNotFound"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    # Creating a file where an escaping link sits replaces the link, never writes through it.
    share.get_file_client("leak.txt").upload_file(b"replaced")
    assert (outside / "secret.txt").read_bytes() == b"outside the share"
    assert not (share_dir / "leak.txt").is_symlink()


def test_oversized_body_is_refused_with_413_and_the_service_keeps_answering(service, account, share):
    too_big = b"x" * (service.context.settings.max_body_bytes + 4096)
    headers = {"x-ms-version": "2025-11-05", "x-ms-range": f"bytes=0-{len(too_big) - 1}", "x-ms-write": "update"}
    status, answer, _ = raw_request(service, "PUT", f"/{account.name}/share/kept.txt?comp=range", headers, too_big)
    assert status == 413 and answer["x-ms-error-code"] == "RequestBodyTooLarge"
    _still_answers(share)


def test_range_over_4_mib_is_refused_and_the_file_unchanged(service, account, share):
    f = share.get_file_client("big.bin")
    f.create_file(8 * 1024 * 1024)
    data = b"y" * (4 * 1024 * 1024 + 512)
    with pytest.raises(HttpResponseError) as err:
        f.upload_range(data, offset=0, length=len(data))
    assert err.value.status_code == 413 and err.value.error_code == "RequestBodyTooLarge"
    assert [r for r in f.list_ranges()] == []
    _still_answers(share)


def test_bad_sizes_and_headers_are_refused(service, account, share):
    with pytest.raises(HttpResponseError) as err:
        share.get_file_client("huge.bin").create_file(5 * 1024 ** 4)
    assert err.value.status_code == 400 and err.value.error_code == "InvalidHeaderValue"
    assert "x-ms-content-length" in err.value.message
    assert not (service.context.files_root / account.name / "share" / "huge.bin").exists()
    sas = generate_file_sas(account.name, "share", ["kept.txt"], account_key=account.key, permission="r",
                            expiry=datetime.now(timezone.utc) + timedelta(hours=1))
    url = f"{service.endpoint}/{account.name}/share/kept.txt?{sas}"
    for value in ("bytes=abc", "bytes=5-2", "lines=0-1"):
        answer = requests.get(url, headers={"x-ms-range": value}, verify=str(service.info.ca_cert), timeout=30)
        assert answer.status_code == 400 and answer.headers["x-ms-error-code"] == "InvalidHeaderValue", value
        assert "x-ms-range" in answer.text and "bytes=&lt;start&gt;-&lt;end&gt;" in answer.text
    past = requests.get(url, headers={"Range": "bytes=4-9"}, verify=str(service.info.ca_cert), timeout=30)
    assert past.status_code == 416 and past.headers["x-ms-error-code"] == "InvalidRange"
    assert past.headers["Content-Range"] == "bytes */4"


def test_unknown_operations_and_methods_are_named_in_the_error(service, account, share):
    sas = generate_share_sas(account.name, "share", account_key=account.key, permission="rwl",
                             expiry=datetime.now(timezone.utc) + timedelta(hours=1))
    base = f"{service.endpoint}/{account.name}/share/kept.txt?{sas}"
    verify = str(service.info.ca_cert)
    answer = requests.get(base + "&comp=handles", verify=verify, timeout=30)
    assert answer.status_code == 400 and answer.headers["x-ms-error-code"] == "InvalidQueryParameterValue"
    assert "comp=handles" in answer.text and "comp=rangelist" in answer.text
    answer = requests.post(base, verify=verify, timeout=30)
    assert answer.status_code == 405 and answer.headers["x-ms-error-code"] == "UnsupportedHttpVerb"
    answer = requests.get(base + "&restype=container", verify=verify, timeout=30)
    assert answer.status_code == 400 and "restype" in answer.text
    _still_answers(share)


def test_list_with_bad_maxresults_is_refused(service, account, share):
    sas = generate_share_sas(account.name, "share", account_key=account.key, permission="l",
                             expiry=datetime.now(timezone.utc) + timedelta(hours=1))
    answer = requests.get(f"{service.endpoint}/{account.name}/share?restype=directory&comp=list&maxresults=0&{sas}",
                          verify=str(service.info.ca_cert), timeout=30)
    assert answer.status_code == 400 and answer.headers["x-ms-error-code"] == "OutOfRangeQueryParameterValue"
    assert "maxresults" in answer.text


def test_bad_metadata_on_create_leaves_no_file(service, account, share):
    with pytest.raises(HttpResponseError) as err:
        share.get_file_client("meta.txt").upload_file(b"x", metadata={"1starts_with_digit": "v"})
    assert err.value.error_code == "InvalidMetadata"
    assert not (service.context.files_root / account.name / "share" / "meta.txt").exists()
    with pytest.raises(HttpResponseError) as err:
        share.create_directory("metadir", metadata={"bad-name": "v"})
    assert err.value.error_code == "InvalidMetadata"
    assert not (service.context.files_root / account.name / "share" / "metadir").exists()


def test_a_stalled_body_is_refused_instead_of_holding_a_thread(service, account, share, monkeypatch):
    import socket
    import ssl
    from email.utils import formatdate
    from horovod_batchai.local.files import api as files_api
    monkeypatch.setattr(files_api, "BODY_TIMEOUT_S", 1.0)
    sas = generate_share_sas(account.name, "share", account_key=account.key, permission="rw",
                             expiry=datetime.now(timezone.utc) + timedelta(hours=1))
    share.get_file_client("slow.bin").create_file(1024)
    host, port = service.endpoint.removeprefix("https://").rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(service.info.ca_cert))
    with socket.create_connection((host, int(port)), timeout=60) as raw:
        with context.wrap_socket(raw, server_hostname=host) as tls:
            head = (f"PUT /{account.name}/share/slow.bin?comp=range&{sas} HTTP/1.1\r\nHost: {host}\r\n"
                    "x-ms-version: 2025-11-05\r\nx-ms-range: bytes=0-1023\r\nx-ms-write: update\r\n"
                    f"x-ms-date: {formatdate(usegmt=True)}\r\nContent-Length: 1024\r\n\r\n")
            tls.sendall(head.encode() + b"only ten b")  # ...and then nothing more
            answer = b""
            while chunk := tls.recv(65536):
                answer += chunk
    assert answer.startswith(b"HTTP/1.1 400") and b"InvalidInput" in answer
    assert (service.context.files_root / account.name / "share" / "slow.bin").read_bytes() == bytes(1024)
    _still_answers(share)


def test_virtual_host_addressing_gets_a_clear_pointer_to_the_path_style_url(service, account, share):
    status, headers, body = raw_request(service, "GET", "/share/kept.txt",
                                        {"Host": f"{account.name}.file.core.windows.net", "x-ms-version": "2025-11-05"})
    assert status == 400 and headers["x-ms-error-code"] == "InvalidUri"
    assert f"{service.endpoint}/&lt;account&gt;".encode() in body
