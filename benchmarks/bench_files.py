"""Throughput of the local Azure Files data plane against the practical limit of this machine.

Starts the local service daemon on a temporary state directory, creates a storage account and a share the
way a user does (ARM through StorageManagementClient, then ShareServiceClient), and measures:

* a large file (1 GiB by default) uploaded with ``ShareFileClient.upload_file(max_concurrency=8)``
  and downloaded with ``download_file(max_concurrency=8).readinto(...)``, and the same through the
  SDK's ``FileShare.upload_file(verify=False)`` / ``FileShare.download_file`` (which checks the
  MD5 the share holds), each with its default concurrency (4);
* two baselines measured in the same run, each the best of three: the same bytes sent from the
  file through one bare loopback TLS connection to another process, which receives and drops
  them (the service's own certificate and TLS settings: the practical limit of moving bytes over
  TLS in Python here), and ``cp`` of the file on the same disk;
* many small files (4 KiB) uploaded and downloaded one by one, as files per second.

Printed: MB/s of each, and the ratios the project tracks, ShareServiceClient upload and download /
the TLS socket pair (target >= 0.5), with the same against ``cp``. Every upload and download is
checked byte for byte (SHA-256) outside the timed parts.

    python benchmarks/bench_files.py [--size-mib 1024] [--small-files 200] [--dir DIR]
"""
from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import socket
import ssl
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from azure.mgmt.resource.resources import ResourceManagementClient
from azure.mgmt.storage import StorageManagementClient
from azure.storage.fileshare import ShareServiceClient

from horovod_batchai import FileShare, Target
from horovod_batchai.local import ServiceInfo, ensure_running, stop_daemon

SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
MIB = 1024 * 1024


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(8 * MIB):
            digest.update(chunk)
    return digest.hexdigest()


def _write_random(path: Path, size: int) -> None:
    block = os.urandom(16 * MIB)  # random once, varied per block: incompressible and cheap to make
    with open(path, "wb") as fh:
        written = 0
        while written < size:
            n = min(len(block), size - written)
            fh.write(written.to_bytes(8, "little") + block[8:n] if n > 8 else block[:n])
            written += n


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _tls_sink(listener: socket.socket, cert: str, key: str) -> None:
    """The receiving end of the socket pair: one TLS connection; reads the announced number of
    bytes, drops them, and answers one byte."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    conn, _ = listener.accept()
    with context.wrap_socket(conn, server_side=True) as tls:
        remaining = int.from_bytes(tls.recv(8), "little")
        buffer = memoryview(bytearray(4 * MIB))
        while remaining > 0:
            remaining -= tls.recv_into(buffer, min(len(buffer), remaining))
        tls.sendall(b"k")


def _tls_pair(source: Path, service: ServiceInfo) -> float:
    """Seconds to send ``source`` from the file through one loopback TLS connection to another process."""
    listener = socket.create_server(("127.0.0.1", 0))
    key = service.ca_cert.with_name("tls-key.pem")
    sink = multiprocessing.Process(target=_tls_sink, args=(listener, str(service.ca_cert), str(key)), daemon=True)
    sink.start()
    context = ssl.create_default_context(cafile=str(service.ca_cert))
    try:
        with socket.create_connection(listener.getsockname()) as raw, \
                context.wrap_socket(raw, server_hostname="127.0.0.1") as tls, open(source, "rb") as fh:
            buffer = memoryview(bytearray(4 * MIB))
            start = time.perf_counter()
            tls.sendall(source.stat().st_size.to_bytes(8, "little"))
            while n := fh.readinto(buffer):
                tls.sendall(buffer[:n])
            if tls.recv(1) != b"k":
                raise RuntimeError("the TLS sink did not confirm the transfer")
            return time.perf_counter() - start
    finally:
        listener.close()
        sink.join(timeout=30)


def _account(service: ServiceInfo) -> tuple[str, str]:
    kwargs = {"base_url": service.endpoint, "connection_verify": str(service.ca_cert)}
    with ResourceManagementClient(service.credential(), SUBSCRIPTION, **kwargs) as resources:
        resources.resource_groups.create_or_update("bench", {"location": "eastus"})
    with StorageManagementClient(service.credential(), SUBSCRIPTION, **kwargs) as storage:
        storage.storage_accounts.begin_create("bench", "benchfiles",
                                              {"sku": {"name": "Standard_LRS"}, "kind": "StorageV2",
                                               "location": "eastus"}).result()
        key = storage.storage_accounts.list_keys("bench", "benchfiles").keys_property[0].value
    return "benchfiles", key


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=1024, help="size of the large file (default 1024)")
    parser.add_argument("--small-files", type=int, default=200, help="number of 4 KiB files (default 200)")
    parser.add_argument("--dir", type=Path, default=None, help="where to work (default: a temp dir)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-files-", dir=args.dir))
    try:
        state = work / "state"
        source, copied, downloaded = work / "source.bin", work / "copied.bin", work / "downloaded.bin"
        size = args.size_mib * MIB
        _write_random(source, size)
        expected = _sha256(source)

        # The service runs as the daemon a user's session starts (its own process, as in real use).
        service = ensure_running(state)
        try:
            account, key = _account(service)
            files = ShareServiceClient(f"{service.endpoint}/{account}", credential=key,
                                       connection_verify=str(service.ca_cert))
            share = files.create_share("bench")
            big = share.get_file_client("large.bin")

            # Baselines: the same bytes through a bare TLS connection, and copied on the same disk;
            # the best of three of each (a second apiece), so that a moment of load on a shared
            # machine does not lower the limit the service is measured against.
            tls_s = min(_tls_pair(source, service) for _ in range(3))
            cp_s = min(_timed(lambda: subprocess.run(["cp", str(source), str(copied)], check=True)) for _ in range(3))
            copied.unlink()

            def upload() -> None:
                with open(source, "rb") as fh:
                    big.upload_file(fh, length=size, max_concurrency=8)

            def download() -> None:
                with open(downloaded, "wb") as fh:
                    big.download_file(max_concurrency=8).readinto(fh)

            up_s = _timed(upload)
            stored = state / "files" / account / "bench" / "large.bin"
            assert _sha256(stored) == expected, "the uploaded file differs from the source"
            down_s = _timed(download)
            assert _sha256(downloaded) == expected, "the downloaded file differs from the source"
            downloaded.unlink()

            # The SDK's own FileShare: the same file, its defaults (concurrency 4; download checks the MD5).
            with Target.local(service) as target:
                sdk_share = FileShare.get(target, "bench", account, "bench")
                sdk_up_s = _timed(lambda: sdk_share.upload_file(source, "sdk.bin", verify=False, progress=False))
                assert _sha256(stored.with_name("sdk.bin")) == expected, "FileShare's upload differs from the source"
                sdk_down_s = _timed(lambda: sdk_share.download_file("sdk.bin", downloaded, progress=False))
                assert _sha256(downloaded) == expected, "FileShare's download differs from the source"

            small = os.urandom(4096)
            names = [f"small/{i:05d}.bin" for i in range(args.small_files)]
            share.create_directory("small")
            small_up_s = _timed(lambda: [share.get_file_client(n).upload_file(small) for n in names])
            small_down_s = _timed(lambda: [share.get_file_client(n).download_file().readall() for n in names])
        finally:
            stop_daemon(state)

        mb = size / 1e6
        print(f"large file: {args.size_mib} MiB ({mb:.0f} MB), host {os.cpu_count()} CPUs, "
              f"load average {os.getloadavg()[0]:.2f}")
        print(f"  TLS socket pair (baseline)          {tls_s:7.2f} s  {mb / tls_s:8.1f} MB/s")
        print(f"  cp (baseline)                       {cp_s:7.2f} s  {mb / cp_s:8.1f} MB/s")
        for name, seconds in (("ShareFileClient.upload_file   (8)", up_s), ("ShareFileClient.download_file (8)", down_s),
                              ("FileShare.upload_file         (4)", sdk_up_s),
                              ("FileShare.download_file       (4)", sdk_down_s)):
            print(f"  {name}   {seconds:7.2f} s  {mb / seconds:8.1f} MB/s  = {tls_s / seconds:.2f} x TLS pair, "
                  f"{cp_s / seconds:.2f} x cp")
        print(f"data plane, ShareServiceClient / TLS socket pair: upload {tls_s / up_s:.2f}x, download "
              f"{tls_s / down_s:.2f}x (target >= 0.5)")
        if args.small_files:
            print(f"small files: {args.small_files} x 4 KiB, one request each (create + range), sequential")
            print(f"  upload          {small_up_s:7.2f} s  {args.small_files / small_up_s:8.1f} files/s")
            print(f"  download        {small_down_s:7.2f} s  {args.small_files / small_down_s:8.1f} files/s")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
