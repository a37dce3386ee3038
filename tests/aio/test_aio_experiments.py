"""horovod_batchai.aio's experiment loop against the local service: a job's metrics and its
TensorBoard event files read through the aio clients -- the same table, the same files as the
sync API reads -- and sweeps of trial jobs."""
from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import horovod_batchai
from horovod_batchai import (ConflictError, ExecutionState, HorovodJob, InvalidSpecError, MedianStopping, MetricsTable,
                             NotFoundError, SweepResults, SweepState)
from horovod_batchai.aio import ClientSweep, Experiment, FileShare, GpuCluster, Job, Target, TensorBoard

from aio_support import cancel_after, other_tasks, run, setup_jobs
from sweep_support import drive_sweeps_from_the_client
from test_aio_resources import CountRequests

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

# A trial: its val_accuracy grows with --lr (as tests/sdk/test_sweeps.py's trials).
TRIAL = """\
import argparse, os, time
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, required=True)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--pause", type=float, default=0.3)
args = parser.parse_args()
with open(os.path.join(os.environ["AZ_BATCHAI_STDOUTERR_DIR"], "metrics.csv"), "w") as fh:
    fh.write("epoch,loss,val_accuracy\\n")
    for epoch in range(args.epochs):
        time.sleep(args.pause)
        fh.write(f"{epoch},{1 / (1 + epoch)},{args.lr * 100 + epoch / 100}\\n")
        fh.flush()
"""


async def _setup(target: Target, tmp_path: Path, scripts: dict[str, str]) -> tuple[Experiment, GpuCluster, FileShare]:
    ws, cluster, share = await setup_jobs(target, tmp_path, scripts, nodes=2)  # two trials at once
    return await ws.create_experiment("curves"), cluster, share


def _spec(script: str, mount: Any, arguments: str = "") -> HorovodJob:
    return HorovodJob(script=f"$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/{script}", mounts=[mount],
                      arguments=arguments)


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
        board = await recorder.tensorboard(logdir=tmp_path / "board2", start=False)
        assert isinstance(board, TensorBoard) and board.url is None and board.port is None
        assert sorted(p.name for p in (tmp_path / "board2").iterdir()) == ["train", "validation"]
        # without a port TensorBoard binds one the system chooses, and reports it once started
        assert board.command_line.startswith("tensorboard --logdir ") and board.command_line.endswith("--port 0")
        assert await board.sync() == 0
        await board.stop()  # nothing started: nothing to end
        with pytest.warns(DeprecationWarning, match=r"passing logdir to Job.tensorboard\(\) by position .* "
                                                    r"use logdir=\.\.\."):
            assert (await recorder.tensorboard(tmp_path / "board2", start=False)).logdir == board.logdir

        # TensorBoard started and stopped from the loop, which keeps serving meanwhile
        gaps: list[float] = []

        async def ticker() -> None:
            last = time.monotonic()
            while True:
                await asyncio.sleep(0.01)
                gaps.append(time.monotonic() - last)
                last = time.monotonic()
        ticking = asyncio.ensure_future(ticker())
        async with await recorder.tensorboard(logdir=tmp_path / "board3") as running:
            assert running.url is not None and running.port is not None and running.port > 0
            assert running.url == f"http://127.0.0.1:{running.port}/"
            url = running.url
            runs = await asyncio.to_thread(lambda: json.load(urllib.request.urlopen(url + "data/runs", timeout=60)))
            assert isinstance(runs, list)  # it answers (the files here are not real event files)
        assert running.url is None and running.process is None and running.port is None  # ended on leaving the block
        ticking.cancel()
        assert gaps and max(gaps) < 1.0, max(gaps)  # starting and stopping waited in a worker thread
        assert target.sync._backend is None  # every request went through the aio clients

    run(service, scenario)


def test_a_sweep_runs_its_trials_stops_the_worst_and_reads_as_the_sync_one(service: Any, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    drive_sweeps_from_the_client(monkeypatch)  # as on Batch AI on Azure (held sweeps: test_aio_held_sweeps.py)

    async def scenario(target: Target) -> None:
        experiment, cluster, share = await _setup(target, tmp_path, {"trial.py": TRIAL})
        spec = _spec("trial.py", await share.mount(), "--epochs 30 --pause 0.4")
        options: dict = dict(name="median", parameters={"lr": [0.3, 0.2, 0.1]}, cluster=cluster,
                             max_concurrent_trials=2, early_stopping=MedianStopping(min_epochs=1, min_trials=2))
        sweep = await experiment.sweep(spec, **options)
        assert isinstance(sweep, ClientSweep) and sweep.state is SweepState.RUNNING
        assert [t.status for t in sweep.trials][2] == "pending"  # two submitted at once, one waits for a slot
        steps: list[SweepState] = []
        # lr 0.3 and 0.2 finish first; 0.1 is then below their median from its first epoch on
        results = await sweep.wait(timeout=300, poll_interval=0.5, on_step=lambda s: steps.append(s.state))
        assert isinstance(results, SweepResults) and results.state is SweepState.SUCCEEDED and steps
        assert [r.trial.status for r in results] == ["succeeded", "succeeded", "stopped early"]
        assert results.results[2].epochs < 30
        assert (await experiment.get_job("median-002")).execution_state is ExecutionState.FAILED  # terminated
        assert (await sweep.best()).name == "median-000"
        assert (await sweep.best(metric="loss", mode="min")).name.startswith("median")
        with pytest.warns(DeprecationWarning, match=r"passing metric, mode to ClientSweep.best\(\) by position .* "
                                                    r"use metric=\.\.\., mode=\.\.\."):
            assert await sweep.best("loss", "min") == await sweep.best(metric="loss", mode="min")
        again = await experiment.sweep(spec, **options)  # the same sweep again: its trials are found
        assert again.name == "median" and len(await experiment.list_jobs()) == 3
        with pytest.raises(ConflictError, match=r"other settings \(parameters\)"):
            await experiment.sweep(spec, **{**options, "parameters": {"lr": [0.3]}})

        found = await experiment.get_sweep("median")
        assert [s.name for s in await experiment.list_sweeps()] == ["median"] and not found.driving
        records = (await found.results()).to_records()
        with horovod_batchai.Target.local(service=service) as sync_target:
            def sync_records() -> list:
                return horovod_batchai.Experiment.from_id(sync_target, experiment.id).get_sweep("median").results() \
                    .to_records()
            # another process sees "terminated" where the sweep's own process saw "stopped early"
            assert records == await asyncio.to_thread(sync_records)
        assert [r["status"] for r in records] == ["succeeded", "succeeded", "terminated"]
        assert records[0]["final_val_accuracy"] == pytest.approx(30 + 0.29)

    run(service, scenario)


def test_a_cancelled_wait_stops_polling_and_leaves_the_trials_running(service: Any, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    drive_sweeps_from_the_client(monkeypatch)
    counter = CountRequests()

    async def scenario() -> None:
        async with Target.local(service=service, per_call_policies=[counter]) as target:
            experiment, cluster, share = await _setup(target, tmp_path, {"trial.py": TRIAL})
            spec = _spec("trial.py", await share.mount(), "--epochs 1 --pause 300")
            with pytest.raises(InvalidSpecError, match=r"max_concurrent_trials"):
                await experiment.sweep(spec, name="bad", parameters={"lr": [0.1]}, cluster=cluster,
                                       max_concurrent_trials=0)
            with pytest.raises(NotFoundError, match="no sweep 'bad'"):
                await experiment.get_sweep("bad")  # nothing was submitted
            sweep = await experiment.sweep(spec, name="stop", parameters={"lr": [0.1, 0.2, 0.3]}, cluster=cluster)
            await cancel_after(1.0, sweep.wait(poll_interval=0.2), counter.sent, quiet_s=1.0)  # five poll intervals
            assert not other_tasks()
            await sweep.refresh()
            assert [t.status for t in sweep.trials][:2] == ["running", "running"]  # the trials run on
            with pytest.raises(InvalidSpecError, match="are not the sweep's"):
                (await experiment.get_sweep("stop")).resume(spec.replace(arguments="--epochs 2"))

            await sweep.cancel()
            assert sweep.state is SweepState.CANCELLED
            assert [t.status for t in sweep.trials] == ["terminated", "terminated", "cancelled"]
            assert (await sweep.wait(timeout=60)).state is SweepState.CANCELLED
            assert sorted(j.name for j in await experiment.list_jobs()) == ["stop-000", "stop-001"]

    asyncio.run(scenario())
