"""tf.data input pipelines: one shard per worker, augmentation on the fly.

Training: shard -> cache -> shuffle -> repeat -> batch -> scale and augment -> prefetch.

- Each worker keeps only its own shard (every ``num_shards``-th image, from ``shard_index``), so
  the workers of one epoch together see every image once instead of each seeing all of them.
- The shard is cached as uint8 and reshuffled every epoch.
- Augmentation is the tutorial's ``ImageDataGenerator(width_shift_range=0.1,
  height_shift_range=0.1, horizontal_flip=True)``: a random shift of up to 10% of the width and
  height (bilinear, the border pixels repeated as ``fill_mode='nearest'`` does) and a random
  horizontal flip, drawn per image but computed for a whole batch at once, inside the TensorFlow
  graph, while the accelerator works on the previous batch.
- The stream repeats forever; ``fit`` takes the same number of steps on every worker, which
  Horovod needs (a worker with fewer batches would leave the others waiting in an allreduce).

Evaluation: shard -> batch -> scale -> cache -> prefetch, no augmentation, one pass.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import tensorflow as tf

__all__ = ["training_dataset", "evaluation_dataset", "shard_size", "augment"]

SHIFT_FRACTION = 0.1  # the tutorial's width_shift_range and height_shift_range


def shard_size(num_examples: int, num_shards: int, shard_index: int) -> int:
    """How many examples `Dataset.shard(num_shards, shard_index)` keeps."""
    return len(range(shard_index, num_examples, num_shards))


def training_dataset(images: np.ndarray, labels: np.ndarray, *, batch_size: int,
                     num_shards: int = 1, shard_index: int = 0, augmentation: bool = True,
                     seed: Optional[int] = None) -> tf.data.Dataset:
    """An endless stream of (float images in [0, 1], labels) batches of this worker's shard."""
    size = shard_size(len(images), num_shards, shard_index)
    if size == 0:
        raise ValueError(f"worker {shard_index} of {num_shards} has no training images: "
                         f"the training set has only {len(images)}")
    dataset = tf.data.Dataset.from_tensor_slices((images, labels))
    dataset = dataset.shard(num_shards, shard_index)
    dataset = dataset.cache()
    dataset = dataset.shuffle(size, seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.repeat()
    dataset = dataset.batch(batch_size, drop_remainder=True)
    if augmentation:
        dataset = dataset.map(lambda x, y: (augment(_scale(x), seed=seed), y),
                              num_parallel_calls=tf.data.AUTOTUNE)
    else:
        dataset = dataset.map(lambda x, y: (_scale(x), y), num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)


def evaluation_dataset(images: np.ndarray, labels: np.ndarray, *, batch_size: int,
                       num_shards: int = 1, shard_index: int = 0) -> tf.data.Dataset:
    """One pass over this worker's shard of a held-out set, without augmentation."""
    dataset = tf.data.Dataset.from_tensor_slices((images, labels))
    dataset = dataset.shard(num_shards, shard_index)
    dataset = dataset.batch(batch_size)
    dataset = dataset.map(lambda x, y: (_scale(x), y), num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.cache().prefetch(tf.data.AUTOTUNE)


def _scale(images: tf.Tensor) -> tf.Tensor:
    return tf.cast(images, tf.float32) / 255.0


def augment(images: tf.Tensor, *, seed: Optional[int] = None) -> tf.Tensor:
    """Random shifts of up to 10% and horizontal flips of a batch (N, H, W, C) of floats."""
    # Three different op seeds: ops with the same seed would draw the same numbers.
    flip_seed, dx_seed, dy_seed = (None, None, None) if seed is None else (seed, seed + 1, seed + 2)
    images = tf.image.random_flip_left_right(images, seed=flip_seed)
    batch = tf.shape(images)[0]
    height = tf.cast(tf.shape(images)[1], tf.float32)
    width = tf.cast(tf.shape(images)[2], tf.float32)
    dx = tf.random.uniform([batch], -SHIFT_FRACTION, SHIFT_FRACTION, seed=dx_seed) * width
    dy = tf.random.uniform([batch], -SHIFT_FRACTION, SHIFT_FRACTION, seed=dy_seed) * height
    # Each row [a0, a1, a2, b0, b1, b2, c0, c1] maps an output pixel (x, y) to the input pixel
    # (a0 x + a1 y + a2, b0 x + b1 y + b2): here a pure translation by (dx, dy).
    ones, zeros = tf.ones([batch]), tf.zeros([batch])
    transforms = tf.stack([ones, zeros, dx, zeros, ones, dy, zeros, zeros], axis=1)
    return tf.raw_ops.ImageProjectiveTransformV3(
        images=images, transforms=transforms, output_shape=tf.shape(images)[1:3],
        fill_value=0.0, interpolation="BILINEAR", fill_mode="NEAREST")
