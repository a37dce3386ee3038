"""Two Horovod workers (``horovodrun -np 2 --gloo``) on the generated dataset.

- A run of 4 epochs: both workers finish with identical weights, rank 0 alone prints and writes
  (each rank is given its own --dir, so anything another rank wrote would show), the model lands
  at the tutorial's path, and accuracy ends well above chance.
- A run killed (SIGKILL to every process, as a lost node) after its second checkpoint, started
  again: it resumes from the newest checkpoint, says so, and loses at most the epoch in progress.
"""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from training_support import (child_env, epochs_started, horovodrun_command, kill_process_tree,
                              metrics_rows, reported_accuracy)

pytestmark = pytest.mark.slow

LAUNCHER = Path(__file__).with_name("rank_dir_launcher.py")
MODEL = ("saved_models", "keras_cifar10_trained_model.h5")
STEPS_PER_EPOCH = 32  # ceil(2000 images / (32 per batch * 2 workers)): each worker reads half


def _same_weights(a: Path, b: Path) -> bool:
    with np.load(a) as first, np.load(b) as second:
        return first.files == second.files and all(
            np.array_equal(first[k], second[k]) for k in first.files)


def test_two_workers_train_on_shards_and_end_identical(cifar_dir, tmp_path):
    base, weights, cwd = tmp_path / "runs", tmp_path / "weights", tmp_path / "cwd"
    cwd.mkdir()
    command = horovodrun_command([str(LAUNCHER), str(base), "--data-dir", str(cifar_dir),
                                  "--epochs", "4", "--warmup-epochs", "1", "--seed", "0",
                                  "--dump-weights-dir", str(weights)])
    result = subprocess.run(command, cwd=cwd, env=child_env(), capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]

    # Both workers finished: each wrote its final weights, last thing before exiting.
    assert sorted(p.name for p in weights.iterdir()) == ["weights-rank0.npz", "weights-rank1.npz"]
    assert _same_weights(weights / "weights-rank0.npz", weights / "weights-rank1.npz")

    # Rank 0 alone printed, and alone wrote into its --dir; rank 1's --dir was never created.
    assert "[0]<stdout>:Test loss:" in result.stdout
    assert "[1]<stdout>:" not in result.stdout
    rank0 = base / "rank0"
    assert not (base / "rank1").exists()
    assert sorted(p.name for p in (rank0 / "checkpoints").iterdir()) == [
        f"checkpoint-{epoch}.h5" for epoch in range(1, 5)]
    assert rank0.joinpath(*MODEL).is_file()
    assert f"Saved trained model at {rank0.joinpath(*MODEL)}" in result.stdout
    assert list(cwd.iterdir()) == []

    # Each worker took half the steps of a whole pass: it read only its shard.
    assert epochs_started(result.stdout) == [1, 2, 3, 4]
    assert result.stdout.count(f"{STEPS_PER_EPOCH}/{STEPS_PER_EPOCH} - ") == 4

    # The saved model is the workers' final model.
    import tensorflow as tf

    saved = tf.keras.models.load_model(rank0.joinpath(*MODEL)).get_weights()
    with np.load(weights / "weights-rank1.npz") as rank1_weights:
        assert all(np.array_equal(a, rank1_weights[f"arr_{i}"]) for i, a in enumerate(saved))

    # Learned: well above the 10% of chance, and the log agrees with the final score.
    accuracy = reported_accuracy(result.stdout)
    assert accuracy > 0.5, result.stdout[-3000:]
    rows = metrics_rows(rank0 / "metrics.csv")
    assert [row["epoch"] for row in rows] == ["0", "1", "2", "3"]
    assert float(rows[-1]["val_accuracy"]) == pytest.approx(accuracy, abs=1e-6)
    assert float(rows[-1]["lr"]) == pytest.approx(2e-4)  # 1e-4 scaled by 2 workers after warm-up


def test_a_killed_run_resumes_from_its_newest_checkpoint(cifar_dir, tmp_path):
    run, weights = tmp_path / "cifar", tmp_path / "weights"
    epochs = 5
    options = ["-m", "training", "--dir", str(run), "--data-dir", str(cifar_dir),
               "--epochs", str(epochs), "--warmup-epochs", "1", "--seed", "0"]

    # First run: killed once its second checkpoint exists.
    first_log = tmp_path / "first.log"
    with open(first_log, "w") as log:
        first = subprocess.Popen(horovodrun_command(options), cwd=tmp_path, env=child_env(),
                                 stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while not (run / "checkpoints" / "checkpoint-2.h5").exists():
            assert first.poll() is None, f"the first run ended early:\n{first_log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, "no second checkpoint after 600 s"
            time.sleep(0.1)
    finally:
        kill_process_tree(first.pid)
    first.wait(timeout=60)
    newest = max(int(p.stem.split("-")[1]) for p in (run / "checkpoints").glob("checkpoint-*.h5"))
    assert 2 <= newest < epochs, f"killed too late to test a resume (checkpoint {newest})"
    started = epochs_started(first_log.read_text())
    assert started[:2] == [1, 2]
    assert max(started) <= newest + 1  # at most the epoch in progress is lost

    # Second run, the same command: it picks up where the checkpoint left off.
    second = subprocess.run(horovodrun_command(options + ["--dump-weights-dir", str(weights)]),
                            cwd=tmp_path, env=child_env(), capture_output=True, text=True,
                            timeout=900)
    assert second.returncode == 0, (second.stdout + second.stderr)[-4000:]
    assert f"Resuming from {run / 'checkpoints' / f'checkpoint-{newest}.h5'}" in second.stdout
    assert f"Starting at epoch {newest + 1} of {epochs}" in second.stdout
    assert epochs_started(second.stdout) == list(range(newest + 1, epochs + 1))

    # Every epoch is in the log once; every checkpoint exists, none half-written.
    rows = metrics_rows(run / "metrics.csv")
    assert [row["epoch"] for row in rows] == [str(epoch) for epoch in range(epochs)]
    # The resumed epoch went on from the checkpoint's weights, not from scratch.
    assert float(rows[newest]["loss"]) < 0.75 * float(rows[0]["loss"])
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == sorted(
        f"checkpoint-{epoch}.h5" for epoch in range(1, epochs + 1))
    assert run.joinpath(*MODEL).is_file()
    # Both workers resumed from the same state: rank 1 got rank 0's restored weights.
    assert _same_weights(weights / "weights-rank0.npz", weights / "weights-rank1.npz")
    assert reported_accuracy(second.stdout) > 0.5
