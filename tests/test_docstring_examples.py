"""The examples in the public API's docstrings run, and say what they do."""
from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import horovod_batchai

REPO = Path(__file__).resolve().parents[1]
MODULES = ["horovod_batchai._models.job_spec", "horovod_batchai._models.states"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # examples name examples/job.json relative to the repository
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs=vars(horovod_batchai), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no docstring examples"
    assert result.failed == 0
