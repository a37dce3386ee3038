"""In a job, rank 0 writes each epoch's metrics to the job's output directory: a CSV row and
TensorBoard event files (training/metrics.py); outside a job it writes neither there."""
from __future__ import annotations

import subprocess
import sys

import pytest

from training_support import child_env, horovodrun_command, metrics_rows

pytestmark = pytest.mark.slow

COLUMNS = {"epoch", "loss", "accuracy", "val_loss", "val_accuracy", "lr", "images_per_second", "epoch_seconds"}


def _event_scalars(directory):
    """{tag: [(step, value), ...]} of the event files under ``directory``, read by TensorFlow."""
    import tensorflow as tf

    found: dict = {}
    for path in sorted(directory.glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                number = float(tf.make_ndarray(value.tensor)) if value.HasField("tensor") else value.simple_value
                found.setdefault(value.tag, []).append((event.step, number))
    return found


def test_rank_0_records_every_epoch_in_the_jobs_output_directory(cifar_dir, tmp_path):
    stdouterr = tmp_path / "job" / "stdouterr"
    run = subprocess.run(horovodrun_command(["-m", "training", "--dir", str(tmp_path / "out"), "--data-dir",
                                             str(cifar_dir), "--epochs", "2", "--steps-per-epoch", "3",
                                             "--seed", "0"]),
                         env=child_env(AZ_BATCHAI_STDOUTERR_DIR=str(stdouterr)), capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]

    rows = metrics_rows(stdouterr / "metrics.csv")
    assert [row["epoch"] for row in rows] == ["0", "1"]
    assert COLUMNS <= set(rows[0]), rows[0]
    assert all(float(row["images_per_second"]) > 0 and float(row["epoch_seconds"]) > 0 for row in rows)
    # the same rows as the run directory's own log: one writer, rank 0
    assert rows == metrics_rows(tmp_path / "out" / "metrics.csv")

    train = _event_scalars(stdouterr / "tensorboard" / "train")
    validation = _event_scalars(stdouterr / "tensorboard" / "validation")
    assert [step for step, _ in train["epoch_loss"]] == [0, 1]
    assert [v for _, v in train["epoch_loss"]] == pytest.approx([float(r["loss"]) for r in rows], rel=1e-5)
    assert [v for _, v in validation["epoch_accuracy"]] == pytest.approx(
        [float(r["val_accuracy"]) for r in rows], rel=1e-5)
    assert "epoch_lr" in train and "epoch_images_per_second" in train
    # only rank 0 writes: one event file per split
    assert len(list((stdouterr / "tensorboard" / "train").glob("events.out.tfevents.*"))) == 1


def test_outside_a_job_only_the_run_directory_gets_the_log(cifar_dir, tmp_path):
    env = child_env()
    env.pop("AZ_BATCHAI_STDOUTERR_DIR", None)
    run = subprocess.run([sys.executable, "-m", "training",
                          "--dir", str(tmp_path / "out"), "--data-dir", str(cifar_dir), "--epochs", "1",
                          "--steps-per-epoch", "2", "--seed", "0"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert len(metrics_rows(tmp_path / "out" / "metrics.csv")) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
