"""What a run leaves in ``<dir>`` for a restart: checkpoints and the per-epoch metrics log.

- ``<dir>/checkpoints/checkpoint-<epoch>.h5``: the whole model (weights and optimizer state) after
  epoch ``<epoch>`` (1-based, as Keras prints it). Each is written to a temporary name and renamed,
  so a run killed while saving never leaves a truncated checkpoint behind for the restart to trip on.
- ``<dir>/metrics.csv``: one row per finished epoch. A restart from checkpoint ``k`` drops the rows
  of epochs after ``k`` (run again from there), so the log always matches the weights.

Only rank 0 writes here or reads from here; the others learn the state from it (see train.py).
"""
from __future__ import annotations

import csv
import os
import re
import warnings
from pathlib import Path
from typing import Optional, Tuple

import tensorflow as tf

__all__ = ["CHECKPOINT_DIR", "checkpoint_path", "newest_checkpoint", "trim_metrics_log",
           "save_h5", "CheckpointCallback"]

CHECKPOINT_DIR = "checkpoints"
_CHECKPOINT_NAME = re.compile(r"^checkpoint-(\d+)\.h5$")


def checkpoint_path(run_dir, epoch: int) -> Path:
    return Path(run_dir) / CHECKPOINT_DIR / f"checkpoint-{epoch}.h5"


def newest_checkpoint(run_dir) -> Optional[Tuple[int, Path]]:
    """(epoch, path) of the checkpoint with the highest epoch number, or None."""
    directory = Path(run_dir) / CHECKPOINT_DIR
    if not directory.is_dir():
        return None
    found = [(int(m.group(1)), directory / m.group(0))
             for m in map(_CHECKPOINT_NAME.match, os.listdir(directory)) if m]
    return max(found) if found else None


def trim_metrics_log(path, epochs: int) -> None:
    """Keep the header and the rows of the first `epochs` epochs of a Keras CSVLogger file."""
    path = Path(path)
    if not path.is_file():
        return
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows or "epoch" not in rows[0]:
        return
    column = rows[0].index("epoch")  # CSVLogger counts epochs from 0
    kept = [rows[0]] + [row for row in rows[1:] if row and int(row[column]) < epochs]
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        csv.writer(f).writerows(kept)
    tmp.replace(path)


def save_h5(model: tf.keras.Model, path) -> None:
    """Save the whole model as HDF5 -- the tutorial's format -- at `path`, atomically."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    with warnings.catch_warnings():
        # Keras calls HDF5 "legacy"; it is the format the tutorial's users download and load.
        warnings.filterwarnings("ignore", message=".*HDF5 file via `model.save",
                                category=UserWarning)
        model.save(partial, save_format="h5")
    partial.replace(path)


class CheckpointCallback(tf.keras.callbacks.Callback):
    """Saves the whole model after every epoch, atomically; keeps the newest `keep` (None: all)."""

    def __init__(self, run_dir, *, keep: Optional[int] = None):
        super().__init__()
        self.run_dir = Path(run_dir)
        self.keep = keep

    def on_epoch_end(self, epoch, logs=None):
        path = checkpoint_path(self.run_dir, epoch + 1)
        path.parent.mkdir(parents=True, exist_ok=True)
        save_h5(self.model, path)
        if self.keep is not None:
            self._prune(newest_epoch=epoch + 1)

    def _prune(self, newest_epoch: int) -> None:
        for name in os.listdir(self.run_dir / CHECKPOINT_DIR):
            match = _CHECKPOINT_NAME.match(name)
            if match and int(match.group(1)) <= newest_epoch - self.keep:
                (self.run_dir / CHECKPOINT_DIR / name).unlink(missing_ok=True)
