"""Helpers for the scheduler and job tests: a workspace with a cluster, a storage account with a
share, jobs made from job.json-shaped dicts, and output files read the way a user reads them
(listOutputFiles, then ranged GETs of the SAS download URL with Microsoft's ShareFileClient)."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from azure.mgmt.batchai import BatchAI
from azure.mgmt.batchai.models import (ClusterCreateParameters, ClusterUpdateParameters, JobCreateParameters,
                                      JobsListOutputFilesOptions)
from azure.storage.blob import BlobServiceClient
from azure.storage.fileshare import ShareFileClient, ShareServiceClient

from horovod_batchai.local import LocalService
from horovod_batchai.local.runner.processes import RUN_TAG_ENV

SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
RG, WS, EXP, SHARE = "jobs-rg", "ws", "exp", "myshare"
TERMINAL = ("succeeded", "failed")


def wait_for(predicate: Callable[[], Any], timeout: float = 60.0, interval: float = 0.1, what: str = "") -> Any:
    """Poll until ``predicate()`` is truthy; return its value (fail with ``what`` on timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what or predicate}")
        time.sleep(interval)


@dataclass
class Lab:
    """A resource group with a storage account + share and a Batch AI workspace + experiment."""

    service: LocalService
    batchai: BatchAI
    account: str
    key: str

    @property
    def kwargs(self) -> dict[str, str]:
        return {"base_url": self.service.endpoint, "connection_verify": str(self.service.info.ca_cert)}

    # -- storage ----------------------------------------------------------------------------------

    def shares(self) -> ShareServiceClient:
        return ShareServiceClient(f"{self.service.endpoint}/{self.account}", credential=self.key,
                                  connection_verify=str(self.service.info.ca_cert))

    def upload(self, path: str, text: str, share: str = SHARE) -> None:
        client = self.shares().get_share_client(share)
        parts = path.split("/")
        for i in range(1, len(parts)):
            directory = client.get_directory_client("/".join(parts[:i]))
            if not directory.exists():
                directory.create_directory()
        client.get_file_client(path).upload_file(text.encode())

    def blobs(self) -> BlobServiceClient:
        """azure-storage-blob's client for the account, at the blob endpoint the account publishes."""
        from azure.mgmt.storage import StorageManagementClient
        with StorageManagementClient(self.service.credential(), SUBSCRIPTION, **self.kwargs) as storage:
            url = storage.storage_accounts.get_properties(RG, self.account).primary_endpoints.blob
        assert url, "the account publishes no blob endpoint"
        return BlobServiceClient(url, credential={"account_name": self.account, "account_key": self.key},
                                 connection_verify=str(self.service.info.ca_cert))

    def blob_mount(self, container: str, relative: str = "bfs") -> dict[str, Any]:
        return {"azureBlobFileSystems": [{"accountName": self.account, "containerName": container,
                                          "credentials": {"accountKey": self.key}, "relativeMountPath": relative}]}

    @property
    def share_url(self) -> str:
        return f"https://{self.account}.file.core.windows.net/{SHARE}"

    def share_mount(self, relative: str = "afs") -> dict[str, Any]:
        return {"azureFileShares": [{"accountName": self.account, "azureFileUrl": self.share_url,
                                     "credentials": {"accountKey": self.key}, "relativeMountPath": relative}]}

    # -- Batch AI -----------------------------------------------------------------------------------

    def cluster_id(self, name: str) -> str:
        return (f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RG}/providers/Microsoft.BatchAI/workspaces/{WS}"
                f"/clusters/{name}")

    def create_cluster(self, name: str = "cluster", nodes: int = 1, *, vm_size: str = "STANDARD_D1",
                       wait: bool = True, scale: Optional[dict[str, Any]] = None, **properties: Any):
        body = {"properties": {"vmSize": vm_size,
                               "scaleSettings": scale or {"manual": {"targetNodeCount": nodes}},
                               "userAccountSettings": {"adminUserName": "demo", "adminUserPassword": "Passw0rd!"},
                               **properties}}
        cluster = self.batchai.clusters.begin_create(RG, WS, name, ClusterCreateParameters.from_dict(body)).result()
        if wait:
            self.wait_steady(name)
        return cluster

    def cluster(self, name: str = "cluster"):
        return self.batchai.clusters.get(RG, WS, name)

    def wait_steady(self, name: str = "cluster", timeout: float = 60.0, *, nodes: Optional[int] = None):
        """Until the cluster is steady (with ``nodes`` nodes, when given: right after a resize the
        cluster still shows steady at its old size, as the recorded service did)."""
        def steady():
            c = self.cluster(name)
            counts = c.node_state_counts
            done = (c.allocation_state == "steady" and counts.preparing_node_count == 0
                    and counts.leaving_node_count == 0 and (nodes is None or c.current_node_count == nodes))
            return c if done else None
        return wait_for(steady, timeout, what=f"cluster {name} to be steady")

    def resize(self, name: str, target: int, option: str = "requeue"):
        return self.batchai.clusters.update(RG, WS, name, ClusterUpdateParameters.from_dict(
            {"properties": {"scaleSettings": {"manual": {"targetNodeCount": target,
                                                          "nodeDeallocationOption": option}}}}))

    def submit(self, name: str, properties: dict[str, Any], cluster: str = "cluster"):
        body = {"properties": {"cluster": {"id": self.cluster_id(cluster)}, "nodeCount": 1,
                               "stdOutErrPathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs",
                               "mountVolumes": self.share_mount("afs"), **properties}}
        return self.batchai.jobs.begin_create(RG, WS, EXP, name, JobCreateParameters.from_dict(body)).result()

    def hold(self, name: str = "blocker", cluster: str = "cluster", nodes: int = 1) -> None:
        """Keep ``nodes`` nodes busy with a job that runs until :meth:`release` is called."""
        wait = f"while [ ! -f $AZ_BATCHAI_JOB_MOUNT_ROOT/afs/release-{name} ]; do sleep 0.1; done"
        self.submit(name, {"nodeCount": nodes, "customToolkitSettings": {"commandLine": wait}}, cluster=cluster)
        self.wait_state(name, "running")

    def release(self, name: str = "blocker") -> None:
        self.upload(f"release-{name}", "")

    def job(self, name: str):
        return self.batchai.jobs.get(RG, WS, EXP, name)

    def wait_state(self, name: str, *states: str, timeout: float = 120.0):
        wanted = states or TERMINAL
        return wait_for(lambda: (lambda j: j if j.execution_state in wanted else None)(self.job(name)), timeout,
                        what=f"job {name} to be {'/'.join(wanted)}")

    def files(self, name: str, directory_id: str = "stdouterr", directory: str = ".") -> dict[str, Any]:
        options = JobsListOutputFilesOptions(outputdirectoryid=directory_id, directory=directory)
        return {f.name: f for f in self.batchai.jobs.list_output_files(RG, WS, EXP, name, options)}

    def read(self, name: str, file_name: str, directory_id: str = "stdouterr", offset: int = 0) -> str:
        """A file's text from ``offset`` on, through its SAS download URL (a ranged GET)."""
        entry = self.files(name, directory_id)[file_name]
        client = ShareFileClient.from_file_url(entry.download_url, connection_verify=str(self.service.info.ca_cert))
        size = entry.content_length
        if size <= offset:
            return ""
        return client.download_file(offset=offset, length=size - offset).readall().decode()


def make_lab(service: LocalService, batchai: BatchAI, account: str = "jobstorage") -> Lab:
    from azure.mgmt.resource.resources import ResourceManagementClient
    from azure.mgmt.storage import StorageManagementClient
    kwargs = {"base_url": service.endpoint, "connection_verify": str(service.info.ca_cert)}
    with ResourceManagementClient(service.credential(), SUBSCRIPTION, **kwargs) as resources:
        resources.resource_groups.create_or_update(RG, {"location": "eastus"})
    with StorageManagementClient(service.credential(), SUBSCRIPTION, **kwargs) as storage:
        storage.storage_accounts.begin_create(
            RG, account, {"sku": {"name": "Standard_LRS"}, "kind": "StorageV2", "location": "eastus"}).result()
        key = storage.storage_accounts.list_keys(RG, account).keys_property[0].value
    lab = Lab(service, batchai, account, key)
    lab.shares().create_share(SHARE)
    batchai.workspaces.begin_create(RG, WS, {"location": "eastus"}).result()
    batchai.experiments.begin_create(RG, WS, EXP).result()
    return lab


class DaemonView:
    """What the helpers need of a service, for a daemon running in another process."""

    def __init__(self, info) -> None:
        self.info = info
        self.endpoint = info.endpoint
        self.state_dir = info.state_dir

    def credential(self):
        from horovod_batchai.local.core.tokens import LocalCredential
        return LocalCredential(self.state_dir)


def tagged_processes(state_dir: Path) -> list[int]:
    """Pids of the live processes started by this service's job runs: they carry the run tag and
    paths into its state directory (other services on this machine have their own)."""
    found = []
    marker = str(state_dir).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            status = (entry / "status").read_text()
        except OSError:
            continue
        if "State:\tZ" in status:
            continue
        items = environ.split(b"\0")
        if any(i.startswith(RUN_TAG_ENV.encode() + b"=") for i in items) and any(marker in i for i in items):
            found.append(int(entry.name))
    return [pid for pid in found if pid != os.getpid()]
