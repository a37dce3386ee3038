"""Azure file shares on the local service, through azure-storage-file-share's ShareServiceClient."""
from __future__ import annotations

import shutil

import pytest
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError

from files_support import create_account, put_account, share_service
from horovod_batchai.local.files.store import delete_account_data, share_path


@pytest.fixture
def account(service):
    return create_account(service)


@pytest.fixture
def client(service, account):
    return share_service(service, account)


def test_create_share_makes_a_directory_and_answers_its_properties(service, account, client):
    client.create_share("share1", metadata={"Owner": "tutorial", "run_id": "42"}, quota=10)
    assert share_path(service.context, account.name, "share1") == service.context.files_root / account.name / "share1"
    assert share_path(service.context, account.name, "share1").is_dir()
    props = client.get_share_client("share1").get_share_properties()
    assert props.name == "share1"
    assert props.quota == 10
    # Metadata names keep the case and underscores the caller gave them.
    assert props.metadata == {"Owner": "tutorial", "run_id": "42"}
    assert props.etag.startswith('"0x') and props.last_modified is not None


def test_default_quota_and_account_made_directly_in_the_store(service):
    # The other way an account can exist: written by storage_api into the store (no ARM round trip).
    account = put_account(service, "directstore")
    client = share_service(service, account)
    client.create_share("share")
    assert client.get_share_client("share").get_share_properties().quota == 5120


def test_create_existing_share_conflicts_and_keeps_the_first(client):
    client.create_share("share1", metadata={"first": "yes"})
    with pytest.raises(ResourceExistsError) as err:
        client.create_share("share1", metadata={"second": "yes"})
    assert err.value.error_code == "ShareAlreadyExists"
    assert client.get_share_client("share1").get_share_properties().metadata == {"first": "yes"}


def test_list_shares_with_prefix_metadata_and_paging(client):
    for name in ("alpha", "beta-1", "beta-2", "beta-3", "gamma"):
        client.create_share(name, metadata={"n": name.replace("-", "")})
    assert [s.name for s in client.list_shares()] == ["alpha", "beta-1", "beta-2", "beta-3", "gamma"]
    assert [s.name for s in client.list_shares(name_starts_with="beta")] == ["beta-1", "beta-2", "beta-3"]
    with_meta = {s.name: s.metadata for s in client.list_shares(include_metadata=True)}
    assert with_meta["beta-2"] == {"n": "beta2"}
    pages = list(client.list_shares(results_per_page=2).by_page())
    assert [[s.name for s in page] for page in pages] == [["alpha", "beta-1"], ["beta-2", "beta-3"], ["gamma"]]


def test_set_metadata_and_quota_change_etag(client):
    share = client.create_share("share1")
    before = share.get_share_properties()
    share.set_share_metadata({"stage": "trained"})
    share.set_share_quota(100)
    after = share.get_share_properties()
    assert after.metadata == {"stage": "trained"}
    assert after.quota == 100
    assert after.etag != before.etag
    # Setting metadata replaces it (Azure semantics), it does not merge.
    share.set_share_metadata({"other": "x"})
    assert share.get_share_properties().metadata == {"other": "x"}


def test_bad_quota_and_bad_metadata_are_refused_and_change_nothing(client):
    share = client.create_share("share1", quota=5, metadata={"keep": "me"})
    with pytest.raises(HttpResponseError) as err:
        share.set_share_quota(0)
    assert err.value.status_code == 400 and err.value.error_code == "InvalidHeaderValue"
    assert "x-ms-share-quota" in str(err.value.message)
    with pytest.raises(HttpResponseError) as err:
        share.set_share_metadata({"not-an-identifier": "v"})
    assert err.value.status_code == 400 and err.value.error_code == "InvalidMetadata"
    with pytest.raises(HttpResponseError) as err:
        share.set_share_metadata({"big": "x" * 9000})
    assert err.value.error_code == "MetadataTooLarge"
    props = share.get_share_properties()
    assert props.quota == 5 and props.metadata == {"keep": "me"}


def test_share_stats_count_the_bytes_on_disk(service, account, client):
    share = client.create_share("share1")
    share.get_file_client("a.bin").upload_file(b"x" * 1000)
    # A file a job wrote straight into the share counts too.
    (share_path(service.context, account.name, "share1") / "job-output.txt").write_bytes(b"y" * 24)
    assert share.get_share_stats() == 1024


def test_delete_share_removes_its_files_and_answers_not_found_after(service, account, client):
    share = client.create_share("share1")
    share.create_directory("dir")
    share.get_file_client("dir/f.txt").upload_file(b"data")
    share.delete_share()
    assert share_path(service.context, account.name, "share1") is None
    assert not (service.context.files_root / account.name / "share1").exists()
    with pytest.raises(ResourceNotFoundError) as err:
        share.get_share_properties()
    assert err.value.error_code == "ShareNotFound"
    with pytest.raises(ResourceNotFoundError) as err:
        share.delete_share()
    assert err.value.error_code == "ShareNotFound"
    # The name can be used again, and the new share starts empty with no old metadata.
    client.create_share("share1")
    assert list(client.get_share_client("share1").list_directories_and_files()) == []


def test_a_share_exists_exactly_when_its_directory_does(service, account, client):
    client.create_share("share1", metadata={"a": "b"})
    shutil.rmtree(service.context.files_root / account.name / "share1")
    with pytest.raises(ResourceNotFoundError):
        client.get_share_client("share1").get_share_properties()
    assert [s.name for s in client.list_shares()] == []
    # A share directory made by hand is a share, answered with defaults.
    (service.context.files_root / account.name / "byhand").mkdir()
    props = client.get_share_client("byhand").get_share_properties()
    assert props.quota == 5120 and props.metadata == {}
    assert [s.name for s in client.list_shares()] == ["byhand"]


@pytest.mark.parametrize("name", ["ab", "Upper", "has_underscore", "-leading", "trailing-", "double--hyphen", "a" * 64])
def test_invalid_share_names_are_refused(service, account, client, name):
    with pytest.raises(HttpResponseError) as err:
        client.create_share(name)
    assert err.value.status_code == 400 and err.value.error_code == "InvalidResourceName"
    assert not (service.context.files_root / account.name / name).exists()


def test_unknown_account_is_a_clear_not_found(service, account):
    from files_support import Account
    ghost = share_service(service, Account("nosuchaccount", account.key, ""))
    with pytest.raises(HttpResponseError) as err:
        ghost.create_share("share1")
    assert err.value.status_code == 404
    assert "nosuchaccount" in str(err.value.message)


def test_deleting_the_storage_account_removes_its_shares(service, account, client, storage):
    client.create_share("share1").get_file_client("f.txt").upload_file(b"data")
    storage.storage_accounts.delete("files-rg", account.name)
    assert not (service.context.files_root / account.name).exists()
    rows = service.context.store.query("SELECT count(*) AS n FROM files_shares WHERE account = ?", (account.name,))
    assert rows[0]["n"] == 0


def test_delete_account_data_and_share_path_seams(service, account, client):
    client.create_share("share1")
    assert share_path(service.context, account.name, "nosuch") is None
    with pytest.raises(ValueError):
        share_path(service.context, account.name, "../etc")
    delete_account_data(service.context, account.name)
    assert share_path(service.context, account.name, "share1") is None
    delete_account_data(service.context, account.name)  # twice is harmless
    delete_account_data(service.context, "neverexisted")
