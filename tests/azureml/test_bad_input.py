"""Mistakes are refused before any request, naming the field (the transport sees nothing)."""
from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from horovod_batchai import (AutoScale, AzureFileShareMount, HorovodJob, ImageReference,
                             InvalidSpecError, SetupTask, Target, Workspace)

import scenario as S
from replay import ReplayTransport

JOB_JSON = Path(__file__).resolve().parents[2] / "examples" / "job.json"


def _workspace(target: Target) -> Workspace:
    return Workspace(target, S.RG, S.WS)


def _spec(**changes: object) -> HorovodJob:
    spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name=S.ACCOUNT, account_key=S.ACCOUNT_KEY)
    spec = spec.replace(node_count=2)
    return spec.replace(**changes) if changes else spec


@pytest.mark.parametrize("vm_size, problem", [
    ("Standard_NC6", "was retired by Azure"),        # the tutorial's own size, retired in 2023
    ("Standard_QQ99_v9", "is not an AmlCompute VM size"),
])
def test_unknown_vm_sizes(target: Target, transport: ReplayTransport, vm_size: str, problem: str) -> None:
    with pytest.raises(InvalidSpecError, match=problem) as caught:
        _workspace(target).create_cluster(S.CLUSTER, vm_size=vm_size, target_node_count=2,
                                          admin_user_name="azureuser", ssh_public_key=S.SSH_KEY)
    assert caught.value.field == "vm_size" and "Standard_NC6s_v3" in caught.value.valid_form
    assert transport.requests == []


@pytest.mark.parametrize("options, field", [
    ({"setup_task": SetupTask(command_line="echo hi", std_out_err_path_prefix="$AZ_BATCHAI_MOUNT_ROOT/x")},
     "setup_task"),
    ({"auto_scale": AutoScale(minimum=0, maximum=4, initial=2), "target_node_count": None}, "auto_scale.initial"),
    ({"mounts": (AzureFileShareMount(account_name=S.ACCOUNT, azure_file_url=f"https://{S.FILE_HOST}/{S.SHARE}",
                                     relative_mount_path="cluster_share", account_key=S.ACCOUNT_KEY),)}, "mounts"),
    ({"image": ImageReference(publisher="Canonical", offer="UbuntuServer", sku="16.04-LTS")}, "image"),
])
def test_cluster_fields_aml_compute_cannot_express(target: Target, transport: ReplayTransport,
                                                   options: dict, field: str) -> None:
    settings = dict(vm_size=S.VM_SIZE, target_node_count=2, admin_user_name="azureuser", ssh_public_key=S.SSH_KEY)
    settings.update(options)
    with pytest.raises(InvalidSpecError) as caught:
        _workspace(target).create_cluster(S.CLUSTER, **settings)  # type: ignore[arg-type]
    assert caught.value.field == field
    assert S.ACCOUNT_KEY not in str(caught.value)
    assert transport.requests == []


def test_a_node_count_above_the_clusters_maximum(target: Target, transport: ReplayTransport) -> None:
    experiment = _workspace(target).create_experiment(S.EXPERIMENT)
    with pytest.raises(InvalidSpecError, match="more than cluster 'nc6cluster' can have") as caught:
        experiment.submit(S.JOB, _spec(node_count=3), cluster=S.steady_cluster(target, nodes=2))
    assert caught.value.field == "node_count"
    assert transport.requests == []


@pytest.mark.parametrize("changes, field, words", [
    ({"priority": "high"}, "priority", "no scheduling priority"),
    ({"secrets": {"TOKEN": "hunter2"}}, "secrets", "cannot hold secrets"),
    ({"process_count": 3}, "process_count", "cannot be spread evenly"),
    ({"arguments": "--dir=${{outputs.x}}"}, "arguments", "Azure ML would replace"),
    ({"script": "$AZ_BATCHAI_MOUNT_ROOT/cluster_share/train.py"}, "script", "outside every mount"),
])
def test_job_fields_azure_ml_cannot_express(target: Target, transport: ReplayTransport, changes: dict,
                                            field: str, words: str) -> None:
    experiment = _workspace(target).create_experiment(S.EXPERIMENT)
    with pytest.raises(InvalidSpecError, match=words) as caught:
        experiment.submit(S.JOB, _spec(**changes), cluster=S.steady_cluster(target))
    assert caught.value.field == field
    assert "hunter2" not in str(caught.value)
    assert transport.requests == []


def test_a_job_json_whose_share_was_never_named(target: Target, transport: ReplayTransport) -> None:
    """job.json as the tutorial ships it names its storage account as a placeholder."""
    experiment = _workspace(target).create_experiment(S.EXPERIMENT)
    unfilled = HorovodJob.from_file(JOB_JSON).replace(node_count=2)
    with pytest.raises(InvalidSpecError, match="has no storage account name or key") as caught:
        experiment.submit(S.JOB, unfilled, cluster=S.steady_cluster(target))
    # named as job.json has it
    assert caught.value.field == "properties.mountVolumes.azureFileShares[0]" and "job.json" in str(caught.value)
    assert transport.requests == []


def test_a_share_that_is_not_a_datastore_of_the_workspace(target: Target, transport: ReplayTransport) -> None:
    """A share nobody registered: one read (the datastore GET, 404), nothing created."""
    path = f"{S.WS_PATH}/datastores/{S.DATASTORE}"
    transport.add(S.not_found(path, S.DATASTORES, "UserError", "no datastore was registered for the share"))
    experiment = _workspace(target).create_experiment(S.EXPERIMENT)
    with pytest.raises(InvalidSpecError, match="is not registered in workspace 'batchaidev'") as caught:
        experiment.submit(S.JOB, _spec(), cluster=S.steady_cluster(target))
    assert caught.value.field == "properties.mountVolumes.azureFileShares[0]"  # as job.json names the mount
    assert "FileShare.create" in caught.value.valid_form
    assert [r.split(" ")[0] for r in transport.requests] == ["GET"]
    transport.verify()


def test_resize_options_aml_compute_does_not_have(target: Target, transport: ReplayTransport) -> None:
    with pytest.raises(InvalidSpecError) as caught:
        S.steady_cluster(target).resize(0, deallocation_option="requeue")
    assert caught.value.field == "deallocation_option"
    with pytest.raises(InvalidSpecError):
        S.steady_cluster(target).auto_scale(0, 4, initial=2)
    assert transport.requests == []


@pytest.mark.parametrize("timeout, problem", [(float("nan"), "is NaN"), (-5, "is negative"), (True, "not a number")])
def test_a_scale_timeout_is_checked_naming_it(target: Target, transport: ReplayTransport, timeout: object,
                                              problem: str) -> None:
    with pytest.raises(InvalidSpecError, match=problem) as resized:
        S.steady_cluster(target).resize(0, timeout=timeout)  # type: ignore[arg-type]
    with pytest.raises(InvalidSpecError, match=problem) as scaled:
        S.steady_cluster(target).auto_scale(0, 4, timeout=timeout)  # type: ignore[arg-type]
    assert resized.value.field == scaled.value.field == "timeout"
    assert transport.requests == []


def test_another_workspace_than_the_targets(target: Target, transport: ReplayTransport) -> None:
    with pytest.raises(InvalidSpecError, match="not the target's Azure ML workspace") as caught:
        Workspace.get(target, S.RG, "otherworkspace")
    assert caught.value.field == "workspace"
    assert transport.requests == []


def test_idle_time_is_an_azure_ml_setting_only() -> None:
    from horovod_batchai._places.azureml.conversions import compute_entity
    from horovod_batchai import ClusterSpec
    spec = ClusterSpec(vm_size=S.VM_SIZE, admin_user_name="azureuser", ssh_public_key=S.SSH_KEY,
                       auto_scale=AutoScale(minimum=0, maximum=4, idle_time_before_scale_down=timedelta(minutes=5)))
    entity = compute_entity(S.CLUSTER, spec)
    assert (entity.min_instances, entity.max_instances, entity.idle_time_before_scale_down) == (0, 4, 300)
    assert entity.tier == "dedicated"


def test_creating_a_workspace_needs_a_location(target: Target, transport: ReplayTransport) -> None:
    """Workspace.create gets the workspace; only a missing one is created, and only with a location."""
    transport.add(S.not_found(S.WS_PATH, S.WORKSPACES, "ResourceNotFound", "the workspace does not exist"))
    with pytest.raises(InvalidSpecError, match="is needed to create Azure ML workspace 'batchaidev'") as caught:
        Workspace.create(target, S.RG, S.WS)
    assert caught.value.field == "location"
    transport.verify()  # one read, nothing created
