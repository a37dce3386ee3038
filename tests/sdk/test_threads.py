"""One Workspace, its clusters, one FileShare and their jobs, driven from 8 threads at once
against the real local service: no error, and each thread sees only its own results. The
workspace, the share, one cluster object and every job object are shared: each job is followed
by the thread that submitted it and waited on, at the same time, by its neighbour."""
from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from horovod_batchai import ExecutionState, FileShare, GpuCluster, HorovodJob, Job, Target, Workspace
from sdk_support import SSH_KEY

pytestmark = pytest.mark.slow

THREADS = 8
# Each job prints its thread's token and writes it to a file of its own on the share.
SCRIPT = """\
import os, sys
token = sys.argv[1]
for i in range(3):
    print(f"{token} line {i}", flush=True)
with open(os.path.join(os.environ["AZ_BATCHAI_JOB_MOUNT_ROOT"], "myshare", "out", token + ".txt"), "w") as fh:
    fh.write(token)
"""


def _work(i: int, ws: Workspace, share: FileShare, shared_c0: GpuCluster, jobs: dict[int, Job],
          submitted: threading.Barrier, tmp: Path) -> dict:
    """What one thread does with the shared objects; returns what it saw."""
    token = f"thread-{i}-{os.urandom(4).hex()}"
    # Two clusters and two experiments, each got-or-created by four threads at once; the threads
    # of c0 then use one GpuCluster object between them.
    cluster = ws.create_cluster(f"c{i % 2}", vm_size="Standard_NC6", target_node_count=2, admin_user_name="demo",
                                ssh_public_key=SSH_KEY)
    if i % 2 == 0:
        cluster = shared_c0
    experiment = ws.create_experiment(f"exp{i % 2}")
    payload = os.urandom(1024 * 1024 + i)
    local = tmp / f"data-{i}.bin"
    local.write_bytes(payload)
    share.upload_file(local, f"data/{i}.bin", progress=False)
    script = tmp / f"job-{i}.py"
    script.write_text(SCRIPT)
    share.upload_file(script, f"scripts/job-{i}.py", progress=False)
    back = share.download_file(f"data/{i}.bin", tmp / f"back-{i}.bin", progress=False)
    cluster.wait_until_ready(timeout=300)
    spec = HorovodJob(script=f"$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/job-{i}.py", arguments=[token],
                      mounts=(share.mount(),))
    job = jobs[i] = experiment.submit(f"job{i}", spec, cluster=cluster)
    submitted.wait(timeout=600)
    neighbour = jobs[(i + 1) % THREADS]  # its own thread streams and waits on it too
    neighbour_state = neighbour.wait(timeout=600).execution_state
    streamed = "".join(job.stream("stdout.txt"))
    status = job.wait(timeout=600)
    return {"token": token, "payload_ok": back.read_bytes() == payload, "streamed": streamed,
            "state": status.execution_state, "tail": job.stdout_tail(), "job": job,
            "neighbour_state": neighbour_state, "neighbour_tail": neighbour.stdout_tail()}


def test_one_workspace_driven_from_eight_threads(target: Target, tmp_path: Path) -> None:
    ws = Workspace.create(target, "batchai.horovod", "batchaidev", location="eastus")
    share = FileShare.create(target, "batchai.horovod", "mystorageaccount", "myshare")
    share.create_directory("out")
    shared_c0 = GpuCluster(ws, "c0")
    results: dict[int, dict] = {}
    errors: dict[int, BaseException] = {}
    jobs: dict[int, Job] = {}
    start, submitted = threading.Barrier(THREADS), threading.Barrier(THREADS)

    def run(i: int) -> None:
        try:
            start.wait()
            results[i] = _work(i, ws, share, shared_c0, jobs, submitted, tmp_path)
        except BaseException as err:  # noqa: BLE001 -- reported below, with the thread it came from
            errors[i] = err
            submitted.abort()  # the others stop waiting for this thread's job

    threads = [threading.Thread(target=run, args=(i,), name=f"user-{i}") for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=900)
    assert not [t.name for t in threads if t.is_alive()]
    assert not errors, {i: repr(e) for i, e in errors.items()}
    tokens = {i: r["token"] for i, r in results.items()}
    for i, result in results.items():
        others = [t for j, t in tokens.items() if j != i]
        assert result["payload_ok"], i
        assert result["state"] is ExecutionState.SUCCEEDED, i
        # its own output, all of it, and nobody else's
        assert [f"{tokens[i]} line {n}" for n in range(3)] == result["streamed"].splitlines(), (i, result["streamed"])
        assert result["tail"].splitlines() == result["streamed"].splitlines(), i
        assert not any(t in result["streamed"] + result["tail"] for t in others), i
        assert result["job"].name == f"job{i}" and result["job"].experiment.name == f"exp{i % 2}"
        neighbour = (i + 1) % THREADS
        assert result["neighbour_state"] is ExecutionState.SUCCEEDED
        assert result["neighbour_tail"] == results[neighbour]["tail"], i
    # the service holds exactly what the threads made, once each
    assert sorted(c.name for c in ws.list_clusters()) == ["c0", "c1"]
    assert sorted(e.name for e in ws.list_experiments()) == ["exp0", "exp1"]
    for n in (0, 1):
        assert sorted(j.name for j in ws.get_experiment(f"exp{n}").list_jobs()) == \
            sorted(f"job{i}" for i in range(THREADS) if i % 2 == n)
    assert sorted(item.name for item in share.list("out")) == sorted(f"{t}.txt" for t in tokens.values())
    assert sorted(item.name for item in share.list("data")) == sorted(f"{i}.bin" for i in range(THREADS))
    # jobs fetched again in this thread are the same jobs
    assert {Job.from_id(target, r["job"].id) for r in results.values()} == {r["job"] for r in results.values()}
