"""Where examples/tutorial.py gets its data: real CIFAR-10 from --data-dir, Keras' cache or a
download (served here by a real HTTP server on loopback), and otherwise the generated stand-in,
said plainly."""
from __future__ import annotations

import argparse
import hashlib
import http.server
import importlib.util
import io
import tarfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Iterator

import pytest

from training.synthetic import write_synthetic_cifar10

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "tutorial.py"


@pytest.fixture
def tutorial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))  # an empty Keras cache of our own
    spec = importlib.util.spec_from_file_location("tutorial_for_data_tests", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _archive(tmp_path: Path, members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@dataclass
class Served:
    """What the loopback HTTP server answers: GET /<name> -> files[name], else 404."""

    port: int = 0
    files: dict[str, bytes] = field(default_factory=dict)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"


@pytest.fixture
def served() -> Iterator[Served]:
    state = Served()
    files = state.files

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            body = files.get(self.path.lstrip("/"))
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.port = server.server_address[1]
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _official_members(tmp_path: Path) -> dict[str, bytes]:
    generated = write_synthetic_cifar10(tmp_path / "src", num_train=10, num_test=10)
    return {f"cifar-10-batches-py/{p.name}": p.read_bytes() for p in generated.iterdir()}


def _args(tutorial: ModuleType, *argv: str) -> argparse.Namespace:
    return tutorial.parse_args(list(argv))


def test_download_extracts_the_verified_archive_into_keras_cache(tutorial: ModuleType, served: Served,
                                                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    archive = _archive(tmp_path, _official_members(tmp_path))
    served.files["cifar-10-python.tar.gz"] = archive
    monkeypatch.setattr(tutorial, "CIFAR10_URL", served.url("cifar-10-python.tar.gz"))
    monkeypatch.setattr(tutorial, "CIFAR10_SHA256", hashlib.sha256(archive).hexdigest())
    data, real = tutorial.choose_data(_args(tutorial), tmp_path / "work")
    assert real is True
    assert data == tmp_path / "keras" / "datasets" / "cifar-10-batches-py"
    assert tutorial.is_cifar10(data)
    assert "downloaded" in capsys.readouterr().out
    assert not list((tmp_path / "keras" / "datasets").glob("*.partial"))
    # the next run finds it in the cache without downloading
    served.files.clear()
    assert tutorial.choose_data(_args(tutorial), tmp_path / "work") == (data, True)
    assert "Keras' cache" in capsys.readouterr().out


def test_an_archive_that_is_not_the_official_one_is_refused(tutorial: ModuleType, served: Served,
                                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    served.files["cifar.tgz"] = _archive(tmp_path, _official_members(tmp_path))
    monkeypatch.setattr(tutorial, "CIFAR10_URL", served.url("cifar.tgz"))
    assert tutorial.download_cifar10() is None
    assert "not the official archive" in capsys.readouterr().out
    assert not (tmp_path / "keras" / "datasets" / "cifar-10-batches-py").exists()


def test_without_real_data_the_generated_set_is_used_and_said_so(tutorial: ModuleType, served: Served,
                                                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(tutorial, "CIFAR10_URL", served.url("missing.tar.gz"))
    data, real = tutorial.choose_data(_args(tutorial), tmp_path / "work")
    out = capsys.readouterr().out
    assert real is False and tutorial.is_cifar10(data) and data.is_relative_to(tmp_path / "work")
    assert "could not download" in out and "NOT CIFAR-10" in out and "GENERATED" in out
    # --synthetic goes straight there, without looking or downloading
    data, real = tutorial.choose_data(_args(tutorial, "--synthetic"), tmp_path / "work2")
    out = capsys.readouterr().out
    assert real is False and "downloading" not in out and "NOT CIFAR-10" in out


def test_data_dir_names_the_official_files_or_their_parent(tutorial: ModuleType, tmp_path: Path) -> None:
    parent = tmp_path / "cifar"
    write_synthetic_cifar10(parent / "cifar-10-batches-py", num_train=10, num_test=10)
    assert tutorial.choose_data(_args(tutorial, "--data-dir", str(parent)), tmp_path) == (
        parent / "cifar-10-batches-py", True)
    (parent / "cifar-10-batches-py" / "test_batch").unlink()
    with pytest.raises(SystemExit) as exited:
        _args(tutorial, "--data-dir", str(parent))
    assert exited.value.code == 2


def test_azure_leaves_the_download_to_the_job(tutorial: ModuleType, tmp_path: Path) -> None:
    args = _args(tutorial, "--target", "azure", "--subscription", "00000000-0000-0000-0000-000000000001")
    assert tutorial.choose_data(args, tmp_path) == (None, True)
    assert args.epochs is None and args.nodes == 4
