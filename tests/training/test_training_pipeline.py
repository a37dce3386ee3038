"""The tf.data pipelines: disjoint shards, the tutorial's augmentation, and the tutorial's model."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from training import pipeline
from training.model import build_model


def _numbered_images(count: int) -> np.ndarray:
    """Images whose every pixel holds the image's index (mod 256), to see which ones arrive."""
    return np.broadcast_to((np.arange(count) % 256).astype(np.uint8)[:, None, None, None],
                           (count, 32, 32, 3)).copy()


@pytest.mark.parametrize("count, workers", [(100, 1), (100, 2), (101, 4)])
def test_shards_are_disjoint_and_together_hold_every_image_once(count, workers):
    labels = np.arange(count, dtype=np.int32)  # the labels carry the index
    seen = []
    for rank in range(workers):
        dataset = pipeline.evaluation_dataset(_numbered_images(count), labels, batch_size=8,
                                              num_shards=workers, shard_index=rank)
        shard = np.concatenate([y.numpy() for _, y in dataset])
        assert len(shard) == pipeline.shard_size(count, workers, rank)
        seen.append(shard)
    assert sorted(np.concatenate(seen).tolist()) == list(range(count))


def test_a_training_epoch_of_a_worker_covers_its_shard_reshuffled():
    count, workers, batch = 64, 2, 8
    labels = np.arange(count, dtype=np.int32)
    dataset = pipeline.training_dataset(_numbered_images(count), labels, batch_size=batch,
                                        num_shards=workers, shard_index=1, augmentation=False,
                                        seed=1)
    steps = count // workers // batch
    batches = [y.numpy() for _, y in dataset.take(2 * steps)]  # the stream repeats
    first, second = np.concatenate(batches[:steps]), np.concatenate(batches[steps:])
    assert sorted(first.tolist()) == sorted(second.tolist()) == list(range(1, count, workers))
    assert first.tolist() != second.tolist()  # each epoch in a new order
    images, batch_labels = next(iter(dataset))
    assert images.shape == (batch, 32, 32, 3) and images.dtype == tf.float32
    # Without augmentation an image arrives unchanged, scaled to [0, 1].
    np.testing.assert_allclose(images.numpy()[:, 0, 0, 0], (batch_labels.numpy() % 256) / 255.0,
                               rtol=1e-6)


def test_a_worker_without_images_is_an_error_not_a_hang():
    with pytest.raises(ValueError, match="worker 3 of 4 has no training images"):
        pipeline.training_dataset(_numbered_images(3), np.zeros(3, np.int32), batch_size=1,
                                  num_shards=4, shard_index=3)


def _column_image() -> np.ndarray:
    image = np.zeros((32, 32, 3), np.float32)
    image[:, 20, :] = 1.0  # one bright column at x = 20
    return image


def test_augmentation_shifts_by_at_most_a_tenth_and_flips_horizontally():
    tf.random.set_seed(0)
    images = tf.constant(np.stack([_column_image()] * 512))
    columns = tf.argmax(tf.reduce_sum(pipeline.augment(images)[..., 0], axis=1), axis=1).numpy()
    unflipped, flipped = columns[columns >= 16], columns[columns < 16]
    # x = 20 shifted by up to 3.2 pixels, or flipped to x = 11 and shifted.
    assert unflipped.min() >= 20 - 4 and unflipped.max() <= 20 + 4
    assert flipped.min() >= 11 - 4 and flipped.max() <= 11 + 4
    assert 0.35 < len(flipped) / len(columns) < 0.65          # flips half of the images
    assert len(set(unflipped.tolist())) >= 5                   # shifts vary per image
    # Vertical shifts repeat the border rows (fill_mode='nearest'): the column stays unbroken
    # (bilinear sampling may split it over two pixels, each holding at least half).
    assert float(tf.reduce_min(tf.reduce_max(pipeline.augment(images)[..., 0], axis=2))) >= 0.49


def test_augmentation_is_on_by_default_in_training_batches():
    images = np.stack([(_column_image() * 255).astype(np.uint8)] * 64)
    dataset = pipeline.training_dataset(images, np.zeros(64, np.int32), batch_size=64, seed=0)
    batch, _ = next(iter(dataset))
    columns = tf.argmax(tf.reduce_sum(batch[..., 0], axis=1), axis=1).numpy()
    assert len(set(columns.tolist())) > 3


def test_the_model_is_the_tutorials_cnn():
    model = build_model()
    assert model.output_shape == (None, 10)
    assert model.count_params() == 1_250_858  # what Keras' cifar10_cnn.py reports
    convs = [l for l in model.layers if isinstance(l, tf.keras.layers.Conv2D)]
    assert [(c.filters, c.kernel_size, c.padding) for c in convs] == [
        (32, (3, 3), "same"), (32, (3, 3), "valid"), (64, (3, 3), "same"), (64, (3, 3), "valid")]
    dropouts = [l.rate for l in model.layers if isinstance(l, tf.keras.layers.Dropout)]
    assert dropouts == [0.25, 0.25, 0.5]
    assert [l.pool_size for l in model.layers if isinstance(l, tf.keras.layers.MaxPooling2D)] == [(2, 2)] * 2
    dense = [l for l in model.layers if isinstance(l, tf.keras.layers.Dense)]
    assert [(d.units, d.activation.__name__) for d in dense] == [(512, "relu"), (10, "softmax")]
