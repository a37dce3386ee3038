"""Gang scheduling on a cluster's idle nodes: more jobs than nodes, priorities, and a large job at
the head of the queue that smaller jobs may not overtake."""
from __future__ import annotations

import time

from jobs_support import make_lab


def _states(lab, *names):
    return {name: lab.job(name).execution_state for name in names}


def test_more_jobs_than_nodes_queue_until_nodes_are_free(service, batchai):
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=2)
    lab.hold("a")
    lab.hold("b")
    lab.submit("c", {"customToolkitSettings": {"commandLine": "echo c"}})
    assert lab.job("c").execution_state == "queued"
    counts = lab.wait_steady().node_state_counts
    assert (counts.running_node_count, counts.idle_node_count) == (2, 0)
    lab.release("a")
    assert lab.wait_state("c").execution_state == "succeeded"
    assert lab.wait_state("a").execution_state == "succeeded"
    assert lab.job("b").execution_state == "running"
    lab.release("b")
    assert lab.wait_state("b").execution_state == "succeeded"
    counts = lab.wait_steady().node_state_counts
    assert (counts.running_node_count, counts.idle_node_count) == (0, 2)


def test_a_job_is_gang_scheduled_on_all_its_nodes_at_once(service, batchai):
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=2)
    lab.hold("a")
    lab.submit("pair", {"nodeCount": 2, "customToolkitSettings": {"commandLine": "cat $AZ_BATCHAI_MPI_HOST_FILE"}})
    time.sleep(1.0)  # several scheduler passes: the idle node must not be taken on its own
    assert lab.job("pair").execution_state == "queued"
    counts = lab.cluster().node_state_counts
    assert (counts.running_node_count, counts.idle_node_count) == (1, 1)
    lab.release("a")
    job = lab.wait_state("pair")
    assert job.execution_state == "succeeded"
    assert lab.read("pair", "stdout.txt") == "localhost slots=1\nlocalhost slots=1\n"
    assert len([n for n in lab.files("pair") if n.startswith("execution-")]) == 2


def test_higher_priority_jobs_run_first(service, batchai):
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=1)
    lab.hold("blocker")
    wait = "while [ ! -f $AZ_BATCHAI_JOB_MOUNT_ROOT/afs/release-{} ]; do sleep 0.1; done"
    for name, priority in (("low", "low"), ("normal", "normal"), ("high", "high")):
        lab.submit(name, {"schedulingPriority": priority,
                          "customToolkitSettings": {"commandLine": wait.format(name)}})
    lab.release("blocker")
    assert lab.wait_state("high", "running").execution_state == "running"
    assert _states(lab, "normal", "low") == {"normal": "queued", "low": "queued"}
    lab.release("high")
    lab.wait_state("normal", "running")
    assert _states(lab, "high", "low") == {"high": "succeeded", "low": "queued"}
    lab.release("normal")
    lab.wait_state("low", "running")
    lab.release("low")
    assert lab.wait_state("low").execution_state == "succeeded"


def test_smaller_jobs_do_not_overtake_a_waiting_larger_job(service, batchai):
    # No backfilling: "small" fits on the idle node now, but "large" came first and would starve.
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=2)
    lab.hold("a")
    lab.submit("large", {"nodeCount": 2, "customToolkitSettings": {"commandLine": "echo large"}})
    lab.submit("small", {"customToolkitSettings": {"commandLine": "echo small"}})
    time.sleep(1.0)
    assert _states(lab, "large", "small") == {"large": "queued", "small": "queued"}
    lab.release("a")
    large, small = lab.wait_state("large"), lab.wait_state("small")
    assert large.execution_state == small.execution_state == "succeeded"
    assert large.execution_info.start_time <= small.execution_info.start_time


def test_a_job_too_large_for_the_shrunk_cluster_does_not_block_the_others(service, batchai):
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=2)
    lab.hold("a", nodes=2)
    lab.submit("pair", {"nodeCount": 2, "customToolkitSettings": {"commandLine": "echo pair"}})
    lab.submit("single", {"customToolkitSettings": {"commandLine": "echo single"}})
    lab.resize("cluster", 1, "waitforjobcompletion")
    lab.release("a")
    assert lab.wait_state("single").execution_state == "succeeded"
    assert lab.job("pair").execution_state == "queued"  # waits for the cluster to grow again
    lab.resize("cluster", 2)
    assert lab.wait_state("pair").execution_state == "succeeded"
