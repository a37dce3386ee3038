"""Experiment.sweep on a service that holds sweeps (the local service): the call returns at once with
the service's sweep; the service submits the trials and ends the sweep with no client attached;
any process reads it (state, trials with reasons, results, best), cancels and deletes it. The
trials run a tiny script that writes metrics.csv (MLflow-only trials: tests/sdk/test_job_mlflow*)."""
from __future__ import annotations

import datetime
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from horovod_batchai import (AzureFileShareMount, BanditPolicy, Choice, ConflictError, Experiment, FileShare, GpuCluster, HorovodJob,
                             InvalidSpecError, LogUniform, MedianStopping, NotFoundError, QUniform, Sweep, SweepState,
                             Workspace)
from horovod_batchai.local import LocalService

from sdk_support import ACCOUNT, RG

pytestmark = pytest.mark.slow

# A trial whose objective is known: val_accuracy = lr * 100 + batch-size / 10000 + epoch / 100.
TRIAL = """\
import argparse, os, sys, time
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, required=True)
parser.add_argument("--batch-size", type=lambda v: int(float(v)), default=32)  # quniform draws 16.0
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--metric", default="val_accuracy")
parser.add_argument("--dir", default="")
parser.add_argument("--wait-for", default="")
args = parser.parse_args()
model = os.path.join(os.environ["AZ_BATCHAI_OUTPUT_TRIAL"], "model.txt")
if os.path.exists(model):
    sys.exit("another trial's model is in my output directory")
with open(model, "w") as fh:
    fh.write(f"lr={args.lr}")
with open(os.path.join(os.environ["AZ_BATCHAI_STDOUTERR_DIR"], "metrics.csv"), "w") as fh:
    fh.write(f"epoch,loss,{args.metric}\\n")
    for epoch in range(args.epochs):
        fh.write(f"{epoch},{1 / (1 + epoch)},{args.lr * 100 + epoch / 100 + args.batch_size / 10000}\\n")
        fh.flush()
deadline = time.time() + 120
while args.wait_for and not os.path.exists(args.wait_for) and time.time() < deadline:
    time.sleep(0.05)
"""


@pytest.fixture
def experiment(workspace: Workspace) -> Experiment:
    return workspace.create_experiment("sweeps")


@pytest.fixture
def trial_spec(share: FileShare, tmp_path: Path) -> HorovodJob:
    local = tmp_path / "trial.py"
    local.write_text(TRIAL)
    share.upload_file(local, "scripts/trial.py", progress=False)
    # the tutorial's fixed --dir: each trial still writes to its own output directory
    return HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/trial.py", mounts=[share.mount()],
                      arguments="--dir $AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/model",
                      std_out_err_path_prefix="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/logs")


def test_a_grid_sweep_is_held_and_driven_by_the_service(experiment: Experiment, cluster: GpuCluster,
                                                        trial_spec: HorovodJob) -> None:
    sweep = experiment.sweep(trial_spec, name="grid", parameters={"lr": [0.001, 0.01], "batch-size": [32, 64]},
                             cluster=cluster, max_concurrent_trials=2)
    assert isinstance(sweep, Sweep) and sweep.state is SweepState.RUNNING and not sweep.driving
    results = sweep.wait(timeout=300)
    assert sweep.state is SweepState.COMPLETED and results.state is SweepState.COMPLETED
    assert sorted(r.trial.name for r in results) == ["grid-0", "grid-1", "grid-2", "grid-3"]
    # parameters under the caller's option names, as the script got them
    assert sorted((r.trial.parameters["lr"], r.trial.parameters["batch-size"]) for r in results) == [
        (0.001, 32), (0.001, 64), (0.01, 32), (0.01, 64)]
    assert all(r.trial.status == "completed" and r.epochs == 2 for r in results)
    best = sweep.best()
    assert best.parameters == {"lr": 0.01, "batch-size": 64}
    assert results.best() is not None and results.best().trial.name == best.name
    assert best.job is not None and best.job.metrics().column("val_accuracy")[-1] == pytest.approx(1.0164)
    assert "reason" in results.columns and "grid-" in str(results)
    # the trials' curves of the objective, as the service recorded them (no request per trial)
    curves = results.plot().axes[0].get_lines()
    assert sorted(line.get_label() for line in curves) == ["grid-0", "grid-1", "grid-2", "grid-3 (best)"]
    assert all(list(line.get_xdata()) == [1, 2] for line in curves)
    # any process finds it through the service
    again = experiment.get_sweep("grid")
    assert again.state is SweepState.COMPLETED and again.best().name == best.name
    assert [s.name for s in experiment.list_sweeps()] == ["grid"]
    # by another metric than the objective, read from the trials' jobs
    assert sweep.best(metric="loss", mode="min").name in {t.name for t in sweep.trials}


def test_watch_prints_the_table_as_it_changes_until_the_sweep_ends(experiment: Experiment, cluster: GpuCluster,
                                                                   trial_spec: HorovodJob,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    sweep = experiment.sweep(trial_spec, name="watched", parameters={"lr": [0.001, 0.002]}, cluster=cluster)
    results = sweep.watch(poll_interval=0.2)
    printed = capsys.readouterr().out
    assert results.state is SweepState.COMPLETED
    assert printed.count("sweep watched: ") >= 2  # printed again as it changed
    assert printed.rstrip().endswith(str(results).rstrip())  # the last table is the final one


def test_the_creating_process_may_exit_at_once(experiment: Experiment, cluster: GpuCluster, trial_spec: HorovodJob,
                                               service: LocalService) -> None:
    """A process creates the sweep and exits at once; a later one finds it completed with its best trial."""
    code = textwrap.dedent(f"""
        from horovod_batchai import FileShare, HorovodJob, Target, Workspace
        target = Target.local(state_dir={str(service.state_dir)!r})
        share = FileShare.get(target, {RG!r}, {ACCOUNT!r}, "myshare")
        spec = HorovodJob(script={trial_spec.script!r}, mounts=[share.mount()], arguments={trial_spec.arguments!r},
                          std_out_err_path_prefix={trial_spec.std_out_err_path_prefix!r})
        sweep = Workspace.get(target, {RG!r}, "batchaidev").get_experiment("sweeps").sweep(
            spec, name="detached", parameters={{"lr": [0.001, 0.002, 0.003]}}, cluster="nc6cluster")
        print(sweep.state.value)
        """)
    created = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "running"
    sweep = experiment.get_sweep("detached")
    sweep.wait(timeout=300)
    assert sweep.state is SweepState.COMPLETED
    assert sweep.best().parameters == {"lr": 0.003}


def test_random_and_bayesian_sweeps_draw_from_distributions(experiment: Experiment, cluster: GpuCluster,
                                                            trial_spec: HorovodJob) -> None:
    random_sweep = experiment.sweep(trial_spec, name="rand", sampling="random", num_trials=3, seed=7,
                                    parameters={"lr": LogUniform(0.001, 0.01), "batch-size": QUniform(16, 64, 16)},
                                    cluster=cluster, max_concurrent_trials=3)
    results = random_sweep.wait(timeout=300)
    assert len(results) == 3 and random_sweep.state is SweepState.COMPLETED
    for row in results:
        assert 0.001 <= row.trial.parameters["lr"] <= 0.01
        assert row.trial.parameters["batch-size"] in (16, 32, 48, 64)
    bayesian = experiment.sweep(trial_spec, name="bayes", sampling="bayesian", num_trials=3, seed=1,
                                parameters={"lr": LogUniform(0.001, 0.01), "batch-size": Choice([32, 64])},
                                cluster=cluster, max_concurrent_trials=1,
                                early_termination=BanditPolicy(slack_factor=0.5),
                                trial_timeout=datetime.timedelta(minutes=5), sweep_timeout=600)
    assert len(bayesian.wait(timeout=300)) == 3
    assert bayesian._record.raw["properties"]["limits"]["trialTimeout"] == "PT5M"


def test_a_sweep_whose_trials_record_no_objective_fails_and_says_why(experiment: Experiment, cluster: GpuCluster,
                                                                     trial_spec: HorovodJob) -> None:
    sweep = experiment.sweep(trial_spec, name="typo", parameters={"lr": [0.001]}, cluster=cluster,
                             metric="val_acuracy")
    results = sweep.wait(timeout=300)
    assert sweep.state is SweepState.FAILED and results.state is SweepState.FAILED
    assert "val_accuracy" in (sweep.status_reason or "")  # names what the trial did record
    with pytest.raises(NotFoundError, match="no best trial"):
        sweep.best()


def test_cancel_stops_the_live_trials_and_delete_removes_the_sweep(experiment: Experiment, cluster: GpuCluster,
                                                                   trial_spec: HorovodJob, share: FileShare) -> None:
    spec = trial_spec.replace(arguments=trial_spec.arguments + " --wait-for $AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/never")
    sweep = experiment.sweep(spec, name="stop", parameters={"lr": [0.001, 0.002, 0.003]}, cluster=cluster,
                             max_concurrent_trials=1)
    sweep.cancel()
    assert sweep.state is SweepState.CANCELLED
    assert all(t.status == "cancelled" and t.reason for t in sweep.trials)
    sweep.cancel()  # again: nothing changes
    sweep.delete()
    with pytest.raises(NotFoundError):
        experiment.get_sweep("stop")


def test_the_same_sweep_again_is_the_same_and_another_under_its_name_a_conflict(
        experiment: Experiment, cluster: GpuCluster, trial_spec: HorovodJob) -> None:
    kwargs = dict(name="same", parameters={"lr": [0.001]}, cluster=cluster)
    first = experiment.sweep(trial_spec, **kwargs)
    second = experiment.sweep(trial_spec, **kwargs)
    assert first.id == second.id
    with pytest.raises(ConflictError):
        experiment.sweep(trial_spec, **{**kwargs, "parameters": {"lr": [0.5]}})
    first.wait(timeout=300)


@pytest.mark.parametrize("kwargs, field", [
    (dict(sampling="bayes"), "sampling"),
    (dict(parameters={"lr": [1, 1]}), "parameters['lr']"),
    (dict(parameters={"lr": [0.1], "l-r": [0.2], "l_r": [0.3]}), "parameters['l_r']"),
    (dict(sampling="grid", parameters={"lr": LogUniform(0.1, 1)}), "parameters['lr']"),
    (dict(sampling="random"), "num_trials"),
    (dict(early_termination="bandit"), "early_termination"),
    (dict(early_stopping=MedianStopping(min_trials=3)), "early_stopping.min_trials"),
    (dict(early_stopping=MedianStopping(), early_termination=BanditPolicy(slack_amount=0.1)), "early_stopping"),
    (dict(sweep_timeout=-1), "sweep_timeout"),
    (dict(name="x" * 55), "name"),
])
def test_bad_sweeps_are_refused_before_anything_is_sent(offline_target, kwargs, field) -> None:
    from horovod_batchai import Experiment as Exp, Workspace as Ws
    experiment = Exp(Ws(offline_target, RG, "batchaidev"), "sweeps")
    spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/s/t.py",
                      mounts=[AzureFileShareMount(account_name=ACCOUNT, azure_file_url=f"https://{ACCOUNT}.file.core.windows.net/myshare",
                                                  relative_mount_path="s", account_key="a2V5")])
    with pytest.raises(InvalidSpecError) as caught:
        experiment.sweep(spec, **{"parameters": {"lr": [0.1]}, "cluster": "c", **kwargs})
    assert caught.value.field == field, caught.value


def test_a_distribution_is_checked_when_made() -> None:
    with pytest.raises(InvalidSpecError, match="values: holds a value twice"):
        Choice([1, 1])
    with pytest.raises(InvalidSpecError) as caught:
        QUniform(1, 0, 1)
    assert caught.value.field == "high"
    with pytest.raises(InvalidSpecError) as caught:
        BanditPolicy()
    assert caught.value.field == "slack_factor"
