"""Fixtures for the training package's tests."""
from __future__ import annotations

from pathlib import Path

import pytest

from training.synthetic import write_synthetic_cifar10
from training_support import TEST_IMAGES, TRAIN_IMAGES


@pytest.fixture(scope="session")
def cifar_dir(tmp_path_factory) -> Path:
    """A learnable CIFAR-10 stand-in in the official format (2000 train / 500 test images)."""
    return write_synthetic_cifar10(tmp_path_factory.mktemp("data") / "cifar-10-batches-py",
                                   num_train=TRAIN_IMAGES, num_test=TEST_IMAGES, seed=0)
