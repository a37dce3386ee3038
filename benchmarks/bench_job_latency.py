"""Time from a job's PUT to the first byte of its stdout.txt, read the way a user streams it.

Measured, for a trivial job on an idle one-node cluster of the local service:

  job PUT  -> listOutputFiles(stdouterr) polled until stdout.txt is non-empty -> ranged GET of its
              first byte through the SAS download URL (Microsoft's BatchAI and ShareFileClient)

for two toolkits, each compared in the same run with a baseline that starts the same command
directly with ``subprocess`` and polls the output file on disk for its first byte:

  custom   customToolkitSettings ``echo hi``            vs  ``bash -c 'echo hi'``
  horovod  horovodSettings, a script printing one line  vs  ``horovodrun -np 1 -H localhost:1 --gloo python script``

The difference is what the local service adds: the PUT, waking the scheduler, allocating the node,
mounting, writing the execution log, and the polling client's round trips.
Usage: ``python benchmarks/bench_job_latency.py [--runs 5] [--skip-horovod]``.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
RG, WS, EXP, SHARE = "bench-rg", "ws", "exp", "bench"
SCRIPT = 'print("hello from the script", flush=True)\n'
POLL_S = 0.01


def _first_byte_on_disk(argv: list[str], out: Path) -> float:
    """Seconds from starting ``argv`` (stdout to ``out``) to its first byte readable in ``out``."""
    with open(out, "wb") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.DEVNULL)
        while out.stat().st_size == 0:
            time.sleep(POLL_S)
        with open(out, "rb") as reader:
            reader.read(1)
        elapsed = time.perf_counter() - t0
    proc.wait()
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per case (median reported)")
    parser.add_argument("--skip-horovod", action="store_true", help="only the custom toolkit case")
    args = parser.parse_args()

    from azure.mgmt.batchai import BatchAI
    from azure.mgmt.batchai.models import ClusterCreateParameters, JobCreateParameters, JobsListOutputFilesOptions
    from azure.mgmt.resource.resources import ResourceManagementClient
    from azure.mgmt.storage import StorageManagementClient
    from azure.storage.fileshare import ShareFileClient, ShareServiceClient

    from horovod_batchai.local import LocalService, ServiceSettings

    horovodrun = Path(sys.executable).parent / "horovodrun"
    run_horovod = not args.skip_horovod and horovodrun.exists()
    results: list[tuple[str, list[float], list[float]]] = []

    with tempfile.TemporaryDirectory(prefix="bench-job-latency-") as tmp:
        scratch = Path(tmp)
        (scratch / "script.py").write_text(SCRIPT)
        service = LocalService(scratch / "state", settings=ServiceSettings(provision_delay_s=0.1,
                                                                           deallocation_delay_s=0.1)).start()
        try:
            kwargs = {"base_url": service.endpoint, "connection_verify": str(service.info.ca_cert)}
            cred = service.credential()
            with ResourceManagementClient(cred, SUBSCRIPTION, **kwargs) as resources:
                resources.resource_groups.create_or_update(RG, {"location": "eastus"})
            with StorageManagementClient(cred, SUBSCRIPTION, **kwargs) as storage:
                storage.storage_accounts.begin_create(RG, "benchstorage", {
                    "sku": {"name": "Standard_LRS"}, "kind": "StorageV2", "location": "eastus"}).result()
                key = storage.storage_accounts.list_keys(RG, "benchstorage").keys_property[0].value
            shares = ShareServiceClient(f"{service.endpoint}/benchstorage", credential=key,
                                        connection_verify=str(service.info.ca_cert))
            shares.create_share(SHARE)
            shares.get_share_client(SHARE).get_file_client("script.py").upload_file(SCRIPT.encode())
            batchai = BatchAI(cred, SUBSCRIPTION, **kwargs)
            batchai.workspaces.begin_create(RG, WS, {"location": "eastus"}).result()
            batchai.experiments.begin_create(RG, WS, EXP).result()
            batchai.clusters.begin_create(RG, WS, "cluster", ClusterCreateParameters.from_dict({"properties": {
                "vmSize": "STANDARD_D1", "scaleSettings": {"manual": {"targetNodeCount": 1}},
                "userAccountSettings": {"adminUserName": "bench", "adminUserPassword": "Passw0rd!"}}})).result()
            cluster_id = (f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RG}/providers/Microsoft.BatchAI/"
                          f"workspaces/{WS}/clusters/cluster")
            while batchai.clusters.get(RG, WS, "cluster").node_state_counts.idle_node_count != 1:
                time.sleep(0.05)
            options = JobsListOutputFilesOptions(outputdirectoryid="stdouterr")

            def through_service(name: str, toolkit: dict) -> float:
                body = {"properties": {
                    "cluster": {"id": cluster_id}, "nodeCount": 1,
                    "stdOutErrPathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs",
                    "mountVolumes": {"azureFileShares": [{
                        "accountName": "benchstorage", "azureFileUrl": f"https://benchstorage.file.core.windows.net/{SHARE}",
                        "credentials": {"accountKey": key}, "relativeMountPath": "afs"}]},
                    **toolkit}}
                t0 = time.perf_counter()
                poller = batchai.jobs.begin_create(RG, WS, EXP, name, JobCreateParameters.from_dict(body))
                while True:
                    files = {f.name: f for f in batchai.jobs.list_output_files(RG, WS, EXP, name, options)}
                    entry = files.get("stdout.txt")
                    if entry is not None and entry.content_length:
                        client = ShareFileClient.from_file_url(entry.download_url,
                                                               connection_verify=str(service.info.ca_cert))
                        first = client.download_file(offset=0, length=1).readall()
                        break
                    time.sleep(POLL_S)
                elapsed = time.perf_counter() - t0
                assert first, "the ranged GET returned nothing"
                poller.result()
                while batchai.jobs.get(RG, WS, EXP, name).execution_state not in ("succeeded", "failed"):
                    time.sleep(0.05)
                return elapsed

            def measure(label: str, service_run: Callable[[int], float], baseline_run: Callable[[int], float]) -> None:
                service_times, baseline_times = [], []
                for i in range(args.runs):
                    baseline_times.append(baseline_run(i))
                    service_times.append(service_run(i))
                results.append((label, service_times, baseline_times))

            measure("custom (echo)",
                    lambda i: through_service(f"custom{i}", {"customToolkitSettings": {"commandLine": "echo hi"}}),
                    lambda i: _first_byte_on_disk(["/bin/bash", "-c", "echo hi"], scratch / f"echo{i}.txt"))
            if run_horovod:
                measure("horovod (1 process)",
                        lambda i: through_service(f"horovod{i}", {"horovodSettings": {
                            "pythonScriptFilePath": "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs/script.py"}}),
                        lambda i: _first_byte_on_disk(
                            [str(horovodrun), "-np", "1", "-H", "localhost:1", "--gloo", sys.executable,
                             str(scratch / "script.py")], scratch / f"hvd{i}.txt"))
            batchai.close()
        finally:
            service.stop()

    print(f"PUT -> first stdout byte via listOutputFiles + ranged GET; median of {args.runs} runs")
    print(f"{'case':22} {'service (s)':>12} {'baseline (s)':>13} {'added (s)':>10} {'ratio':>7}   service min..max")
    for label, service_times, baseline_times in results:
        s, b = statistics.median(service_times), statistics.median(baseline_times)
        print(f"{label:22} {s:12.3f} {b:13.3f} {s - b:10.3f} {s / b:7.1f}x   "
              f"{min(service_times):.3f}..{max(service_times):.3f}")
    if not run_horovod:
        print("horovod case skipped" + ("" if args.skip_horovod else f": {horovodrun} not found"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
