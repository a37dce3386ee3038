"""examples/experiments.ipynb executed in real Jupyter kernels (nbclient + ipykernel) against a
fresh local service: a first kernel creates a 4-trial sweep of the training package on generated
data and is shut down mid-sweep; a new kernel finds the sweep on the service, finished, with its
results table, the best trial's metrics table and a PNG of its curves."""
from __future__ import annotations

import base64
import re
import shutil
from pathlib import Path

import pytest

from horovod_batchai import SweepState, Target, Workspace
from horovod_batchai.local import stop_daemon
from examples_support import REPO, tutorial_environment

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytestmark = pytest.mark.slow  # trains four small models


def _cell(notebook: dict, source_part: str) -> dict:
    found = [c for c in notebook["cells"] if c["cell_type"] == "code" and source_part in c["source"]]
    assert len(found) == 1, source_part
    return found[0]


def _html(cell: dict) -> str:
    return "".join(out.get("data", {}).get("text/html", "") for out in cell["outputs"])


def test_the_experiments_notebook_runs_a_sweep_and_shows_the_best_trials_curves(tmp_path: Path) -> None:
    examples = tmp_path / "examples"
    examples.mkdir()
    shutil.copy(REPO / "examples" / "experiments.ipynb", examples / "experiments.ipynb")
    (tmp_path / "training").symlink_to(REPO / "training")
    home = tmp_path / "home"
    home.mkdir()
    state = tmp_path / "state"
    env = {**tutorial_environment(home), "HOROVOD_BATCHAI_STATE_DIR": str(state)}

    notebook = nbformat.read(examples / "experiments.ipynb", as_version=4)
    created = notebook["cells"].index(_cell(notebook, "sweep = experiment.sweep("))
    try:
        first = nbclient.NotebookClient(notebook, kernel_name="python3", timeout=3600,
                                        resources={"metadata": {"path": str(examples)}})
        with first.setup_kernel(env=env):
            for index, cell in enumerate(notebook["cells"][:created + 1]):
                first.execute_cell(cell, index)
            kernel = first.km
        assert kernel is not None and not kernel.has_kernel  # the first kernel is gone
        with Target.local(state_dir=state) as target:  # and the sweep goes on without it
            held = Workspace.get(target, "batchai.horovod", "batchaidev").get_experiment("sweeps").get_sweep("lr-bs")
            assert held.state is SweepState.RUNNING, held.trials

        second = nbclient.NotebookClient(notebook, kernel_name="python3", timeout=3600,
                                         resources={"metadata": {"path": str(examples)}})
        with second.setup_kernel(env=env):
            for index, cell in enumerate(notebook["cells"]):
                if index > created:
                    second.execute_cell(cell, index)
    finally:
        stop_daemon(state)

    results = _html(_cell(notebook, "results = sweep.wait("))
    rows = re.findall(r"<tr>(.*?)</tr>", results)
    assert len(rows) == 5, results  # the header and four trials
    for index, (lr, batch) in enumerate([("0.003", "16"), ("0.003", "32"), ("0.0003", "16"), ("0.0003", "32")]):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", rows[index + 1])
        assert cells[:6] == [f"lr-bs-{index}", lr, batch, "completed", "", "2"], cells
        assert 0.0 <= float(cells[6]) <= 1.0 and 0.0 <= float(cells[7]) <= 1.0
    best_name = re.search(r"best trial <code>(lr-bs-\d)</code>", results).group(1)

    best_cell = _cell(notebook, "best = sweep.best()")
    printed = "".join(out.get("text", "") for out in best_cell["outputs"] if out["output_type"] == "stream")
    assert printed.startswith(best_name + " {'lr': ")
    metrics = _html(best_cell)
    assert len(re.findall(r"<tr>", metrics)) == 3 and "val_accuracy" in metrics and "images_per_second" in metrics

    plots = [out for out in _cell(notebook, "metrics.plot()")["outputs"] if "image/png" in out.get("data", {})]
    assert len(plots) == 1, _cell(notebook, "metrics.plot()")["outputs"]
    assert base64.b64decode(plots[0]["data"]["image/png"]).startswith(b"\x89PNG")
