"""The Files plane answers as Azure answered Microsoft's own tests (recordings/README.md says where
the recordings come from; files_replay.py how they are replayed and what counts as the same).

Each test replays one recording and expects no difference, except those in :data:`KNOWN`, each
with its reason. Tests of behaviour the recordings show only in part (a name's case, a file under a
missing parent) follow them with Microsoft's client.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from azure.core.exceptions import ResourceNotFoundError
from azure.storage.fileshare import ContentSettings, ShareServiceClient

from files_replay import load, replay
from files_support import Account, put_account, share_service

#: differences from a recording that are known, by recording and request, with the reason.
KNOWN = {
    ("test_file.pyTestStorageFiletest_clear_range.json", 4): (
        "content-type", "Create File without x-ms-content-type: Azure kept the request's own Content-Type "
                        "(the SDK sends application/xml); the local service gives application/octet-stream"),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from horovod_batchai.local import LocalService
    from service_support import FAST
    with LocalService(tmp_path_factory.mktemp("azure-answers") / "state", settings=FAST) as service:
        account = put_account(service, "recordedacct")
        with share_service(service, account) as client:
            yield Files(account, client, service.context.files_root / account.name)


@dataclass(frozen=True)
class Files:
    account: Account
    client: ShareServiceClient
    root: Path  # where the account's shares are on disk


def _share() -> str:
    return f"replay{uuid.uuid4().hex[:12]}"


def _replay(files, name: str, **kwargs) -> list[str]:
    problems = replay(files.client, files.account.name, load(name), share=_share(), **kwargs)
    known = [f"#{i} " for (recording, i) in KNOWN if recording == name]
    return [p for p in problems
            if not any(p.startswith(k) and KNOWN[(name, int(k[1:-1]))][0] in p for k in known)]


@pytest.mark.parametrize("recording", [
    "test_directory.pyTestStorageDirectorytest_directory_parent_not_exists.json",
    "test_directory.pyTestStorageDirectorytest_get_set_directory_metadata.json",
    "test_directory.pyTestStorageDirectorytest_create_directory_set_smb_properties.json",
    "test_directory.pyTestStorageDirectorytest_list_subdirectories_and_files_encoded.json",
    "test_file.pyTestStorageFiletest_list_ranges_2.json",
    "test_file.pyTestStorageFiletest_clear_range.json",
    "test_file.pyTestStorageFiletest_set_file_properties.json",
])
def test_recording_replays_as_azure_answered(files, recording: str) -> None:
    assert _replay(files, recording) == []


def test_attribute_names_are_taken_in_any_case(files) -> None:
    # The recorded request, its attributes sent as a hand-written client might spell them.
    recording = "test_directory.pyTestStorageDirectorytest_create_directory_set_smb_properties.json"
    assert _replay(files, recording, change={1: {"x-ms-file-attributes": "readonly|DIRECTORY"}}) == []
    share = files.client.create_share(_share())
    hidden = share.get_file_client("hidden.txt")
    hidden.create_file(3, file_attributes="hidden")
    assert hidden.get_file_properties().file_attributes == "Hidden"


def test_a_missing_parent_is_parent_not_found_for_files_and_directories(files) -> None:
    share = files.client.create_share(_share())
    for call in (lambda: share.get_file_client("missing/f.txt").get_file_properties(),
                 lambda: share.get_file_client("missing/f.txt").create_file(1),
                 lambda: share.get_directory_client("missing/sub").create_directory(),
                 lambda: share.get_directory_client("missing/sub").get_directory_properties()):
        with pytest.raises(ResourceNotFoundError) as err:
            call()
        assert err.value.error_code == "ParentNotFound"
    with pytest.raises(ResourceNotFoundError) as err:  # the parent is there: the entry is what is missing
        share.get_file_client("f.txt").get_file_properties()
    assert err.value.error_code == "ResourceNotFound"


def test_names_xml_cannot_carry_are_listed_encoded_through_the_client(files) -> None:
    share = files.client.create_share(_share())
    directory = share.create_directory("\uffffdirectory")
    directory.create_subdirectory("\uffffsubdir1")
    directory.upload_file("\ufffffile", b"data1")
    directory.upload_file("plain", b"data2")
    listed = {(e.name, e.is_directory) for e in directory.list_directories_and_files(name_starts_with="\uffff")}
    assert listed == {("\uffffsubdir1", True), ("\ufffffile", False)}
    assert {e.name for e in directory.list_directories_and_files()} == {"\uffffsubdir1", "\ufffffile", "plain"}


def test_ranges_are_the_bytes_written_through_every_change(files) -> None:
    share = files.client.create_share(_share())
    f = share.get_file_client("sparse.bin")
    f.create_file(64 * 1024)
    f.upload_range(b"x" * 512, offset=0, length=512)
    f.upload_range(b"y" * 1024, offset=8192, length=1024)
    f.upload_range(b"z" * 512, offset=512, length=512)  # adjoins the first: one range
    ranges = lambda fc, **span: [(r.start, r.end) for r in fc.list_ranges(**span)]  # noqa: E731
    assert ranges(f) == [(0, 1023), (8192, 9215)]
    f.clear_range(offset=8192 + 512, length=512)
    assert ranges(f) == [(0, 1023), (8192, 8703)]
    f.set_http_headers(ContentSettings(content_type="x/y"))  # a property change keeps them
    f.resize_file(8448)  # a resize cuts them
    assert ranges(f) == [(0, 1023), (8192, 8447)]
    f.rename_file("moved.bin")
    moved = share.get_file_client("moved.bin")
    assert ranges(moved) == [(0, 1023), (8192, 8447)]
    assert ranges(moved, offset=512, length=8000) == [(512, 1023), (8192, 8447)]


def test_ranges_of_a_file_changed_outside_the_api_come_from_the_file(files) -> None:
    name = _share()
    f = files.client.create_share(name).get_file_client("job.bin")
    f.create_file(4096)
    f.upload_range(b"a" * 512, offset=0, length=512)
    assert [(r.start, r.end) for r in f.list_ranges()] == [(0, 511)]
    # A job appends to the file in the mounted share: the ranges written through the API no
    # longer describe it, and its own extents are answered.
    with open(files.root / name / "job.bin", "r+b") as handle:
        handle.seek(4096)
        handle.write(b"b" * 100)
    spans = [(r.start, r.end) for r in f.list_ranges()]
    assert spans[0][0] == 0 and spans[-1][1] == 4195
