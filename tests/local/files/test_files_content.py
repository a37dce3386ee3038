"""Directories and files on the local Files data plane: Microsoft's ShareClient, ShareDirectoryClient
and ShareFileClient over real HTTPS, with the bytes checked where a user would look at them."""
from __future__ import annotations

import base64
import hashlib
import os

import pytest
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.storage.fileshare import ContentSettings

from files_support import create_account, share_service


@pytest.fixture
def account(service):
    return create_account(service)


@pytest.fixture
def share(service, account):
    return share_service(service, account).create_share("share")


@pytest.fixture
def share_dir(service, account, share):
    return service.context.files_root / account.name / "share"


# -- directories ----------------------------------------------------------------------------------

def test_directories_create_list_properties_delete(share, share_dir):
    share.create_directory("scripts", metadata={"Purpose": "code"})
    share.get_directory_client("scripts").create_subdirectory("lib")
    assert (share_dir / "scripts" / "lib").is_dir()
    props = share.get_directory_client("scripts").get_directory_properties()
    assert props.metadata == {"Purpose": "code"} and props.is_directory
    assert props.file_attributes == "Directory" and props.creation_time is not None
    listed = list(share.list_directories_and_files("scripts"))
    assert [(e.name, e.is_directory) for e in listed] == [("lib", True)]
    share.get_directory_client("scripts").set_directory_metadata({"Purpose": "changed"})
    assert share.get_directory_client("scripts").get_directory_properties().metadata == {"Purpose": "changed"}
    share.get_directory_client("scripts/lib").delete_directory()
    assert not (share_dir / "scripts" / "lib").exists()


def test_directory_errors_use_azure_codes(share, share_dir):
    share.create_directory("d")
    with pytest.raises(ResourceExistsError) as err:
        share.create_directory("d")
    assert err.value.error_code == "ResourceAlreadyExists"
    with pytest.raises(ResourceNotFoundError) as err:
        share.get_directory_client("missing/child").create_directory()
    assert err.value.error_code == "ParentNotFound"
    assert not (share_dir / "missing").exists()
    share.get_file_client("d/f.txt").upload_file(b"x")
    with pytest.raises(ResourceExistsError) as err:
        share.get_directory_client("d").delete_directory()
    assert err.value.error_code == "DirectoryNotEmpty"
    assert (share_dir / "d" / "f.txt").read_bytes() == b"x"
    with pytest.raises(ResourceNotFoundError) as err:
        share.get_directory_client("nope").delete_directory()
    assert err.value.error_code == "ResourceNotFound"


def test_listing_pages_with_a_marker_and_filters_by_prefix(share):
    share.create_directory("many")
    d = share.get_directory_client("many")
    names = [f"f{i:02d}.txt" for i in range(7)] + ["sub"]
    for name in names[:-1]:
        d.upload_file(name, b"n" * int(name[1:3]))
    d.create_subdirectory("sub")
    pages = list(share.list_directories_and_files("many", results_per_page=3).by_page())
    assert [len(list(p)) for p in pages] == [3, 3, 2]
    seen = [e.name for e in share.list_directories_and_files("many", results_per_page=3)]
    assert sorted(seen) == sorted(names)
    sizes = {e.name: e.size for e in share.list_directories_and_files("many") if not e.is_directory}
    assert sizes["f05.txt"] == 5
    assert sorted(e.name for e in share.list_directories_and_files("many", name_starts_with="f0")) == names[:-1]


def test_listing_root_with_extended_info(share):
    share.get_file_client("top.txt").upload_file(b"abc")
    items = list(share.get_directory_client("").list_directories_and_files(include_extended_info=True,
                                                                           include=["timestamps", "ETag"]))
    assert len(items) == 1 and items[0].name == "top.txt" and items[0].size == 3
    assert items[0].file_id and items[0].etag and items[0].last_write_time is not None


# -- files ----------------------------------------------------------------------------------------

def test_upload_and_download_small_file_with_content_settings_and_metadata(share, share_dir):
    f = share.get_file_client("hello world.txt")
    f.upload_file(b"hello\n", metadata={"Author": "me"},
                  content_settings=ContentSettings(content_type="text/plain", cache_control="no-cache"))
    assert (share_dir / "hello world.txt").read_bytes() == b"hello\n"
    props = f.get_file_properties()
    assert props.size == 6 and props.metadata == {"Author": "me"}
    assert props.content_settings.content_type == "text/plain"
    assert props.content_settings.cache_control == "no-cache"
    assert props.file_attributes == "Archive" and props.file_id and props.parent_id
    downloaded = f.download_file()
    assert downloaded.readall() == b"hello\n"
    assert downloaded.properties.metadata == {"Author": "me"}


def test_large_upload_in_parallel_ranges_and_chunked_download(service, account, share, share_dir, tmp_path):
    data = os.urandom(3 * 1024 * 1024) * 7 + os.urandom(12345)  # ~21 MiB: 6 ranges of 4 MiB
    f = share.get_file_client("big.bin")
    f.upload_file(data, max_concurrency=8)
    assert hashlib.sha256((share_dir / "big.bin").read_bytes()).hexdigest() == hashlib.sha256(data).hexdigest()
    # Small first GET and small chunks so the download takes several ranged requests.
    client = share_service(service, account, max_single_get_size=4 * 1024 * 1024, max_chunk_get_size=3 * 1024 * 1024)
    out = tmp_path / "big.out"
    with open(out, "wb") as fh:
        client.get_share_client("share").get_file_client("big.bin").download_file(max_concurrency=4).readinto(fh)
    assert out.read_bytes() == data
    # The ranges that hold data are reported from the file itself.
    ranges = [{"start": r.start, "end": r.end} for r in f.list_ranges()]
    assert ranges and ranges[0]["start"] == 0 and ranges[-1]["end"] == len(data) - 1


def test_ranged_download_and_ranges_past_the_end(share):
    f = share.get_file_client("r.bin")
    f.upload_file(bytes(range(256)) * 4)
    assert f.download_file(offset=10, length=5).readall() == bytes(range(10, 15))
    assert f.download_file(offset=1000).readall() == (bytes(range(256)) * 4)[1000:]
    with pytest.raises(HttpResponseError) as err:
        f.download_file(offset=1024, length=10).readall()
    assert err.value.status_code == 416 and err.value.error_code == "InvalidRange"
    # Writing past the end is refused and the file is unchanged.
    with pytest.raises(HttpResponseError) as err:
        f.upload_range(b"z" * 512, offset=1024, length=512)
    assert err.value.status_code == 416 and err.value.error_code == "InvalidRange"
    assert f.download_file().readall() == bytes(range(256)) * 4


def test_empty_file_downloads_as_empty(share):
    f = share.get_file_client("empty")
    f.upload_file(b"")
    assert f.download_file().readall() == b""
    assert f.get_file_properties().size == 0


def test_create_then_ranges_clear_resize_and_validated_content(share, share_dir):
    f = share.get_file_client("sparse.bin")
    f.create_file(4096)
    assert (share_dir / "sparse.bin").stat().st_size == 4096
    f.upload_range(b"a" * 512, offset=512, length=512, validate_content=True)
    f.upload_range(b"b" * 512, offset=2048, length=512)
    content = f.download_file().readall()
    assert content[512:1024] == b"a" * 512 and content[2048:2560] == b"b" * 512 and content[:512] == bytes(512)
    f.clear_range(offset=512, length=512)
    assert f.download_file(offset=512, length=512).readall() == bytes(512)
    f.resize_file(1024)
    assert f.get_file_properties().size == 1024 and (share_dir / "sparse.bin").stat().st_size == 1024
    # download with per-range MD5 validation
    assert len(f.download_file(validate_content=True).readall()) == 1024


def test_wrong_content_md5_is_refused_and_nothing_written(share, share_dir):
    f = share.get_file_client("md5.bin")
    f.create_file(512)
    wrong = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    with pytest.raises(HttpResponseError) as err:
        f.upload_range(b"q" * 512, offset=0, length=512, headers={"Content-MD5": wrong})
    assert err.value.status_code == 400 and err.value.error_code == "Md5Mismatch"
    assert (share_dir / "md5.bin").read_bytes() == bytes(512)


def test_metadata_names_keep_their_case_through_the_server(share):
    # The server hands the Files plane header names as sent; the environ alone would upper-case them.
    names = {"CamelCase": "1", "lower": "2", "UPPER_X": "3", "_Under_Score9": "4"}
    f = share.get_file_client("cased.txt")
    f.upload_file(b"x", metadata=names)
    assert f.get_file_properties().metadata == names
    assert f.download_file().properties.metadata == names
    f.set_file_metadata({"MixedAgain": "5"})
    assert f.get_file_properties().metadata == {"MixedAgain": "5"}
    d = share.get_directory_client("CasedDir")
    d.create_directory(metadata=names)
    assert d.get_directory_properties().metadata == names
    share.set_share_metadata({"ShareKey": "6"})
    assert share.get_share_properties().metadata == {"ShareKey": "6"}


def test_set_http_headers_and_metadata_change_etag(share):
    f = share.get_file_client("h.txt")
    f.upload_file(b"text", content_settings=ContentSettings(content_type="text/plain"))
    etag = f.get_file_properties().etag
    f.set_http_headers(ContentSettings(content_type="application/json", content_language="en"))
    props = f.get_file_properties()
    assert props.content_settings.content_type == "application/json"
    assert props.content_settings.content_language == "en"
    assert props.etag != etag
    f.set_file_metadata({"k": "v"})
    assert f.get_file_properties().metadata == {"k": "v"}


def test_create_replaces_and_delete_removes(share, share_dir):
    f = share.get_file_client("x.txt")
    f.upload_file(b"first version", metadata={"v": "1"})
    f.upload_file(b"2nd")
    assert (share_dir / "x.txt").read_bytes() == b"2nd"
    assert f.get_file_properties().metadata == {}
    f.delete_file()
    assert not (share_dir / "x.txt").exists()
    with pytest.raises(ResourceNotFoundError) as err:
        f.delete_file()
    assert err.value.error_code == "ResourceNotFound"
    with pytest.raises(ResourceNotFoundError):
        f.download_file()


def test_file_and_directory_names_do_not_collide(share):
    share.create_directory("thing")
    with pytest.raises(HttpResponseError) as err:
        share.get_file_client("thing").create_file(10)
    assert err.value.status_code == 409
    with pytest.raises(ResourceNotFoundError):
        share.get_file_client("thing").get_file_properties()
    share.get_file_client("afile").upload_file(b"1")
    with pytest.raises(HttpResponseError) as err:
        share.create_directory("afile")
    assert err.value.status_code == 409
    with pytest.raises(ResourceNotFoundError):
        share.get_file_client("nodir/f.txt").create_file(1)


def test_files_written_by_a_job_are_real_with_default_properties(share, share_dir):
    # A job writes its outputs straight into the mounted share directory.
    (share_dir / "outputs").mkdir()
    (share_dir / "outputs" / "model.h5").write_bytes(b"weights" * 100)
    listed = {e.name: e.size for e in share.list_directories_and_files("outputs")}
    assert listed == {"model.h5": 700}
    f = share.get_file_client("outputs/model.h5")
    props = f.get_file_properties()
    assert props.size == 700 and props.metadata == {}
    assert props.content_settings.content_type == "application/octet-stream"
    assert f.download_file().readall() == b"weights" * 100
    # An API file that a job later replaces (a new inode at the path) does not keep the old metadata.
    api = share.get_file_client("outputs/log.txt")
    api.upload_file(b"old", metadata={"from": "api"}, content_settings=ContentSettings(content_type="text/plain"))
    (share_dir / "outputs" / "log.tmp").write_bytes(b"new from job")
    os.replace(share_dir / "outputs" / "log.tmp", share_dir / "outputs" / "log.txt")
    props = api.get_file_properties()
    assert props.size == len(b"new from job") and props.metadata == {}
    assert props.content_settings.content_type == "application/octet-stream"


def test_properties_and_bytes_survive_a_service_restart(tmp_path):
    from horovod_batchai.local import LocalService, ServiceSettings
    state = tmp_path / "restart-state"
    settings = ServiceSettings(provision_delay_s=0.1)
    with LocalService(state, settings=settings) as first:
        account = create_account(first)
        share = share_service(first, account).create_share("kept", metadata={"Stage": "one"}, quota=7)
        share.get_file_client("model.bin").upload_file(b"m" * 5000, metadata={"Epoch": "3"},
                                                       content_settings=ContentSettings(content_type="x/model"))
    with LocalService(state, settings=settings) as second:
        share = share_service(second, account).get_share_client("kept")
        props = share.get_share_properties()
        assert props.metadata == {"Stage": "one"} and props.quota == 7
        f = share.get_file_client("model.bin").get_file_properties()
        assert f.metadata == {"Epoch": "3"} and f.content_settings.content_type == "x/model" and f.size == 5000
        assert share.get_file_client("model.bin").download_file().readall() == b"m" * 5000


def test_parallel_clients_write_separate_files(share, share_dir):
    from concurrent.futures import ThreadPoolExecutor
    payloads = {f"p{i}.bin": os.urandom(100_000 + i) for i in range(8)}
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda item: share.get_file_client(item[0]).upload_file(item[1]), payloads.items()))
    for name, data in payloads.items():
        assert (share_dir / name).read_bytes() == data
    assert sorted(e.name for e in share.list_directories_and_files()) == sorted(payloads)


def test_smb_times_set_by_the_caller_hold_until_the_bytes_change(share):
    from datetime import datetime, timezone
    past = datetime(2018, 5, 1, 10, 0, 0, tzinfo=timezone.utc)
    f = share.get_file_client("times.bin")
    f.create_file(1024, file_creation_time=past, file_last_write_time=past, file_attributes="ReadOnly|Archive")
    props = f.get_file_properties()
    assert props.creation_time == past and props.last_write_time == past
    assert props.file_attributes == "ReadOnly | Archive"  # as Azure answers it
    f.set_file_metadata({"k": "v"})  # a property change: new ETag, same last-write time
    assert f.get_file_properties().last_write_time == past
    f.upload_range(b"w" * 512, offset=0, length=512)  # a write: the last-write time moves on
    after = f.get_file_properties()
    assert after.last_write_time > past and after.creation_time == past
    with pytest.raises(HttpResponseError) as err:
        share.get_file_client("attrs.bin").create_file(1, file_attributes="Sparkly")
    assert err.value.status_code == 400 and "x-ms-file-attributes" in err.value.message


def test_names_xml_cannot_carry_are_listed_encoded_and_decoded_by_the_client(share, share_dir):
    # Jobs may write names the REST API would refuse to create; listing them must still work.
    (share_dir / "odd\x01name.txt").write_bytes(b"odd")
    (share_dir / "ünï cødé.txt").write_bytes(b"unicode")
    assert sorted(e.name for e in share.list_directories_and_files()) == ["odd\x01name.txt", "ünï cødé.txt"]
    assert share.get_file_client("ünï cødé.txt").download_file().readall() == b"unicode"


# -- transactional MD5 (Put Range with Content-MD5) ---------------------------------------------------

def _change_a_byte_in_flight(request):
    """A request hook: runs after azure-storage took the range's MD5, before the bytes leave."""
    http = request.http_request
    if http.method == "PUT" and "comp=range" in http.url and http.headers.get("Content-MD5"):
        body = bytearray(http.content)
        body[len(body) // 2] ^= 0xFF
        http.set_bytes_body(bytes(body))


def test_a_range_changed_in_flight_is_refused_and_nothing_written(service, account, share_dir):
    share_service(service, account).get_share_client("share").get_file_client("flight.bin").create_file(1024)
    corrupting = share_service(service, account, raw_request_hook=_change_a_byte_in_flight)
    f = corrupting.get_share_client("share").get_file_client("flight.bin")
    with pytest.raises(HttpResponseError) as err:
        f.upload_range(b"r" * 1024, offset=0, length=1024, validate_content=True)
    assert err.value.status_code == 400 and err.value.error_code == "Md5Mismatch"
    assert (share_dir / "flight.bin").read_bytes() == bytes(1024)
    # Unchanged bytes with their MD5 go in, and the service answers the MD5 it computed.
    answer = share_service(service, account).get_share_client("share").get_file_client("flight.bin").upload_range(
        b"r" * 1024, offset=0, length=1024, validate_content=True)
    assert bytes(answer["content_md5"]) == hashlib.md5(b"r" * 1024).digest()
    assert (share_dir / "flight.bin").read_bytes() == b"r" * 1024


@pytest.mark.parametrize("value", ["not-base64!", "AAAA"])
def test_a_content_md5_that_is_not_an_md5_is_invalid_md5(share, share_dir, value):
    f = share.get_file_client("bad-md5.bin")
    f.create_file(512)
    with pytest.raises(HttpResponseError) as err:
        f.upload_range(b"q" * 512, offset=0, length=512, headers={"Content-MD5": value})
    assert err.value.status_code == 400 and err.value.error_code == "InvalidMd5"
    assert (share_dir / "bad-md5.bin").read_bytes() == bytes(512)


def test_a_clear_with_a_content_md5_is_refused(share, share_dir):
    f = share.get_file_client("clear.bin")
    f.upload_file(b"z" * 512)
    md5 = base64.b64encode(hashlib.md5(b"").digest()).decode()
    with pytest.raises(HttpResponseError) as err:
        f.clear_range(offset=0, length=512, headers={"Content-MD5": md5})
    assert err.value.status_code == 400 and "Content-MD5" in str(err.value)
    assert (share_dir / "clear.bin").read_bytes() == b"z" * 512
