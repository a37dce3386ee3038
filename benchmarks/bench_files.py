"""Throughput of the local Azure Files data plane against a plain copy on the same disk.

Starts the local service daemon on a temporary state directory, creates a storage account and a share the
way a user does (ARM through StorageManagementClient, then ShareServiceClient), and measures:

* a large file (1 GiB by default) uploaded with ``ShareFileClient.upload_file(max_concurrency=8)``
  and downloaded with ``download_file(max_concurrency=8).readinto(...)``, each against ``cp`` of
  the same file on the same disk (the baseline, measured in the same run), as MB/s and a ratio;
* many small files (4 KiB) uploaded and downloaded one by one, as files per second.

Both the upload and the download are checked byte for byte (SHA-256) outside the timed parts.

    python benchmarks/bench_files.py [--size-mib 1024] [--small-files 200] [--dir DIR]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from azure.mgmt.resource.resources import ResourceManagementClient
from azure.mgmt.storage import StorageManagementClient
from azure.storage.fileshare import ShareServiceClient

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

            # Baseline: the same bytes copied on the same disk, in the same run.
            cp_s = _timed(lambda: subprocess.run(["cp", str(source), str(copied)], check=True))

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

            small = os.urandom(4096)
            names = [f"small/{i:05d}.bin" for i in range(args.small_files)]
            share.create_directory("small")
            small_up_s = _timed(lambda: [share.get_file_client(n).upload_file(small) for n in names])
            small_down_s = _timed(lambda: [share.get_file_client(n).download_file().readall() for n in names])
        finally:
            stop_daemon(state)

        mb = size / 1e6
        print(f"large file: {args.size_mib} MiB ({mb:.0f} MB), max_concurrency=8, host {os.cpu_count()} CPUs")
        print(f"  cp (baseline)   {cp_s:7.2f} s  {mb / cp_s:8.1f} MB/s")
        print(f"  upload_file     {up_s:7.2f} s  {mb / up_s:8.1f} MB/s  = {cp_s / up_s:.3f} x cp")
        print(f"  download_file   {down_s:7.2f} s  {mb / down_s:8.1f} MB/s  = {cp_s / down_s:.3f} x cp")
        if args.small_files:
            print(f"small files: {args.small_files} x 4 KiB, one request each (create + range), sequential")
            print(f"  upload          {small_up_s:7.2f} s  {args.small_files / small_up_s:8.1f} files/s")
            print(f"  download        {small_down_s:7.2f} s  {args.small_files / small_down_s:8.1f} files/s")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
