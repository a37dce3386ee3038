"""The CNN of the tutorial (Keras' ``cifar10_cnn.py`` example).

Two convolution blocks of 32 and 64 filters, each two 3x3 convolutions with ReLU, 2x2 max-pooling
and dropout 0.25; then a dense layer of 512 with dropout 0.5 and a softmax over the 10 classes.
The activations are fused into their layers, which computes the same function as the tutorial's
separate ``Activation`` layers. Layers have fixed names, so that a model built here and one loaded
from a checkpoint have the same variable names on every worker.
"""
from __future__ import annotations

from typing import Sequence, Tuple

import tensorflow as tf

__all__ = ["build_model"]


def build_model(input_shape: Tuple[int, int, int] = (32, 32, 3), num_classes: int = 10, *,
                filters: Sequence[int] = (32, 64), conv_dropout: float = 0.25,
                dense_units: int = 512, dense_dropout: float = 0.5) -> tf.keras.Model:
    """The tutorial's architecture (its defaults), uncompiled; inputs are floats in [0, 1]."""
    layers = tf.keras.layers
    model_layers = [layers.Input(shape=input_shape, name="image")]
    for block, width in enumerate(filters, start=1):
        model_layers += [
            layers.Conv2D(width, 3, padding="same", activation="relu", name=f"block{block}_conv1"),
            layers.Conv2D(width, 3, activation="relu", name=f"block{block}_conv2"),
            layers.MaxPooling2D(2, name=f"block{block}_pool"),
            layers.Dropout(conv_dropout, name=f"block{block}_dropout"),
        ]
    model_layers += [
        layers.Flatten(name="flatten"),
        layers.Dense(dense_units, activation="relu", name="dense"),
        layers.Dropout(dense_dropout, name="dense_dropout"),
        layers.Dense(num_classes, activation="softmax", name="predictions"),
    ]
    return tf.keras.Sequential(model_layers, name="cifar10_cnn")
