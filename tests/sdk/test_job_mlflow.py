"""The SDK reads a job's MLflow run on the local service's real MLflow tracking server, through
MLflow's REST API and the target's own Batch AI client (sync and aio): Job.metrics() of a script
that logs only with ``mlflow.log_metric`` / ``log_param`` (no metrics.csv) -- while it runs and
after --, Job.mlflow_run_id, the run's artifacts listed and downloaded, target.mlflow_tracking_uri,
a sweep of such a script and its best trial; a service with tracking off falls back to metrics.csv
at once."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Iterator

import pytest
from azure.core.pipeline.policies import SansIOHTTPPolicy

from horovod_batchai import (Experiment, FileShare, GpuCluster, HorovodBatchAIError, HorovodJob, InvalidSpecError,
                             Target, Workspace)
from horovod_batchai import aio
from horovod_batchai.local import LocalService


pytest.importorskip("mlflow")
pytestmark = pytest.mark.slow


# Logs with MLflow only: a parameter, two epochs of val_accuracy (step = epoch), a per-step metric,
# a metric logged without a step (MLflow's step 0 each time) and an artifact; waits for the test's
# go-ahead, then logs a third epoch.
MLFLOW_ONLY = """\
import os, time
import mlflow
print("run", os.environ["MLFLOW_RUN_ID"], flush=True)
go = os.path.join(os.environ["AZ_BATCHAI_JOB_MOUNT_ROOT"], "myshare", "go")
mlflow.log_param("learning_rate", "0.01")
for step in range(1, 7):
    mlflow.log_metric("step_loss", 1.0 / step, step=step * 10)
for epoch in range(2):
    mlflow.log_metric("val_accuracy", 0.5 + 0.1 * epoch, step=epoch)
    mlflow.log_metric("noted", 7.0 + epoch)
mlflow.log_text("weights", "model/weights.txt")
mlflow.log_text("hello", "notes.txt")
print("two epochs", flush=True)
while not os.path.exists(go):
    time.sleep(0.1)
mlflow.log_metric("val_accuracy", 0.75, step=2)
mlflow.log_metric("noted", 9.0)
"""


@pytest.fixture
def tracked_target(tracked: LocalService) -> Iterator[Target]:
    with Target.local(service=tracked) as t:
        yield t


def _setup(target: Target, tmp_path: Path) -> tuple[Experiment, GpuCluster, FileShare]:
    workspace = Workspace.create(target, "batchai.horovod", "batchaidev", location="eastus")
    share = FileShare.create(target, "batchai.horovod", "mystorageaccount", "myshare", location="eastus")
    cluster = workspace.create_cluster("nc6cluster", vm_size="Standard_NC6", target_node_count=1,
                                       admin_user_name="demo", ssh_public_key="ssh-rsa AAAAB3Nza test@example")
    cluster.wait_until_ready(timeout=120)
    local = tmp_path / "mlflow_only.py"
    local.write_text(MLFLOW_ONLY)
    share.upload_file(local, "scripts/mlflow_only.py", progress=False)
    return workspace.create_experiment("tracked"), cluster, share


def test_a_script_logging_only_with_mlflow_drives_metrics_and_its_artifacts(tracked: LocalService,
                                                                           tracked_target: Target,
                                                                           tmp_path: Path) -> None:
    experiment, cluster, share = _setup(tracked_target, tmp_path)
    uri = tracked_target.mlflow_tracking_uri
    assert uri == tracked_target.management_endpoint + "/_mlflow"

    spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/mlflow_only.py", mounts=[share.mount()])
    job = experiment.submit("mlflowonly", spec, cluster=cluster)
    with pytest.raises(HorovodBatchAIError, match="has not been looked up yet"):
        job.mlflow_run_id
    run_line = ""
    for text in job.stream("stdout.txt", poll_interval=0.1, timeout=300):
        run_line += text
        if "two epochs" in run_line:
            break
    running = job.metrics()
    assert running.source == "mlflow" and running.execution_state == "running"
    assert running.epochs == [1, 2] and running.column("val_accuracy") == [0.5, 0.6]
    assert running.column("noted") == [7.0, 8.0]  # logged without a step: one epoch per value, in order
    assert running.columns == ("val_accuracy", "noted")  # step_loss is per step: in its history only
    assert [(p.step, p.value) for p in running.history("step_loss")] == [(s * 10, 1.0 / s) for s in range(1, 7)]
    assert running.params == {"learning_rate": "0.01"}
    run_id = run_line.split("run ", 1)[1].split()[0]
    assert job.mlflow_run_id == running.run_id == run_id

    (tmp_path / "go").write_text("")
    share.upload_file(tmp_path / "go", "go", progress=False)
    job.wait(timeout=300)
    done = job.metrics()
    assert done.execution_state == "succeeded" and done.epochs == [1, 2, 3]
    assert done.last("val_accuracy") == 0.75 and done.best("val_accuracy") == 0.75
    assert done.column("noted") == [7.0, 8.0, 9.0]
    assert "metrics.csv" not in {f.name for f in job.list_output_files()}

    # Its artifacts, listed and downloaded through the same door.
    listed = {(a.path, a.is_directory) for a in job.list_artifacts()}
    assert listed == {("model", True), ("notes.txt", False)}
    assert [(a.path, a.size) for a in job.list_artifacts("model")] == [("model/weights.txt", len("weights"))]
    assert job.download_artifacts("notes.txt", tmp_path / "out/").read_text() == "hello"
    everything = job.download_artifacts("", tmp_path / "all")
    assert (everything / "model" / "weights.txt").read_text() == "weights"
    assert (everything / "notes.txt").read_text() == "hello"
    with pytest.raises(InvalidSpecError, match="'nothere.txt' is not among the artifacts"):
        job.download_artifacts("nothere.txt", tmp_path)
    with pytest.raises(InvalidSpecError, match="not an artifact path"):
        job.list_artifacts("../x")

    # The aio twin reads the same run through the aio Batch AI client.
    async def read() -> None:
        async with aio.Target.local(service=tracked) as target:
            assert await target.mlflow_tracking_uri() == uri
            ajob = await (await aio.Workspace.get(target, "batchai.horovod", "batchaidev")).get_experiment(
                "tracked")
            ajob = await ajob.get_job("mlflowonly")
            table = await ajob.metrics()
            assert table == done and table.params == done.params and table.histories == done.histories
            assert ajob.mlflow_run_id == run_id
            assert {a.path for a in await ajob.list_artifacts("model")} == {"model/weights.txt"}
            written = await ajob.download_artifacts("model/weights.txt", tmp_path / "aio.txt")
            assert written.read_text() == "weights"
    asyncio.run(read())


class _Attempts(SansIOHTTPPolicy):  # type: ignore[type-arg]
    """Every attempt sent to the tracking front (a per-retry policy: retries count)."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def on_request(self, request: Any) -> None:
        if "/_mlflow/" in request.http_request.url:
            self.sent.append(request.http_request.url.split("?")[0].rsplit("/_mlflow", 1)[1])


def test_without_tracking_metrics_fall_back_to_the_csv_at_once(service: LocalService, workspace: Workspace,
                                                               share: FileShare, cluster: GpuCluster,
                                                               tmp_path: Path) -> None:
    """The suite's services run with tracking off: the front answers 501 FEATURE_DISABLED, which
    azure-core does not retry (one attempt), and the table is the CSV's; there is no run, so
    artifacts say so."""
    local = tmp_path / "csv.py"
    local.write_text("import os\nopen(os.path.join(os.environ['AZ_BATCHAI_STDOUTERR_DIR'], 'metrics.csv'), 'w')"
                     ".write('epoch,loss\\n0,2.0\\n1,1.0\\n')\n")
    share.upload_file(local, "scripts/csv.py", progress=False)
    workspace.create_experiment("untracked").submit(
        "csvonly", HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/csv.py", mounts=[share.mount()]),
        cluster=cluster).wait(timeout=300)
    attempts = _Attempts()
    with Target.local(service=service, per_retry_policies=[attempts]) as counted:
        job = Workspace(counted, "batchai.horovod", "batchaidev").get_experiment("untracked").get_job("csvonly")
        table = job.metrics()
    assert attempts.sent == ["/api/2.0/mlflow/experiments/get-by-name"]  # once: 501 is not retried
    assert table.source == "metrics.csv" and table.column("loss") == [2.0, 1.0] and table.run_id is None
    assert table.history("loss")[1].step == 1 and job.mlflow_run_id is None
    with pytest.raises(HorovodBatchAIError, match="has no MLflow run"):
        job.list_artifacts()


# The training package of this checkout, run as a job's script (the node runtime's own copy may be another's).
TRAINING = """\
import runpy, sys
sys.path.insert(0, {repo!r})
sys.argv = ["training", "--dir", {out!r}, "--data-dir", {data!r}, "--epochs", "2", "--steps-per-epoch", "3",
            "--log-every-steps", "2", "--warmup-epochs", "0", "--seed", "0"]
runpy.run_module("training", run_name="__main__")
"""


def test_the_training_packages_run_is_its_table(tracked_target: Target, tmp_path: Path) -> None:
    """The training package logs to the job's run on rank 0 (and still writes metrics.csv): the
    table is the run's, with the CSV's epoch numbers, its step metrics, settings and model."""
    from training.synthetic import write_synthetic_cifar10
    data = write_synthetic_cifar10(tmp_path / "cifar-10-batches-py", num_train=400, num_test=100, seed=0)
    experiment, cluster, share = _setup(tracked_target, tmp_path)
    script = tmp_path / "train.py"
    script.write_text(TRAINING.format(repo=str(Path(__file__).resolve().parents[2]), out=str(tmp_path / "out"),
                                      data=str(data)))
    share.upload_file(script, "scripts/train.py", progress=False)
    job = experiment.submit("trained", HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/train.py",
                                                  mounts=[share.mount()]), cluster=cluster)
    job.wait(timeout=600)
    table = job.metrics()
    assert table.source == "mlflow" and table.epochs == [1, 2]
    assert {"loss", "accuracy", "val_loss", "val_accuracy"} <= set(table.columns)
    csv = job.download("metrics.csv", tmp_path / "metrics.csv").read_text().splitlines()
    header = csv[0].split(",")
    for column in ("loss", "val_accuracy"):
        values = [float(line.split(",")[header.index(column)]) for line in csv[1:]]
        assert table.column(column) == pytest.approx(values, rel=1e-5)
    assert [p.step for p in table.history("step_loss")] == [2, 4, 6]
    assert table.params["epochs"] == "2" and table.params["workers"] == "1"
    assert table.column("test_accuracy")[0] is None and table.last("test_accuracy") is not None
    assert [a.path for a in job.list_artifacts("model")] == ["model/keras_cifar10_trained_model.h5"]


# A sweep's trial that logs only with MLflow: its objective grows with --lr.
MLFLOW_TRIAL = """\
import argparse
import mlflow
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, required=True)
args = parser.parse_args()
for epoch in range(2):
    mlflow.log_metric("val_accuracy", args.lr * 10 + epoch / 10, step=epoch)
"""


def test_a_sweep_of_a_script_logging_only_with_mlflow_finds_its_best_trial(tracked_target: Target,
                                                                           tmp_path: Path) -> None:
    experiment, cluster, share = _setup(tracked_target, tmp_path)
    local = tmp_path / "mlflow_trial.py"
    local.write_text(MLFLOW_TRIAL)
    share.upload_file(local, "scripts/mlflow_trial.py", progress=False)
    spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/mlflow_trial.py", mounts=[share.mount()])
    sweep = experiment.sweep(spec, name="logged", parameters={"lr": [0.01, 0.03]}, cluster=cluster,
                             max_concurrent_trials=1)
    results = sweep.wait(timeout=300)
    assert sweep.state.value == "completed", str(results)
    best = sweep.best()
    assert best.parameters == {"lr": 0.03}
    table = best.job.metrics()
    assert table.source == "mlflow" and table.column("val_accuracy") == pytest.approx([0.3, 0.4])
