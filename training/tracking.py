"""MLflow logging on rank 0, when the job has an MLflow tracking server.

A job gets ``MLFLOW_TRACKING_URI`` from the local service and from Azure ML (with
``MLFLOW_RUN_ID``: the run the service made for the job, which this one continues). Then rank 0
logs, besides ``metrics.csv``:

- the run's parameters: the settings (config.py), the number of workers, the steps per epoch;
- every epoch's metrics, the columns of ``metrics.csv`` (``loss``, ``accuracy``, ``val_loss``,
  ``val_accuracy``, ``lr``, ``images_per_second``, ``epoch_seconds``), at step = epoch;
- every ``log_every_steps`` optimizer steps, ``step_loss`` and ``step_accuracy`` at step = the
  global step;
- the trained model's ``test_loss`` and ``test_accuracy``, at the last epoch's step;
- the trained model (``model/``) and the job's TensorBoard event files (``tensorboard/``) as artifacts.

Without ``MLFLOW_TRACKING_URI`` nothing here runs and nothing is imported. Metrics are logged
asynchronously (MLflow's own queue), and the per-step hook reads the step's results only every
``log_every_steps`` steps, so that Keras is not made to wait for every step; the figure is in
benchmarks/bench_training_mlflow.py.
"""
from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import Any, Optional

import tensorflow as tf

__all__ = ["TRACKING_URI_VARIABLE", "INSTALL_HINT", "tracking_wanted", "MlflowRun", "StepMetrics", "EpochMetrics"]

TRACKING_URI_VARIABLE = "MLFLOW_TRACKING_URI"
INSTALL_HINT = ("install MLflow's logging client on the node (pip install 'mlflow-skinny==3.17.*'; "
                "the training extra of horovod-batchai has it)")


def tracking_wanted() -> bool:
    return bool(os.environ.get(TRACKING_URI_VARIABLE, "").strip())


def _numbers(logs: Optional[dict]) -> dict[str, float]:
    found = {}
    for key, value in (logs or {}).items():
        try:
            found[key] = float(value)
        except (TypeError, ValueError):
            continue
    return found


class MlflowRun:
    """Rank 0's MLflow run: :meth:`open` (None where tracking is not wanted or MLflow is
    missing, saying so), the callbacks, artifacts, :meth:`close`."""

    def __init__(self, mlflow: Any) -> None:
        self.mlflow = mlflow

    @classmethod
    def open(cls, say=print) -> Optional["MlflowRun"]:
        if not tracking_wanted():
            return None
        try:
            import mlflow
        except ImportError:
            print(f"warning: {TRACKING_URI_VARIABLE} is set but the mlflow package is missing: {INSTALL_HINT}. "
                  "Training goes on without MLflow.", file=sys.stderr)
            return None
        run = mlflow.start_run()  # continues MLFLOW_RUN_ID's run when the service made one
        say(f"MLflow: logging to run {run.info.run_id}")
        return cls(mlflow)

    def log_params(self, config: Any, **more: Any) -> None:
        params = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
        params.update(more)
        try:
            self.mlflow.log_params({k: "" if v is None else str(v) for k, v in params.items()})
        except self.mlflow.exceptions.MlflowException as exc:
            # A run resumed with other settings (more workers): MLflow keeps a parameter's first value.
            print(f"warning: MLflow kept the run's earlier parameters: {exc}", file=sys.stderr)

    def callbacks(self, *, every: int, start_step: int = 0) -> list:
        return [StepMetrics(self.mlflow, every=every, start_step=start_step), EpochMetrics(self.mlflow)]

    def log_artifacts(self, model_path: Path, tensorboard_dir: Optional[Path]) -> None:
        if Path(model_path).is_file():
            self.mlflow.log_artifact(str(model_path), artifact_path="model")
        if tensorboard_dir is not None and Path(tensorboard_dir).is_dir():
            self.mlflow.log_artifacts(str(tensorboard_dir), artifact_path="tensorboard")

    def close(self, status: str = "FINISHED") -> None:
        self.mlflow.flush_async_logging()
        self.mlflow.end_run(status=status)


class StepMetrics(tf.keras.callbacks.Callback):
    """``step_<metric>`` every ``every`` steps, at the global step."""

    def __init__(self, mlflow: Any, *, every: int, start_step: int = 0):
        super().__init__()
        self.mlflow = mlflow
        self.every = every
        self.step = start_step
        # Keras hands this callback the step's results as tensors, without waiting for them; they
        # are read (which waits) only on the steps that are logged.
        self._supports_tf_logs = True

    def on_train_batch_end(self, batch, logs=None):
        self.step += 1
        if self.step % self.every:
            return
        values = {f"step_{k}": v for k, v in _numbers(logs).items()}
        if values:
            self.mlflow.log_metrics(values, step=self.step, synchronous=False)


class EpochMetrics(tf.keras.callbacks.Callback):
    """Each epoch's metrics (those of ``metrics.csv``), at step = the epoch (0 for the first)."""

    def __init__(self, mlflow: Any):
        super().__init__()
        self.mlflow = mlflow

    def on_epoch_end(self, epoch, logs=None):
        values = _numbers(logs)
        if values:
            self.mlflow.log_metrics(values, step=epoch, synchronous=False)
