"""examples/tutorial.ipynb executed cell by cell in a real Jupyter kernel (nbclient + ipykernel)
against a fresh local service: statuses render as HTML tables, transfers show tqdm's notebook
widget, and the trained model arrives."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from horovod_batchai.local import stop_daemon
from examples_support import REPO, tutorial_environment

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytestmark = pytest.mark.slow  # trains the model

WIDGET = "application/vnd.jupyter.widget-view+json"


def _outputs(cell: dict) -> tuple[str, str, list[dict]]:
    html = "".join(out.get("data", {}).get("text/html", "") for out in cell["outputs"])
    text = "".join(out.get("text", "") for out in cell["outputs"] if out["output_type"] == "stream")
    return html, text, cell["outputs"]


def _cell(notebook: dict, source_part: str) -> dict:
    found = [c for c in notebook["cells"] if c["cell_type"] == "code" and source_part in c["source"]]
    assert len(found) == 1, source_part
    return found[0]


def test_the_notebook_runs_in_a_kernel_against_the_local_service(tmp_path: Path) -> None:
    # The notebook finds job.json in its own folder and the training script one level up, as in
    # the repository; a copy keeps tutorial-output/ and the service's state out of the checkout.
    examples = tmp_path / "examples"
    examples.mkdir()
    for name in ("tutorial.ipynb", "job.json"):
        shutil.copy(REPO / "examples" / name, examples / name)
    (tmp_path / "training").symlink_to(REPO / "training")
    home = tmp_path / "home"
    home.mkdir()
    state = tmp_path / "state"
    env = {**tutorial_environment(home), "HOROVOD_BATCHAI_STATE_DIR": str(state)}  # the service it starts

    notebook = nbformat.read(examples / "tutorial.ipynb", as_version=4)
    client = nbclient.NotebookClient(notebook, kernel_name="python3", timeout=900,
                                     resources={"metadata": {"path": str(examples)}})
    try:
        client.execute(env=env)  # raises CellExecutionError, with the cell and its traceback, if a cell fails
    finally:
        stop_daemon(state)
    executed = notebook  # now with every cell's outputs

    html, _, _ = _outputs(_cell(executed, "cluster.wait_until_ready(timeout=900)"))
    assert "<table>" in html and "<th" in html and ">steady</td>" in html, html

    _, _, outputs = _outputs(_cell(executed, "share.upload_directory("))
    assert any(WIDGET in out.get("data", {}) for out in outputs), outputs

    html, text, _ = _outputs(_cell(executed, "job.wait()"))
    assert ">cifar_distributed</td>" in html and ">succeeded</td>" in html and ">0</td>" in html, html
    assert "[0]<stdout>" not in text and text.strip(), text

    model = examples / "tutorial-output" / "keras_cifar10_trained_model.h5"
    assert model.read_bytes()[:8] == b"\x89HDF\r\n\x1a\n"  # an HDF5 file: the saved Keras model
