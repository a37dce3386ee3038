"""Rename File (``PUT <file>?comp=rename``, version 2021-04-10 on) on the local Files data plane:
Microsoft's ShareFileClient.rename_file over real HTTPS, and raw requests for what it will not send."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.storage.fileshare import ContentSettings, NTFSAttributes, ShareFileClient, generate_file_sas, \
    generate_share_sas

from files_support import create_account, raw_request, share_service


@pytest.fixture
def account(service):
    return create_account(service)


@pytest.fixture
def share(service, account):
    client = share_service(service, account)
    client.create_share("other")
    return client.create_share("share")


@pytest.fixture
def share_dir(service, account, share):
    return service.context.files_root / account.name / "share"


def _upload(share, path: str, data: bytes, **kwargs):
    client = share.get_file_client(path)
    client.upload_file(data, **kwargs)
    return client


def test_rename_moves_the_file_with_its_bytes_and_properties(share, share_dir):
    share.create_directory("dir")
    source = _upload(share, ".model.h5.uploading-1234", b"weights", metadata={"Epoch": "3"},
                     content_settings=ContentSettings(content_type="application/x-hdf5"))
    file_id = source.get_file_properties().file_id
    renamed = source.rename_file("dir/model.h5")
    assert renamed.file_path == ["dir", "model.h5"]
    assert not (share_dir / ".model.h5.uploading-1234").exists()
    assert (share_dir / "dir" / "model.h5").read_bytes() == b"weights"
    props = share.get_file_client("dir/model.h5").get_file_properties()
    assert props.metadata == {"Epoch": "3"} and props.content_settings.content_type == "application/x-hdf5"
    assert props.file_id == file_id  # the same file under a new name, not a copy
    with pytest.raises(ResourceNotFoundError):
        source.get_file_properties()
    assert sorted(e.name for e in share.list_directories_and_files()) == ["dir"]


def test_rename_sets_what_it_is_given(share):
    source = _upload(share, "a.txt", b"x", metadata={"Old": "1"})
    renamed = source.rename_file("b.txt", metadata={"New": "2"}, content_type="text/plain")
    props = renamed.get_file_properties()
    assert props.metadata == {"New": "2"} and props.content_settings.content_type == "text/plain"


def test_an_existing_destination_is_replaced_only_when_asked(share, share_dir):
    _upload(share, "final.txt", b"old")
    source = _upload(share, "tmp.txt", b"new")
    with pytest.raises(ResourceExistsError) as err:
        source.rename_file("final.txt")
    assert err.value.error_code == "ResourceAlreadyExists"
    assert (share_dir / "final.txt").read_bytes() == b"old" and (share_dir / "tmp.txt").exists()
    source.rename_file("final.txt", overwrite=True)
    assert (share_dir / "final.txt").read_bytes() == b"new" and not (share_dir / "tmp.txt").exists()


def test_a_readonly_destination_needs_ignore_read_only(share, share_dir):
    _upload(share, "final.txt", b"old", file_attributes=NTFSAttributes(read_only=True))
    source = _upload(share, "tmp.txt", b"new")
    with pytest.raises(HttpResponseError) as err:
        source.rename_file("final.txt", overwrite=True)
    assert err.value.status_code == 409 and err.value.error_code == "ReadOnlyAttribute"
    source.rename_file("final.txt", overwrite=True, ignore_read_only=True)
    assert (share_dir / "final.txt").read_bytes() == b"new"


def test_rename_errors_use_azure_codes(share, share_dir):
    share.create_directory("d")
    source = _upload(share, "f.txt", b"x")
    with pytest.raises(HttpResponseError) as err:
        source.rename_file("d", overwrite=True)
    assert err.value.status_code == 409 and err.value.error_code == "ResourceTypeMismatch"
    with pytest.raises(ResourceNotFoundError) as err:
        source.rename_file("missing/f.txt")
    assert err.value.error_code == "ParentNotFound"
    with pytest.raises(ResourceNotFoundError):
        share.get_file_client("nothing.txt").rename_file("g.txt")
    with pytest.raises(HttpResponseError) as err:
        share.get_file_client("d").rename_file("e")  # a directory is not a rename source
    assert err.value.status_code == 409 and err.value.error_code == "ResourceTypeMismatch"
    assert (share_dir / "f.txt").read_bytes() == b"x" and (share_dir / "d").is_dir()


def _sas_request(service, account, dest: str, source_url: str, sas: str, **headers: str):
    return raw_request(service, "PUT", f"/{account.name}/share/{dest}?comp=rename&{sas}",
                       {"x-ms-version": "2021-04-10", "x-ms-file-rename-source": source_url, **headers})


def test_the_source_must_be_a_file_url_of_the_same_share(service, account, share, share_dir):
    _upload(share, "f.txt", b"x")
    share_service(service, account).get_share_client("other").get_file_client("o.txt").upload_file(b"o")
    sas = generate_share_sas(account.name, "share", account_key=account.key, permission="rcwd",
                             expiry=datetime.now(timezone.utc) + timedelta(hours=1))
    base = f"{service.endpoint}/{account.name}"
    for source, problem in ((f"{base}/other/o.txt", "share"), ("f.txt", "full URL"), ("", "x-ms-file-rename-source"),
                            (f"{base}/share/a/../f.txt", "does not name a file")):
        status, _, body = _sas_request(service, account, "g.txt", source, sas)
        assert status == 400 and problem.encode() in body, (source, body)
    assert (share_dir / "f.txt").exists() and not (share_dir / "g.txt").exists()
    status, _, body = _sas_request(service, account, "g.txt", f"{base}/share/f.txt", sas,
                                   **{"x-ms-file-rename-replace-if-exists": "maybe"})
    assert status == 400 and b"x-ms-file-rename-replace-if-exists" in body
    # The Azure host form of the same file is understood too.
    status, _, _ = _sas_request(service, account, "g.txt", f"https://{account.name}.file.core.windows.net/share/f.txt",
                                sas)
    assert status == 200 and (share_dir / "g.txt").read_bytes() == b"x"


def test_a_sas_must_reach_the_source_too(service, account, share, share_dir):
    _upload(share, "f.txt", b"x")
    expiry = datetime.now(timezone.utc) + timedelta(hours=1)
    dest_sas = generate_file_sas(account.name, "share", ["g.txt"], account_key=account.key, permission="cw",
                                 expiry=expiry)
    source_url = f"{service.endpoint}/{account.name}/share/f.txt"
    status, _, body = _sas_request(service, account, "g.txt", source_url, dest_sas)
    assert status == 403 and (share_dir / "f.txt").exists()
    read_only = generate_file_sas(account.name, "share", ["f.txt"], account_key=account.key, permission="r",
                                  expiry=expiry)
    status, _, body = _sas_request(service, account, "g.txt", f"{source_url}?{read_only}", dest_sas)
    assert status == 403 and b"AuthorizationPermissionMismatch" in body and (share_dir / "f.txt").exists()
    deletable = generate_file_sas(account.name, "share", ["f.txt"], account_key=account.key, permission="rd",
                                  expiry=expiry)
    status, _, body = _sas_request(service, account, "g.txt", f"{source_url}?{deletable}", dest_sas)
    assert status == 200, body
    assert (share_dir / "g.txt").read_bytes() == b"x" and not (share_dir / "f.txt").exists()


def test_rename_through_a_file_client_made_from_a_url(service, account, share, share_dir):
    _upload(share, "f.txt", b"x")
    client = ShareFileClient(f"{service.endpoint}/{account.name}", "share", "f.txt", credential=account.key,
                             connection_verify=str(service.info.ca_cert))
    client.rename_file("h.txt")
    assert (share_dir / "h.txt").read_bytes() == b"x"
