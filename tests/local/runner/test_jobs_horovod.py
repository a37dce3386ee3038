"""Horovod jobs under real horovodrun (Gloo) on local nodes."""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from azure.storage.fileshare import ShareFileClient

from jobs_support import make_lab, tagged_processes

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (Path(sys.executable).parent / "horovodrun").exists() or shutil.which("bash") is None,
                       reason="horovod is not installed in this Python environment"),
]

RANKS = """\
import sys
import horovod.tensorflow as hvd

hvd.init()
print(f"rank {hvd.rank()} size {hvd.size()} args {sys.argv[1:]}", flush=True)
"""

FAILING_RANK = """\
import os
import sys
import time

rank = int(os.environ["HOROVOD_RANK"])
print(f"rank {rank} started", flush=True)
started = os.path.join(os.environ["AZ_BATCHAI_SHARED_JOB_TEMP"], "rank0-started")
if rank == 1:
    # Fails once rank 0 runs: failing sooner would race rank 0's start on a busy machine.
    deadline = time.time() + 120
    while not os.path.exists(started) and time.time() < deadline:
        time.sleep(0.05)
    sys.exit(5)
open(started, "w").close()
time.sleep(600)  # rank 0 would outlive the job if nobody stopped it
"""


def test_two_node_horovod_job_prints_each_rank_and_the_size(service, batchai):
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=2)
    lab.upload("scripts/ranks.py", RANKS)
    lab.submit("hvd", {"nodeCount": 2, "horovodSettings": {
        "pythonScriptFilePath": "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs/scripts/ranks.py",
        "commandLineArgs": "--dir=$AZ_BATCHAI_JOB_MOUNT_ROOT/afs/scripts"}})
    job = lab.wait_state("hvd", timeout=300)
    stdout = lab.read("hvd", "stdout.txt")
    assert job.execution_state == "succeeded", (job.execution_info.errors, lab.read("hvd", "stderr.txt"))
    assert job.horovod_settings.process_count == 2 and job.tool_type == "horovod"
    for rank in (0, 1):
        line = re.search(rf"^rank {rank} size 2 args \['--dir=(\S+)'\]$", stdout, re.MULTILINE)
        assert line, stdout
        assert line.group(1).endswith("/mounts/afs/scripts")  # the node's shell expanded the variable
    # The processes' own lines, without horovodrun's "[0]<stdout>:" tags, as the tutorial shows them;
    # each rank's lines are also kept on their own, in ranks/rank.<n>/.
    assert "<stdout>" not in stdout and "<stderr>" not in lab.read("hvd", "stderr.txt")
    for rank in (0, 1):
        [entry] = [f for name, f in lab.files("hvd", directory=f"ranks/rank.{rank}").items() if name == "stdout.txt"]
        own = ShareFileClient.from_file_url(entry.download_url, connection_verify=str(service.info.ca_cert))
        assert own.download_file().readall().decode().startswith(f"rank {rank} size 2 ")
    # One execution log per node, named by node id as Azure names them.
    logs = [name for name in lab.files("hvd") if name.startswith("execution-")]
    assert len(logs) == 2 and all(re.fullmatch(r"execution-tvm-\d+_\d-\d{8}t\d{6}z-p\.log", n) for n in logs)
    assert "horovodrun.py -np 2 -H localhost:2 --gloo" in lab.read("hvd", logs[0]) + lab.read("hvd", logs[1])
    assert tagged_processes(service.state_dir) == []
    assert lab.wait_steady().node_state_counts.idle_node_count == 2


def test_a_failing_rank_fails_the_job_and_stops_the_other_ranks(service, batchai):
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=2)
    lab.upload("scripts/fail.py", FAILING_RANK)
    lab.submit("hvd", {"nodeCount": 2, "horovodSettings": {
        "pythonScriptFilePath": "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs/scripts/fail.py"}})
    # Far less than rank 0's sleep: the job ends because horovodrun stopped rank 0.
    job = lab.wait_state("hvd", timeout=300)
    assert job.execution_state == "failed"
    assert job.execution_info.exit_code not in (None, 0)
    [error] = job.execution_info.errors
    assert error.code == "JobFailed" and f"exit code {job.execution_info.exit_code}" in error.message
    stdout = lab.read("hvd", "stdout.txt")
    assert "rank 0 started" in stdout and "rank 1 started" in stdout
    assert tagged_processes(service.state_dir) == []
