"""A small, learnable stand-in for CIFAR-10, written in exactly the official python format.

CIFAR-10 itself cannot be downloaded everywhere (CI, air-gapped clusters), so tests and demos write
this instead. The files are the ones of ``cifar-10-python.tar.gz`` once extracted:

- ``data_batch_1`` .. ``data_batch_5`` and ``test_batch``: each a pickled dict with
  ``b'batch_label'`` (bytes), ``b'labels'`` (a list of ints 0..9), ``b'data'`` (a uint8 numpy array
  of shape (N, 3072): each row one 32x32 image, the 1024 red values first, then green, then blue,
  each channel row-major) and ``b'filenames'`` (a list of bytes);
- ``batches.meta``: a pickled dict with ``b'label_names'`` (10 bytes names),
  ``b'num_cases_per_batch'`` and ``b'num_vis'`` (3072).

They are pickled with protocol 2 and bytes keys, which is what the original Python 2 pickles read
as under ``encoding='bytes'`` -- so Keras' own ``cifar10`` loader reads them too.

What makes them learnable: every class has its own colour and its own stripe pattern (horizontal
or vertical stripes of a class-specific period), drawn with a random phase, brightness and noise.
Both survive the training augmentation (shifts of up to 10% and horizontal flips), so a small CNN
gets well above chance within a few epochs, while nothing is constant within a class.

Run ``python -m training.synthetic DIR`` to write a dataset; importing this module does no work
and does not import TensorFlow.
"""
from __future__ import annotations

import argparse
import pickle
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

__all__ = ["LABEL_NAMES", "write_synthetic_cifar10", "main"]

# The official class names, in the official order.
LABEL_NAMES = ("airplane", "automobile", "bird", "cat", "deer",
               "dog", "frog", "horse", "ship", "truck")
NUM_TRAIN_BATCHES = 5
IMAGE_SIZE = 32
PICKLE_PROTOCOL = 2  # what the official (Python 2) files use

# One colour (RGB, 0..1) and one stripe pattern per class: (orientation, period in pixels).
_CLASS_COLOURS = np.array([
    [0.90, 0.20, 0.20], [0.20, 0.80, 0.25], [0.20, 0.35, 0.90], [0.90, 0.85, 0.20],
    [0.80, 0.25, 0.85], [0.20, 0.85, 0.85], [0.95, 0.55, 0.15], [0.55, 0.55, 0.55],
    [0.45, 0.25, 0.10], [0.95, 0.95, 0.95],
])
_CLASS_STRIPES = [("h", 4), ("v", 4), ("h", 8), ("v", 8), ("h", 16),
                  ("v", 16), ("h", 6), ("v", 6), ("h", 12), ("v", 12)]


def write_synthetic_cifar10(directory, *, num_train: int = 2000, num_test: int = 500,
                            seed: int = 0, noise: float = 0.12) -> Path:
    """Write a learnable CIFAR-10 stand-in into `directory` (created if needed); return it.

    The `num_train` training images are spread over the five ``data_batch_*`` files as evenly as
    possible; classes are balanced. The same arguments always give the same bytes.
    """
    if num_train < NUM_TRAIN_BATCHES:
        raise ValueError(f"num_train: expected at least {NUM_TRAIN_BATCHES} images "
                         f"(one per data_batch file), got {num_train}")
    if num_test < 1:
        raise ValueError(f"num_test: expected at least 1 image, got {num_test}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)

    train_images, train_labels = _make_images(num_train, rng, noise)
    test_images, test_labels = _make_images(num_test, rng, noise)

    bounds = np.linspace(0, num_train, NUM_TRAIN_BATCHES + 1).astype(int)
    for index in range(NUM_TRAIN_BATCHES):
        lo, hi = bounds[index], bounds[index + 1]
        _write_batch(directory / f"data_batch_{index + 1}",
                     f"training batch {index + 1} of {NUM_TRAIN_BATCHES}",
                     train_images[lo:hi], train_labels[lo:hi], first_index=lo)
    _write_batch(directory / "test_batch", "testing batch 1 of 1",
                 test_images, test_labels, first_index=0)
    meta = {
        b"label_names": [name.encode("ascii") for name in LABEL_NAMES],
        b"num_cases_per_batch": int(bounds[1] - bounds[0]),
        b"num_vis": IMAGE_SIZE * IMAGE_SIZE * 3,
    }
    _pickle(directory / "batches.meta", meta)
    return directory


def _make_images(count: int, rng: np.random.Generator, noise: float):
    """`count` images (uint8, N x 32 x 32 x 3) and their balanced, shuffled labels."""
    labels = rng.permutation(np.arange(count) % len(LABEL_NAMES))
    coords = np.arange(IMAGE_SIZE, dtype=np.float64)
    images = np.empty((count, IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.float64)
    for i, label in enumerate(labels):
        orientation, period = _CLASS_STRIPES[label]
        phase = rng.uniform(0, 2 * np.pi)
        wave = 0.5 + 0.5 * np.sin(2 * np.pi * coords / period + phase)    # 0..1 along one axis
        stripes = wave[:, None] if orientation == "h" else wave[None, :]  # rows or columns
        stripes = np.broadcast_to(stripes, (IMAGE_SIZE, IMAGE_SIZE))
        brightness = rng.uniform(0.6, 1.0)
        image = brightness * _CLASS_COLOURS[label] * (0.45 + 0.55 * stripes[..., None])
        images[i] = image + rng.normal(0.0, noise, size=image.shape)
    return (np.clip(images, 0.0, 1.0) * 255).round().astype(np.uint8), labels


def _write_batch(path: Path, batch_label: str, images: np.ndarray, labels: np.ndarray,
                 *, first_index: int) -> None:
    # Official rows are channel-first: all red values (row-major), then green, then blue.
    rows = images.transpose(0, 3, 1, 2).reshape(len(images), -1)
    filenames = [f"{LABEL_NAMES[label]}_s_{first_index + i:06d}.png".encode("ascii")
                 for i, label in enumerate(labels)]
    batch = {
        b"batch_label": batch_label.encode("ascii"),
        b"labels": [int(label) for label in labels],
        b"data": np.ascontiguousarray(rows, dtype=np.uint8),
        b"filenames": filenames,
    }
    _pickle(path, batch)


def _pickle(path: Path, obj) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        pickle.dump(obj, f, protocol=PICKLE_PROTOCOL)
    tmp.replace(path)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.synthetic",
        description="Write a small, learnable CIFAR-10 stand-in in the official python format.")
    parser.add_argument("directory", help="where to write data_batch_1..5, test_batch, batches.meta")
    parser.add_argument("--train", type=int, default=2000, help="training images (default: 2000)")
    parser.add_argument("--test", type=int, default=500, help="test images (default: 500)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    args = parser.parse_args(argv)
    try:
        path = write_synthetic_cifar10(args.directory, num_train=args.train,
                                       num_test=args.test, seed=args.seed)
    except ValueError as exc:
        parser.error(str(exc))
    print(f"Wrote {args.train} training and {args.test} test images to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
