"""Throughput of the local Azure Files data plane: the SDK's FileShare against Microsoft's own
ShareFileClient, and both against the practical limit of this machine.

Starts the local service daemon on a temporary state directory, creates a storage account and a share the
way a user does (ARM through StorageManagementClient, then ShareServiceClient), and measures:

* a large file (1 GiB by default) uploaded with ``ShareFileClient.upload_file(max_concurrency=8)``
  and downloaded with ``download_file(max_concurrency=8).readinto(...)`` (Microsoft's client as
  it comes, no checksums), the upload once more with ``validate_content=True`` (Microsoft's client
  sending each range's MD5), and the same file through the SDK's ``FileShare.upload_file`` /
  ``FileShare.download_file`` with their defaults: each range's MD5 sent and checked by the
  service, the file's MD5 stored, and checked on download;
* two baselines measured in the same run, each the best of three: the same bytes sent from the
  file through one bare loopback TLS connection to another process, which receives and drops
  them (the service's own certificate and TLS settings: the practical limit of moving bytes over
  TLS in Python here), and ``cp`` of the file on the same disk;
* many small files (4 KiB) uploaded and downloaded one by one, as files per second.

The clients take turns, ``--repeats`` rounds (so a burst of load on the shared machine falls on
all of them alike), and each one's best run is kept, as for the baselines: this VM hands back
freed memory to its host within about a second (free page reporting), and the first touch of such
memory costs ~1 CPU-s per GiB, so a single run measures the VM's memory as much as the service.
For the same reason every run starts with its destination deleted (outside the timed part): a
transfer that replaced an existing file would free its pages just before writing new ones (as
ShareFileClient's Create File does when it truncates) or just after (as FileShare's rename and a
download's ``.partial`` do), and the two would be measured on different memory.

Where the time goes, measured in the same run: the CPU seconds of the client process and of the
service daemon for each transfer (and of both ends of the socket pair); the CPU seconds of the
work the service cannot skip on an upload, MD5 of every range (Put Range answers with its
Content-MD5, as Azure does) and writing the bytes into a new file. From those, a ceiling: if the
service did nothing but that unavoidable work (the TLS end of the socket pair, plus the MD5 and
the write on an upload) and both cores were busy all the time, a transfer could not take less
than (client CPU + that work) / cores seconds; the best ratio this machine allows is the socket
pair's time over that.

Printed: MB/s of each, the ratios FileShare / ShareFileClient for upload and download (target
>= 0.9; best runs, and the median of the rounds' ratios), and ShareServiceClient upload and
download / the TLS socket pair (target >= 0.5), with the same against ``cp``; then the CPU table
and the ceilings. Every upload and download is checked byte for byte (SHA-256) outside the timed
parts.

    python benchmarks/bench_files.py [--size-mib 1024] [--small-files 200] [--dir DIR] [--repeats 3]
        [--file-share-concurrency N]
"""
from __future__ import annotations

import argparse
import hashlib
import statistics
import multiprocessing
import os
import resource
import socket
import ssl
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, NamedTuple

from azure.mgmt.resource.resources import ResourceManagementClient
from azure.mgmt.storage import StorageManagementClient
from azure.storage.fileshare import ShareServiceClient

from horovod_batchai import FileShare, Target
from horovod_batchai._shared.fileshare import DEFAULT_RANGE_CONCURRENCY
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


def _process_cpu(pid: int) -> float:
    """User + system CPU seconds ``pid`` has used, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Run(NamedTuple):
    seconds: float
    client_cpu: float
    service_cpu: float


class Transfer(NamedTuple):
    prepare: Callable[[], None]   # untimed: delete the destination
    run: Callable[[], None]       # timed
    check: Callable[[], None]     # untimed: the bytes arrived whole


def _measured(fn: Callable[[], None], service_pid: int) -> Run:
    client, service = _own_cpu(), _process_cpu(service_pid)
    seconds = _timed(fn)
    return Run(seconds, _own_cpu() - client, _process_cpu(service_pid) - service)


def _take_turns(transfers: dict[str, Transfer], service_pid: int, rounds: int) -> dict[str, list[Run]]:
    """Every run of every transfer, ``rounds`` rounds in which each takes its turn."""
    runs: dict[str, list[Run]] = {name: [] for name in transfers}
    for _ in range(rounds):
        for name, transfer in transfers.items():
            transfer.prepare()
            runs[name].append(_measured(transfer.run, service_pid))
            transfer.check()
    return runs


def _ratios(runs: dict[str, list[Run]], ours: str, theirs: str) -> tuple[float, float]:
    """``theirs`` time / ``ours`` time (so throughput ours / theirs): best against best, and the
    median of the rounds' ratios (each round's two runs were taken next to each other)."""
    best = min(runs[theirs]).seconds / min(runs[ours]).seconds
    return best, statistics.median(t.seconds / o.seconds for o, t in zip(runs[ours], runs[theirs]))


def _md5_cpu(size: int) -> float:
    """CPU seconds to MD5 ``size`` bytes in 4 MiB ranges (what Put Range computes for its answer)."""
    block, start = os.urandom(4 * MIB), _own_cpu()
    for _ in range(size // len(block)):
        hashlib.md5(block).digest()
    return _own_cpu() - start


def _new_file_write_cpu(path: Path, size: int) -> float:
    """CPU seconds to write ``size`` bytes from one reused buffer into a new file (the page cache)."""
    block, start = os.urandom(4 * MIB), _own_cpu()
    with open(path, "wb", buffering=0) as fh:
        for _ in range(size // len(block)):
            fh.write(block)
    seconds = _own_cpu() - start
    path.unlink()
    return seconds


def _tls_sink(listener: socket.socket, cert: str, key: str) -> None:
    """The receiving end of the socket pair: one TLS connection; reads the announced number of
    bytes, drops them, and answers with the CPU seconds that took (8 bytes)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    conn, _ = listener.accept()
    with context.wrap_socket(conn, server_side=True) as tls:
        remaining = int.from_bytes(tls.recv(8), "little")
        buffer = memoryview(bytearray(4 * MIB))
        start = _own_cpu()
        while remaining > 0:
            remaining -= tls.recv_into(buffer, min(len(buffer), remaining))
        tls.sendall(struct.pack("<d", _own_cpu() - start))  # confirms the transfer, with its CPU seconds


def _tls_pair(source: Path, service: ServiceInfo) -> Run:
    """Seconds to send ``source`` from the file through one loopback TLS connection to another
    process, with the CPU seconds of the sending end (client_cpu) and the receiving end (service_cpu)."""
    listener = socket.create_server(("127.0.0.1", 0))
    key = service.ca_cert.with_name("tls-key.pem")
    sink = multiprocessing.Process(target=_tls_sink, args=(listener, str(service.ca_cert), str(key)), daemon=True)
    sink.start()
    context = ssl.create_default_context(cafile=str(service.ca_cert))
    try:
        with socket.create_connection(listener.getsockname()) as raw, \
                context.wrap_socket(raw, server_hostname="127.0.0.1") as tls, open(source, "rb") as fh:
            buffer = memoryview(bytearray(4 * MIB))
            start, cpu = time.perf_counter(), _own_cpu()
            tls.sendall(source.stat().st_size.to_bytes(8, "little"))
            while n := fh.readinto(buffer):
                tls.sendall(buffer[:n])
            answer = tls.recv(8)
            seconds, cpu = time.perf_counter() - start, _own_cpu() - cpu
            if len(answer) != 8:
                raise RuntimeError("the TLS sink did not confirm the transfer")
            return Run(seconds, cpu, struct.unpack("<d", answer)[0])
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
    parser.add_argument("--repeats", type=int, default=3, help="runs of each transfer, the best kept (default 3)")
    parser.add_argument("--file-share-concurrency", type=int, default=None,
                        help="FileShare's max_concurrency (default: its own default)")
    args = parser.parse_args()
    fs_options = {} if args.file_share_concurrency is None else {"max_concurrency": args.file_share_concurrency}

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
            pair = min(_tls_pair(source, service) for _ in range(3))
            tls_s = pair.seconds
            cp_s = min(_timed(lambda: subprocess.run(["cp", str(source), str(copied)], check=True)) for _ in range(3))
            copied.unlink()
            md5_cpu = min(_md5_cpu(size) for _ in range(3))
            write_cpu = min(_new_file_write_cpu(copied, size) for _ in range(3))

            stored = state / "files" / account / "bench"

            def upload(**options: object) -> Callable[[], None]:
                def run() -> None:
                    with open(source, "rb") as fh:
                        big.upload_file(fh, length=size, max_concurrency=8, **options)
                return run

            def download() -> None:
                with open(downloaded, "wb") as fh:
                    big.download_file(max_concurrency=8).readinto(fh)

            def absent(name: str) -> Callable[[], None]:
                return lambda: share.get_file_client(name).delete_file() if (stored / name).exists() else None

            def arrived(path: Path, what: str) -> Callable[[], None]:
                def check() -> None:
                    assert _sha256(path) == expected, f"{what} differs from the source"
                return check

            def no_download() -> None:
                downloaded.unlink(missing_ok=True)

            # The SDK's own FileShare: the same file, its defaults (integrity checks on).
            with Target.local(service) as target:
                sdk_share = FileShare.get(target, "bench", account, "bench")
                fs_concurrency = fs_options.get("max_concurrency", DEFAULT_RANGE_CONCURRENCY)
                uploads = {
                    "ShareFileClient.upload_file   (8)": Transfer(absent("large.bin"), upload(),
                                                                  arrived(stored / "large.bin", "the upload")),
                    "  with validate_content=True  (8)": Transfer(absent("large.bin"), upload(validate_content=True),
                                                                  arrived(stored / "large.bin", "the upload")),
                    f"FileShare.upload_file        ({fs_concurrency:>2})": Transfer(
                        absent("sdk.bin"), lambda: sdk_share.upload_file(source, "sdk.bin", progress=False, **fs_options),
                        arrived(stored / "sdk.bin", "FileShare's upload")),
                }
                downloads = {
                    "ShareFileClient.download_file (8)": Transfer(no_download, download,
                                                                  arrived(downloaded, "the download")),
                    f"FileShare.download_file      ({fs_concurrency:>2})": Transfer(
                        no_download, lambda: sdk_share.download_file("sdk.bin", downloaded, progress=False, **fs_options),
                        arrived(downloaded, "FileShare's download")),
                }
                all_runs = _take_turns(uploads, service.pid, args.repeats)
                all_runs.update(_take_turns(downloads, service.pid, args.repeats))
            runs = {name: min(each) for name, each in all_runs.items()}
            fs_up, fs_down = list(uploads)[2], list(downloads)[1]
            up_ratio = _ratios(all_runs, fs_up, "ShareFileClient.upload_file   (8)")
            up_checked_ratio = _ratios(all_runs, fs_up, "  with validate_content=True  (8)")
            down_ratio = _ratios(all_runs, fs_down, "ShareFileClient.download_file (8)")
            downloaded.unlink(missing_ok=True)

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
        for name, run in runs.items():
            print(f"  {name:34}   {run.seconds:7.2f} s  {mb / run.seconds:8.1f} MB/s  = {tls_s / run.seconds:.2f} x TLS pair, "
                  f"{cp_s / run.seconds:.2f} x cp")
        cores = os.cpu_count() or 1
        print(f"where the time goes (CPU seconds; {cores} cores): MD5 of the file {md5_cpu:.2f}, writing it into a "
              f"new file {write_cpu:.2f}")
        print(f"  {'':34}   client  service  unavoidable  ceiling")
        print(f"  {'TLS socket pair':34}   {pair.client_cpu:6.2f}  {pair.service_cpu:7.2f}  (sender, receiver)")
        for name, run in runs.items():
            # What the service cannot skip: its end of the TLS connection, and on an upload the
            # MD5 of each range and the write into the file.
            upload = name in uploads
            unavoidable = pair.service_cpu + md5_cpu + write_cpu if upload else pair.client_cpu
            ceiling = tls_s / ((run.client_cpu + unavoidable) / cores)
            print(f"  {name:34}   {run.client_cpu:6.2f}  {run.service_cpu:7.2f}  {unavoidable:11.2f}  {ceiling:6.2f}x")
        up_s = runs["ShareFileClient.upload_file   (8)"].seconds
        down_s = runs["ShareFileClient.download_file (8)"].seconds
        print(f"data plane, ShareServiceClient / TLS socket pair: upload {tls_s / up_s:.2f}x, download "
              f"{tls_s / down_s:.2f}x (target >= 0.5)")
        print(f"FileShare / ShareFileClient (best runs; median of {args.repeats} rounds): upload {up_ratio[0]:.2f}x "
              f"({up_ratio[1]:.2f}x), download {down_ratio[0]:.2f}x ({down_ratio[1]:.2f}x) (target >= 0.9); upload "
              f"against ShareFileClient with validate_content=True {up_checked_ratio[0]:.2f}x "
              f"({up_checked_ratio[1]:.2f}x)")
        if args.small_files:
            print(f"small files: {args.small_files} x 4 KiB, one request each (create + range), sequential")
            print(f"  upload          {small_up_s:7.2f} s  {args.small_files / small_up_s:8.1f} files/s")
            print(f"  download        {small_down_s:7.2f} s  {args.small_files / small_down_s:8.1f} files/s")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
