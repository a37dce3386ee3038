"""SDK figures against the local service (run as a separate daemon process, as users run it).

1. Stream latency: a job prints a timestamped line every 100 ms; for each line, the delay from
   the ``print`` to the moment ``Job.stream()`` yields it. Printed as p50 / p95 / max, next to the
   poll interval, which bounds what polling can achieve.
2. Directory upload throughput: the same tree uploaded by ``FileShare.upload_directory`` (files
   side by side, parallel ranges, each carrying its MD5; with and without the read-back) and by a baseline that
   uses ``ShareServiceClient`` with its default settings (one file after another, one range at a
   time), in the same run.

    python benchmarks/bench_sdk.py [--files 24] [--file-mib 2] [--lines 40]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from azure.storage.fileshare import ShareServiceClient

from horovod_batchai import FileShare, HorovodJob, Target, Workspace
from horovod_batchai.local import ensure_running, stop_daemon

RG = "bench.sdk"
TIMESTAMPED = """\
import time
for i in range({lines}):
    print(f"{{time.time():.6f}} line {{i}}", flush=True)
    time.sleep(0.1)
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def stream_latency(target: Target, share: FileShare, work: Path, lines: int) -> None:
    ws = Workspace.create(target, RG, "bench")
    cluster = ws.create_cluster("c1", vm_size="Standard_D1", target_node_count=1, admin_user_name="bench",
                                admin_password="Bench-Pa55word!")
    script = work / "timestamped.py"
    script.write_text(TIMESTAMPED.format(lines=lines))
    share.upload_file(script, "bench/timestamped.py", progress=False)
    cluster.wait_until_ready(timeout=300)
    spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/bench/bench/timestamped.py",
                      mounts=[share.mount(relative_mount_path="bench")])
    job = ws.create_experiment("bench").submit(f"stream{int(time.time())}", spec, cluster=cluster)
    delays: list[float] = []
    buffered = ""
    stream = job.stream("stdout.txt")
    for text in stream:
        now = time.time()
        buffered += text
        *complete, buffered = buffered.split("\n")
        for line in complete:
            stamp = line.split(":", 1)[-1].split()[0] if line.strip() else ""
            try:
                delays.append(now - float(stamp))
            except ValueError:
                pass
    job.wait(timeout=300)
    poll = target.default_poll_interval
    print(f"stream latency over {len(delays)} lines (poll interval {poll * 1000:.0f} ms): "
          f"p50 {percentile(delays, 0.5) * 1000:.0f} ms, p95 {percentile(delays, 0.95) * 1000:.0f} ms, "
          f"max {max(delays) * 1000:.0f} ms; link fetches {stream.links_fetched}")


def make_tree(root: Path, files: int, file_mib: float) -> int:
    total = 0
    for i in range(files):
        path = root / f"part{i % 4}" / f"shard{i:03d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = os.urandom(int(file_mib * 1024 * 1024))
        path.write_bytes(payload)
        total += len(payload)
    return total


def baseline_upload(target: Target, share: FileShare, source: Path, dest: str) -> None:
    """ShareServiceClient exactly as constructed by default: one file at a time, one range at a time."""
    account_url = target.default_file_endpoint(share.account_name)
    client = ShareServiceClient(account_url, credential=share.get_account_key(),
                                connection_verify=target.connection_verify)
    share_client = client.get_share_client(share.share_name)
    share_client.get_directory_client(dest).create_directory()
    for directory in sorted(p for p in source.rglob("*") if p.is_dir()):
        share_client.get_directory_client(f"{dest}/{directory.relative_to(source).as_posix()}").create_directory()
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        with open(path, "rb") as fh:
            share_client.get_file_client(f"{dest}/{path.relative_to(source).as_posix()}").upload_file(fh)
    client.close()


def upload_throughput(target: Target, share: FileShare, work: Path, files: int, file_mib: float) -> None:
    source = work / "tree"
    total = make_tree(source, files, file_mib)
    mib = total / 1024 / 1024
    results: dict[str, float] = {}
    runs = [
        ("ShareServiceClient defaults (baseline)", lambda: baseline_upload(target, share, source, "baseline")),
        ("FileShare.upload_directory (range MD5s)", lambda: share.upload_directory(source, "fast", progress=False)),
        ("FileShare.upload_directory, read_back=True", lambda: share.upload_directory(source, "checked", read_back=True,
                                                                                       progress=False)),
    ]
    for name, run in runs:
        started = time.perf_counter()
        run()
        results[name] = mib / (time.perf_counter() - started)
    base = results[runs[0][0]]
    print(f"directory upload, {files} files, {mib:.0f} MiB:")
    for name, rate in results.items():
        print(f"  {name:45s} {rate:7.1f} MiB/s  ({rate / base:4.2f}x baseline)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=24)
    parser.add_argument("--file-mib", type=float, default=2.0)
    parser.add_argument("--lines", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        state = work / "state"
        info = ensure_running(state)
        try:
            with Target.local(info) as target:
                share = FileShare.create(target, RG, "benchaccount", "bench")
                stream_latency(target, share, work, args.lines)
                upload_throughput(target, share, work, args.files, args.file_mib)
        finally:
            stop_daemon(state)


if __name__ == "__main__":
    main()
