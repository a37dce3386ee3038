"""The SDK's whole flow, run by the Python of a virtualenv that holds one combination of Microsoft's
libraries, against a local service that is already running for ``--state-dir``.

It prints one JSON line at the end: the installed versions of the five libraries and the
api-versions their clients sent, so the caller can check that the combination it asked for is the one
that ran. Exit status 0 only when every step worked and the downloaded file is the one the job wrote.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from horovod_batchai import AzureFileShareMount, FileShare, HorovodJob, Target, Workspace

LIBRARIES = ("azure-mgmt-resource", "azure-mgmt-storage", "azure-storage-file-share", "azure-identity",
             "azure-core")

# What the job runs under horovodrun: each rank says hello; rank 0 writes a file onto the share.
JOB_SCRIPT = """\
import os, sys
rank = os.environ.get("HOROVOD_RANK", "0")
print(f"hello from rank {rank}", flush=True)
if rank == "0":
    out = os.path.join(sys.argv[1], "result.txt")
    with open(out, "w") as fh:
        fh.write("written by the job\\n")
"""


def _subscriptions(target: Target) -> "list[str] | None":
    """What SubscriptionClient lists, where this azure-mgmt-resource still ships it (before 25)."""
    try:
        from azure.mgmt.resource.subscriptions import SubscriptionClient
    except ImportError:
        return None
    kwargs = {"base_url": target.management_endpoint, "connection_verify": target.connection_verify}
    with SubscriptionClient(target.credential(), **kwargs) as client:
        listed = [s.subscription_id for s in client.subscriptions.list()]
        tenants = [t.tenant_id for t in client.tenants.list()]
        return listed + tenants


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--name", default="versions", help="prefix of every resource name")
    args = parser.parse_args()

    target = Target.local(state_dir=args.state_dir)
    group, account = f"{args.name}.rg", f"{args.name}acct"[:24]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ws = Workspace.create(target, group, "ws", location="eastus")
        experiment = ws.create_experiment("exp")
        cluster = ws.create_cluster("cluster", vm_size="Standard_NC6", vm_priority="dedicated", target_node_count=2)
        cluster.wait_until_ready(timeout=300)

        share = FileShare.create(target, group, account, "share")
        share.create_directory("run")
        (work / "hello.py").write_text(JOB_SCRIPT)
        share.upload_file(work / "hello.py", "run/hello.py")

        mount = AzureFileShareMount(account_name=account, relative_mount_path="share",
                                    azure_file_url=f"https://{account}.file.core.windows.net/share")
        spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/share/run/hello.py",
                          arguments="$AZ_BATCHAI_JOB_MOUNT_ROOT/share/run", node_count=2,
                          mounts=(mount,)).with_storage(share)
        job = experiment.submit("hello", spec, cluster=cluster)
        streamed = "".join(job.stream("stdout.txt"))
        job.wait(timeout=300)
        share.download_file("run/result.txt", work / "result.txt")
        result = (work / "result.txt").read_text()

        cluster.resize(0)
        sent = {"resources": target.resources()._config.api_version,
                "storage": target.storage()._config.api_version}
        subscriptions = _subscriptions(target)
        ws.delete(delete_resource_group=True)

    for rank in (0, 1):
        if f"hello from rank {rank}" not in streamed:
            print(f"stdout.txt lacks rank {rank}'s line: {streamed!r}", file=sys.stderr)
            return 1
    if result != "written by the job\n":
        print(f"the downloaded file holds {result!r}", file=sys.stderr)
        return 1
    print(json.dumps({"versions": {name: metadata.version(name) for name in LIBRARIES}, "api_versions": sent,
                      "subscriptions": subscriptions}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
