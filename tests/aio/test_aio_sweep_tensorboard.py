"""horovod_batchai.aio's Sweep.tensorboard(): every trial's event files fetched through the aio
clients into one TensorBoard, each trial a run with its parameters and final metric as HParams
(as the sync Sweep.tensorboard() of tests/sdk/test_sweep_comparison.py)."""
from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from horovod_batchai import HorovodJob, SweepState
from horovod_batchai.aio import Target, TensorBoard

from aio_support import run, setup_jobs

pytestmark = pytest.mark.slow
pytest.importorskip("tensorboard")

# A trial: val_accuracy grows with --lr, in metrics.csv and as a TensorBoard scalar (written with
# the tensorboard package's record writer).
TRIAL = """\
import argparse, os, time
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.record_writer import RecordWriter
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, required=True)
args = parser.parse_args()
out = os.environ["AZ_BATCHAI_STDOUTERR_DIR"]
os.makedirs(os.path.join(out, "tensorboard", "validation"))
with open(os.path.join(out, "metrics.csv"), "w") as csv, \\
        open(os.path.join(out, "tensorboard", "validation", "events.out.tfevents.1.trial"), "wb") as fh:
    records = RecordWriter(fh)
    records.write(event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2").SerializeToString())
    csv.write("epoch,val_accuracy\\n")
    for epoch in range(2):
        value = args.lr + epoch / 100
        csv.write(f"{epoch},{value}\\n")
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="epoch_accuracy", simple_value=value)])
        records.write(event_pb2.Event(wall_time=time.time(), step=epoch, summary=summary).SerializeToString())
"""


def _post(url: str, body: dict) -> Any:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(request, timeout=60))


def test_a_sweeps_trials_in_one_tensorboard_from_asyncio(service: Any, tmp_path: Path) -> None:
    async def scenario(target: Target) -> None:
        ws, cluster, share = await setup_jobs(target, tmp_path, {"trial.py": TRIAL}, nodes=2)
        experiment = await ws.create_experiment("boards")
        spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/trial.py", mounts=[await share.mount()])
        sweep = await experiment.sweep(spec, name="tb", parameters={"lr": [0.1, 0.4]}, cluster=cluster)
        results = await sweep.wait(timeout=600, poll_interval=0.5)
        assert results.state is SweepState.COMPLETED, str(results)

        board = await sweep.tensorboard(logdir=tmp_path / "tb")
        async with board:
            assert isinstance(board, TensorBoard) and board.url is not None and board.sweep == "tb"
            runs = await asyncio.to_thread(lambda: json.load(urllib.request.urlopen(board.url + "data/runs",
                                                                                    timeout=60)))
            assert set(runs) >= {"tb-0", "tb-1", "tb-0/validation", "tb-1/validation"}
            groups = await asyncio.to_thread(_post, board.url + "data/plugin/hparams/session_groups", {
                "experimentName": "", "allowedStatuses": ["STATUS_UNKNOWN"], "startIndex": 0, "sliceSize": 10,
                "colParams": [{"hparam": "lr"}, {"metric": {"tag": "final_val_accuracy"}}]})
            shown = {g["name"]: (g["hparams"], g["metricValues"][0]["value"]) for g in groups["sessionGroups"]}
            assert shown == {"tb-0": ({"lr": 0.1}, pytest.approx(0.11)), "tb-1": ({"lr": 0.4}, pytest.approx(0.41))}
            assert await board.sync() == 0
        assert board.url is None and board.process is None

    run(service, scenario)
