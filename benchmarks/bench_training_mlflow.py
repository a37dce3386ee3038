"""Benchmark: what MLflow logging costs the training package's throughput.

Prints, in one run, training images per second of the tutorial's CNN on CIFAR-shaped data
(batch 32, tf.data pipeline, one process) without MLflow and with the training package's own
MLflow callbacks (training/tracking.py: step metrics every ``--every`` steps, every epoch's
metrics) logging to a real tracking server: the local service's, started here with tracking on,
reached as a job reaches it (HTTPS front, bearer token, the service's CA). Then the ratio
with / without (best epochs), and the median of each round's own ratio (the two epochs of a round
ran side by side, under the same load); the project's target is at least 0.98 (an overhead of
2 % at most).

The two variants take turns epoch by epoch after an untimed epoch each (A B, B A, ...), so that
other load on the machine falls on both alike; each variant's fastest epoch counts (timeit's best of N), and the
spread (how much slower the median epoch was) says how busy the machine was.

    python benchmarks/bench_training_mlflow.py               # about two minutes on 2 CPU cores
    python benchmarks/bench_training_mlflow.py --every 10    # step metrics five times as often
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from horovod_batchai.local import LocalService  # noqa: E402
from horovod_batchai.local.core.context import ServiceSettings  # noqa: E402
from training import pipeline, tracking  # noqa: E402
from training.model import build_model  # noqa: E402

BATCH = 32


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=3200, help="images per timed epoch (default: 3200)")
    parser.add_argument("--repeats", type=int, default=4, help="timed epochs per variant; the fastest counts")
    parser.add_argument("--every", type=int, default=50, help="log step metrics every N steps (default: 50, "
                                                              "the training package's default)")
    args = parser.parse_args(argv)
    if args.images < BATCH or args.repeats < 1 or args.every < 1:
        parser.error(f"--images must be at least {BATCH}, --repeats and --every at least 1")
    return args


class _EpochTimer(tf.keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds = time.perf_counter() - self.start


class Variant:
    def __init__(self, name: str, data, steps: int, callbacks=()):
        self.name, self.data, self.steps, self.callbacks = name, data, steps, list(callbacks)
        self.model = build_model()
        self.model.compile(loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                           optimizer=tf.keras.optimizers.legacy.RMSprop(learning_rate=1e-4, decay=1e-6))
        self.seconds: list[float] = []
        self.epochs = 0

    def epoch(self, timed: bool = True) -> None:
        timer = _EpochTimer()
        self.model.fit(self.data, steps_per_epoch=self.steps, epochs=self.epochs + 1, initial_epoch=self.epochs,
                       verbose=0, callbacks=self.callbacks + [timer])
        self.epochs += 1
        if timed:
            self.seconds.append(timer.seconds)

    @property
    def images_per_second(self) -> float:
        return self.steps * BATCH / min(self.seconds)

    @property
    def spread(self) -> str:
        return f"(median +{100 * (statistics.median(self.seconds) / min(self.seconds) - 1):.1f} %)"


def main(argv=None) -> int:
    args = parse_args(argv)
    import mlflow

    tf.keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(args.images, 32, 32, 3), dtype=np.uint8)
    labels = rng.integers(0, 10, size=args.images).astype(np.int32)
    steps = args.images // BATCH
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as state, \
            LocalService(Path(state), settings=ServiceSettings(mlflow_tracking=True)) as service:
        endpoint = service.context.tracking
        started = time.perf_counter()
        endpoint.require()
        server_start = time.perf_counter() - started
        # What a job of the service gets (tracking/runs.py), minus the run the service would make.
        os.environ.update(MLFLOW_TRACKING_URI=f"{service.endpoint}/_mlflow", MLFLOW_TRACKING_TOKEN=endpoint.token,
                          MLFLOW_TRACKING_SERVER_CERT_PATH=str(service.info.ca_cert),
                          MLFLOW_EXPERIMENT_NAME="bench-training-mlflow")
        run = tracking.MlflowRun.open(say=lambda *a: None)
        assert run is not None
        plain = Variant("without MLflow", pipeline.training_dataset(images, labels, batch_size=BATCH, seed=0), steps)
        logged = Variant(f"with MLflow (step metrics every {args.every} steps, epoch metrics)",
                         pipeline.training_dataset(images, labels, batch_size=BATCH, seed=0), steps,
                         run.callbacks(every=args.every))
        for variant in (plain, logged):
            variant.epoch(timed=False)
        for round_ in range(args.repeats):
            # A, B, then B, A: neither variant always follows the other (caches, the machine's load).
            for variant in ((plain, logged) if round_ % 2 == 0 else (logged, plain)):
                variant.epoch()
        run.close()
        client = mlflow.MlflowClient()
        run_id = mlflow.last_active_run().info.run_id
        step_points = len(client.get_metric_history(run_id, "step_loss"))

    print(f"bench_training_mlflow: the tutorial's CNN, {steps * BATCH} CIFAR-shaped images per epoch, batch "
          f"{BATCH}, best of {args.repeats} timed epochs; load average {load_before:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")
    print(f"  MLflow {mlflow.__version__} tracking server (the local service's) started in {server_start:.1f} s; "
          f"{step_points} step points logged")
    for variant in (plain, logged):
        print(f"  {variant.name:<62} {variant.images_per_second:>8,.0f} images/s {variant.spread}")
    ratio = logged.images_per_second / plain.images_per_second
    paired = statistics.median(p / m for p, m in zip(plain.seconds, logged.seconds))
    print(f"  ratio with / without MLflow: {ratio:.3f} (target >= 0.98); median of the rounds' own ratios: "
          f"{paired:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
