"""Every hyper-parameter and setting of a training run, in one place.

`TrainConfig` is the single source of truth: `train()` takes one, and the command line builds
one (`parse_args`). Its defaults are the tutorial's: the Keras CIFAR-10 CNN trained with RMSprop at
a base learning rate of 1e-4 per worker (scaled by the number of workers), a batch of 32 images per
worker, and random shifts of 0.1 plus horizontal flips as augmentation.

About epochs. The tutorial gave every worker the whole training set and divided the number of
epochs by the number of workers (``ceil(100 / size)``). Here each worker reads only its own shard
(1/size of the images), so an epoch is one pass over the data by all workers together, and the
number of epochs does not depend on the number of workers. With the default 100 epochs and N
workers a run takes the same number of optimizer steps (``100 * 50000 / (32 * N)``) and processes
the same number of images as the tutorial's, but each epoch takes about 1/N of the time of the
tutorial's epochs, and validation, checkpoints and the CSV log come once per real pass over the
data.

Importing this module does not import TensorFlow.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Optional, Sequence

__all__ = ["ConfigError", "TrainConfig", "build_parser", "parse_args", "TRIAL_DIR_VARIABLE"]

#: set by the local service for each trial of a sweep: the trial's own output directory, which
#: takes the place of ``--dir`` (see parse_args).
TRIAL_DIR_VARIABLE = "AZ_BATCHAI_OUTPUT_TRIAL"


class ConfigError(ValueError):
    """A setting is out of range; the message names the setting and its valid form."""


@dataclass(frozen=True)
class TrainConfig:
    """The settings of one training run. Build it with keywords; it validates itself."""

    # Where results go: checkpoints/, saved_models/ and metrics.csv (the tutorial's --dir).
    dir: str
    # CIFAR-10 in the official python format; None looks in the Keras cache, then downloads.
    data_dir: Optional[str] = None
    # One epoch is one pass over the training set by all workers together (see the module doc).
    epochs: int = 100
    # Images per worker and step; the global batch is batch_size * number of workers.
    batch_size: int = 32
    # Base learning rate of one worker; the run uses lr * number of workers (after the warm-up).
    lr: float = 1e-4
    # RMSprop's time-based decay, as in the tutorial: lr / (1 + lr_decay * step).
    lr_decay: float = 1e-6
    # Epochs over which the learning rate rises from lr to lr * number of workers.
    warmup_epochs: int = 5
    # Random shifts of 0.1 of the width and height, and horizontal flips.
    augmentation: bool = True
    # Seed for weights, shuffling and augmentation (each worker adds its rank); None: random.
    seed: Optional[int] = None
    # Optimizer steps per epoch and worker; None: a whole pass over each worker's shard.
    steps_per_epoch: Optional[int] = None
    # Checkpoints to keep in <dir>/checkpoints (the newest ones); None keeps them all.
    keep_checkpoints: Optional[int] = None
    # Keras' fit() verbosity on rank 0 (0 silent, 1 progress bar, 2 one line per epoch).
    verbose: int = 2
    # For tests: every rank writes its final weights to <dump_weights_dir>/weights-rank<r>.npz.
    dump_weights_dir: Optional[str] = None
    # With MLflow tracking (MLFLOW_TRACKING_URI set), rank 0 logs step metrics every this many steps.
    log_every_steps: int = 50

    def __post_init__(self) -> None:
        if not isinstance(self.dir, str) or not self.dir.strip():
            raise ConfigError("dir: expected the directory to save results to, e.g. dir='/mnt/share/cifar'")
        _check_int("epochs", self.epochs, minimum=1)
        _check_int("batch_size", self.batch_size, minimum=1)
        _check_int("warmup_epochs", self.warmup_epochs, minimum=0)
        _check_int("verbose", self.verbose, minimum=0, maximum=2)
        _check_int("log_every_steps", self.log_every_steps, minimum=1)
        if self.steps_per_epoch is not None:
            _check_int("steps_per_epoch", self.steps_per_epoch, minimum=1)
        if self.keep_checkpoints is not None:
            _check_int("keep_checkpoints", self.keep_checkpoints, minimum=1)
        if self.seed is not None:
            _check_int("seed", self.seed, minimum=0)
        _check_float("lr", self.lr, positive=True)
        _check_float("lr_decay", self.lr_decay, positive=False)

    def replace(self, **changes) -> "TrainConfig":
        """A copy with some settings changed (validated again)."""
        return dataclasses.replace(self, **changes)


def _check_int(name: str, value, *, minimum: int, maximum: Optional[int] = None) -> None:
    valid = f"an integer >= {minimum}" if maximum is None else f"an integer from {minimum} to {maximum}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name}: expected {valid}, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        raise ConfigError(f"{name}: expected {valid}, got {value}")


def _check_float(name: str, value, *, positive: bool) -> None:
    valid = "a number > 0" if positive else "a number >= 0"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{name}: expected {valid}, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise ConfigError(f"{name}: expected {valid}, got {value}")


def build_parser() -> argparse.ArgumentParser:
    """The command line of `python -m training` and of `cifar_cnn_distributed.py`."""
    defaults = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    parser = argparse.ArgumentParser(
        prog="python -m training",
        description="Train the Keras CIFAR-10 CNN of the Batch AI Horovod tutorial, "
                    "distributed with Horovod (run it under horovodrun, or alone).",
    )
    parser.add_argument("-d", "--dir", required=True,
                        help="directory for results: checkpoints/, metrics.csv and "
                             "saved_models/keras_cifar10_trained_model.h5 (in a sweep trial, "
                             "$AZ_BATCHAI_OUTPUT_TRIAL instead)")
    parser.add_argument("--data-dir", default=None,
                        help="CIFAR-10 in the official python format (data_batch_1..5, test_batch, "
                             "batches.meta); default: the Keras cache, else download")
    parser.add_argument("--epochs", type=_int_at_least(1), default=defaults["epochs"],
                        help="passes over the training set by all workers together "
                             "(default: %(default)s)")
    parser.add_argument("--batch-size", type=_int_at_least(1), default=defaults["batch_size"],
                        help="images per worker and step (default: %(default)s)")
    parser.add_argument("--lr", type=_positive_float, default=defaults["lr"],
                        help="base learning rate of one worker, multiplied by the number of "
                             "workers (default: %(default)s)")
    parser.add_argument("--lr-decay", type=_non_negative_float, default=defaults["lr_decay"],
                        help="RMSprop time-based decay (default: %(default)s)")
    parser.add_argument("--warmup-epochs", type=_int_at_least(0), default=defaults["warmup_epochs"],
                        help="epochs of learning-rate warm-up (default: %(default)s)")
    parser.add_argument("--no-augmentation", dest="augmentation", action="store_false",
                        help="train without random shifts and flips")
    parser.add_argument("--seed", type=_int_at_least(0), default=None,
                        help="random seed (default: none, every run differs)")
    parser.add_argument("--steps-per-epoch", type=_int_at_least(1), default=None,
                        help="limit the optimizer steps per epoch, for quick runs "
                             "(default: a whole pass over each worker's shard)")
    parser.add_argument("--keep-checkpoints", type=_int_at_least(1), default=None,
                        help="keep only the newest N checkpoints (default: keep all)")
    parser.add_argument("--verbose", type=_int_at_least(0), choices=(0, 1, 2),
                        default=defaults["verbose"],
                        help="Keras progress output on rank 0: 0, 1 (bar) or 2 (a line per epoch)")
    parser.add_argument("--dump-weights-dir", default=None,
                        help="for tests: every rank writes its final weights to "
                             "DIR/weights-rank<r>.npz")
    parser.add_argument("--log-every-steps", type=_int_at_least(1), default=defaults["log_every_steps"],
                        help="with MLflow tracking (MLFLOW_TRACKING_URI), log the step metrics every N steps "
                             f"(default: {defaults['log_every_steps']})")
    return parser


def parse_args(argv: Optional[Sequence[str]] = None) -> TrainConfig:
    """Parse a command line into a TrainConfig; bad values exit with a usage message."""
    parser = build_parser()
    args = parser.parse_args(argv)
    settings = vars(args)
    # A sweep trial's results go to its own output directory, whatever a fixed --dir says: the
    # trials of one sweep share the job's command line, and would otherwise resume and overwrite
    # one another's checkpoints and model.
    trial_dir = os.environ.get(TRIAL_DIR_VARIABLE)
    if trial_dir:
        settings["dir"] = trial_dir
    try:
        return TrainConfig(**settings)
    except ConfigError as exc:
        parser.error(str(exc))
        raise  # unreachable: parser.error exits


def _int_at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
        return value
    parse.__name__ = f"integer >= {minimum}"
    return parse


def _float(text: str, *, positive: bool) -> float:
    valid = "a number > 0" if positive else "a number >= 0"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {valid}, got {text!r}") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise argparse.ArgumentTypeError(f"expected {valid}, got {text}")
    return value


def _positive_float(text: str) -> float:
    return _float(text, positive=True)


def _non_negative_float(text: str) -> float:
    return _float(text, positive=False)
