"""With MLFLOW_TRACKING_URI set, rank 0 logs the run to MLflow (training/tracking.py): the
settings, every epoch's metrics (those of metrics.csv, which stays), step metrics, the model and
the TensorBoard event files; without it, nothing of MLflow happens."""
from __future__ import annotations

import subprocess
import sys

import pytest

from training_support import child_env, metrics_rows

pytestmark = pytest.mark.slow
mlflow = pytest.importorskip("mlflow")


def test_rank_0_logs_params_epoch_and_step_metrics_and_artifacts(cifar_dir, tmp_path, monkeypatch):
    # A file: store, which MLflow 3 keeps in maintenance mode and opens only when told to.
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    store = (tmp_path / "mlruns").as_uri()
    stdouterr = tmp_path / "job" / "stdouterr"
    run = subprocess.run([sys.executable, "-m", "training", "--dir", str(tmp_path / "out"), "--data-dir",
                          str(cifar_dir), "--epochs", "2", "--steps-per-epoch", "4", "--log-every-steps", "2",
                          "--seed", "0", "--warmup-epochs", "0"],
                         cwd=tmp_path, env=child_env(MLFLOW_TRACKING_URI=store, MLFLOW_EXPERIMENT_NAME="cifar",
                                                     AZ_BATCHAI_STDOUTERR_DIR=str(stdouterr)),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]

    client = mlflow.MlflowClient(tracking_uri=store)
    experiment = client.get_experiment_by_name("cifar")
    (logged,) = client.search_runs([experiment.experiment_id])
    assert logged.info.status == "FINISHED"
    assert f"MLflow: logging to run {logged.info.run_id}" in run.stdout
    params = logged.data.params
    assert (params["epochs"], params["batch_size"], params["log_every_steps"], params["workers"]) == ("2", "32", "2", "1")

    # every epoch's metrics, the same numbers as the CSV (which is still written)
    rows = metrics_rows(stdouterr / "metrics.csv")
    assert [row["epoch"] for row in rows] == ["0", "1"]
    for column in ("loss", "accuracy", "val_loss", "val_accuracy", "images_per_second"):
        history = client.get_metric_history(logged.info.run_id, column)
        assert [m.step for m in history] == [0, 1], column
        assert [m.value for m in history] == pytest.approx([float(r[column]) for r in rows], rel=1e-5), column

    # a metric every 2 of the 8 steps, at the global step
    assert [m.step for m in client.get_metric_history(logged.info.run_id, "step_loss")] == [2, 4, 6, 8]
    assert "test_accuracy" in logged.data.metrics
    # at the last epoch's step, so that a table of the run shows them on the last epoch's row
    assert [m.step for m in client.get_metric_history(logged.info.run_id, "test_accuracy")] == [1]

    artifacts = {a.path for a in client.list_artifacts(logged.info.run_id, "model")}
    assert artifacts == {"model/keras_cifar10_trained_model.h5"}
    events = [a.path for a in client.list_artifacts(logged.info.run_id, "tensorboard/train")]
    assert events and all("events.out.tfevents" in p for p in events)


def test_without_a_tracking_uri_mlflow_is_not_even_imported(cifar_dir, tmp_path):
    env = child_env()
    env.pop("MLFLOW_TRACKING_URI", None)
    probe = ("import sys, runpy; sys.argv = ['training', '--dir', 'out', '--data-dir', sys.argv[1], '--epochs', '1',"
             " '--steps-per-epoch', '1', '--verbose', '0'];\n"
             "from training.train import main\nmain()\nprint('mlflow imported:', 'mlflow' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", probe, str(cifar_dir)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "mlflow imported: False" in run.stdout
    assert not (tmp_path / "mlruns").exists()


def test_with_a_tracking_uri_but_no_mlflow_training_goes_on_and_says_what_to_install(cifar_dir, tmp_path):
    # A node runtime without MLflow: `import mlflow` fails as it does where the package is missing.
    blocker = tmp_path / "no-mlflow"
    blocker.mkdir()
    (blocker / "mlflow.py").write_text("raise ImportError('No module named mlflow')\n")
    env = child_env(MLFLOW_TRACKING_URI="https://127.0.0.1:9/_mlflow")
    env["PYTHONPATH"] = f"{blocker}:{env['PYTHONPATH']}"
    run = subprocess.run([sys.executable, "-m", "training", "--dir", str(tmp_path / "out"), "--data-dir",
                          str(cifar_dir), "--epochs", "1", "--steps-per-epoch", "1", "--verbose", "0"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "the mlflow package is missing: install MLflow's logging client" in run.stderr
    assert "mlflow-skinny==3.17.*" in run.stderr
    assert len(metrics_rows(tmp_path / "out" / "metrics.csv")) == 1
