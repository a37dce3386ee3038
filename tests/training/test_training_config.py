"""The settings: the tutorial's defaults, the command line, and errors that name the setting."""
from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from training import ConfigError, TrainConfig
from training.config import parse_args
from training_support import child_env


def test_defaults_are_the_tutorials():
    config = TrainConfig(dir="out")
    assert (config.batch_size, config.lr, config.lr_decay) == (32, 1e-4, 1e-6)
    assert config.augmentation is True
    # 100 epochs: the tutorial's ceil(100 / size) epochs of whole-dataset passes per worker
    # amount to 100 passes of sharded data (see training/config.py).
    assert config.epochs == 100
    assert config.data_dir is None and config.seed is None and config.steps_per_epoch is None


def test_every_setting_is_on_the_command_line():
    config = parse_args([
        "--dir", "/share/cifar", "--data-dir", "/data", "--epochs", "7", "--batch-size", "64",
        "--lr", "0.001", "--lr-decay", "0", "--warmup-epochs", "2", "--no-augmentation",
        "--seed", "3", "--steps-per-epoch", "11", "--keep-checkpoints", "4", "--verbose", "1",
        "--dump-weights-dir", "/tmp/w", "--log-every-steps", "5"])
    assert config == TrainConfig(
        dir="/share/cifar", data_dir="/data", epochs=7, batch_size=64, lr=0.001, lr_decay=0.0,
        warmup_epochs=2, augmentation=False, seed=3, steps_per_epoch=11, keep_checkpoints=4,
        verbose=1, dump_weights_dir="/tmp/w", log_every_steps=5)
    # The command line and the dataclass cover the same settings.
    assert {f.name for f in dataclasses.fields(TrainConfig)} == set(vars(config))


def test_the_tutorials_short_dir_option_still_works():
    assert parse_args(["-d", "out"]).dir == "out"


def test_a_sweep_trial_writes_to_its_own_output_directory_whatever_dir_says(monkeypatch):
    # The tutorial's job.json has a fixed --dir; every trial of a sweep runs it, each with its own
    # $AZ_BATCHAI_OUTPUT_TRIAL (set by the local service), where its checkpoints and model go.
    monkeypatch.setenv("AZ_BATCHAI_OUTPUT_TRIAL", "/share/cifar/trial-3/outputs")
    assert parse_args(["--dir=/share/cifar"]).dir == "/share/cifar/trial-3/outputs"
    monkeypatch.setenv("AZ_BATCHAI_OUTPUT_TRIAL", "")
    assert parse_args(["--dir=/share/cifar"]).dir == "/share/cifar"


@pytest.mark.parametrize("argv, named, valid", [
    ([], "--dir", "required"),
    (["--dir", "o", "--epochs", "0"], "--epochs", "an integer >= 1"),
    (["--dir", "o", "--epochs", "ten"], "--epochs", "an integer >= 1"),
    (["--dir", "o", "--batch-size", "-4"], "--batch-size", "an integer >= 1"),
    (["--dir", "o", "--lr", "0"], "--lr", "a number > 0"),
    (["--dir", "o", "--lr", "nan"], "--lr", "a number > 0"),
    (["--dir", "o", "--lr-decay", "-1"], "--lr-decay", "a number >= 0"),
    (["--dir", "o", "--verbose", "3"], "--verbose", "choose from"),
    (["--dir", "", "--epochs", "1"], "dir", "directory"),
])
def test_bad_command_lines_exit_with_a_message_naming_the_option(argv, named, valid, capsys):
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert named in err and valid in err
    assert "Traceback" not in err


@pytest.mark.parametrize("changes, message", [
    ({"epochs": 0}, "epochs: expected an integer >= 1, got 0"),
    ({"batch_size": 2.5}, "batch_size: expected an integer >= 1, got 2.5"),
    ({"lr": -1e-3}, "lr: expected a number > 0, got -0.001"),
    ({"warmup_epochs": -1}, "warmup_epochs: expected an integer >= 0, got -1"),
    ({"steps_per_epoch": 0}, "steps_per_epoch: expected an integer >= 1, got 0"),
    ({"verbose": True}, "verbose: expected an integer from 0 to 2, got True"),
])
def test_configs_validate_themselves_and_name_the_field(changes, message):
    with pytest.raises(ConfigError) as raised:
        TrainConfig(dir="out", **changes)
    assert str(raised.value) == message


def test_configs_are_frozen_and_replaced_with_validation():
    config = TrainConfig(dir="out")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.epochs = 3
    assert config.replace(epochs=3).epochs == 3 and config.epochs == 100
    with pytest.raises(ConfigError):
        config.replace(epochs=-3)


def test_importing_the_package_does_not_import_tensorflow_or_horovod():
    code = ("import sys, training, training.config, training.data, training.synthetic; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'horovod', 'keras')))")
    out = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]"
