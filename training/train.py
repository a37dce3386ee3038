"""Distributed training of the tutorial's Keras CIFAR-10 CNN with Horovod.

Run it under Horovod, one process per GPU (``horovodrun -np 4 -H host1:2,host2:2 python -m training
--dir DIR``), or as a single process (``python -m training --dir DIR``), which is a run of one
worker. Every step that Horovod adds or changes is marked ``# Horovod:``.

The run, in order:

1. Horovod starts; each process takes one GPU (or a share of the CPU cores).
2. Data: CIFAR-10 is read (downloaded first if needed, by one process per node); each worker
   trains on its own shard, 1/size of the training images, so an epoch is one pass over the data
   by all workers together (the tutorial gave every worker all the images instead; see config.py).
3. Model: rank 0 looks for the newest checkpoint in ``<dir>/checkpoints``; all workers agree on
   the epoch to start from, and start from rank 0's weights and optimizer state.
4. Training: RMSprop at lr * size, reached by a warm-up, gradients averaged over the workers,
   metrics averaged at the end of every epoch; rank 0 writes a checkpoint and a row of
   ``<dir>/metrics.csv`` after every epoch, and in a job the same row to the job's own
   ``metrics.csv`` and TensorBoard event files (see metrics.py).
5. Results: rank 0 saves the model at ``<dir>/saved_models/keras_cifar10_trained_model.h5``; the
   workers score their shards of the test set and the totals give the test loss and accuracy,
   which `train` returns.
6. With MLFLOW_TRACKING_URI set (a job of the local service or of Azure ML), rank 0 also logs the
   settings, every epoch's metrics, step metrics, the model and the event files to MLflow
   (tracking.py).

Only rank 0 prints and writes files; importing this module starts nothing.
"""
from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

import horovod.tensorflow.keras as hvd
import numpy as np
from horovod.tensorflow import broadcast_variables
import tensorflow as tf

from training import checkpoints, metrics, pipeline, tracking
from training.config import ConfigError, TrainConfig, parse_args
from training.data import Cifar10, DataError, download_cifar10, find_cifar10, load_cifar10
from training.model import build_model

__all__ = ["train", "main", "MODEL_NAME", "SAVED_MODELS_DIR", "METRICS_LOG"]

SAVED_MODELS_DIR = "saved_models"             # the tutorial's layout under --dir
MODEL_NAME = "keras_cifar10_trained_model.h5"
METRICS_LOG = "metrics.csv"


def train(config: TrainConfig) -> dict:
    """Train, save and score the model as configured; return the metrics (the same on every rank)."""
    # Horovod: initialize Horovod (without horovodrun: one worker, rank 0 of size 1).
    hvd.init()
    _pin_device()
    chief = hvd.rank() == 0
    say = print if chief else _silent
    if config.seed is not None:
        tf.keras.utils.set_random_seed(config.seed + hvd.rank())
    worker_seed = None if config.seed is None else config.seed + hvd.rank()

    # --- Data -------------------------------------------------------------------------------
    data = _load_data(config.data_dir)
    say("x_train shape:", data.x_train.shape)
    say(data.x_train.shape[0], "train samples")
    say(data.x_test.shape[0], "test samples")

    # Horovod: each worker trains on its own shard of the training set, so the workers of one
    # epoch see every image once, and one epoch takes 1/size of the steps.
    train_data = pipeline.training_dataset(
        data.x_train, data.y_train, batch_size=config.batch_size, num_shards=hvd.size(),
        shard_index=hvd.rank(), augmentation=config.augmentation, seed=worker_seed)
    steps_per_epoch = config.steps_per_epoch or math.ceil(
        len(data.x_train) / (config.batch_size * hvd.size()))
    # Horovod: each worker also validates on its shard of the test set (averaged below).
    validation_data = pipeline.evaluation_dataset(
        data.x_test, data.y_test, batch_size=config.batch_size, num_shards=hvd.size(),
        shard_index=hvd.rank())
    say("Using real-time data augmentation." if config.augmentation
        else "Not using data augmentation.")

    # --- Model, or the checkpoint to resume from --------------------------------------------
    # Horovod: rank 0 alone looks for the newest checkpoint, and broadcasts its epoch so that
    # every worker starts at the same epoch.
    if chief:
        _make_run_dir(config.dir)
    found = checkpoints.newest_checkpoint(config.dir) if chief else None
    start_epoch = int(hvd.broadcast(found[0] if found else 0, root_rank=0, name="start_epoch"))

    # Horovod: scale the learning rate by the number of workers, since the global batch is
    # size times larger (the warm-up below gets there gradually).
    scaled_lr = config.lr * hvd.size()
    model = build_model(data.x_train.shape[1:], len(data.label_names))
    # The tutorial's optimizer: RMSprop with a time-based decay (Keras 2's legacy class, whose
    # state HDF5 checkpoints hold).
    optimizer = tf.keras.optimizers.legacy.RMSprop(learning_rate=scaled_lr, decay=config.lr_decay)
    # Horovod: average the gradients of all workers with an allreduce before each update.
    optimizer = hvd.DistributedOptimizer(optimizer)
    model.compile(loss="sparse_categorical_crossentropy", optimizer=optimizer,
                  metrics=["accuracy"])
    _create_optimizer_state(model)
    if found:
        saved = tf.keras.models.load_model(found[1])
        model.set_weights(saved.get_weights())
        model.optimizer.set_weights(saved.optimizer.get_weights())
        say(f"Resuming from {found[1]}")
    # Horovod: start every worker from rank 0's weights and optimizer state (random, or the
    # checkpoint's). This is BroadcastGlobalVariablesCallback's job, done before the first step
    # instead of after it: that callback lets the first step average a gradient taken at the
    # checkpoint's weights with gradients taken at other workers' random ones, and it hangs on
    # resume when rank 0's variables were loaded under other names than the others' were built.
    broadcast_variables(model.variables + model.optimizer.variables(), root_rank=0)

    # Rank 0 logs to MLflow when the job has a tracking server (see tracking.py).
    tracked = tracking.MlflowRun.open(say) if chief else None
    if tracked is not None:
        tracked.log_params(config, workers=hvd.size(), steps_per_epoch_used=steps_per_epoch)

    callbacks = [
        # Horovod: average the metrics over the workers at the end of every epoch, before they
        # are printed, logged or checkpointed.
        hvd.callbacks.MetricAverageCallback(),
    ]
    if config.warmup_epochs:
        # Horovod: warm up from lr to lr * size over the first epochs; a large learning rate
        # from the first step tends to diverge (Goyal et al., 2017).
        callbacks.append(hvd.callbacks.LearningRateWarmupCallback(
            initial_lr=scaled_lr, warmup_epochs=config.warmup_epochs, momentum_correction=False,
            steps_per_epoch=steps_per_epoch, verbose=1 if chief and config.verbose else 0))
    # Horovod: after the warm-up, hold lr * size -- also after a restart with another number
    # of workers, whose checkpoint holds the old rate.
    callbacks.append(hvd.callbacks.LearningRateScheduleCallback(
        initial_lr=scaled_lr, multiplier=1.0, start_epoch=config.warmup_epochs,
        momentum_correction=False))
    callbacks.append(_Throughput(images_per_step=config.batch_size * hvd.size()))
    if chief:
        # Horovod: the metrics log and checkpoints on rank 0 only, so that workers do not
        # overwrite each other's files. The log row comes first: a run killed between the two
        # resumes from the previous checkpoint, and the restart drops that row again.
        if start_epoch:
            checkpoints.trim_metrics_log(Path(config.dir) / METRICS_LOG, start_epoch)
        callbacks.append(tf.keras.callbacks.CSVLogger(str(Path(config.dir) / METRICS_LOG),
                                                      append=start_epoch > 0))
        callbacks += _job_metrics_callbacks(start_epoch)
        callbacks.append(checkpoints.CheckpointCallback(config.dir, keep=config.keep_checkpoints))
        if tracked is not None:
            callbacks += tracked.callbacks(every=config.log_every_steps, start_step=start_epoch * steps_per_epoch)

    # --- Training ---------------------------------------------------------------------------
    if start_epoch < config.epochs:
        say(f"Starting at epoch {start_epoch + 1} of {config.epochs}")
    else:
        say(f"Nothing to train: the checkpoint has {start_epoch} epochs of {config.epochs}")
    started = time.perf_counter()
    try:
        history = model.fit(train_data, steps_per_epoch=steps_per_epoch, epochs=config.epochs,
                            initial_epoch=start_epoch, validation_data=validation_data,
                            callbacks=callbacks, verbose=config.verbose if chief else 0)
    except BaseException:
        if tracked is not None:
            tracked.close("FAILED")
        raise
    train_seconds = time.perf_counter() - started

    # --- Results ----------------------------------------------------------------------------
    model_path = Path(config.dir) / SAVED_MODELS_DIR / MODEL_NAME
    if chief:
        # Horovod: save the model on rank 0 only.
        model_path.parent.mkdir(parents=True, exist_ok=True)
        checkpoints.save_h5(model, model_path)
        say(f"Saved trained model at {model_path} ")

    test_loss, test_accuracy = _evaluate(model, data, batch_size=config.batch_size)
    say("Test loss:", test_loss)
    say("Test accuracy:", test_accuracy)
    if tracked is not None:
        job_dir = metrics.job_output_dir()
        # at the last epoch's step: Job.metrics() shows them on the last epoch's row
        tracked.mlflow.log_metrics({"test_loss": test_loss, "test_accuracy": test_accuracy},
                                   step=max(0, config.epochs - 1))
        tracked.log_artifacts(model_path, job_dir / metrics.TENSORBOARD_DIR if job_dir else None)
        tracked.close()

    if config.dump_weights_dir:
        dump = Path(config.dump_weights_dir) / f"weights-rank{hvd.rank()}.npz"
        dump.parent.mkdir(parents=True, exist_ok=True)
        np.savez(dump, *model.get_weights())

    epochs_run = len(history.epoch)
    return {
        "test_loss": test_loss,
        "test_accuracy": test_accuracy,
        "workers": hvd.size(),
        "start_epoch": start_epoch + 1,
        "epochs": config.epochs,
        "epochs_run": epochs_run,
        "train_seconds": train_seconds,
        "images_per_second": (epochs_run * steps_per_epoch * config.batch_size * hvd.size()
                              / train_seconds) if epochs_run else 0.0,
        "history": {key: [float(v) for v in values] for key, values in history.history.items()},
        "model_path": str(model_path),
    }


def _job_metrics_callbacks(start_epoch: int) -> list:
    """In a job: the rows of the job's own metrics.csv and its TensorBoard event files, where the
    SDK's Job.metrics() and `job tensorboard` find them (none outside a job)."""
    directory = metrics.job_output_dir()
    if directory is None:
        return []
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / metrics.METRICS_FILE
    if start_epoch:  # the job restarted: keep the rows of the epochs its checkpoint holds
        checkpoints.trim_metrics_log(log, start_epoch)
    return [tf.keras.callbacks.CSVLogger(str(log), append=start_epoch > 0 and log.exists()),
            metrics.EventFiles(directory / metrics.TENSORBOARD_DIR)]


def _create_optimizer_state(model: tf.keras.Model) -> None:
    """Create the optimizer's variables now; Keras creates them at the first step.

    Applying zero gradients does it through the public API and changes no weight (RMSprop's
    accumulators stay 0 and its update is 0); the step counter is then set back to 0.
    """
    variables = model.trainable_variables
    model.optimizer.apply_gradients(zip([tf.zeros_like(v) for v in variables], variables))
    model.optimizer.iterations.assign(0)


def _make_run_dir(directory: str) -> None:
    """Create --dir now, so that a path that cannot be written fails before training, not after."""
    try:
        Path(directory).mkdir(parents=True, exist_ok=True)
        probe = Path(directory) / f".write-test-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"dir: cannot write to {directory} ({exc.strerror or exc})") from None


def _pin_device() -> None:
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        # Horovod: pin one GPU per process: local rank r uses GPU r of its node.
        if hvd.local_rank() >= len(gpus):
            raise ConfigError(
                f"local rank {hvd.local_rank()} has no GPU: this node has {len(gpus)}; start at "
                f"most {len(gpus)} processes per node (horovodrun -H host:{len(gpus)})")
        gpu = gpus[hvd.local_rank()]
        tf.config.experimental.set_memory_growth(gpu, True)
        tf.config.set_visible_devices(gpu, "GPU")
    elif "TF_NUM_INTRAOP_THREADS" not in os.environ:
        # Horovod: without GPUs, the processes of a node share its cores instead of each
        # starting a thread per core.
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        tf.config.threading.set_intra_op_parallelism_threads(max(1, (cores or 1) // hvd.local_size()))


def _load_data(data_dir: Optional[str]) -> Cifar10:
    directory = find_cifar10(data_dir)
    # Horovod: if any worker lacks the data, one process per node downloads it while the others
    # wait, so that no two write the same files.
    if int(hvd.allreduce(0 if directory else 1, op=hvd.Sum, name="cifar10_missing")):
        if directory is None and hvd.local_rank() == 0:
            directory = download_cifar10(data_dir)
        hvd.allreduce(0, op=hvd.Sum, name="cifar10_downloaded")  # a barrier
        directory = directory or find_cifar10(data_dir)
        if directory is None:
            raise DataError(f"CIFAR-10 is still missing after local rank 0 downloaded it; is "
                            f"--data-dir {data_dir} the same directory on every node?")
    return load_cifar10(directory)


def _evaluate(model: tf.keras.Model, data: Cifar10, *, batch_size: int):
    """Loss and accuracy on the whole test set, each worker scoring its own shard."""
    count = pipeline.shard_size(len(data.x_test), hvd.size(), hvd.rank())
    loss = accuracy = 0.0
    if count:
        scores = model.evaluate(pipeline.evaluation_dataset(
            data.x_test, data.y_test, batch_size=batch_size, num_shards=hvd.size(),
            shard_index=hvd.rank()), verbose=0, return_dict=True)
        loss, accuracy = scores["loss"], scores["accuracy"]
    # Horovod: sum the per-shard totals over the workers; their ratio is the exact mean.
    totals = hvd.allreduce(np.array([loss * count, accuracy * count, count], dtype=np.float64),
                           op=hvd.Sum, name="test_totals")
    loss_sum, correct, examples = (float(v) for v in np.asarray(totals))
    return loss_sum / examples, correct / examples


class _Throughput(tf.keras.callbacks.Callback):
    """Adds each epoch's training images per second (all workers) and wall time to the logs.

    It has no per-batch hook, which would make Keras wait for every step's results.
    """

    def __init__(self, images_per_step: int):
        super().__init__()
        self.images_per_step = images_per_step

    def on_epoch_begin(self, epoch, logs=None):
        self._start, self._train_seconds = time.perf_counter(), None

    def on_test_begin(self, logs=None):  # the epoch's validation starts: training is over
        if self._train_seconds is None:
            self._train_seconds = time.perf_counter() - self._start

    def on_epoch_end(self, epoch, logs=None):
        seconds = time.perf_counter() - self._start
        if logs is not None:
            logs["images_per_second"] = (self.params["steps"] * self.images_per_step
                                         / (self._train_seconds or seconds))
            logs["epoch_seconds"] = seconds


def _silent(*args, **kwargs) -> None:
    pass


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command line: parse the settings, train, and turn user errors into a message."""
    config = parse_args(argv)
    try:
        train(config)
    except (ConfigError, DataError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
