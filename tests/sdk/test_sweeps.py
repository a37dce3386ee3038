"""Experiment.sweep driven from the client (ClientSweep, as on Batch AI on Azure): trial jobs per
configuration (grid, seeded random), at most N at once, their parameters as the script's options; results, best, cancel, median stopping; found again from a new
process through the service alone. The trials run a tiny script that writes metrics.csv."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from horovod_batchai import (ConflictError, ExecutionState, Experiment, FileShare, GpuCluster, HorovodJob, InvalidSpecError,
                             LogUniform, MedianStopping, NotFoundError, SweepState, Uniform, Workspace)
from horovod_batchai.local import LocalService

from sdk_support import RG
from sweep_support import CLIENT_DRIVEN, drive_sweeps_from_the_client


@pytest.fixture(autouse=True)
def _client_driven(monkeypatch: pytest.MonkeyPatch) -> None:
    """These are the sweeps the SDK drives where the service holds none (Batch AI on Azure): the
    local service, which holds sweeps, is read as not holding them (tests/sdk/test_held_sweeps.py)."""
    drive_sweeps_from_the_client(monkeypatch)


pytestmark = pytest.mark.slow

# A trial: its accuracy grows with --lr; it records when it ran, for the concurrency check.
TRIAL = """\
import argparse, os, time
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, required=True)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--pause", type=float, default=0.3)
args = parser.parse_args()
runs = os.path.join(os.environ["AZ_BATCHAI_JOB_MOUNT_ROOT"], "myshare", "runs")
os.makedirs(runs, exist_ok=True)
started = time.time()
print("lr", args.lr, "batch", args.batch_size, flush=True)
with open(os.path.join(os.environ["AZ_BATCHAI_STDOUTERR_DIR"], "metrics.csv"), "w") as fh:
    fh.write("epoch,loss,val_accuracy\\n")
    for epoch in range(args.epochs):
        time.sleep(args.pause)
        fh.write(f"{epoch},{1 / (1 + epoch)},{args.lr * 100 + epoch / 100 + args.batch_size / 10000}\\n")
        fh.flush()
with open(os.path.join(runs, os.environ["HOROVOD_BATCHAI_TRIAL"]), "w") as fh:
    fh.write(f"{started} {time.time()}")
"""


@pytest.fixture
def experiment(workspace: Workspace) -> Experiment:
    return workspace.create_experiment("sweeps")


@pytest.fixture
def trial_spec(share: FileShare, tmp_path: Path) -> HorovodJob:
    local = tmp_path / "trial.py"
    local.write_text(TRIAL)
    share.upload_file(local, "scripts/trial.py", progress=False)
    return HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/trial.py", mounts=[share.mount()],
                      std_out_err_path_prefix="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/logs")


def _overlap(share: FileShare, tmp_path: Path, count: int) -> int:
    """The most trials that ran at the same moment, from the times they wrote to the share."""
    spans = []
    for index in range(count):
        local = share.download_file(f"runs/{index}", tmp_path / "runs" / str(index))
        start, end = map(float, local.read_text().split())
        spans.append((start, end))
    return max(sum(1 for s, e in spans if s <= moment < e) for moment, _ in spans)


def test_a_grid_sweep_runs_every_combination_two_at_a_time(experiment: Experiment, cluster: GpuCluster,
                                                           share: FileShare, trial_spec: HorovodJob,
                                                           tmp_path: Path) -> None:
    sweep = experiment.sweep(trial_spec.replace(arguments="--epochs 2"), name="grid",
                             parameters={"lr": [0.001, 0.01], "batch-size": [32, 64]}, cluster=cluster,
                             max_concurrent_trials=2)
    # the first two are submitted at once, the others wait for a free slot
    assert [t.status for t in sweep.trials][2:] == ["pending", "pending"]
    results = sweep.wait(timeout=600)
    assert sweep.state is SweepState.SUCCEEDED and results.state is SweepState.SUCCEEDED
    assert [r.trial.name for r in results] == ["grid-000", "grid-001", "grid-002", "grid-003"]
    assert [dict(r.trial.parameters) for r in results] == [
        {"lr": 0.001, "batch-size": 32}, {"lr": 0.001, "batch-size": 64},
        {"lr": 0.01, "batch-size": 32}, {"lr": 0.01, "batch-size": 64}]
    # each trial is an ordinary job whose script got its parameters as options
    job = experiment.get_job("grid-003")
    assert job.spec.arguments == "--epochs 2 --lr 0.01 --batch-size 64"
    assert job.metrics().last("val_accuracy") == pytest.approx(0.01 * 100 + 0.01 + 64 / 10000)
    assert [r.epochs for r in results] == [2, 2, 2, 2]
    assert all(r.trial.status == "succeeded" for r in results)
    assert results.to_records()[0] == {"trial": "grid-000", "lr": 0.001, "batch-size": 32, "status": "succeeded",
                                       "reason": None, "epochs": 2, "final_val_accuracy": pytest.approx(0.1 + 0.01 + 0.0032),
                                       "best_val_accuracy": pytest.approx(0.1 + 0.01 + 0.0032)}
    assert sweep.best().name == "grid-003" and results.best().trial.name == "grid-003"
    assert sweep.best(metric="loss", mode="min").name in {"grid-000", "grid-001", "grid-002", "grid-003"}
    with pytest.warns(DeprecationWarning, match=r"passing metric, mode to ClientSweep.best\(\) by position .* "
                                                r"use metric=\.\.\., mode=\.\.\."):
        assert sweep.best("loss", "min") == sweep.best(metric="loss", mode="min")
    html = results._repr_html_()
    assert html.count("<tr>") == 5 and "best trial <code>grid-003</code>" in html
    assert _overlap(share, tmp_path, 4) <= 2
    # the same call again is the same sweep: nothing new is submitted
    again = experiment.sweep(trial_spec.replace(arguments="--epochs 2"), name="grid",
                             parameters={"lr": [0.001, 0.01], "batch-size": [32, 64]}, cluster=cluster,
                             max_concurrent_trials=2)
    assert again.state is SweepState.SUCCEEDED and len(experiment.list_jobs()) == 4
    # another sweep under the same name is refused, naming what differs, and submits nothing
    with pytest.raises(ConflictError, match=r"sweep 'grid' of experiment 'sweeps' exists with other settings "
                                            r"\(parameters\)"):
        experiment.sweep(trial_spec.replace(arguments="--epochs 2"), name="grid",
                         parameters={"lr": [0.001, 0.02], "batch-size": [32, 64]}, cluster=cluster)
    with pytest.raises(ConflictError, match=r"other settings \(spec.arguments\); choose another name"):
        experiment.sweep(trial_spec.replace(arguments="--epochs 3"), name="grid",
                         parameters={"lr": [0.001, 0.01], "batch-size": [32, 64]}, cluster=cluster)
    assert len(experiment.list_jobs()) == 4


def test_a_new_process_finds_the_sweep_through_the_service(experiment: Experiment, cluster: GpuCluster,
                                                           trial_spec: HorovodJob, service: LocalService) -> None:
    sweep = experiment.sweep(trial_spec.replace(arguments="--pause 0"), name="again", sampling="random",
                             num_trials=3, seed=7, parameters={"lr": LogUniform(1e-4, 1e-2), "batch-size": [16, 32]},
                             cluster=cluster, max_concurrent_trials=1)
    sweep.wait(timeout=600)
    program = CLIENT_DRIVEN + textwrap.dedent(f"""
        import json, sys
        from horovod_batchai import Target, Workspace
        with Target.local(state_dir={str(service.state_dir)!r}) as target:
            experiment = Workspace.get(target, {RG!r}, "batchaidev").get_experiment("sweeps")
            sweep = experiment.get_sweep("again")
            results = sweep.results()
            print(json.dumps({{"state": sweep.state.value, "best": sweep.best().name,
                               "trials": results.to_records(), "sweeps": [s.name for s in experiment.list_sweeps()]}}))
    """)
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout)
    mine = sweep.results()
    assert seen["state"] == "succeeded" and seen["sweeps"] == ["again"]
    assert seen["best"] == sweep.best().name
    assert [t["lr"] for t in seen["trials"]] == [r.trial.parameters["lr"] for r in mine]
    # seeded: the same draw again, in this process, without submitting anything
    from horovod_batchai._models.sweep_spec import SweepDefinition
    redrawn = SweepDefinition.build("again", cluster="c", base_arguments="", sampling="random", num_trials=3,
                                    seed=7, parameters={"lr": LogUniform(1e-4, 1e-2), "batch-size": [16, 32]},
                                    metric="val_accuracy", mode="max", max_concurrent_trials=1, early_stopping=None)
    assert [dict(t) for t in redrawn.trials] == [dict(r.trial.parameters) for r in mine]
    assert all(1e-4 <= t["lr"] <= 1e-2 for t in redrawn.trials)


def test_cancel_terminates_running_trials_and_submits_no_more(experiment: Experiment, cluster: GpuCluster,
                                                              trial_spec: HorovodJob) -> None:
    sweep = experiment.sweep(trial_spec.replace(arguments="--epochs 1 --pause 300"), name="stop",
                             parameters={"lr": [0.1, 0.2, 0.3]}, cluster=cluster, max_concurrent_trials=2)
    assert [t.status for t in sweep.trials][2] == "pending"
    sweep.cancel()
    assert sweep.state is SweepState.CANCELLED
    assert [t.status for t in sweep.trials] == ["terminated", "terminated", "cancelled"]
    assert sweep.wait(timeout=60).state is SweepState.CANCELLED
    assert sorted(j.name for j in experiment.list_jobs()) == ["stop-000", "stop-001"]
    # another process sees the trials that never ran as not submitted, and nothing running
    seen = experiment.get_sweep("stop")
    assert seen.state is SweepState.STOPPED and [t.status for t in seen.trials][2] == "pending"


def test_median_stopping_stops_the_trials_below_the_median(experiment: Experiment, cluster: GpuCluster,
                                                           trial_spec: HorovodJob) -> None:
    # lr 0.3 and 0.2 run first and finish; 0.1 is then below their median from epoch 1 on, and has 15 s
    # of epochs left in which the rule (checked every second) must stop it
    sweep = experiment.sweep(trial_spec.replace(arguments="--epochs 30 --pause 0.5"), name="median",
                             parameters={"lr": [0.3, 0.2, 0.1]}, cluster=cluster, max_concurrent_trials=2,
                             early_stopping=MedianStopping(min_epochs=1, min_trials=2))
    results = sweep.wait(timeout=600)
    assert [r.trial.status for r in results] == ["succeeded", "succeeded", "stopped early"]
    assert results.results[2].epochs < 30
    assert sweep.state is SweepState.SUCCEEDED
    assert experiment.get_job("median-002").execution_state is ExecutionState.FAILED  # terminated


def test_bad_sweeps_are_refused_before_any_job_is_submitted(experiment: Experiment, cluster: GpuCluster,
                                                             trial_spec: HorovodJob) -> None:
    def refused(match: str, **changes: object) -> None:
        options: dict = dict(parameters={"lr": [0.1]}, cluster=cluster, name="bad")
        options.update(changes)
        with pytest.raises(InvalidSpecError, match=match):
            experiment.sweep(trial_spec, **options)

    refused(r"parameters: 'l r' is not an option name", parameters={"l r": [1]})
    refused(r"parameters\['lr'\]: is empty", parameters={"lr": []})
    refused(r"parameters\['lr'\]\[1\]: the boolean true is not a number or a string", parameters={"lr": [1, True]})
    refused(r"parameters\['lr'\]: Uniform cannot be searched by a grid", parameters={"lr": Uniform(0, 1)})
    refused(r"sampling: 'bayes' is not a sampling", sampling="bayes")
    refused(r"num_trials: null is not an integer", sampling="random")
    refused(r"num_trials: is set for a grid", num_trials=3)
    refused(r"mode: 'up' is not a direction", mode="up")
    refused(r"max_concurrent_trials: the number 0 is not an integer >= 1", max_concurrent_trials=0)
    refused(r"early_stopping: the string 'median' is not a stopping rule", early_stopping="median")
    refused(r"name: 'a.b' is not a valid name", name="a.b")
    refused(r"name: .* has 61 characters", name="x" * 61)
    with pytest.raises(InvalidSpecError, match=r"high: 1 is not above low \(1\)"):
        LogUniform(1, 1)
    with pytest.raises(InvalidSpecError, match=r"low: 0 is not positive"):
        LogUniform(0, 1)
    assert experiment.list_jobs() == []
    with pytest.raises(NotFoundError, match="no sweep 'nothing'"):
        experiment.get_sweep("nothing")
