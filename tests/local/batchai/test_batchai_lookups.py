"""A request reads each resource it names from the store once: the handler looks it up (with the
checks every scoped request makes) and hands the record to the provider, which does not look again."""
from __future__ import annotations

import threading
from collections import Counter
from typing import Any, Callable, Iterator

import pytest

from batchai_helpers import EXP, RG, make_cluster, make_workspace, raw, ws_path
from horovod_batchai.local.core.store import resource_key
from service_support import SUBSCRIPTION

GROUP = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RG}"
WORKSPACE = ws_path()
EXPERIMENT = f"{WORKSPACE}/experiments/{EXP}"


@pytest.fixture
def cluster(resources, batchai):
    make_workspace(resources, batchai)
    return make_cluster(batchai, nodes=1, mounts=False)


@pytest.fixture
def reads(service, monkeypatch) -> Iterator[Callable[[], dict[str, int]]]:
    """Counts ``Store.get`` by thread and resource; gives the counts of the thread that read the
    workspace (the request's: the scheduler's threads never read a workspace)."""
    store = service.context.store
    real_get = store.get
    counts: Counter[tuple[int, str]] = Counter()
    lock = threading.Lock()

    def counting_get(resource_id: str) -> Any:
        with lock:
            counts[(threading.get_ident(), resource_key(resource_id))] += 1
        return real_get(resource_id)

    def of_the_request() -> dict[str, int]:
        with lock:
            threads = {t for (t, key) in counts if key == resource_key(WORKSPACE)}
            assert len(threads) == 1, f"the workspace was read by {len(threads)} threads"
            return {key: n for (t, key), n in counts.items() if t in threads}

    def start() -> Callable[[], dict[str, int]]:
        counts.clear()
        return of_the_request

    monkeypatch.setattr(store, "get", counting_get)
    yield start


def _keys(*ids: str) -> dict[str, int]:
    return {resource_key(i): 1 for i in ids}


def test_a_job_put_reads_its_scope_the_job_and_its_cluster_once_each(cluster, batchai, reads):
    job = f"{EXPERIMENT}/jobs/job"
    body = {"properties": {"cluster": {"id": cluster.id}, "nodeCount": 1,
                           "stdOutErrPathPrefix": "$AZ_BATCHAI_JOB_TEMP", "customToolkitSettings": {"commandLine": "echo hi"}}}
    counted = reads()
    assert raw(batchai, "PUT", job, json=body).status_code == 202
    assert counted() == _keys(GROUP, WORKSPACE, EXPERIMENT, job, cluster.id)


def test_a_cluster_put_and_delete_read_the_workspace_and_the_cluster_once_each(cluster, batchai, reads):
    counted = reads()
    assert raw(batchai, "PUT", f"{WORKSPACE}/clusters/other", json={"properties": {
        "vmSize": "STANDARD_D1", "scaleSettings": {"manual": {"targetNodeCount": 0}},
        "userAccountSettings": {"adminUserName": "DemoUser", "adminUserPassword": "DemoPa$$w0rd"}}}).status_code == 202
    assert counted() == _keys(GROUP, WORKSPACE, f"{WORKSPACE}/clusters/other")
    counted = reads()
    assert raw(batchai, "DELETE", f"{WORKSPACE}/clusters/other").status_code == 202
    assert counted() == _keys(GROUP, WORKSPACE, f"{WORKSPACE}/clusters/other")


def test_list_output_files_reads_the_job_once_and_terminate_its_scope_once(cluster, batchai, reads):
    job = f"{EXPERIMENT}/jobs/job"
    assert raw(batchai, "PUT", job, json={"properties": {
        "cluster": {"id": cluster.id}, "nodeCount": 1,
        "stdOutErrPathPrefix": "$AZ_BATCHAI_JOB_TEMP", "customToolkitSettings": {"commandLine": "sleep 60"}}}).status_code == 202
    counted = reads()
    assert raw(batchai, "POST", f"{job}/listOutputFiles?outputdirectoryid=stdouterr").status_code == 200
    assert counted() == _keys(GROUP, WORKSPACE, EXPERIMENT, job)
    counted = reads()
    assert raw(batchai, "POST", f"{job}/terminate").status_code == 202
    # The job itself is read again after it is found: by the scheduler under its lock, and to see
    # whether it has ended -- both after the terminate changed it.
    assert {k: n for k, n in counted().items() if k != resource_key(job)} == _keys(GROUP, WORKSPACE, EXPERIMENT)
