"""Authentication on the local Files data plane: Shared Key and service SAS, each failure with its
status and code, and no secret in any answer or log line."""
from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta, timezone
from email.utils import formatdate

import pytest
import requests
from azure.core.exceptions import ClientAuthenticationError, HttpResponseError
from azure.storage.fileshare import ShareFileClient, ShareServiceClient, generate_file_sas, generate_share_sas

from files_support import create_account, raw_request, share_service
from horovod_batchai.local.storage.accounts import new_key


@pytest.fixture
def account(service):
    return create_account(service)


@pytest.fixture
def share(service, account):
    share = share_service(service, account).create_share("share")
    share.create_directory("dir")
    share.get_file_client("dir/data.txt").upload_file(b"secret-free payload")
    share.get_file_client("dir/other.txt").upload_file(b"other")
    return share


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _file_client(service, account, path: str, sas: str) -> ShareFileClient:
    return ShareFileClient(f"{service.endpoint}/{account.name}", "share", path, credential=sas,
                           connection_verify=str(service.info.ca_cert))


def _file_sas(account, path: str, **kwargs) -> str:
    kwargs.setdefault("permission", "r")
    kwargs.setdefault("expiry", _now() + timedelta(hours=1))
    return generate_file_sas(account.name, "share", path.split("/"), account_key=account.key, **kwargs)


# -- Shared Key -----------------------------------------------------------------------------------

def test_both_current_keys_sign_and_a_forged_key_is_refused(service, account, share, storage):
    keys = [k.value for k in storage.storage_accounts.list_keys("files-rg", account.name).keys_property]
    for key in keys:
        client = share_service(service, account, credential=key)
        assert client.get_share_client("share").get_file_client("dir/data.txt").download_file().readall() \
            == b"secret-free payload"
    forged = share_service(service, account, credential=new_key())
    with pytest.raises(ClientAuthenticationError) as err:
        forged.get_share_client("share").get_file_client("dir/data.txt").download_file().readall()
    assert err.value.status_code == 403 and err.value.error_code == "AuthenticationFailed"
    # A forged write changes nothing.
    with pytest.raises(ClientAuthenticationError):
        forged.get_share_client("share").get_file_client("dir/data.txt").upload_file(b"overwritten")
    with pytest.raises(ClientAuthenticationError):
        forged.create_share("forgedshare")
    assert (service.context.files_root / account.name / "share" / "dir" / "data.txt").read_bytes() \
        == b"secret-free payload"
    assert not (service.context.files_root / account.name / "forgedshare").exists()


def test_regenerated_key_takes_effect_at_once(service, account, share, storage):
    storage.storage_accounts.regenerate_key("files-rg", account.name, {"keyName": "key1"})
    with pytest.raises(ClientAuthenticationError) as err:
        share_service(service, account).get_share_client("share").get_share_properties()
    assert err.value.status_code == 403
    new = storage.storage_accounts.list_keys("files-rg", account.name).keys_property[0].value
    assert share_service(service, account, credential=new).get_share_client("share").get_share_properties().name \
        == "share"


def test_request_with_no_credentials_is_unauthenticated(service, account, share):
    status, headers, body = raw_request(service, "GET", f"/{account.name}/share/dir/data.txt",
                                        {"x-ms-version": "2025-11-05"})
    assert status == 401 and headers["x-ms-error-code"] == "NoAuthenticationInformation"
    assert b"<Code>NoAuthenticationInformation</Code>" in body


def test_malformed_authorization_header_is_refused(service, account, share):
    status, headers, _ = raw_request(service, "GET", f"/{account.name}/share/dir/data.txt",
                                     {"Authorization": "SharedKey justgarbage", "x-ms-date": "x"})
    assert status == 400 and headers["x-ms-error-code"] == "InvalidAuthenticationInfo"
    status, headers, _ = raw_request(service, "GET", f"/{account.name}/share/dir/data.txt",
                                     {"Authorization": f"SharedKey otheraccount:{'A' * 44}"})
    assert status == 403 and headers["x-ms-error-code"] == "AuthenticationFailed"


def test_a_request_dated_too_long_ago_is_refused(service, account, share, monkeypatch):
    # The SDK signs correctly but its clock is an hour behind: a replayed or stale request.
    from azure.storage.fileshare._shared import policies
    monkeypatch.setattr(policies, "time", lambda: time.time() - 3600)
    with pytest.raises(ClientAuthenticationError) as err:
        share_service(service, account).get_share_client("share").get_share_properties()
    assert err.value.status_code == 403 and err.value.error_code == "AuthenticationFailed"
    assert "15 minutes" in str(err.value.message)


# -- service SAS ----------------------------------------------------------------------------------

def test_file_sas_reads_its_file_and_nothing_else(service, account, share):
    sas = _file_sas(account, "dir/data.txt")
    assert _file_client(service, account, "dir/data.txt", sas).download_file().readall() == b"secret-free payload"
    # The same token on another file: the signature is for data.txt only.
    with pytest.raises(HttpResponseError) as err:
        _file_client(service, account, "dir/other.txt", sas).download_file().readall()
    assert err.value.status_code == 403 and err.value.error_code == "AuthenticationFailed"


def test_download_url_shaped_like_list_output_files(service, account, share):
    # listOutputFiles answers {endpoint}/{account}/{share}/{path}?{sas}; any HTTP client reads it.
    sas = _file_sas(account, "dir/data.txt", permission="rl")
    url = f"{service.endpoint}/{account.name}/share/dir/data.txt?{sas}"
    response = requests.get(url, verify=str(service.info.ca_cert), timeout=30)
    assert response.status_code == 200 and response.content == b"secret-free payload"
    ranged = requests.get(url, headers={"Range": "bytes=7-10", "x-ms-version": "2025-11-05"},
                          verify=str(service.info.ca_cert), timeout=30)
    assert ranged.status_code == 206 and ranged.content == b"free"
    assert ranged.headers["Content-Range"] == "bytes 7-10/19"


def test_expired_and_not_yet_valid_sas_are_refused(service, account, share):
    expired = _file_sas(account, "dir/data.txt", start=_now() - timedelta(hours=2), expiry=_now() - timedelta(hours=1))
    with pytest.raises(HttpResponseError) as err:
        _file_client(service, account, "dir/data.txt", expired).download_file().readall()
    assert err.value.status_code == 403 and err.value.error_code == "AuthenticationFailed"
    assert "expired" in err.value.response.text()
    future = _file_sas(account, "dir/data.txt", start=_now() + timedelta(hours=1), expiry=_now() + timedelta(hours=2))
    with pytest.raises(HttpResponseError) as err:
        _file_client(service, account, "dir/data.txt", future).download_file().readall()
    assert err.value.status_code == 403 and "not valid yet" in err.value.response.text()


def test_missing_permission_is_refused_and_nothing_changes(service, account, share):
    read_only = _file_sas(account, "dir/data.txt", permission="r")
    client = _file_client(service, account, "dir/data.txt", read_only)
    with pytest.raises(HttpResponseError) as err:
        client.upload_file(b"changed")
    assert err.value.status_code == 403 and err.value.error_code == "AuthorizationPermissionMismatch"
    with pytest.raises(HttpResponseError) as err:
        client.delete_file()
    assert err.value.error_code == "AuthorizationPermissionMismatch"
    assert (service.context.files_root / account.name / "share" / "dir" / "data.txt").read_bytes() \
        == b"secret-free payload"
    # With the permissions, the same operations succeed.
    writer = _file_client(service, account, "dir/data.txt", _file_sas(account, "dir/data.txt", permission="rcwd"))
    writer.upload_file(b"changed")
    assert writer.download_file().readall() == b"changed"
    writer.delete_file()


def test_tampered_sas_fields_break_the_signature(service, account, share):
    sas = _file_sas(account, "dir/data.txt", permission="r")
    widened = sas.replace("sp=r", "sp=rwd")
    with pytest.raises(HttpResponseError) as err:
        _file_client(service, account, "dir/data.txt", widened).upload_file(b"x")
    assert err.value.status_code == 403 and err.value.error_code == "AuthenticationFailed"
    later = _file_sas(account, "dir/data.txt", expiry=datetime(2020, 1, 1, tzinfo=timezone.utc))
    extended = later.replace("se=2020-01-01", "se=2099-01-01")
    with pytest.raises(HttpResponseError) as err:
        _file_client(service, account, "dir/data.txt", extended).download_file().readall()
    assert err.value.status_code == 403 and err.value.error_code == "AuthenticationFailed"


def test_share_sas_lists_and_reads_but_cannot_manage_the_share(service, account, share):
    sas = generate_share_sas(account.name, "share", account_key=account.key, permission="rl",
                             expiry=_now() + timedelta(hours=1), protocol="https")
    client = ShareServiceClient(f"{service.endpoint}/{account.name}", credential=sas,
                                connection_verify=str(service.info.ca_cert)).get_share_client("share")
    assert sorted(e.name for e in client.list_directories_and_files("dir")) == ["data.txt", "other.txt"]
    assert client.get_file_client("dir/other.txt").download_file().readall() == b"other"
    with pytest.raises(HttpResponseError) as err:
        client.delete_share()
    assert err.value.status_code == 403 and err.value.error_code == "AuthorizationResourceTypeMismatch"
    with pytest.raises(HttpResponseError) as err:
        client.create_directory("new")
    assert err.value.error_code == "AuthorizationPermissionMismatch"
    assert not (service.context.files_root / account.name / "share" / "new").exists()
    # A share SAS does not reach another share of the account.
    share_service(service, account).create_share("second")
    other = ShareServiceClient(f"{service.endpoint}/{account.name}", credential=sas,
                               connection_verify=str(service.info.ca_cert)).get_share_client("second")
    with pytest.raises(HttpResponseError) as err:
        list(other.list_directories_and_files())
    assert err.value.status_code == 403


def test_file_sas_cannot_list_its_directory(service, account, share):
    sas = _file_sas(account, "dir", permission="rl")
    client = ShareServiceClient(f"{service.endpoint}/{account.name}", credential=sas,
                                connection_verify=str(service.info.ca_cert)).get_share_client("share")
    with pytest.raises(HttpResponseError) as err:
        list(client.list_directories_and_files("dir"))
    assert err.value.status_code == 403 and err.value.error_code == "AuthorizationResourceTypeMismatch"


def test_sas_protocol_and_unsupported_forms(service, account, share):
    https_only = _file_sas(account, "dir/data.txt", protocol="https")
    assert _file_client(service, account, "dir/data.txt", https_only).download_file().readall()
    bad_protocol = _file_sas(account, "dir/data.txt", protocol="http")
    with pytest.raises(HttpResponseError) as err:
        _file_client(service, account, "dir/data.txt", bad_protocol).download_file().readall()
    assert err.value.status_code == 403 and "spr" in err.value.response.text()
    stored_policy = _file_sas(account, "dir/data.txt", policy_id="nosuchpolicy")
    with pytest.raises(HttpResponseError) as err:
        _file_client(service, account, "dir/data.txt", stored_policy).download_file().readall()
    assert err.value.status_code == 403 and "stored access policy" in err.value.response.text()


def test_sas_protocol_enforced_for_plain_http(service, account, share):
    # The service itself only speaks HTTPS; check the verifier's protocol rule directly.
    from horovod_batchai.local.files.errors import StorageError
    from horovod_batchai.local.files.auth import SignedRequest, authenticate
    from urllib.parse import parse_qsl
    sas = _file_sas(account, "dir/data.txt", protocol="https")
    request = SignedRequest("GET", f"/{account.name}/share/dir/data.txt", parse_qsl(sas), (), scheme="http")
    with pytest.raises(StorageError) as err:
        authenticate(request, account.name, "share", ("dir", "data.txt"), [account.key])
    assert err.value.status == 403 and err.value.code == "AuthorizationProtocolMismatch"
    ok = SignedRequest("GET", f"/{account.name}/share/dir/data.txt", parse_qsl(sas), (), scheme="https")
    assert authenticate(ok, account.name, "share", ("dir", "data.txt"), [account.key]).permissions == {"r"}


# -- secrets stay secret --------------------------------------------------------------------------

def test_no_secret_in_logs_or_error_answers(service, account, share, caplog):
    caplog.set_level(logging.DEBUG)
    sas = _file_sas(account, "dir/data.txt")
    signature = dict(p.split("=", 1) for p in sas.split("&"))["sig"]
    url = f"{service.endpoint}/{account.name}/share/dir/data.txt?{sas}"
    assert requests.get(url, verify=str(service.info.ca_cert), timeout=30).status_code == 200
    expired = _file_sas(account, "dir/data.txt", start=_now() - timedelta(hours=2), expiry=_now() - timedelta(hours=1))
    expired_sig = dict(p.split("=", 1) for p in expired.split("&"))["sig"]
    answer = requests.get(f"{service.endpoint}/{account.name}/share/dir/data.txt?{expired}",
                          verify=str(service.info.ca_cert), timeout=30)
    assert answer.status_code == 403
    share_service(service, account).get_share_client("share").get_share_properties()
    forged = requests.get(f"{service.endpoint}/{account.name}/share/dir/data.txt",
                          headers={"Authorization": f"SharedKey {account.name}:{signature}",
                                   "x-ms-date": formatdate(usegmt=True)},
                          verify=str(service.info.ca_cert), timeout=30)
    assert forged.status_code == 403
    service_lines = [r.getMessage() for r in caplog.records if r.name.startswith(("horovod_batchai", "werkzeug"))]
    assert any("/share/dir/data.txt" in line for line in service_lines)  # the requests were logged...
    from urllib.parse import unquote
    for secret in (signature, unquote(signature), expired_sig, unquote(expired_sig), account.key):
        for line in service_lines:
            assert secret not in line
        assert secret not in answer.text and secret not in forged.text


def test_header_order_matches_the_sdks_emulation_of_the_service_collation():
    # Shared Key sorts x-ms-* headers with the service's collation; the SDK emulates it with tables.
    # Our verifier must order every header the SDK can send (and metadata names) the same way.
    import re
    from pathlib import Path
    import azure.storage.fileshare._generated.operations._operations as generated
    from azure.storage.fileshare._shared.authentication import _storage_header_sort
    from horovod_batchai.local.files.auth import SignedRequest, _canonical_headers
    names = set(re.findall(r'"(x-ms-[a-z0-9-]*)"', Path(generated.__file__).read_text()))
    names |= {"x-ms-meta-a", "x-ms-meta-b_c", "x-ms-meta-ab", "x-ms-meta-abc", "x-ms-meta-zed", "x-ms-meta-my_key"}
    assert len(names) > 50
    headers = [(n, f"v{i}") for i, n in enumerate(sorted(names))]
    expected = "".join(f"{n}:{v}\n" for n, v in _storage_header_sort(headers))
    assert _canonical_headers(SignedRequest("GET", "/", (), headers), "collation") == expected


def test_reprs_of_what_handlers_hold_carry_no_secret(service, account, share):
    from urllib.parse import parse_qsl
    from werkzeug.test import EnvironBuilder
    from werkzeug.wrappers import Request
    from horovod_batchai.local.files.auth import SignedRequest, authenticate
    from horovod_batchai.local.core.routing import Call
    sas = _file_sas(account, "dir/data.txt")
    signature = dict(parse_qsl(sas))["sig"]
    path = f"/{account.name}/share/dir/data.txt"
    request = SignedRequest("GET", path, parse_qsl(sas), [("Authorization", f"SharedKey {account.name}:{signature}")])
    grant = authenticate(SignedRequest("GET", path, parse_qsl(sas), ()), account.name, "share", ("dir", "data.txt"),
                         [account.key])
    call = Call(request=Request(EnvironBuilder(path=path, query_string=sas).get_environ()),
                context=service.context, base_url=service.endpoint)
    for shown in (repr(request), repr(grant), repr(call)):
        assert signature not in shown and account.key not in shown
