"""GPU clusters against the local service: create, status, wait, resize, auto-scale, login, delete."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from azure.core.exceptions import ResourceExistsError

from horovod_batchai import (AllocationState, ClusterStatus, ConflictError, GpuCluster, InvalidSpecError,
                             NotFoundError, Target, WaitTimeoutError, Workspace)
from horovod_batchai.local import LocalService, ServiceSettings
from sdk_support import RG, SSH_KEY


def test_create_wait_status_and_table(workspace: Workspace) -> None:
    cluster = workspace.create_cluster("nc6cluster", vm_size="Standard_NC6", vm_priority="dedicated",
                                       target_node_count=2, admin_user_name="demo", ssh_public_key=SSH_KEY)
    seen: list[ClusterStatus] = []
    status = cluster.wait_until_ready(timeout=120, on_status=seen.append)
    assert status.allocation_state is AllocationState.STEADY
    assert status.node_state_counts.idle == 2 and status.current_node_count == 2
    assert status.target_node_count == 2 and status.auto_scale is None
    assert seen[-1] == status
    table = status.table().splitlines()
    assert table[0].split() == ["Name", "Resource", "Group", "Workspace", "VM", "Size", "State", "Idle", "Running",
                                "Preparing", "Leaving", "Unusable"]
    assert table[2].split() == ["nc6cluster", RG, "batchaidev", "STANDARD_NC6", "steady", "2", "0", "0", "0", "0"]
    assert cluster.vm_size.lower() == "standard_nc6" and cluster.maximum_node_count == 2
    # get-or-create: the same cluster, not a second one
    assert workspace.create_cluster("nc6cluster", vm_size="Standard_NC6", target_node_count=2,
                                    admin_user_name="demo", ssh_public_key=SSH_KEY) == cluster
    assert workspace.list_clusters() == [cluster] and workspace.get_cluster("nc6cluster") == cluster


def test_same_name_other_size_is_a_conflict(workspace: Workspace) -> None:
    workspace.create_cluster("c1", vm_size="Standard_NC6", target_node_count=0, admin_user_name="demo",
                             ssh_public_key=SSH_KEY)
    with pytest.raises(ConflictError) as info:
        workspace.create_cluster("c1", vm_size="Standard_NC12", target_node_count=0, admin_user_name="demo",
                                 ssh_public_key=SSH_KEY)
    assert isinstance(info.value, ResourceExistsError) and "Standard_NC12" in str(info.value)


def test_creating_an_existing_cluster_at_another_scale_sets_the_scale_asked_for(workspace: Workspace) -> None:
    """get-or-create does what was asked: a cluster resized to 0 since, created again with one
    node, has one node (not a 0-node cluster that fails the next submit); the same goes for
    auto-scale bounds. Nothing else of it changes."""
    cluster = workspace.create_cluster("again", vm_size="Standard_NC6", target_node_count=1, admin_user_name="demo",
                                       ssh_public_key=SSH_KEY)
    cluster.resize(0)
    again = workspace.create_cluster("again", vm_size="Standard_NC6", target_node_count=1, admin_user_name="demo",
                                     ssh_public_key=SSH_KEY)
    assert again.maximum_node_count == 1
    assert again.wait_until_ready(timeout=120).node_state_counts.idle == 1
    bounded = workspace.create_cluster("again", vm_size="Standard_NC6", auto_scale=(0, 2), admin_user_name="demo",
                                       ssh_public_key=SSH_KEY)
    assert bounded.status().auto_scale == (0, 2) and bounded.maximum_node_count == 2
    same = workspace.create_cluster("again", vm_size="Standard_NC6", auto_scale=(0, 2), admin_user_name="demo",
                                    ssh_public_key=SSH_KEY)
    assert same.status().auto_scale == (0, 2) and same.vm_size == "Standard_NC6"


def test_resize_auto_scale_login_and_delete(workspace: Workspace) -> None:
    cluster = workspace.create_cluster("nc6cluster", vm_size="Standard_NC6", target_node_count=1,
                                       admin_user_name="demo", admin_password="DemoPa$$w0rd")
    cluster.wait_until_ready(timeout=120)
    logins = cluster.remote_login_info()
    assert len(logins) == 1 and logins[0].port > 0 and logins[0].ip_address
    cluster.resize(0)
    status = cluster.wait_until_ready(timeout=120)
    assert status.current_node_count == 0 and status.target_node_count == 0
    status = cluster.auto_scale(0, 3)
    assert status.auto_scale == (0, 3) and cluster.maximum_node_count == 3
    cluster.resize(2)
    assert cluster.wait_until_ready(timeout=120).node_state_counts.idle == 2
    cluster.delete()
    cluster.delete()
    assert workspace.list_clusters() == []
    with pytest.raises(NotFoundError):
        workspace.get_cluster("nc6cluster")


@pytest.mark.serial
def test_resize_to_zero_then_wait_returns_with_no_nodes_on_a_loaded_machine(workspace: Workspace,
                                                                            busy_cores: int) -> None:
    cluster = workspace.create_cluster("c1", vm_size="Standard_NC6", target_node_count=2, admin_user_name="demo",
                                       ssh_public_key=SSH_KEY)
    assert cluster.wait_until_ready(timeout=120).node_state_counts.idle == 2
    for _ in range(3):
        # steady at 2 when the service takes the new size: done only once it is steady at 0
        resized = cluster.resize(0)
        status = cluster.wait_until_ready()
        for done in (resized, status):
            assert done.current_node_count == 0 and done.node_state_counts.total == 0
            assert done.allocation_state is AllocationState.STEADY and done.is_ready
        assert cluster.resize(2).node_state_counts.idle == 2
        assert cluster.wait_until_ready(timeout=120).node_state_counts.idle == 2


def test_auto_scale_wait_returns_within_the_bounds(workspace: Workspace) -> None:
    cluster = workspace.create_cluster("c1", vm_size="Standard_NC6", target_node_count=3, admin_user_name="demo",
                                       ssh_public_key=SSH_KEY)
    cluster.wait_until_ready(timeout=120)
    scaled = cluster.auto_scale(0, 1)  # three nodes when the service takes the new bounds
    status = cluster.wait_until_ready(timeout=120)
    for done in (scaled, status):
        assert done.auto_scale == (0, 1) and done.current_node_count <= 1 and done.is_ready


def test_readiness_rule() -> None:
    from horovod_batchai import NodeStateCounts

    def status(target, auto, current, allocation="steady", **counts) -> ClusterStatus:
        return ClusterStatus(name="c", resource_group="rg", workspace="ws", vm_size="STANDARD_NC6",
                             allocation_state=AllocationState(allocation), current_node_count=current,
                             node_state_counts=NodeStateCounts(**counts), target_node_count=target,
                             auto_scale=auto, provisioning_state="succeeded")

    assert status(2, None, 2, idle=1, running=1).is_ready
    assert not status(0, None, 2, idle=2).is_ready               # steady at the old size
    assert not status(2, None, 3, idle=3).is_ready               # more than asked for
    assert not status(0, None, 1, leaving=1).is_ready
    assert not status(2, None, 2, "resizing", idle=2).is_ready
    assert not status(2, None, 2, idle=2, preparing=1).is_ready
    assert not status(1, None, 2, idle=1, unusable=1).is_ready
    assert status(None, (0, 2), 0).is_ready and status(None, (0, 2), 2, idle=2).is_ready
    assert not status(None, (0, 1), 2, idle=2).is_ready          # above the new maximum
    assert not status(None, (2, 4), 1, idle=1).is_ready          # below the minimum
    assert status(0, None, 0).is_ready


def test_generated_ssh_key_is_private_and_reused(workspace: Workspace, tmp_path: Path) -> None:
    key_path = tmp_path / "ssh" / "id_rsa"
    workspace.create_cluster("c1", vm_size="Standard_D1", target_node_count=0, admin_user_name="demo",
                             generate_ssh_keys=True, ssh_key_path=key_path)
    assert stat.S_IMODE(os.stat(key_path).st_mode) == 0o600
    public = key_path.with_name("id_rsa.pub").read_text().strip()
    assert public.startswith("ssh-rsa ")
    cluster = workspace.create_cluster("c2", vm_size="Standard_D1", target_node_count=0, admin_user_name="demo",
                                       generate_ssh_keys=True, ssh_key_path=key_path)
    assert key_path.with_name("id_rsa.pub").read_text().strip() == public
    assert cluster.refresh().ssh_public_key == public


def test_wait_times_out_with_a_clear_error(tmp_path: Path) -> None:
    slow = ServiceSettings(provision_delay_s=600)
    with LocalService(tmp_path / "slow", settings=slow) as svc, Target.local(service=svc) as target:
        ws = Workspace.create(target, RG, "batchaidev")
        cluster = ws.create_cluster("c1", vm_size="Standard_NC6", target_node_count=1, admin_user_name="demo",
                                    ssh_public_key=SSH_KEY)
        with pytest.raises(WaitTimeoutError, match="not ready after") as info:
            cluster.wait_until_ready(timeout=0.5, poll_interval=0.1)
        assert info.value.last_state.allocation_state is AllocationState.RESIZING


def test_bad_cluster_requests_raise_before_any_request(workspace: Workspace) -> None:
    with pytest.raises(InvalidSpecError, match="vm_size"):
        workspace.create_cluster("c1", vm_size="NC6", admin_user_name="demo", ssh_public_key=SSH_KEY)
    with pytest.raises(InvalidSpecError, match="cluster"):
        workspace.create_cluster("bad name", admin_user_name="demo", ssh_public_key=SSH_KEY)
    with pytest.raises(InvalidSpecError, match="ssh_public_key"):
        workspace.create_cluster("c1", admin_user_name="demo", generate_ssh_keys=False)
    assert workspace.list_clusters() == []
    cluster = workspace.create_cluster("c1", vm_size="Standard_NC6", target_node_count=0, admin_user_name="demo",
                                       ssh_public_key=SSH_KEY)
    with pytest.raises(InvalidSpecError, match="target_node_count"):
        cluster.resize(-1)
    with pytest.raises(InvalidSpecError, match="auto_scale"):
        cluster.auto_scale(3, 1)


def test_unknown_vm_size_is_refused_by_the_service(workspace: Workspace) -> None:
    from horovod_batchai import ResourceError
    with pytest.raises(ResourceError) as info:
        workspace.create_cluster("c1", vm_size="Standard_NOSUCH9", admin_user_name="demo", ssh_public_key=SSH_KEY)
    assert info.value.status_code == 400 and "creating cluster" in str(info.value)
    assert workspace.list_clusters() == []


def test_wait_until_ready_raises_on_cluster_errors(workspace: Workspace) -> None:
    from horovod_batchai import ClusterNotReadyError, SetupTask
    task = SetupTask(command_line="exit 7", std_out_err_path_prefix="$AZ_BATCHAI_MOUNT_ROOT/setup")
    cluster = workspace.create_cluster("broken", vm_size="Standard_NC6", target_node_count=1,
                                       admin_user_name="demo", ssh_public_key=SSH_KEY, setup_task=task)
    with pytest.raises(ClusterNotReadyError) as info:
        cluster.wait_until_ready(timeout=120)
    assert any(e.code == "SetupTaskFailed" for e in info.value.errors)
    assert "broken" in str(info.value)
    assert cluster.status().node_state_counts.unusable == 1


@pytest.mark.parametrize("timeout, problem", [(float("nan"), "is NaN"), (-1, "is negative"), ("60", "not a number")])
def test_a_scale_timeout_is_checked_naming_it(offline_target: Target, timeout: object, problem: str) -> None:
    """Refused before any request: the offline target's endpoint refuses connections."""
    cluster = GpuCluster(Workspace(offline_target, RG, "batchaidev"), "c1")
    with pytest.raises(InvalidSpecError, match=problem) as resized:
        cluster.resize(0, timeout=timeout)  # type: ignore[arg-type]
    with pytest.raises(InvalidSpecError, match=problem) as scaled:
        cluster.auto_scale(0, 2, timeout=timeout)  # type: ignore[arg-type]
    assert resized.value.field == scaled.value.field == "timeout"


@pytest.mark.parametrize("auto_scale", [(2,), (0, 2, 4)])
def test_an_auto_scale_option_that_is_not_a_pair_names_it(offline_target: Target, auto_scale: tuple) -> None:
    """Refused before any request, not cut to its first two numbers nor an IndexError."""
    workspace = Workspace(offline_target, RG, "batchaidev")
    with pytest.raises(InvalidSpecError) as info:
        workspace.create_cluster("c1", auto_scale=auto_scale, admin_user_name="demo", ssh_public_key=SSH_KEY)
    assert info.value.field == "auto_scale" and "(minimum, maximum)" in info.value.valid_form


@pytest.mark.parametrize("mounts", [None, "myshare"])
def test_a_mounts_option_that_is_not_a_sequence_of_mounts_names_it(offline_target: Target, mounts: object) -> None:
    workspace = Workspace(offline_target, RG, "batchaidev")
    with pytest.raises(InvalidSpecError) as info:
        workspace.create_cluster("c1", mounts=mounts, admin_user_name="demo", ssh_public_key=SSH_KEY)  # type: ignore[arg-type]
    assert info.value.field == "mounts"


def test_a_resize_waits_for_the_new_size_no_longer_than_its_timeout(workspace: Workspace) -> None:
    """Batch AI answers a scale PATCH at once; resize() then waits until the cluster is steady at
    its new size, at most ``timeout`` seconds, and a timeout spent is a WaitTimeoutError."""
    cluster = workspace.create_cluster("c1", vm_size="Standard_NC6", target_node_count=0, admin_user_name="demo",
                                       ssh_public_key=SSH_KEY)
    status = cluster.resize(1, timeout=60)
    assert status.target_node_count == 1 and status.node_state_counts.idle == 1 and status.is_ready
    assert cluster.auto_scale(0, 2, timeout=None).auto_scale == (0, 2)
    with pytest.raises(WaitTimeoutError, match="resizing cluster .* had not finished after 0s"):
        cluster.resize(2, timeout=0)  # sent, and its nodes take provision_delay_s to come
    assert cluster.refresh().maximum_node_count == 2
    assert cluster.wait_until_ready(timeout=60).node_state_counts.idle == 2
