"""Where a job's metrics go, so that the SDK finds them for any job on every place it runs.

On a node, the service sets ``$AZ_BATCHAI_STDOUTERR_DIR``: the job's own output directory, the one
that holds ``stdout.txt`` and ``stderr.txt`` (Batch AI and the local service set it; on Azure ML the
job's command does). Rank 0 writes there, after every epoch:

- ``metrics.csv``: Keras' ``CSVLogger`` format -- a header row naming the columns, ``epoch`` first
  (0 for the first epoch), then one row of numbers per finished epoch. ``Job.metrics()`` reads it.
- ``tensorboard/train`` and ``tensorboard/validation``: TensorBoard event files of the same
  metrics, flushed after every epoch so that a running job's curves can be synced.

Any training script reports its metrics the same way; a Keras script needs two lines and nothing
but TensorFlow on the node::

    if hvd.rank() == 0 and "AZ_BATCHAI_STDOUTERR_DIR" in os.environ:
        callbacks.append(tf.keras.callbacks.CSVLogger(os.environ["AZ_BATCHAI_STDOUTERR_DIR"] + "/metrics.csv"))

Outside a job (no ``$AZ_BATCHAI_STDOUTERR_DIR``) nothing is written here; ``<dir>/metrics.csv``
(the run directory's own log, used for restarts) is written either way.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import tensorflow as tf

__all__ = ["JOB_OUTPUT_VARIABLE", "METRICS_FILE", "TENSORBOARD_DIR", "job_output_dir", "EventFiles"]

#: the variable naming the job's output directory on a node
JOB_OUTPUT_VARIABLE = "AZ_BATCHAI_STDOUTERR_DIR"
METRICS_FILE = "metrics.csv"
TENSORBOARD_DIR = "tensorboard"


def job_output_dir() -> Optional[Path]:
    """The job's output directory on this node, or None outside a job."""
    value = os.environ.get(JOB_OUTPUT_VARIABLE, "").strip()
    return Path(value) if value else None


class EventFiles(tf.keras.callbacks.Callback):
    """TensorBoard event files of each epoch's metrics, in TensorBoard's own layout.

    ``<log_dir>/train`` holds the training metrics (``epoch_loss``, ``epoch_accuracy``,
    ``epoch_lr``, ...), ``<log_dir>/validation`` the ``val_`` ones under the same names, so that
    TensorBoard draws training and validation on one chart. Unlike Keras' ``TensorBoard`` callback
    it writes no graph or profile, and flushes after every epoch, so a running job's files are
    complete up to its last epoch.
    """

    def __init__(self, log_dir: Path):
        super().__init__()
        self.log_dir = Path(log_dir)
        self._writers: dict = {}

    def _writer(self, name: str):
        if name not in self._writers:
            self._writers[name] = tf.summary.create_file_writer(str(self.log_dir / name))
        return self._writers[name]

    def on_epoch_end(self, epoch, logs=None):
        for key, value in (logs or {}).items():
            try:
                number = float(value)
            except (TypeError, ValueError):
                continue
            split, name = ("validation", key[4:]) if key.startswith("val_") else ("train", key)
            with self._writer(split).as_default():
                tf.summary.scalar(f"epoch_{name}", number, step=epoch)
        for writer in self._writers.values():
            writer.flush()

    def on_train_end(self, logs=None):
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
