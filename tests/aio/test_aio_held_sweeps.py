"""The aio Experiment.sweep on a service that holds sweeps: created at once, read while the loop
serves, its best trial, results and cancel, as the sync Sweep reads them (tests/sdk/test_held_sweeps.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import horovod_batchai
from horovod_batchai import HorovodJob, LogUniform, NotFoundError, SweepState
from horovod_batchai.aio import Sweep, Target

from aio_support import run, setup_jobs

pytestmark = pytest.mark.slow

TRIAL = """\
import argparse, os, time
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, required=True)
parser.add_argument("--pause", type=float, default=0)
args = parser.parse_args()
with open(os.path.join(os.environ["AZ_BATCHAI_STDOUTERR_DIR"], "metrics.csv"), "w") as fh:
    fh.write("epoch,loss,val_accuracy\\n")
    for epoch in range(2):
        fh.write(f"{epoch},{1 - args.lr},{args.lr + epoch}\\n")
        fh.flush()
time.sleep(args.pause)
"""


def test_a_held_sweep_is_created_at_once_and_read_as_the_sync_one(service: Any, tmp_path: Path) -> None:
    async def scenario(target: Target) -> None:
        ws, cluster, share = await setup_jobs(target, tmp_path, {"trial.py": TRIAL}, nodes=2)
        experiment = await ws.create_experiment("held")
        spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/trial.py", mounts=[await share.mount()])
        sweep = await experiment.sweep(spec, name="lr", sampling="random", num_trials=3, seed=2,
                                       parameters={"lr": LogUniform(0.01, 0.1)}, cluster=cluster)
        assert isinstance(sweep, Sweep) and sweep.state is SweepState.RUNNING
        steps: list = []
        results = await sweep.wait(timeout=300, poll_interval=0.2, on_step=steps.append)
        assert results.state is SweepState.COMPLETED and steps and len(results) == 3
        best = await sweep.best()
        assert best.parameters["lr"] == max(r.trial.parameters["lr"] for r in results)
        assert (await sweep.best(metric="loss", mode="min")).name == best.name  # read from the trials' jobs
        with horovod_batchai.Target.local(service=service) as sync_target:
            found = horovod_batchai.Experiment.from_id(sync_target, experiment.id).get_sweep("lr")
            assert found.results().to_dict() == (await sweep.results()).to_dict()
        assert [s.name for s in await experiment.list_sweeps()] == ["lr"]

        waiting = await experiment.sweep(spec.replace(arguments="--pause 300"), name="long",
                                         parameters={"lr": [0.01, 0.02, 0.03]}, cluster=cluster,
                                         max_concurrent_trials=1)
        await waiting.cancel()
        assert waiting.state is SweepState.CANCELLED
        await waiting.delete()
        with pytest.raises(NotFoundError):
            await experiment.get_sweep("long")

    run(service, scenario)
