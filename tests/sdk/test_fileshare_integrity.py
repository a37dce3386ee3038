"""FileShare's integrity checks against the local service, through Microsoft's ShareFileClient:
each range's MD5 checked by the service as it arrives, the file's MD5 stored and checked on
download, and the explicit read-back."""
from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from horovod_batchai import FileShare, Target, TransferError
from horovod_batchai.local import LocalService
from sdk_support import ACCOUNT, RG

MIB = 1024 * 1024


class Requests:
    """A request hook (azure-storage's ``raw_request_hook``) that records what the share's
    clients send, and may change a request's body after its MD5 was taken."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.change_range: Callable[[str], bool] = lambda url: False
        self.before: dict[str, Callable[[str], None]] = {}
        self._lock = threading.Lock()

    def __call__(self, request: Any) -> None:
        http = request.http_request
        with self._lock:
            self.seen.append((http.method, http.url))
        if http.method == "PUT" and "comp=range" in http.url and self.change_range(http.url):
            body = bytearray(http.content)
            body[len(body) // 2] ^= 0xFF  # one bit flipped on the way, after azure-storage took the MD5
            http.set_bytes_body(bytes(body))
        for marker, action in self.before.items():
            if marker in http.url:
                action(http.url)

    def reads(self) -> int:
        """GETs of a file's bytes (not listings or properties)."""
        return sum(1 for method, url in self.seen if method == "GET" and "comp=" not in url and "restype=" not in url)


@pytest.fixture
def hooked(service: LocalService) -> Iterator[tuple[FileShare, Requests]]:
    requests = Requests()
    with Target.local(service=service, raw_request_hook=requests) as target:
        yield FileShare.create(target, RG, ACCOUNT, "myshare", location="eastus"), requests


@pytest.fixture
def share_dir(service: LocalService) -> Path:
    assert service.context is not None
    return service.context.files_root / ACCOUNT / "myshare"


def _source(tmp_path: Path, size: int, name: str = "model.bin") -> tuple[Path, bytes]:
    payload = os.urandom(size)
    path = tmp_path / name
    path.write_bytes(payload)
    return path, payload


def test_a_range_changed_on_its_way_is_refused_and_nothing_is_replaced(hooked: tuple[FileShare, Requests],
                                                                         share_dir: Path, tmp_path: Path) -> None:
    share, requests = hooked
    old, old_payload = _source(tmp_path, 3 * MIB, "old.bin")
    share.upload_file(old, "models/model.bin", progress=False)
    new, _ = _source(tmp_path, 9 * MIB + 7)
    changed: list[str] = []
    requests.change_range = lambda url: not changed and not changed.append(url)  # the first range only
    with pytest.raises(TransferError, match="Md5Mismatch"):
        share.upload_file(new, "models/model.bin", progress=False)
    assert changed, "no range was changed: the test did not exercise the check"
    assert (share_dir / "models" / "model.bin").read_bytes() == old_payload
    assert sorted(p.name for p in (share_dir / "models").iterdir()) == ["model.bin"]  # no temporary file left


def test_without_validate_content_the_ranges_carry_no_md5(hooked: tuple[FileShare, Requests],
                                                          share_dir: Path, tmp_path: Path) -> None:
    # The switch is real: with it off, a range changed on its way is not caught by the service
    # (the stored MD5 still catches it on download).
    share, requests = hooked
    source, payload = _source(tmp_path, 5 * MIB)
    changed: list[str] = []
    requests.change_range = lambda url: not changed and not changed.append(url)
    share.upload_file(source, "model.bin", progress=False, validate_content=False)
    assert changed and (share_dir / "model.bin").read_bytes() != payload
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(TransferError, match="does not match the MD5"):
        share.download_file("model.bin", out, progress=False)
    assert list(out.iterdir()) == []


def test_a_file_changed_behind_its_md5_is_caught_on_download_and_leaves_nothing(
        share: FileShare, share_dir: Path, tmp_path: Path) -> None:
    source, payload = _source(tmp_path, 6 * MIB + 1)
    share.upload_file(source, "model.bin", progress=False)
    held = share._file_client("model.bin").get_file_properties().content_settings.content_md5
    assert bytes(held) == hashlib.md5(payload).digest()
    with open(share_dir / "model.bin", "r+b") as fh:  # the bytes at rest change; the stored MD5 does not
        fh.seek(5 * MIB)
        fh.write(b"\0")
    out = tmp_path / "out"
    out.mkdir()
    (out / "model.bin").write_bytes(b"what was here before")
    with pytest.raises(TransferError, match="does not match the MD5"):
        share.download_file("model.bin", out, progress=False)
    assert [p.name for p in out.iterdir()] == ["model.bin"]  # no .partial left behind
    assert (out / "model.bin").read_bytes() == b"what was here before"


def test_read_back_reads_the_file_back_and_catches_bytes_changed_at_rest(
        hooked: tuple[FileShare, Requests], share_dir: Path, tmp_path: Path) -> None:
    share, requests = hooked
    source, payload = _source(tmp_path, 5 * MIB)
    share.upload_file(source, "model.bin", progress=False, read_back=True)
    assert requests.reads() >= 1 and (share_dir / "model.bin").read_bytes() == payload
    before = requests.reads()
    share.upload_file(source, "plain.bin", progress=False)
    assert requests.reads() == before  # the default sends the file once and reads nothing back

    # Between the upload and the read-back (when the file's MD5 is stored), its bytes at rest change:
    # every range arrived intact, so only the read-back can see it.
    def change_at_rest(url: str) -> None:
        for temp in share_dir.glob(".model.bin.uploading-*"):
            with open(temp, "r+b") as fh:
                fh.write(b"\0\0\0\0")
    requests.before["comp=properties"] = change_at_rest
    other, _ = _source(tmp_path, 5 * MIB, "other.bin")
    with pytest.raises(TransferError, match="differs from"):
        share.upload_file(other, "model.bin", progress=False, read_back=True)
    assert (share_dir / "model.bin").read_bytes() == payload
    assert sorted(p.name for p in share_dir.iterdir()) == ["model.bin", "plain.bin"]


def test_verify_still_works_and_says_it_is_deprecated(hooked: tuple[FileShare, Requests], tmp_path: Path) -> None:
    share, requests = hooked
    (tmp_path / "tree").mkdir()
    source, _ = _source(tmp_path / "tree", 2 * MIB)
    with pytest.warns(DeprecationWarning, match="read_back=True"):
        share.upload_file(source, "a.bin", progress=False, verify=True)
    assert requests.reads() >= 1  # verify=True meant, and still means, a full read-back
    before = requests.reads()
    with pytest.warns(DeprecationWarning, match="upload_directory"):
        share.upload_directory(tmp_path / "tree", "tree", progress=False, verify=False)
    assert requests.reads() == before
