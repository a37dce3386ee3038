"""Benchmark of the training package on this machine, with the tutorial's model.

Prints, in one run, on CIFAR-shaped data (random 32x32x3 images, 10 classes, batch 32):

1. Input pipelines. Images per second of the tutorial's ``ImageDataGenerator(width_shift_range=0.1,
   height_shift_range=0.1, horizontal_flip=True).flow(...)`` against ``training.pipeline`` (tf.data,
   the same augmentation): each alone, and each feeding ``model.fit`` (the tutorial's
   ``workers=4``), with the ratio ours / tutorial's.
2. Horovod's overhead with one process. Time per step of plain Keras (RMSprop) against the same
   model after ``hvd.init()`` with ``hvd.DistributedOptimizer`` and the callbacks ``training``
   uses, in the same process, without horovodrun. (With one process Horovod skips the allreduce
   itself, so this is the cost of its wrapping.)

The variants take turns epoch by epoch, after an untimed first epoch each (tracing, thread start),
so that other load on the machine falls on all of them alike, and each variant's fastest epoch
counts (as timeit's best of N: the least disturbed). The spread -- how much slower the median
epoch was -- is printed too; when it is large the machine was busy and the ratios are rough.

    python benchmarks/bench_training.py                 # about 2-3 minutes on 2 CPU cores
    python benchmarks/bench_training.py --full-epoch    # also: seconds per 50,000-image epoch

``--full-epoch`` times one whole epoch of the tutorial's training set (50,000 images, one
process, our pipeline), the figure to compare with the tutorial's GPUs; on CPUs it takes minutes.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import horovod  # noqa: E402
import horovod.tensorflow.keras as hvd  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from training import pipeline  # noqa: E402
from training.model import build_model  # noqa: E402

BATCH = 32
SHIFT, FLIP = 0.1, True  # the tutorial's augmentation


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=2048,
                        help="images per timed epoch (default: 2048)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed epochs per variant; the fastest counts (default: 3)")
    parser.add_argument("--full-epoch", action="store_true",
                        help="also time one epoch of 50,000 images (the CIFAR-10 training set)")
    args = parser.parse_args(argv)
    if args.images < BATCH or args.repeats < 1:
        parser.error(f"--images must be at least {BATCH} and --repeats at least 1")
    return args


def cifar_shaped(count: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, size=(count, 32, 32, 3), dtype=np.uint8),
            rng.integers(0, 10, size=count).astype(np.int32))


def tutorial_flow(images, labels):
    """The tutorial's input: floats in [0, 1] through ImageDataGenerator(...).flow."""
    datagen = tf.keras.preprocessing.image.ImageDataGenerator(
        width_shift_range=SHIFT, height_shift_range=SHIFT, horizontal_flip=FLIP)
    return datagen.flow(images.astype("float32") / 255, labels, batch_size=BATCH, seed=0)


def our_dataset(images, labels):
    return pipeline.training_dataset(images, labels, batch_size=BATCH, augmentation=True, seed=0)


def compiled_model(optimizer) -> tf.keras.Model:
    model = build_model()
    model.compile(loss="sparse_categorical_crossentropy", optimizer=optimizer, metrics=["accuracy"])
    return model


class _EpochTimer(tf.keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds = time.perf_counter() - self.start


class Variant:
    """One way of training: a model, its input, and its fit() arguments; times single epochs."""

    def __init__(self, name, model, data, steps, **fit_options):
        self.name, self.model, self.data, self.steps = name, model, data, steps
        self.fit_options, self.seconds = fit_options, []

    def epoch(self, timed: bool = True) -> None:
        timer = _EpochTimer()
        callbacks = self.fit_options.get("callbacks", []) + [timer]
        options = {k: v for k, v in self.fit_options.items() if k != "callbacks"}
        self.model.fit(self.data, steps_per_epoch=self.steps, epochs=1, verbose=0,
                       callbacks=callbacks, **options)
        if timed:
            self.seconds.append(timer.seconds)

    @property
    def images_per_second(self) -> float:
        return self.steps * BATCH / min(self.seconds)

    @property
    def ms_per_step(self) -> float:
        return 1000 * min(self.seconds) / self.steps

    @property
    def spread(self) -> str:
        return f"(median +{100 * (statistics.median(self.seconds) / min(self.seconds) - 1):.0f} %)"


def take_turns(variants, repeats: int) -> None:
    for variant in variants:
        variant.epoch(timed=False)
    for _ in range(repeats):
        for variant in variants:
            variant.epoch()


def pipeline_alone(make_batches, batches: int, repeats: int) -> float:
    """Images per second of an input pipeline drained without a model (best of `repeats`)."""
    rates = []
    for _ in range(repeats + 1):
        iterator = iter(make_batches())
        next(iterator)  # start-up is not throughput
        start = time.perf_counter()
        for _ in range(batches):
            next(iterator)
        rates.append(batches * BATCH / (time.perf_counter() - start))
    return max(rates[1:])


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        import scipy  # noqa: F401  ImageDataGenerator's shifts need it; training does not
    except ImportError:
        sys.exit("error: the tutorial's ImageDataGenerator needs scipy: pip install scipy")
    hvd.init()  # one process: rank 0 of 1
    tf.keras.utils.set_random_seed(0)
    images, labels = cifar_shaped(args.images)
    steps = args.images // BATCH
    gpus = tf.config.list_physical_devices("GPU")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"bench_training: the tutorial's CNN ({build_model().count_params():,} parameters), "
          f"{steps * BATCH} CIFAR-shaped images per epoch, batch {BATCH}, best of "
          f"{args.repeats} timed epochs")
    print(f"  TensorFlow {tf.__version__}, Horovod {horovod.__version__}, {cores} CPU cores, "
          f"{len(gpus)} GPU(s)")

    # 1. The input pipelines alone.
    tutorial_flow_alone = pipeline_alone(lambda: tutorial_flow(images, labels), steps, args.repeats)
    ours_alone = pipeline_alone(lambda: our_dataset(images, labels), steps, args.repeats)

    # 1 and 2. Training: the tutorial's input, ours, and ours under Horovod with one process.
    plain_opt = lambda: tf.keras.optimizers.legacy.RMSprop(learning_rate=1e-4, decay=1e-6)  # noqa: E731
    tutorial = Variant("ImageDataGenerator.flow, workers=4", compiled_model(plain_opt()),
                       tutorial_flow(images, labels), steps, workers=4, use_multiprocessing=False)
    ours = Variant("tf.data", compiled_model(plain_opt()), our_dataset(images, labels), steps)
    with_horovod = Variant(
        "tf.data, Horovod",
        compiled_model(hvd.DistributedOptimizer(plain_opt())), our_dataset(images, labels), steps,
        callbacks=[hvd.callbacks.MetricAverageCallback(),
                   hvd.callbacks.LearningRateScheduleCallback(
                       initial_lr=1e-4 * hvd.size(), multiplier=1.0, momentum_correction=False)])
    take_turns([tutorial, ours, with_horovod], args.repeats)

    def row(label, value, note=""):
        print(f"  {label:<58} {value:>9}   {note}".rstrip())

    print("\nInput pipeline alone, no model (images/s):")
    row("tutorial: ImageDataGenerator.flow, drained by one thread", f"{tutorial_flow_alone:,.0f}")
    row("ours: tf.data (training.pipeline)", f"{ours_alone:,.0f}")
    print(f"  ratio ours / tutorial: {ours_alone / tutorial_flow_alone:.2f}x")
    print("\nmodel.fit fed by each pipeline (images/s):")
    row(f"tutorial: {tutorial.name}", f"{tutorial.images_per_second:,.0f}", tutorial.spread)
    row(f"ours: {ours.name}", f"{ours.images_per_second:,.0f}", ours.spread)
    print(f"  ratio ours / tutorial: {ours.images_per_second / tutorial.images_per_second:.2f}x")
    print("\nHorovod with one process, no horovodrun (ms per step):")
    row("plain Keras, RMSprop", f"{ours.ms_per_step:.1f}", ours.spread)
    row("hvd.init, DistributedOptimizer(RMSprop), callbacks", f"{with_horovod.ms_per_step:.1f}",
        with_horovod.spread)
    overhead = 100 * (with_horovod.ms_per_step / ours.ms_per_step - 1)
    print(f"  Horovod overhead: {overhead:+.1f} %")

    if args.full_epoch:
        full_images, full_labels = cifar_shaped(50_000, seed=1)
        model, data = compiled_model(plain_opt()), our_dataset(full_images, full_labels)
        model.fit(data, steps_per_epoch=20, epochs=1, verbose=0)  # tracing, not timed
        timer = _EpochTimer()
        model.fit(data, steps_per_epoch=-(-50_000 // BATCH), epochs=1, verbose=0, callbacks=[timer])
        print(f"\nOne epoch of 50,000 images (one process, tf.data, batch {BATCH}): "
              f"{timer.seconds:.1f} s ({50_000 / timer.seconds:,.0f} images/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
