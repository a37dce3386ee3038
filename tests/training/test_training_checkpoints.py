"""Checkpoints and the metrics log: what a restart finds, and what a kill cannot corrupt."""
from __future__ import annotations

import csv

import numpy as np
import tensorflow as tf

from training import checkpoints


def test_the_newest_checkpoint_is_the_highest_epoch_not_the_newest_file(tmp_path):
    directory = tmp_path / "checkpoints"
    directory.mkdir()
    for name in ["checkpoint-9.h5", "checkpoint-10.h5", "checkpoint-2.h5",
                 "checkpoint-11.h5.partial", "checkpoint-x.h5", "notes.txt"]:
        (directory / name).write_bytes(b"")
    (directory / "checkpoint-2.h5").touch()  # the most recently modified
    assert checkpoints.newest_checkpoint(tmp_path) == (10, directory / "checkpoint-10.h5")


def test_no_checkpoint_directory_means_a_fresh_start(tmp_path):
    assert checkpoints.newest_checkpoint(tmp_path) is None
    (tmp_path / "checkpoints").mkdir()
    assert checkpoints.newest_checkpoint(tmp_path) is None


def test_a_restart_drops_the_log_rows_of_epochs_it_runs_again(tmp_path):
    log = tmp_path / "metrics.csv"
    with open(log, "w", newline="") as f:
        csv.writer(f).writerows([["epoch", "loss"], [0, 2.0], [1, 1.5], [2, 1.2], [3, 1.1]])
    checkpoints.trim_metrics_log(log, 2)  # resuming after checkpoint-2: epochs 0 and 1 stay
    with open(log, newline="") as f:
        assert list(csv.reader(f)) == [["epoch", "loss"], ["0", "2.0"], ["1", "1.5"]]
    checkpoints.trim_metrics_log(tmp_path / "absent.csv", 1)  # nothing to trim: no error


def _tiny_model() -> tf.keras.Model:
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2, name="out")])
    model.compile(loss="mse", optimizer=tf.keras.optimizers.legacy.RMSprop(1e-3))
    return model


def test_the_callback_saves_every_epoch_atomically_and_keeps_the_newest(tmp_path):
    model = _tiny_model()
    x, y = np.ones((8, 4), np.float32), np.zeros((8, 2), np.float32)
    model.fit(x, y, epochs=4, verbose=0,
              callbacks=[checkpoints.CheckpointCallback(tmp_path, keep=2)])
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == [
        "checkpoint-3.h5", "checkpoint-4.h5"]  # no .partial file left, older ones pruned
    restored = tf.keras.models.load_model(tmp_path / "checkpoints" / "checkpoint-4.h5")
    for a, b in zip(restored.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    # The optimizer state travels too: 4 epochs of one step each.
    assert int(restored.optimizer.iterations.numpy()) == 4
