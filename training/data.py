"""CIFAR-10 on disk: find it, download it if allowed, and read the official python format.

Where the data comes from, in order:

1. ``--data-dir``: the extracted official archive, i.e. ``data_batch_1`` .. ``data_batch_5``,
   ``test_batch`` and ``batches.meta`` in that directory or in its ``cifar-10-batches-py/``;
2. Keras' cache (``$KERAS_HOME`` or ``~/.keras``, then ``datasets/cifar-10-batches-py``), where
   ``keras.datasets.cifar10.load_data()`` keeps it;
3. a download through Keras (into ``--data-dir`` when given, else into Keras' cache), when the
   network allows; otherwise a `DataError` that says where it looked and what to do.

A directory that holds some of the files but not all is an error, not a reason to look elsewhere.

The batches are pickles. Unpickling runs code named in the file, so this loader only lets through
what a CIFAR-10 batch is made of (dicts, lists, bytes, ints and numpy arrays) and refuses any
other object -- the files often come from a shared drive. Every problem with a file is reported as
a `DataError` that names the file and what was wrong.

Importing this module does not import TensorFlow (only a download does).
"""
from __future__ import annotations

import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

import numpy as np

__all__ = ["DataError", "Cifar10", "OFFICIAL_FILES", "find_cifar10", "download_cifar10",
           "load_cifar10", "read_batch", "read_meta", "keras_cache_dir"]

TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCH = "test_batch"
META = "batches.meta"
OFFICIAL_FILES = TRAIN_BATCHES + (TEST_BATCH, META)
ARCHIVE_DIR = "cifar-10-batches-py"  # what the official tarball extracts to
ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
ARCHIVE_SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
NUM_CLASSES = 10
IMAGE_SHAPE = (32, 32, 3)
ROW_LENGTH = 32 * 32 * 3


class DataError(Exception):
    """CIFAR-10 is missing, incomplete or malformed; the message names the file and the problem."""


@dataclass(frozen=True)
class Cifar10:
    """The dataset in memory: images uint8 (N, 32, 32, 3) channels-last, labels int32 (N,)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    label_names: Tuple[str, ...]
    source: Path


def keras_cache_dir() -> Path:
    """Where ``keras.datasets.cifar10`` keeps the extracted archive."""
    base = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return Path(base) / "datasets" / ARCHIVE_DIR


def find_cifar10(data_dir: Optional[str] = None) -> Optional[Path]:
    """The directory that holds all official files, or None when no candidate holds any."""
    candidates = []
    if data_dir:
        candidates += [Path(data_dir), Path(data_dir) / ARCHIVE_DIR]
    candidates.append(keras_cache_dir())
    for directory in candidates:
        if not directory.is_dir():
            continue
        present = [name for name in OFFICIAL_FILES if (directory / name).is_file()]
        if len(present) == len(OFFICIAL_FILES):
            return directory
        if present:
            missing = [name for name in OFFICIAL_FILES if name not in present]
            raise DataError(
                f"{directory}: incomplete CIFAR-10 -- missing {', '.join(missing)} "
                f"(the official python version has {', '.join(OFFICIAL_FILES)})")
    return None


def download_cifar10(data_dir: Optional[str] = None) -> Path:
    """Download and extract the official archive through Keras; return the data directory."""
    import tensorflow as tf  # only a download needs TensorFlow

    if data_dir:
        cache_dir, cache_subdir = os.path.abspath(data_dir), ""
    else:
        cache_dir, cache_subdir = str(keras_cache_dir().parent.parent), "datasets"
    try:
        path = tf.keras.utils.get_file(fname=ARCHIVE_DIR, origin=ORIGIN, untar=True,
                                       file_hash=ARCHIVE_SHA256, cache_dir=cache_dir,
                                       cache_subdir=cache_subdir)
    except Exception as exc:  # get_file reports network failures as bare Exceptions
        raise DataError(_not_found_message(data_dir, f"downloading {ORIGIN} failed: {exc}")) from None
    found = find_cifar10(os.path.dirname(path))
    if found is None:
        raise DataError(f"{path}: the downloaded archive does not hold {', '.join(OFFICIAL_FILES)}")
    return found


def _not_found_message(data_dir: Optional[str], reason: str) -> str:
    looked = ([f"--data-dir {data_dir} (and its {ARCHIVE_DIR}/)"] if data_dir else []) + \
             [f"the Keras cache {keras_cache_dir()}"]
    return (f"CIFAR-10 not found in {' or '.join(looked)}, and {reason}. "
            f"Put the official python version ({', '.join(OFFICIAL_FILES)}) in --data-dir, "
            f"or write a small synthetic stand-in with `python -m training.synthetic DIR`.")


def load_cifar10(directory) -> Cifar10:
    """Read and check the official files in `directory`."""
    directory = Path(directory)
    label_names = read_meta(directory / META)
    train = [read_batch(directory / name) for name in TRAIN_BATCHES]
    x_test, y_test = read_batch(directory / TEST_BATCH)
    return Cifar10(
        x_train=np.concatenate([x for x, _ in train]),
        y_train=np.concatenate([y for _, y in train]),
        x_test=x_test, y_test=y_test, label_names=label_names, source=directory)


def read_batch(path) -> Tuple[np.ndarray, np.ndarray]:
    """One official batch file as (images uint8 (N, 32, 32, 3), labels int32 (N,))."""
    path = Path(path)
    batch = _unpickle(path)
    rows = _entry(path, batch, "data")
    labels = _entry(path, batch, "labels")
    if not isinstance(rows, np.ndarray) or rows.dtype != np.uint8 or rows.ndim != 2 \
            or rows.shape[1] != ROW_LENGTH:
        raise DataError(f"{path}: b'data' must be a uint8 array of shape (N, {ROW_LENGTH}) "
                        f"(one 32x32 RGB image per row), got {_describe(rows)}")
    try:
        labels = np.asarray(labels)
    except (TypeError, ValueError):
        labels = None
    if labels is None or labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise DataError(f"{path}: b'labels' must be a list of integers 0..9, "
                        f"got {_describe(batch.get(b'labels', batch.get('labels')))}")
    if len(labels) != len(rows):
        raise DataError(f"{path}: {len(rows)} images but {len(labels)} labels")
    bad = np.flatnonzero((labels < 0) | (labels >= NUM_CLASSES))
    if bad.size:
        raise DataError(f"{path}: label {labels[bad[0]]} at index {bad[0]} is outside 0..9")
    # Rows are channel-first (1024 red, 1024 green, 1024 blue values); Keras wants channels-last.
    images = rows.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels.astype(np.int32)


def read_meta(path) -> Tuple[str, ...]:
    """The ten class names from ``batches.meta``."""
    path = Path(path)
    meta = _unpickle(path)
    names = _entry(path, meta, "label_names")
    if not isinstance(names, list) or len(names) != NUM_CLASSES \
            or not all(isinstance(name, (bytes, str)) for name in names):
        raise DataError(f"{path}: b'label_names' must be a list of {NUM_CLASSES} names, "
                        f"got {_describe(names)}")
    num_vis = meta.get(b"num_vis", meta.get("num_vis", ROW_LENGTH))
    if num_vis != ROW_LENGTH:
        raise DataError(f"{path}: b'num_vis' is {num_vis!r}; CIFAR-10 images have {ROW_LENGTH} values")
    return tuple(n.decode("utf-8") if isinstance(n, bytes) else n for n in names)


def _entry(path: Path, mapping: dict, key: str):
    # The official pickles come from Python 2, so their keys read as bytes.
    for candidate in (key.encode("ascii"), key):
        if candidate in mapping:
            return mapping[candidate]
    keys = ", ".join(repr(k) for k in list(mapping)[:8]) or "none"
    raise DataError(f"{path}: no b'{key}' entry (keys found: {keys}); "
                    f"not a CIFAR-10 python batch file")


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"a {value.dtype} array of shape {value.shape}"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"a {type(value).__name__}"


class _BatchUnpickler(pickle.Unpickler):
    """Unpickles only what CIFAR-10 files contain: builtins and plain numpy arrays."""

    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
        ("numpy", "ndarray"), ("numpy", "dtype"),
        ("_codecs", "encode"),  # how protocol 2 spells bytes written by Python 3
    }

    def find_class(self, module, name):
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"refers to {module}.{name}, which a CIFAR-10 batch never holds; refusing to load it")


def _unpickle(path: Path) -> dict:
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    try:
        with open(path, "rb") as f:
            obj = _BatchUnpickler(f, encoding="bytes").load()
    except OSError as exc:
        raise DataError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except (EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError, IndexError,
            KeyError, MemoryError) as exc:
        detail = str(exc) or type(exc).__name__
        if isinstance(exc, EOFError) or "truncated" in detail:
            raise DataError(f"{path}: truncated -- the file ends ({path.stat().st_size} bytes) "
                            f"before its pickled data does; copy or download it again") from None
        raise DataError(f"{path}: not a CIFAR-10 python batch file ({detail})") from None
    if not isinstance(obj, dict):
        raise DataError(f"{path}: expected a pickled dict, got {_describe(obj)}; "
                        f"not a CIFAR-10 python batch file")
    return obj
