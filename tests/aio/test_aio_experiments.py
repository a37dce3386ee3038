"""horovod_batchai.aio's experiment loop against the local service: a job's metrics and its
TensorBoard event files read through the aio clients -- the same table, the same files as the
sync API reads -- and sweeps of trial jobs."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import horovod_batchai
from horovod_batchai import HorovodJob, InvalidSpecError, MetricsTable
from horovod_batchai.aio import Experiment, FileShare, GpuCluster, Job, Target, TensorBoard, Workspace

from aio_support import ACCOUNT, RG, SSH_KEY, run

pytestmark = pytest.mark.slow

# Two epochs and half of a third row (a row being written); event files under tensorboard/.
RECORDER = """\
import os
out = os.environ["AZ_BATCHAI_STDOUTERR_DIR"]
with open(os.path.join(out, "metrics.csv"), "w") as fh:
    fh.write("epoch,loss,val_accuracy\\n0,2.0,0.25\\n1,1.5,0.5\\n2,1.")
for run in ("train", "validation"):
    os.makedirs(os.path.join(out, "tensorboard", run))
    with open(os.path.join(out, "tensorboard", run, "events.out.tfevents.1"), "wb") as fh:
        fh.write(run.encode() * 1000)
print("recorded", flush=True)
"""

SILENT = "print('no metrics here')\n"


async def _setup(target: Target, tmp_path: Path, scripts: dict[str, str]) -> tuple[Experiment, GpuCluster, FileShare]:
    ws = await Workspace.create(target, RG, "batchaidev", location="eastus")
    cluster = await ws.create_cluster("nc6cluster", vm_size="Standard_NC6", target_node_count=2,
                                      admin_user_name="demo", ssh_public_key=SSH_KEY)
    share = await FileShare.create(target, RG, ACCOUNT, "myshare", location="eastus")
    for name, text in scripts.items():
        (tmp_path / name).write_text(text)
        await share.upload_file(tmp_path / name, f"scripts/{name}", progress=False)
    await cluster.wait_until_ready(timeout=120)
    return await ws.create_experiment("curves"), cluster, share


def _spec(script: str, mount: Any, arguments: tuple[str, ...] = ()) -> HorovodJob:
    return HorovodJob(script=f"$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/{script}", mounts=[mount],
                      arguments=list(arguments))


def test_metrics_and_event_files_are_read_as_the_sync_api_reads_them(service: Any, tmp_path: Path) -> None:
    async def scenario(target: Target) -> None:
        experiment, cluster, share = await _setup(target, tmp_path, {"recorder.py": RECORDER, "silent.py": SILENT})
        mount = await share.mount()
        recorder = await experiment.submit("recorder", _spec("recorder.py", mount), cluster=cluster)
        silent = await experiment.submit("silent", _spec("silent.py", mount), cluster=cluster)
        await recorder.wait(timeout=120)
        await silent.wait(timeout=120)

        table = await recorder.metrics()
        assert isinstance(table, MetricsTable) and table.columns == ("loss", "val_accuracy")
        assert table.column("val_accuracy") == [0.25, 0.5] and table.execution_state == "succeeded"
        with horovod_batchai.Target.local(service=service) as sync_target:
            def sync_metrics(job: Job) -> MetricsTable:
                return horovod_batchai.Job.from_id(sync_target, job.id).metrics()
            assert table == await asyncio.to_thread(sync_metrics, recorder)  # the same table as the sync API's
            empty = await silent.metrics()
            assert len(empty) == 0 and "ended succeeded without writing metrics.csv" in empty.reason
            assert empty == await asyncio.to_thread(sync_metrics, silent)

        logdir = tmp_path / "board"
        assert await recorder.sync_tensorboard(logdir) == 2
        assert (logdir / "train" / "events.out.tfevents.1").read_bytes() == b"train" * 1000
        assert (logdir / "validation" / "events.out.tfevents.1").read_bytes() == b"validation" * 1000
        assert await recorder.sync_tensorboard(logdir) == 0  # nothing new or grown
        (logdir / "train" / "events.out.tfevents.1").write_bytes(b"short")  # a file smaller here is fetched again
        assert await recorder.sync_tensorboard(logdir) == 1
        assert await silent.sync_tensorboard(tmp_path / "none") == 0

        with pytest.raises(InvalidSpecError, match="port"):
            await recorder.tensorboard(port=70000)
        board = await recorder.tensorboard(tmp_path / "board2", start=False)
        assert isinstance(board, TensorBoard) and board.url is None
        assert sorted(p.name for p in (tmp_path / "board2").iterdir()) == ["train", "validation"]
        assert board.command_line.startswith("tensorboard --logdir ") and "--port" in board.command_line
        assert await board.sync() == 0
        await board.stop()  # nothing started: nothing to end
        assert target.sync._backend is None  # every request went through the aio clients

    run(service, scenario)
