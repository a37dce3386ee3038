"""Cluster nodes on the local service: provisioning, resizing with each deallocation option,
auto-scale, setup tasks, low priority and GPUs, as the BatchAI client sees them."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from service_support import SUBSCRIPTION
from horovod_batchai.local import LocalService, ServiceSettings
from horovod_batchai.local.runner.gpus import detect_gpus
from jobs_support import RG, WS, make_lab, tagged_processes, wait_for


def _counts(cluster) -> dict[str, int]:
    c = cluster.node_state_counts
    return {"idle": c.idle_node_count, "running": c.running_node_count, "preparing": c.preparing_node_count,
            "leaving": c.leaving_node_count, "unusable": c.unusable_node_count}


@pytest.fixture
def slow_service(tmp_path: Path):
    # Long enough that "preparing" and "leaving" are seen by every poll, however busy the machine.
    svc = LocalService(tmp_path / "state", settings=ServiceSettings(provision_delay_s=3.0,
                                                                    deallocation_delay_s=3.0)).start()
    try:
        yield svc
    finally:
        svc.stop()


@pytest.fixture
def slow_batchai(slow_service):
    from azure.mgmt.batchai import BatchAI
    with BatchAI(slow_service.credential(), SUBSCRIPTION, base_url=slow_service.endpoint,
                 connection_verify=str(slow_service.info.ca_cert)) as client:
        yield client


def test_provisioning_shows_no_nodes_while_resizing_then_steady_and_idle(slow_service, slow_batchai):
    lab = make_lab(slow_service, slow_batchai)
    created = lab.create_cluster(nodes=2, wait=False)
    assert created.allocation_state == "resizing"
    # As recorded: nodes being added are not counted while the cluster is resizing.
    resizing = lab.cluster()
    assert resizing.allocation_state == "resizing" and resizing.current_node_count == 0
    assert _counts(resizing) == {"idle": 0, "running": 0, "preparing": 0, "leaving": 0, "unusable": 0}
    steady = lab.wait_steady()
    assert _counts(steady) == {"idle": 2, "running": 0, "preparing": 0, "leaving": 0, "unusable": 0}
    assert steady.current_node_count == 2
    assert steady.allocation_state_transition_time >= resizing.allocation_state_transition_time


def test_a_resize_answers_the_cluster_as_it_is_until_the_scheduler_moves_it(slow_service, slow_batchai):
    lab = make_lab(slow_service, slow_batchai)
    lab.create_cluster(nodes=0)
    answer = lab.resize("cluster", 1)
    # As recorded: the PATCH of a steady cluster answered steady; resizing follows.
    assert answer.allocation_state == "steady" and answer.scale_settings.manual.target_node_count == 1
    wait_for(lambda: lab.cluster().allocation_state == "resizing" or None, 30, what="resizing")
    assert lab.wait_steady().current_node_count == 1


def test_resize_down_and_up(slow_service, slow_batchai):
    lab = make_lab(slow_service, slow_batchai)
    lab.create_cluster(nodes=2)
    answer = lab.resize("cluster", 0)
    assert answer.scale_settings.manual.target_node_count == 0
    leaving = wait_for(lambda: (lambda c: c if _counts(c)["leaving"] == 2 else None)(lab.cluster()), 30,
                       what="two leaving nodes")
    assert leaving.allocation_state == "resizing"
    gone = lab.wait_steady()
    assert gone.current_node_count == 0 and _counts(gone)["idle"] == 0
    lab.resize("cluster", 1)
    back = lab.wait_steady(nodes=1)
    assert back.current_node_count == 1 and _counts(back)["idle"] == 1


def test_shrinking_with_requeue_puts_running_jobs_back_in_the_queue(service, batchai):
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=1)
    lab.hold("job")
    lab.resize("cluster", 0, "requeue")
    job = lab.wait_state("job", "queued")
    assert job.execution_info is None  # it will start afresh
    assert tagged_processes(service.state_dir) == []
    assert lab.wait_steady().current_node_count == 0
    lab.resize("cluster", 1)
    lab.wait_state("job", "running")
    lab.release("job")
    assert lab.wait_state("job").execution_state == "succeeded"


def test_shrinking_with_terminate_fails_running_jobs(service, batchai):
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=1)
    lab.hold("job")
    lab.resize("cluster", 0, "terminate")
    job = lab.wait_state("job")
    assert job.execution_state == "failed"
    [error] = job.execution_info.errors
    assert error.code == "JobTerminated" and "nodeDeallocationOption=terminate" in error.message
    assert tagged_processes(service.state_dir) == []
    assert lab.wait_steady().current_node_count == 0


def test_shrinking_with_waitforjobcompletion_lets_jobs_finish(service, batchai):
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=2)
    lab.hold("job")
    lab.resize("cluster", 0, "waitforjobcompletion")
    # The idle node goes; the busy one stays until its job ends.
    busy = wait_for(lambda: (lambda c: c if c.current_node_count == 1 else None)(lab.cluster()), 30,
                    what="the idle node to go")
    assert busy.allocation_state == "resizing" and _counts(busy)["running"] == 1
    assert lab.job("job").execution_state == "running"
    lab.release("job")
    assert lab.wait_state("job").execution_state == "succeeded"
    assert lab.wait_steady().current_node_count == 0


def test_auto_scale_follows_the_queued_work(tmp_path):
    from azure.mgmt.batchai import BatchAI
    delay = 3.0
    service = LocalService(tmp_path / "state", settings=ServiceSettings(
        provision_delay_s=0.3, deallocation_delay_s=0.1, scale_down_delay_s=delay)).start()
    try:
        batchai = BatchAI(service.credential(), SUBSCRIPTION, base_url=service.endpoint,
                          connection_verify=str(service.info.ca_cert))
        lab = make_lab(service, batchai)
        lab.create_cluster(scale={"autoScale": {"minimumNodeCount": 0, "maximumNodeCount": 2,
                                                "initialNodeCount": 1}})
        assert lab.cluster().current_node_count == 1   # initialNodeCount, until jobs name the cluster
        lab.hold("a")
        lab.hold("b")
        assert lab.cluster().current_node_count == 2
        lab.release("a")
        lab.release("b")
        lab.wait_state("a")
        lab.wait_state("b")
        done = time.monotonic()
        # As recorded: the idle nodes stay for the scale-down delay, the cluster steady meanwhile.
        kept = lab.cluster()
        assert kept.allocation_state == "steady" and _counts(kept)["idle"] == 2
        gone = wait_for(lambda: (lambda c: c if c.current_node_count == 0 and c.allocation_state == "steady"
                                 else None)(lab.cluster()), 60, what="the idle nodes to leave")
        assert gone.current_node_count == 0 and time.monotonic() - done >= delay * 0.9
    finally:
        service.stop()


def test_setup_task_runs_on_each_node_with_the_cluster_mounts(service, batchai):
    lab = make_lab(service, batchai)
    mounts = {"azureFileShares": [{"accountName": lab.account, "azureFileUrl": lab.share_url,
                                   "credentials": {"accountKey": lab.key}, "relativeMountPath": "azfiles"}]}
    lab.create_cluster(nodes=2, nodeSetup={"mountVolumes": mounts, "setupTask": {
        "commandLine": "echo set up >> $AZ_BATCHAI_MOUNT_ROOT/azfiles/setup.log; echo $GREETING",
        "environmentVariables": [{"name": "GREETING", "value": "hello from setup"}],
        "stdOutErrPathPrefix": "$AZ_BATCHAI_MOUNT_ROOT/azfiles/setup-logs"}})
    cluster = lab.wait_steady()
    assert _counts(cluster)["idle"] == 2 and not cluster.errors
    share = lab.shares().get_share_client("myshare")
    assert share.get_file_client("setup.log").download_file().readall() == b"set up\nset up\n"
    outputs = [p for p in share.list_directories_and_files("setup-logs")]
    assert outputs  # each node's stdout/stderr of the setup task


def test_a_failing_setup_task_makes_the_node_unusable_with_a_cluster_error(service, batchai):
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=1, wait=False, nodeSetup={"setupTask": {
        "commandLine": "exit 7", "stdOutErrPathPrefix": "$AZ_BATCHAI_MOUNT_ROOT/setup"}})
    cluster = wait_for(lambda: (lambda c: c if _counts(c)["unusable"] == 1 else None)(lab.cluster()), 60,
                       what="an unusable node")
    assert cluster.allocation_state == "steady" and _counts(cluster)["idle"] == 0
    [error] = cluster.errors
    assert error.code == "SetupTaskFailed" and "exit code 7" in error.message


def test_a_relative_setup_output_prefix_stays_in_the_nodes_working_directory(service, batchai, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the service's own working directory would have received it
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=1, nodeSetup={"setupTask": {"commandLine": "echo relative", "stdOutErrPathPrefix": "logs"}})
    assert _counts(lab.wait_steady())["idle"] == 1
    assert not (tmp_path / "logs").exists()
    [stdout] = list((service.state_dir / "clusters").glob("*/nodes/*/wd/logs/*/stdout.txt"))
    assert stdout.read_text() == "relative\n"


def test_low_priority_clusters_run_jobs_too(service, batchai):
    lab = make_lab(service, batchai)
    cluster = lab.create_cluster(nodes=1, vmPriority="lowpriority")
    assert cluster.vm_priority == "lowpriority"
    lab.submit("job", {"customToolkitSettings": {"commandLine": "echo low"}})
    assert lab.wait_state("job").execution_state == "succeeded"


def test_gpus_are_handed_to_nodes_only_when_the_machine_has_them(service, batchai):
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=1, vm_size="Standard_NC6")
    lab.submit("job", {"customToolkitSettings": {
        "commandLine": "echo gpus=$AZ_BATCHAI_NUM_GPUS cuda=[$CUDA_VISIBLE_DEVICES]"}})
    assert lab.wait_state("job").execution_state == "succeeded"
    out, log = lab.read("job", "stdout.txt"), lab.read("job", "execution.log")
    if detect_gpus():
        assert out.startswith("gpus=1 cuda=[") and "cuda=[]" not in out
    else:
        assert out == "gpus=0 cuda=[]\n"
        assert "Standard_NC6 has 1 but this machine has none; the job runs on CPU" in log


def test_deleting_a_cluster_drops_its_nodes_and_leaves_its_shares_alone(service, batchai):
    lab = make_lab(service, batchai)
    lab.upload("keep.txt", "kept\n")
    mounts = {"azureFileShares": [{"accountName": lab.account, "azureFileUrl": lab.share_url,
                                   "credentials": {"accountKey": lab.key}, "relativeMountPath": "azfiles"}]}
    lab.create_cluster(nodes=2, nodeSetup={"mountVolumes": mounts})
    lab.batchai.clusters.begin_delete(RG, WS, "cluster").result()
    assert service.context.store.query("SELECT * FROM nodes") == []
    share = lab.shares().get_share_client("myshare")
    assert share.get_file_client("keep.txt").download_file().readall() == b"kept\n"
