"""Which Pythons setup.py admits, and what stands for a 3.12 run where no 3.12 interpreter exists.

The suite runs on 3.11 (here) and 3.13 (``tests/python313``, a Debian trixie chroot) on every run;
3.12 lies between them and is Ubuntu 24.04's default Python, so pip must not refuse it. No 3.12
interpreter can be had on the project's machines, so mypy checks the package against 3.12's
standard library (typeshed marks what each version added or removed).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def distribution():
    from distutils.core import run_setup  # setuptools' copy; reads setup.py without building anything
    return run_setup(str(REPO / "setup.py"), stop_after="init")


@pytest.mark.parametrize("version, admitted", [
    ("3.10.14", False), ("3.11.9", True), ("3.12.0", True), ("3.12.3", True), ("3.13.1", True),
    ("3.14.0", False),
])
def test_python_requires_admits_3_11_to_3_13(distribution, version: str, admitted: bool) -> None:
    assert SpecifierSet(distribution.python_requires).contains(version) is admitted


def test_classifiers_name_every_admitted_minor_version(distribution) -> None:
    named = {c.rsplit(" :: ", 1)[1] for c in distribution.metadata.classifiers
             if c.startswith("Programming Language :: Python :: 3.")}
    assert named == {"3.11", "3.12", "3.13"}


def _applies(requirement: str, python: str) -> bool:
    marker = Requirement(requirement).marker
    return marker is None or marker.evaluate({"python_version": python, "python_full_version": python + ".0"})


def test_training_pins_stay_where_tensorflow_2_15_installs(distribution) -> None:
    # The training extra carries no marker (on 3.12 and 3.13 pip refuses tensorflow-cpu 2.15.1,
    # which has no wheel there, rather than installing an empty node runtime); numpy < 2 beside
    # matplotlib and pandas holds only where that stack can live (3.11), never on 3.12.
    training = distribution.extras_require["training"]
    assert any(r.startswith("tensorflow-cpu==2.15.1") for r in training)
    assert all(Requirement(r).marker is None for r in training)
    numpy_pins = [r for r in distribution.extras_require["notebook"] if Requirement(r).name == "numpy"]
    assert numpy_pins
    assert all(_applies(r, "3.11") for r in numpy_pins)
    assert not any(_applies(r, v) for r in numpy_pins for v in ("3.12", "3.13"))


def test_the_package_type_checks_against_python_3_12() -> None:
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "mypy.ini"),
                             "--python-version", "3.12"],
                            cwd=REPO, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
