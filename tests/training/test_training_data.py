"""CIFAR-10 on disk: the generated stand-in is the official format, and bad files fail clearly."""
from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from training import data
from training.data import DataError, OFFICIAL_FILES
from training.synthetic import LABEL_NAMES, write_synthetic_cifar10


def _raw(path: Path) -> dict:
    with open(path, "rb") as f:
        return pickle.load(f, encoding="bytes")


def test_the_stand_in_has_exactly_the_official_files_and_fields(cifar_dir):
    assert sorted(os.listdir(cifar_dir)) == sorted(OFFICIAL_FILES)
    sizes = []
    for name in data.TRAIN_BATCHES + (data.TEST_BATCH,):
        batch = _raw(cifar_dir / name)
        assert set(batch) == {b"batch_label", b"labels", b"data", b"filenames"}
        assert batch[b"data"].dtype == np.uint8 and batch[b"data"].shape[1] == 3072
        assert isinstance(batch[b"labels"], list) and all(type(v) is int for v in batch[b"labels"])
        assert len(batch[b"labels"]) == len(batch[b"filenames"]) == len(batch[b"data"])
        assert all(isinstance(f, bytes) and f.endswith(b".png") for f in batch[b"filenames"])
        assert isinstance(batch[b"batch_label"], bytes)
        sizes.append(len(batch[b"data"]))
    assert sizes == [400] * 5 + [500]
    meta = _raw(cifar_dir / "batches.meta")
    assert meta == {b"label_names": [n.encode() for n in LABEL_NAMES],
                    b"num_cases_per_batch": 400, b"num_vis": 3072}
    # Pickle protocol 2, as the original Python 2 files.
    assert (cifar_dir / "data_batch_1").read_bytes()[:2] == b"\x80\x02"


def test_keras_own_cifar10_reader_reads_the_stand_in_like_ours(cifar_dir):
    from keras.src.datasets.cifar import load_batch  # Keras' reader for the official files

    keras_images, keras_labels = load_batch(str(cifar_dir / "data_batch_3"))
    images, labels = data.read_batch(cifar_dir / "data_batch_3")
    np.testing.assert_array_equal(keras_images.transpose(0, 2, 3, 1), images)  # Keras reads NCHW
    np.testing.assert_array_equal(np.asarray(keras_labels), labels)


def test_rows_are_channel_first_and_row_major(tmp_path):
    write_synthetic_cifar10(tmp_path, num_train=10, num_test=1)
    row = _raw(tmp_path / "test_batch")[b"data"][0]
    image, _ = data.read_batch(tmp_path / "test_batch")
    for channel, y, x in [(0, 0, 0), (1, 5, 7), (2, 31, 30)]:
        assert image[0, y, x, channel] == row[channel * 1024 + y * 32 + x]


def test_load_gives_keras_shaped_arrays_with_balanced_classes(cifar_dir):
    cifar = data.load_cifar10(cifar_dir)
    assert cifar.x_train.shape == (2000, 32, 32, 3) and cifar.x_train.dtype == np.uint8
    assert cifar.x_test.shape == (500, 32, 32, 3)
    assert np.bincount(cifar.y_train).tolist() == [200] * 10
    assert cifar.label_names == LABEL_NAMES


def test_classes_differ_from_each_other_but_images_within_a_class_vary(cifar_dir):
    cifar = data.load_cifar10(cifar_dir)
    means = np.stack([cifar.x_train[cifar.y_train == c].mean(axis=0) for c in range(10)])
    # A nearest-class-mean classifier already beats chance (10%) on the held-out images ...
    distances = ((cifar.x_test[:, None].astype(float) - means[None]) ** 2).sum(axis=(2, 3, 4))
    assert (distances.argmin(axis=1) == cifar.y_test).mean() > 0.3
    # ... yet no two images are the same.
    assert len({image.tobytes() for image in cifar.x_train}) == len(cifar.x_train)


def test_the_same_seed_writes_the_same_bytes(tmp_path):
    a = write_synthetic_cifar10(tmp_path / "a", num_train=50, num_test=10, seed=7)
    b = write_synthetic_cifar10(tmp_path / "b", num_train=50, num_test=10, seed=7)
    assert all((a / n).read_bytes() == (b / n).read_bytes() for n in OFFICIAL_FILES)


# --- Bad files ----------------------------------------------------------------------------------

@pytest.fixture
def broken_dir(cifar_dir, tmp_path) -> Path:
    """A writable copy of the stand-in, to break."""
    return Path(shutil.copytree(cifar_dir, tmp_path / "cifar"))


def test_a_truncated_batch_is_reported_with_its_name(broken_dir):
    path = broken_dir / "data_batch_3"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(DataError) as raised:
        data.load_cifar10(broken_dir)
    assert str(raised.value).startswith(f"{path}: truncated")


def test_an_empty_batch_is_reported_as_truncated(broken_dir):
    (broken_dir / "test_batch").write_bytes(b"")
    with pytest.raises(DataError, match=r"test_batch: truncated"):
        data.load_cifar10(broken_dir)


def _write(path: Path, obj) -> None:
    with open(path, "wb") as f:
        pickle.dump(obj, f, protocol=2)


@pytest.mark.parametrize("content, problem", [
    (b"<html>404 Not Found</html>", "not a CIFAR-10 python batch file"),
    ([1, 2, 3], "expected a pickled dict, got a list"),
    ({b"labels": [0]}, "no b'data' entry"),
    ({b"data": np.zeros((2, 3072), np.float32), b"labels": [0, 1]},
     "b'data' must be a uint8 array of shape (N, 3072)"),
    ({b"data": np.zeros((2, 1024), np.uint8), b"labels": [0, 1]},
     "b'data' must be a uint8 array of shape (N, 3072)"),
    ({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0]}, "2 images but 1 labels"),
    ({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 10]},
     "label 10 at index 1 is outside 0..9"),
    ({b"data": np.zeros((2, 3072), np.uint8), b"labels": ["a", "b"]},
     "b'labels' must be a list of integers 0..9"),
])
def test_malformed_batches_are_reported_with_the_file_and_the_problem(broken_dir, content, problem):
    path = broken_dir / "data_batch_2"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        _write(path, content)
    with pytest.raises(DataError) as raised:
        data.load_cifar10(broken_dir)
    assert str(raised.value).startswith(f"{path}: ")
    assert problem in str(raised.value)


class _Payload:
    def __reduce__(self):
        return (os.makedirs, ("/tmp/should-not-exist-training-tests",))


def test_a_pickle_that_would_run_code_is_refused_without_running_it(broken_dir):
    _write(broken_dir / "data_batch_1", {b"data": _Payload(), b"labels": []})
    with pytest.raises(DataError, match="refers to .*makedirs.*refusing to load it"):
        data.load_cifar10(broken_dir)
    assert not os.path.exists("/tmp/should-not-exist-training-tests")


def test_a_bad_meta_file_is_reported(broken_dir):
    _write(broken_dir / "batches.meta", {b"label_names": [b"cat"], b"num_vis": 3072})
    with pytest.raises(DataError, match=r"batches.meta: b'label_names' must be a list of 10 names"):
        data.load_cifar10(broken_dir)


# --- Finding the data ---------------------------------------------------------------------------

def test_found_in_data_dir_or_in_its_archive_subdirectory(cifar_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "empty-keras-home"))
    assert data.find_cifar10(str(cifar_dir)) == cifar_dir
    assert data.find_cifar10(str(cifar_dir.parent)) == cifar_dir  # .../cifar-10-batches-py


def test_found_in_the_keras_cache(cifar_dir, tmp_path, monkeypatch):
    cache = tmp_path / "keras" / "datasets" / "cifar-10-batches-py"
    shutil.copytree(cifar_dir, cache)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))
    assert data.find_cifar10(None) == cache
    assert data.find_cifar10(str(tmp_path / "nothing-here")) == cache


def test_an_incomplete_directory_names_the_missing_files(broken_dir):
    (broken_dir / "data_batch_4").unlink()
    (broken_dir / "batches.meta").unlink()
    with pytest.raises(DataError) as raised:
        data.find_cifar10(str(broken_dir))
    assert str(raised.value).startswith(f"{broken_dir}: incomplete CIFAR-10 -- missing "
                                        f"data_batch_4, batches.meta")


def test_missing_data_without_network_is_a_clear_error(tmp_path, monkeypatch):
    import tensorflow as tf

    def offline(*args, **kwargs):
        raise Exception("URL fetch failure on https://www.cs.toronto.edu/: None -- "
                        "[Errno -3] Temporary failure in name resolution")

    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))
    monkeypatch.setattr(tf.keras.utils, "get_file", offline)
    assert data.find_cifar10(str(tmp_path / "data")) is None
    with pytest.raises(DataError) as raised:
        data.download_cifar10(str(tmp_path / "data"))
    message = str(raised.value)
    assert f"CIFAR-10 not found in --data-dir {tmp_path / 'data'}" in message
    assert f"the Keras cache {tmp_path / 'keras' / 'datasets' / 'cifar-10-batches-py'}" in message
    assert "Temporary failure in name resolution" in message
    assert "python -m training.synthetic DIR" in message


def test_a_download_lands_in_data_dir_and_is_found_there(cifar_dir, tmp_path, monkeypatch):
    import tensorflow as tf

    calls = []

    def fake_get_file(fname, origin, untar, file_hash, cache_dir, cache_subdir):
        # What Keras does: fetch the archive and extract it under cache_dir/cache_subdir.
        calls.append((fname, origin, cache_dir, cache_subdir))
        target = Path(cache_dir) / cache_subdir / fname
        shutil.copytree(cifar_dir, target)
        return str(target)

    monkeypatch.setattr(tf.keras.utils, "get_file", fake_get_file)
    found = data.download_cifar10(str(tmp_path / "data"))
    assert found == tmp_path / "data" / "cifar-10-batches-py"
    assert calls == [("cifar-10-batches-py", data.ORIGIN, str(tmp_path / "data"), "")]
