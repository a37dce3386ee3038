"""The plan of a run, checked against golden files: directories, mounts, every node's environment,
the exact argv of each process and the opening lines of the execution logs.

``plan_job`` is pure, so these tests touch no file system and start nothing. To accept a deliberate
change, run them with ``HOROVOD_BATCHAI_UPDATE_GOLDEN=1`` and read the diff of ``golden/``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from horovod_batchai.local.runner.job_plan import JobPlan, JobStartError, Machine, plan_job
from horovod_batchai.local.runner.mounts import Mount
from horovod_batchai.local.runner.node_setup import NodeSlot

GOLDEN = Path(__file__).parent / "golden"
STATE = Path("/state")
MACHINE = Machine(python="/venv/bin/python", horovodrun="/pkg/horovodrun.py", rank_exec="/pkg/rank_exec.py",
                  environment={"PATH": "/usr/bin:/bin", "HOME": "/home/user", "LANG": "C.UTF-8"}, gpus=0)
NODES = [NodeSlot(0, "tvm-1_1-20260101t000000z-p"), NodeSlot(1, "tvm-1_2-20260101t000000z-p")]
SEGMENT = "00000000-0000-0000-0000-000000000000/rg/workspaces/ws/experiments/cifar/jobs/job/1234"
CLUSTER = {"name": "nc6cluster", "properties": {"vmSize": "STANDARD_NC6"}}
SHARE_MOUNT = Mount("azureFileShare", STATE / "jobs/j/mounts/myshare", STATE / "files/acct/myshare",
                    "Azure file share acct/myshare")


def _tutorial_job(**changes: Any) -> dict[str, Any]:
    """The job the tutorial's job.json becomes once the service has stored it."""
    props: dict[str, Any] = {
        "jobOutputDirectoryPathSegment": SEGMENT, "toolType": "horovod", "nodeCount": 2,
        "stdOutErrPathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare",
        "horovodSettings": {"pythonScriptFilePath": "$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar/cifar_cnn_distributed.py",
                            "commandLineArgs": "--epochs 3", "processCount": 2},
        "jobPreparation": {"commandLine": "apt update; apt install mpi-default-dev mpi-default-bin -y; "
                                          "pip install keras horovod"},
        "containerSettings": {"imageSourceRegistry": {"image": "tensorflow/tensorflow:1.8.0-gpu"}},
        "environmentVariables": [{"name": "EPOCHS_NOTE", "value": "three"}],
        "secrets": [{"name": "TOKEN"}],
        "outputDirectories": [{"id": "MODEL", "pathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare",
                               "pathSuffix": "models"}],
        "constraints": {"maxWallClockTime": "PT2H"},
    }
    props.update(changes)
    return {"name": "job", "properties": props}


def _plan(job: dict[str, Any], *, machine: Machine = MACHINE, size_gpus: int = 1,
          nodes: list[NodeSlot] = NODES) -> JobPlan:
    return plan_job(job=job, job_private={"secrets": {"TOKEN": "s3cret-value"}}, cluster=CLUSTER, nodes=nodes,
                    run_tag="tag-1", job_dir=STATE / "jobs/j", mount_root=STATE / "clusters/c/mounts",
                    cluster_mounts=[], job_mounts=[SHARE_MOUNT], size_gpus=size_gpus, machine=machine)


def _as_data(plan: JobPlan) -> Any:
    def convert(value: Any) -> Any:
        if isinstance(value, Path):
            return str(value)
        if isinstance(value, Mount):
            return str(value)
        if isinstance(value, (list, tuple)):
            return [convert(v) for v in value]
        if isinstance(value, dict) or hasattr(value, "items"):
            return {k: convert(v) for k, v in sorted(dict(value).items())}
        if hasattr(value, "__dataclass_fields__"):
            return {name: convert(getattr(value, name)) for name in value.__dataclass_fields__}
        return value
    return convert(plan)


def stdouterr_of(plan: JobPlan) -> Path:
    return plan.outputs[0][1]


def _check_golden(name: str, plan: JobPlan) -> None:
    path = GOLDEN / f"{name}.json"
    data = _as_data(plan)
    if os.environ.get("HOROVOD_BATCHAI_UPDATE_GOLDEN"):
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    assert data == json.loads(path.read_text()), f"the plan differs from {path}"


def test_the_tutorials_horovod_job_on_two_nodes():
    plan = _plan(_tutorial_job())
    _check_golden("tutorial_horovod_two_nodes", plan)
    # What the golden file says, spelt out for a reader:
    # horovodrun runs without the secret (it copies its environment onto each rank's command line);
    # each rank reads it from a 0600 file in the run's directory.
    assert plan.toolkit.argv == (
        "/bin/bash", "-c", "exec env -u TOKEN /venv/bin/python /pkg/horovodrun.py -np 2 -H localhost:2 --gloo "
        "/venv/bin/python /pkg/rank_exec.py /state/jobs/j/runs/tag-1/rank-secrets.json -- /venv/bin/python "
        "$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar/cifar_cnn_distributed.py --epochs 3")
    assert plan.rank_secrets == {"TOKEN": "s3cret-value"}
    assert "s3cret-value" not in repr(plan)
    assert plan.toolkit.split_ranks == stdouterr_of(plan) / "ranks" and plan.toolkit.rank_count == 2
    assert [n.env["TMPDIR"] for n in plan.nodes] == [n.env["AZ_BATCHAI_JOB_TEMP"] for n in plan.nodes]
    stdouterr = STATE / f"jobs/j/mounts/myshare/{SEGMENT}/stdouterr"
    assert plan.outputs[0] == ("stdouterr", stdouterr)
    assert plan.outputs[1] == ("MODEL", STATE / f"jobs/j/mounts/myshare/{SEGMENT}/outputs/models")
    assert [n.env["AZ_BATCHAI_TASK_INDEX"] for n in plan.nodes] == ["0", "1"]
    assert plan.nodes[0].env["TOKEN"] == "s3cret-value"
    assert all("s3cret-value" not in line for n in plan.nodes for line in n.log_lines)
    assert plan.wall_clock_s == 7200
    # Package installs meant for the container image meet the stand-ins first on PATH.
    assert all(step.env["PATH"].startswith(str(STATE / "jobs/j/shims")) for step in plan.preparation)


def test_a_custom_toolkit_job_on_one_node_without_preparation():
    job = _tutorial_job(toolType="custommpi", horovodSettings=None, jobPreparation=None, containerSettings=None,
                        customToolkitSettings={"commandLine": "echo hi | tee $AZ_BATCHAI_OUTPUT_MODEL/result.txt"})
    del job["properties"]["horovodSettings"]
    plan = _plan(job, nodes=NODES[:1])
    _check_golden("custom_toolkit_one_node", plan)
    assert plan.preparation == () and plan.shims is None
    assert plan.toolkit.argv == ("/bin/bash", "-c", "echo hi | tee $AZ_BATCHAI_OUTPUT_MODEL/result.txt")
    # Its processes get the secret in their environment; no rank file is needed without horovodrun.
    assert plan.toolkit.env["TOKEN"] == "s3cret-value" and plan.rank_secrets_file is None
    assert plan.toolkit.split_ranks is None
    assert plan.nodes[0].execution_log.name == "execution.log"


def test_gpus_are_handed_out_per_node_and_the_master_sees_them_all():
    plan = _plan(_tutorial_job(), machine=Machine(**{**MACHINE.__dict__, "gpus": 4}), size_gpus=2)
    assert [n.env["CUDA_VISIBLE_DEVICES"] for n in plan.nodes] == ["0,1", "2,3"]
    assert plan.toolkit.env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"
    assert [n.env["AZ_BATCHAI_NUM_GPUS"] for n in plan.nodes] == ["2", "2"]


@pytest.mark.parametrize("changes, code", [
    ({"horovodSettings": None, "toolType": "cntk", "cntkSettings": {"pythonScriptFilePath": "x.py"}},
     "UnsupportedToolkit"),
    ({"horovodSettings": None, "customToolkitSettings": {"commandLine": ""}}, "InvalidJob"),
])
def test_a_job_the_local_service_cannot_run_is_refused_before_anything_starts(changes, code):
    job = _tutorial_job(**changes)
    if job["properties"]["horovodSettings"] is None:
        del job["properties"]["horovodSettings"]
    with pytest.raises(JobStartError) as caught:
        _plan(job)
    assert caught.value.error["code"] == code
