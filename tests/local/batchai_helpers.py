"""What the Microsoft.BatchAI API tests share: a resource group made through Microsoft's own
ResourceManagementClient, request bodies in the recorded shapes, and raw requests for input the
BatchAI client refuses to send."""
from __future__ import annotations

from typing import Any, Optional

from azure.core.rest import HttpRequest
from azure.mgmt.batchai import BatchAI
from azure.mgmt.batchai import models as m

from service_support import SUBSCRIPTION

__all__ = ["RG", "WS", "EXP", "VERSION", "ws_path", "make_group", "make_workspace", "cluster_params", "make_cluster",
           "job_params", "raw", "ACCOUNT_KEY"]

RG = "clitest.rg000001"
WS = "workspace"
EXP = "experiment"
VERSION = "2018-05-01"
ACCOUNT_KEY = "S2V5LW5vdC10by1iZS1lY2hvZWQtYmFjay0wMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDA9PQ=="


def ws_path(rg: str = RG, ws: str = WS) -> str:
    return f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{rg}/providers/Microsoft.BatchAI/workspaces/{ws}"


def make_group(resources: Any, name: str = RG, location: str = "northeurope") -> None:
    resources.resource_groups.create_or_update(name, {"location": location})


def make_workspace(resources: Any, batchai: BatchAI, *, rg: str = RG, ws: str = WS, experiment: Optional[str] = EXP,
                   location: str = "northeurope") -> None:
    make_group(resources, rg, location)
    batchai.workspaces.begin_create(rg, ws, m.WorkspaceCreateParameters(location=location)).result()
    if experiment:
        batchai.experiments.begin_create(rg, ws, experiment).result()


def cluster_params(*, nodes: int = 1, vm_size: str = "STANDARD_D1", mounts: bool = True,
                   **extra: Any) -> m.ClusterCreateParameters:
    """The recorded cluster_with_azure_files.json, as the client's model. Its share's storage account
    does not exist here, so nodes that mount it become unusable: ``mounts=False`` for usable nodes."""
    if not mounts:
        extra.setdefault("node_setup", None)
    settings: dict[str, Any] = dict(
        vm_size=vm_size,
        scale_settings=m.ScaleSettings(manual=m.ManualScaleSettings(target_node_count=nodes)),
        user_account_settings=m.UserAccountSettings(admin_user_name="DemoUser", admin_user_password="DemoPa$$w0rd"),
        node_setup=m.NodeSetup(mount_volumes=m.MountVolumes(azure_file_shares=[m.AzureFileShareReference(
            account_name="clitest000002", azure_file_url="https://clitest000002.file.core.windows.net/share",
            credentials=m.AzureStorageCredentialsInfo(account_key=ACCOUNT_KEY), relative_mount_path="azfiles",
            file_mode="0777", directory_mode="0777")])))
    settings.update(extra)
    return m.ClusterCreateParameters(**settings)


def make_cluster(batchai: BatchAI, name: str = "cluster", *, nodes: int = 1, rg: str = RG, ws: str = WS,
                 **extra: Any) -> m.Cluster:
    return batchai.clusters.begin_create(rg, ws, name, cluster_params(nodes=nodes, **extra)).result()


def job_params(cluster_id: str, *, nodes: int = 1, command: str = "echo hi", **extra: Any) -> m.JobCreateParameters:
    """The recorded custom_toolkit_job.json, as the client's model."""
    settings: dict[str, Any] = dict(
        cluster=m.ResourceId(id=cluster_id), node_count=nodes, std_out_err_path_prefix="$AZ_BATCHAI_MOUNT_ROOT/azfiles",
        custom_toolkit_settings=m.CustomToolkitSettings(command_line=command),
        output_directories=[m.OutputDirectory(id="OUTPUT", path_prefix="$AZ_BATCHAI_MOUNT_ROOT/azfiles",
                                              path_suffix="output")])
    settings.update(extra)
    return m.JobCreateParameters(**settings)


def raw(batchai: BatchAI, method: str, path: str, *, json: Any = None, content: Optional[bytes] = None,
        api_version: Optional[str] = VERSION, headers: Optional[dict[str, str]] = None) -> Any:
    """Send a request through the client's own pipeline (its bearer token, TLS trust and retries),
    for bodies and names its models would refuse to build. Returns the azure-core HttpResponse."""
    url = path if path.startswith("https://") else batchai._client._base_url.rstrip("/") + path
    if api_version is not None:
        url += ("&" if "?" in url else "?") + f"api-version={api_version}"
    kwargs: dict[str, Any] = {"headers": headers or {}}
    if json is not None:
        kwargs["json"] = json
    if content is not None:
        kwargs["content"] = content
        kwargs["headers"].setdefault("Content-Type", "application/json")
    return batchai._client.send_request(HttpRequest(method, url, **kwargs))
