"""The trainer as one process, without horovodrun: the tutorial's script, outputs and errors."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from training_support import REPO, metrics_rows, reported_accuracy, run_python

pytestmark = pytest.mark.slow

SCRIPT = REPO / "training" / "cifar_cnn_distributed.py"
MODEL = ("saved_models", "keras_cifar10_trained_model.h5")


def test_the_tutorials_script_runs_by_path_and_writes_where_the_tutorial_did(cifar_dir, tmp_path):
    out, cwd = tmp_path / "cifar", tmp_path / "cwd"
    cwd.mkdir()
    result = run_python([str(SCRIPT), f"--dir={out}", "--data-dir", str(cifar_dir), "--epochs", "2",
                         "--steps-per-epoch", "5", "--seed", "0"], cwd=cwd)
    assert result.returncode == 0, result.stderr[-3000:]
    model_path = out.joinpath(*MODEL)
    expected_lines = ["x_train shape: (2000, 32, 32, 3)", "2000 train samples", "500 test samples",
                      "Using real-time data augmentation.", "Starting at epoch 1 of 2", "Epoch 1/2",
                      "Epoch 2/2", f"Saved trained model at {model_path} ", "Test loss: ",
                      "Test accuracy: "]
    positions = [result.stdout.find(line) for line in expected_lines]
    assert -1 not in positions and positions == sorted(positions), result.stdout
    assert "5/5" in result.stdout  # --steps-per-epoch

    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["checkpoint-1.h5",
                                                                      "checkpoint-2.h5"]
    assert [row["epoch"] for row in metrics_rows(out / "metrics.csv")] == ["0", "1"]
    assert list(cwd.iterdir()) == []  # nothing in the current directory (the tutorial wrote there)

    # The saved model is plain Keras: it loads without Horovod and scores what the run printed.
    import tensorflow as tf
    from training.data import load_cifar10

    model = tf.keras.models.load_model(model_path)
    cifar = load_cifar10(cifar_dir)
    predictions = model.predict(cifar.x_test.astype("float32") / 255, batch_size=32, verbose=0)
    accuracy = float(np.mean(predictions.argmax(axis=1) == cifar.y_test))
    # Within one image of 500, in case float rounding breaks a near-tie differently.
    assert accuracy == pytest.approx(reported_accuracy(result.stdout), abs=1.01 / 500)


def test_train_returns_its_metrics(cifar_dir, tmp_path):
    code = ("import json, sys; from training import TrainConfig; from training.train import train; "
            "m = train(TrainConfig(dir=sys.argv[1], data_dir=sys.argv[2], epochs=2, "
            "steps_per_epoch=4, augmentation=False, seed=1, verbose=0)); "
            "print('METRICS ' + json.dumps(m))")
    result = run_python(["-c", code, str(tmp_path / "out"), str(cifar_dir)], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Not using data augmentation." in result.stdout
    metrics = json.loads(result.stdout.split("METRICS ", 1)[1])
    assert metrics["workers"] == 1 and metrics["start_epoch"] == 1 and metrics["epochs_run"] == 2
    assert metrics["model_path"] == str(tmp_path.joinpath("out", *MODEL))
    assert set(metrics["history"]) >= {"loss", "accuracy", "val_loss", "val_accuracy", "lr"}
    assert all(len(values) == 2 for values in metrics["history"].values())
    assert metrics["images_per_second"] > 0
    # The final score is the last validation on the same test set with the same weights.
    assert metrics["test_accuracy"] == pytest.approx(metrics["history"]["val_accuracy"][-1], abs=1e-6)
    assert metrics["test_loss"] == pytest.approx(metrics["history"]["val_loss"][-1], rel=1e-4)
    rows = metrics_rows(tmp_path / "out" / "metrics.csv")
    assert [float(r["val_accuracy"]) for r in rows] == pytest.approx(metrics["history"]["val_accuracy"])


def test_a_truncated_batch_stops_the_run_with_a_message_not_a_traceback(cifar_dir, tmp_path):
    data = shutil.copytree(cifar_dir, tmp_path / "data")
    batch = data / "data_batch_3"
    batch.write_bytes(batch.read_bytes()[:1000])
    result = run_python(["-m", "training", "--dir", str(tmp_path / "out"), "--data-dir", str(data)],
                        cwd=tmp_path)
    assert result.returncode == 1
    assert f"error: {batch}: truncated" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()  # failed before writing anything


def test_a_dir_that_cannot_be_written_fails_before_training(cifar_dir, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = run_python(["-m", "training", "--dir", str(blocker / "out"), "--data-dir",
                         str(cifar_dir)], cwd=tmp_path)
    assert result.returncode == 1
    assert f"error: dir: cannot write to {blocker / 'out'}" in result.stderr
    assert "Epoch 1/" not in result.stdout and "Traceback" not in result.stderr
