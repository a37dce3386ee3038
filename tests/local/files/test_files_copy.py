"""Copy File and Abort Copy on the Files data plane, through azure-storage-file-share's
``ShareFileClient.start_copy_from_url`` / ``abort_copy``: synchronous for small files, pending then
success (with progress) for large ones, abortable, resumed after a restart, and refused for a source the
caller may not read."""
from __future__ import annotations

import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

import pytest
from azure.core.exceptions import HttpResponseError, ResourceExistsError
from azure.storage.fileshare import (ContentSettings, FileSasPermissions, ShareFileClient, ShareSasPermissions,
                                     generate_file_sas, generate_share_sas)

from files_support import Account, create_account, raw_request, share_service
from horovod_batchai.local import LocalService, ServiceSettings

MiB = 1024 * 1024
#: a copy paced this slowly moves one 4 MiB chunk and then waits a minute: pending, whatever the load
CRAWL = 64 * 1024


def _start(state_dir: Path, **settings: object) -> LocalService:
    return LocalService(state_dir, settings=ServiceSettings(provision_delay_s=0.1, **settings)).start()


@pytest.fixture
def account(service) -> Account:
    return create_account(service)


@pytest.fixture
def share(service, account):
    client = share_service(service, account).create_share("share")
    client.create_directory("dir")
    return client


def _upload(share, path: str, data: bytes, **kwargs) -> ShareFileClient:
    client = share.get_file_client(path)
    client.upload_file(data, **kwargs)
    return client


def _response_headers(client: ShareFileClient) -> dict[str, str]:
    """Get File Properties' answer as sent (the SDK reads x-ms-copy-completion-time under a
    misspelt name, so its ``copy.completion_time`` is always None)."""
    seen: dict[str, str] = {}
    client.get_file_properties(raw_response_hook=lambda r: seen.update(r.http_response.headers))
    return {k.lower(): v for k, v in seen.items()}


def _wait_for(check, what: str, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"{what} did not happen in {timeout:g} s"
        time.sleep(0.2)


def test_a_small_copy_ends_before_the_answer_with_the_sources_properties(share):
    source = _upload(share, "dir/model.h5", b"weights" * 1000, metadata={"epoch": "7"},
                     content_settings=ContentSettings(content_type="application/x-hdf5", cache_control="no-cache"))
    dest = share.get_file_client("dir/model-copy.h5")
    started = dest.start_copy_from_url(source.url)
    assert started["copy_status"] == "success" and started["copy_id"]
    assert dest.download_file().readall() == b"weights" * 1000
    props = dest.get_file_properties()
    assert props.metadata == {"epoch": "7"}
    assert (props.content_settings.content_type, props.content_settings.cache_control) == ("application/x-hdf5",
                                                                                          "no-cache")
    assert (props.copy.id, props.copy.status, props.copy.progress) == (started["copy_id"], "success", "7000/7000")
    assert props.copy.source == source.url
    assert _response_headers(dest)["x-ms-copy-completion-time"].endswith(" GMT")
    # the source is as it was
    assert source.download_file().readall() == b"weights" * 1000


def test_metadata_given_with_the_copy_replaces_the_sources(share):
    source = _upload(share, "a.txt", b"a", metadata={"from": "source"})
    dest = share.get_file_client("b.txt")
    dest.start_copy_from_url(source.url, metadata={"from": "request"})
    assert dest.get_file_properties().metadata == {"from": "request"}


def test_smb_properties_named_source_are_the_sources(share):
    source = _upload(share, "a.txt", b"a", file_attributes="ReadOnly|Archive",
                     file_creation_time=datetime(2018, 5, 1, 10, 0, tzinfo=timezone.utc))
    dest = share.get_file_client("b.txt")
    dest.start_copy_from_url(source.url, file_attributes="source", file_creation_time="source")
    props = dest.get_file_properties()
    assert props.file_attributes == "ReadOnly | Archive"  # as Azure answers them
    assert props.creation_time.replace(tzinfo=timezone.utc) == datetime(2018, 5, 1, 10, 0, tzinfo=timezone.utc)
    # The copy is now ReadOnly: another copy over it needs ignore_read_only.
    with pytest.raises(ResourceExistsError) as err:
        dest.start_copy_from_url(source.url)
    assert err.value.error_code == "ReadOnlyAttribute"
    dest.start_copy_from_url(source.url, ignore_read_only=True)


def test_a_copy_across_shares_of_one_account_needs_no_sas(service, account, share):
    other = share_service(service, account).create_share("other")
    source = _upload(share, "dir/data.bin", os.urandom(3000))
    dest = other.get_file_client("data.bin")
    assert dest.start_copy_from_url(source.url)["copy_status"] == "success"
    assert dest.download_file().readall() == source.download_file().readall()


def test_another_accounts_file_needs_a_sas_that_grants_read(service, account, share):
    theirs = create_account(service, "otheraccount", rg="other-rg")
    their_share = share_service(service, theirs).create_share("theirs")
    source = _upload(their_share, "secret.bin", b"their bytes")
    dest = share.get_file_client("copied.bin")
    with pytest.raises(HttpResponseError) as err:
        dest.start_copy_from_url(source.url)
    assert (err.value.status_code, err.value.error_code) == (403, "CannotVerifyCopySource")
    expiry = datetime.now(timezone.utc) + timedelta(hours=1)
    write_only = generate_file_sas(theirs.name, "theirs", ["secret.bin"], theirs.key,
                                   permission=FileSasPermissions(write=True), expiry=expiry)
    with pytest.raises(HttpResponseError) as err:
        dest.start_copy_from_url(f"{source.url}?{write_only}")
    assert (err.value.status_code, err.value.error_code) == (403, "CannotVerifyCopySource")
    assert not dest.exists()

    readable = generate_file_sas(theirs.name, "theirs", ["secret.bin"], theirs.key,
                                 permission=FileSasPermissions(read=True), expiry=expiry)
    assert dest.start_copy_from_url(f"{source.url}?{readable}")["copy_status"] == "success"
    assert dest.download_file().readall() == b"their bytes"
    # The copy's source is shown without its signature.
    shown = dest.get_file_properties().copy.source
    assert shown.startswith(source.url) and "sig=" not in shown and "sp=r" in shown


def test_under_a_share_sas_the_source_must_be_within_its_reach(service, account, share):
    other = share_service(service, account).create_share("other")
    source = _upload(share, "dir/in-share.bin", b"reachable")
    elsewhere = _upload(other, "elsewhere.bin", b"not reachable")
    sas = generate_share_sas(account.name, "share", account.key, expiry=datetime.now(timezone.utc) + timedelta(hours=1),
                             permission=ShareSasPermissions(read=True, create=True, write=True))
    dest = ShareFileClient(f"{service.endpoint}/{account.name}", "share", "copy.bin", credential=sas,
                           connection_verify=str(service.info.ca_cert))
    assert dest.start_copy_from_url(source.url)["copy_status"] == "success"
    with pytest.raises(HttpResponseError) as err:
        dest.start_copy_from_url(elsewhere.url)
    assert (err.value.status_code, err.value.error_code) == (403, "CannotVerifyCopySource")
    assert dest.download_file().readall() == b"reachable"


def test_a_missing_or_foreign_source_is_refused(service, share):
    dest = share.get_file_client("x.bin")
    with pytest.raises(HttpResponseError) as err:
        dest.start_copy_from_url(f"{share.url}/dir/not-there.bin")
    assert (err.value.status_code, err.value.error_code) == (404, "CannotVerifyCopySource")
    with pytest.raises(HttpResponseError) as err:
        dest.start_copy_from_url("https://example.com/elsewhere/share/file.bin")
    assert (err.value.status_code, err.value.error_code) == (400, "InvalidHeaderValue")
    with pytest.raises(HttpResponseError) as err:
        dest.start_copy_from_url(f"https://127.0.0.1:notaport/{share.account_name}/share/dir/x.bin")
    assert (err.value.status_code, err.value.error_code) == (400, "InvalidHeaderValue")
    assert not dest.exists()


def test_abort_copy_names_what_is_missing(service, account, share):
    _upload(share, "a.bin", b"a")
    sas = generate_file_sas(account.name, "share", ["a.bin"], account.key, permission=FileSasPermissions(write=True),
                            expiry=datetime.now(timezone.utc) + timedelta(hours=1))
    target = f"/{account.name}/share/a.bin?comp=copy&{sas}"
    cases = [({}, f"{target}&copyid=x", "MissingRequiredHeader"),
             ({"x-ms-copy-action": "pause"}, f"{target}&copyid=x", "InvalidHeaderValue"),
             ({"x-ms-copy-action": "abort"}, target, "MissingRequiredQueryParameter")]
    for headers, path, code in cases:
        status, answered, _ = raw_request(service, "PUT", path, {"x-ms-version": "2025-11-05", **headers})
        assert (status, answered["x-ms-error-code"]) == (400, code)
    status, answered, _ = raw_request(service, "PUT", f"{target}&copyid=x",
                                      {"x-ms-version": "2025-11-05", "x-ms-copy-action": "abort"})
    assert (status, answered["x-ms-error-code"]) == (409, "NoPendingCopyOperation")


def test_writing_after_a_copy_ends_forgets_the_copy(share):
    source = _upload(share, "a.bin", b"12345678")
    dest = share.get_file_client("b.bin")
    dest.start_copy_from_url(source.url)
    dest.upload_range(b"ab", offset=0, length=2)
    assert dest.get_file_properties().copy.status is None
    assert dest.download_file().readall() == b"ab345678"


# -- large files: asynchronous ------------------------------------------------------------------

@pytest.fixture
def quick_async(tmp_path) -> Iterator[LocalService]:
    """A service that copies files over 1 MiB in the background, as fast as the disk goes."""
    svc = _start(tmp_path / "state", copy_sync_max_bytes=MiB)
    try:
        yield svc
    finally:
        svc.stop()


@pytest.fixture
def crawling(tmp_path) -> Iterator[LocalService]:
    """A service whose background copies crawl (one 4 MiB chunk, then a minute's wait)."""
    svc = _start(tmp_path / "state", copy_sync_max_bytes=MiB, copy_bytes_per_s=CRAWL)
    try:
        yield svc
    finally:
        svc.stop()


def _share_on(service: LocalService):
    account = create_account(service)
    return account, share_service(service, account).create_share("share")


def test_a_large_copy_is_pending_then_succeeds_with_its_progress(quick_async):
    _, share = _share_on(quick_async)
    data = os.urandom(9 * MiB + 123)
    source = _upload(share, "big.bin", data, metadata={"kind": "dataset"})
    dest = share.get_file_client("big-copy.bin")
    started = dest.start_copy_from_url(source.url)
    assert started["copy_status"] == "pending"
    # The destination has the source's size and metadata from the start, as on Azure.
    first = dest.get_file_properties()
    assert first.size == len(data) and first.metadata == {"kind": "dataset"}
    assert first.copy.status in ("pending", "success") and first.copy.id == started["copy_id"]
    copied, total = (int(n) for n in first.copy.progress.split("/"))
    assert total == len(data) and 0 <= copied <= total
    done = _wait_for(lambda: (p := dest.get_file_properties()).copy.status != "pending" and p, "the copy")
    assert (done.copy.status, done.copy.progress) == ("success", f"{len(data)}/{len(data)}")
    assert dest.download_file().readall() == data


def test_a_pending_copy_shows_progress_refuses_writes_and_aborts_to_an_empty_file(crawling):
    _, share = _share_on(crawling)
    source = _upload(share, "big.bin", os.urandom(8 * MiB), metadata={"kept": "yes"})
    dest = share.get_file_client("big-copy.bin")
    started = dest.start_copy_from_url(source.url)
    assert started["copy_status"] == "pending"
    props = _wait_for(lambda: (p := dest.get_file_properties()).copy.progress != f"0/{8 * MiB}" and p,
                      "the first chunk")
    assert (props.copy.status, props.copy.progress) == ("pending", f"{4 * MiB}/{8 * MiB}")

    with pytest.raises(ResourceExistsError) as err:
        dest.upload_range(b"x", offset=0, length=1)
    assert err.value.error_code == "PendingCopyOperation"
    with pytest.raises(ResourceExistsError) as err:
        dest.abort_copy("00000000-0000-0000-0000-000000000000")
    assert err.value.error_code == "CopyIdMismatch"

    dest.abort_copy(props)  # the SDK takes the properties, or the id
    aborted = dest.get_file_properties()
    assert (aborted.copy.status, aborted.size, aborted.metadata) == ("aborted", 0, {"kept": "yes"})
    assert aborted.copy.status_description == "The copy was aborted."
    assert _response_headers(dest)["x-ms-copy-completion-time"].endswith(" GMT")
    with pytest.raises(ResourceExistsError) as err:
        dest.abort_copy(started["copy_id"])
    assert err.value.error_code == "NoPendingCopyOperation"
    dest.upload_file(b"written after the abort")  # the file takes writes again
    assert dest.download_file().readall() == b"written after the abort"


def _pending_copy_then_stop(state_dir: Path, data: bytes) -> str:
    """A crawling copy of ``data`` left pending by a service that stops; the copy's id."""
    svc = _start(state_dir, copy_sync_max_bytes=MiB, copy_bytes_per_s=CRAWL)
    try:
        _, share = _share_on(svc)
        source = _upload(share, "big.bin", data)
        dest = share.get_file_client("copy.bin")
        copy_id = dest.start_copy_from_url(source.url)["copy_id"]
        _wait_for(lambda: dest.get_file_properties().copy.progress != f"0/{len(data)}", "the first chunk")
    finally:
        svc.stop()
    return copy_id


def test_a_copy_pending_when_the_service_stops_is_resumed_at_the_next_start(tmp_path):
    data = os.urandom(8 * MiB + 5)
    copy_id = _pending_copy_then_stop(tmp_path / "state", data)
    svc = _start(tmp_path / "state", copy_sync_max_bytes=MiB)
    try:
        account = create_account(svc)  # the same account again: its key1 is derived, the share is kept
        dest = share_service(svc, account).get_share_client("share").get_file_client("copy.bin")
        done = _wait_for(lambda: (p := dest.get_file_properties()).copy.status != "pending" and p, "the copy")
        assert (done.copy.id, done.copy.status) == (copy_id, "success")
        assert dest.download_file().readall() == data
    finally:
        svc.stop()


def test_a_source_changed_while_its_copy_was_pending_fails_the_copy(tmp_path):
    _pending_copy_then_stop(tmp_path / "state", os.urandom(8 * MiB))
    source_on_disk = tmp_path / "state" / "files" / "teststorage" / "share" / "big.bin"
    with open(source_on_disk, "r+b") as fh:
        fh.write(b"changed")
    svc = _start(tmp_path / "state", copy_sync_max_bytes=MiB)
    try:
        account = create_account(svc)
        dest = share_service(svc, account).get_share_client("share").get_file_client("copy.bin")
        done = _wait_for(lambda: (p := dest.get_file_properties()).copy.status != "pending" and p, "the copy")
        assert done.copy.status == "failed" and "modified" in done.copy.status_description
    finally:
        svc.stop()
