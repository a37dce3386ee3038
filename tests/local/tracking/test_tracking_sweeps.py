"""The local sweep driver reads a trial's metrics from its job's MLflow run, on the real MLflow
tracking server: a trial script that logs only with ``mlflow.log_metric`` (no metrics.csv) drives
the sweep to its best trial, seen through the sweep resource's REST (``bestTrial``); a per-step
metric logged before the objective is not taken for a misspelt objective while the run goes on;
a misspelt objective is reported once a trial's run has ended, naming what it logged."""
from __future__ import annotations


import pytest

from horovod_batchai.local import LocalService

from jobs_support import make_lab
from sweeps_support import sweep_body

pytest.importorskip("mlflow")
pytestmark = pytest.mark.slow


#: logs with MLflow only: a per-step metric and the first epoch's loss first, then (after a pause in
#: which the driver looks at the run: it must not take the objective's absence for a misspelling
#: while the run goes on) --epochs values of score = 1 - (x - 0.3)^2 at step = epoch, as --metric-name
MLFLOW_TRIAL = r'''
import argparse, time
import mlflow
p = argparse.ArgumentParser()
p.add_argument("--x", type=float, required=True)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--metric-name", default="score")
a = p.parse_args()
mlflow.log_param("x", a.x)
mlflow.log_metric("step_loss", 1.0, step=10)
mlflow.log_metric("loss", 0.5, step=0)
time.sleep(1.5)  # the driver sees the run with its per-step metric only
score = 1 - (a.x - 0.3) ** 2
for epoch in range(a.epochs):
    mlflow.log_metric(a.metric_name, score - 0.1 * (a.epochs - 1 - epoch), step=epoch)
'''


@pytest.fixture
def service(tracked: LocalService) -> LocalService:
    """The service the local fixtures use (``batchai``) is one with MLflow tracking on."""
    return tracked


@pytest.fixture
def lab(service, batchai):
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=2)
    lab.upload("sweep/trial.py", MLFLOW_TRIAL)
    return lab


def _body(lab, *, xs: list[float], metric: str = "score", args: str = "") -> dict:
    body = sweep_body(lab, space={"x": ["choice", [xs]]}, metric=metric, limits={"maxConcurrentTrials": 2})
    body["properties"]["trial"]["environmentVariables"] = []
    body["properties"]["trial"]["customToolkitSettings"]["commandLine"] = (
        f"python $AZ_BATCHAI_JOB_MOUNT_ROOT/afs/sweep/trial.py --x ${{{{search_space.x}}}} {args}")
    return body


def test_a_trial_logging_only_with_mlflow_drives_the_sweep_to_its_best_trial(lab, sweeps):
    assert sweeps.put("tracked", _body(lab, xs=[0.1, 0.3, 0.6])).status_code == 201
    props = sweeps.wait_status("tracked", timeout=300)["properties"]
    assert props["status"] == "completed", (props.get("statusReason"), [t.get("reason") for t in props["trials"]])
    assert props["bestTrial"]["name"] == "tracked-1" and props["bestTrial"]["parameters"] == {"x": 0.3}
    assert props["bestTrial"]["objectiveValue"] == pytest.approx(1.0)
    trials = sorted(props["trials"], key=lambda t: t["index"])
    assert [t["status"] for t in trials] == ["completed"] * 3
    for trial in trials:
        score = 1 - (trial["parameters"]["x"] - 0.3) ** 2
        assert trial["metrics"] == ["loss", "score"]  # step_loss is per step, not an epoch metric
        assert trial["epochs"] == 2 and trial["metricValues"] == pytest.approx([score - 0.1, score])
        files = lab.files(trial["name"], "stdouterr")
        assert "metrics.csv" not in files  # the run was the only record


def test_a_misspelt_objective_is_reported_once_the_trials_run_has_ended(lab, sweeps):
    assert sweeps.put("typo", _body(lab, xs=[0.3], metric="acuracy", args="--metric-name accuracy")
                      ).status_code == 201
    props = sweeps.wait_status("typo", timeout=300)["properties"]
    assert props["status"] == "failed" and props["bestTrial"] is None
    assert "'acuracy' is not among the metrics trial typo-0 records (accuracy, loss)" in props["statusReason"]
    [trial] = props["trials"]
    # its run ended with its script; its job may still have been ending (then the sweep's end cancelled it)
    assert trial["status"] in ("failed", "cancelled"), trial
