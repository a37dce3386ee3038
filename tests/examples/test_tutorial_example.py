"""examples/tutorial.py end to end on a fresh local service (real horovodrun, the real model on
generated data), its option checks, and the notebook: valid nbformat 4 whose code cells take the
script's steps in the script's order."""
from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from horovod_batchai import FileShare, NotFoundError, Target, Workspace
from horovod_batchai.local import LocalService, find_running, stop_daemon
from examples_support import REPO, tutorial_environment

SCRIPT = REPO / "examples" / "tutorial.py"
NOTEBOOK = REPO / "examples" / "tutorial.ipynb"

# The tutorial's steps as calls of the public API, in the order both the script and the
# notebook must make them.
STEPS = ["Workspace.create(", ".create_experiment(", ".create_cluster(", "FileShare.create(", ".create_directory(",
         ".upload_file(", ".upload_directory(", ".wait_until_ready(", "HorovodJob.from_file(", "spec.replace(",
         ".submit(", ".execution_state", ".node_state_counts", ".list_output_files(", '.stream("stdout.txt"',
         ".wait(", ".download_file(", ".resize(0)", ".delete(delete_resource_group=True)"]


def _tutorial(args: list[str], tmp_path: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=tmp_path, env=tutorial_environment(home),
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_tutorial_runs_end_to_end_on_the_local_service(tmp_path: Path) -> None:
    state = tmp_path / "state"
    try:
        run = _tutorial(["--state-dir", str(state), "--synthetic", "--nodes", "2", "--epochs", "1",
                         "--steps-per-epoch", "4", "--ssh-key", str(tmp_path / "home" / "id_rsa"),
                         "--download-to", str(tmp_path / "out")], tmp_path, timeout=900)
    finally:
        stop_daemon(state)
    out = run.stdout
    assert run.returncode == 0, out[-3000:] + run.stderr[-3000:]

    # the cluster table, as the tutorial shows it, first resizing and at the end steady at 0
    header = re.compile(r"^Name +Resource Group +Workspace +VM Size +State +Idle +Running +Preparing +Leaving +"
                        r"Unusable$", re.MULTILINE)
    assert len(header.findall(out)) >= 2
    assert re.search(r"^nc6cluster +batchai\.horovod +batchaidev +STANDARD_NC6 +steady +2 +0 +0 +0 +0$", out,
                     re.MULTILINE)
    assert re.search(r"^nc6cluster +batchai\.horovod +batchaidev +STANDARD_NC6 +steady +0 +0 +0 +0 +0$", out,
                     re.MULTILINE)
    # what differs from job.json is said plainly, and so is the generated data
    assert "nodeCount: 4 in job.json, 2 here (--nodes)" in out
    assert "--data-dir=$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar/cifar-10-batches-py" in out
    assert "NOT CIFAR-10" in out
    # the job watched while it runs on both nodes
    assert re.search(r"executionState: running .*\"runningNodeCount\": 2", out)
    # the output file table with sizes, stdout.txt among the files
    assert re.search(r"^Name +Type +Size +Modified$", out, re.MULTILINE)
    assert re.search(r"^stdout\.txt +file +\d+ +\d{4}-\d\d-\d\dT", out, re.MULTILINE)
    # the streamed log (the processes' own lines, as the tutorial's) ends with the test accuracy,
    # which is repeated at the end
    assert re.search(r"^Test accuracy: [0-9.]+$", out, re.MULTILINE)
    assert "<stdout>:" not in out
    assert re.search(r"Test accuracy: [0-9.]+ on the generated dataset", out)
    # the model went where the output says, and is an HDF5 file
    moved = re.search(r"myshare/cifar/saved_models/keras_cifar10_trained_model\.h5 -> (\S+) \((\d+) bytes\)", out)
    assert moved is not None
    model = Path(moved.group(1))
    assert model == (tmp_path / "out" / "keras_cifar10_trained_model.h5").resolve()
    assert model.stat().st_size == int(moved.group(2)) > 0
    assert model.read_bytes()[:8] == b"\x89HDF\r\n\x1a\n"
    # cleaned up: the service this run started was stopped, and the resource group is gone
    assert "Stopped the local service this run started" in out
    assert find_running(state) is None
    with LocalService(state) as service, Target.local(service=service) as target:
        assert Workspace.list(target) == []
        with pytest.raises(NotFoundError):
            FileShare.get(target, "batchai.horovod", "mystorageaccount", "myshare")


@pytest.mark.slow
def test_a_failing_job_makes_the_tutorial_exit_1(tmp_path: Path) -> None:
    """Files named like CIFAR-10 that are not: the job fails on them, the script says why, keeps
    the resources for reading the logs, releases the nodes and exits 1."""
    broken = tmp_path / "cifar-10-batches-py"
    broken.mkdir()
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch", "batches.meta"]:
        (broken / name).write_bytes(b"not a pickle")
    state = tmp_path / "state"
    try:
        run = _tutorial(["--state-dir", str(state), "--data-dir", str(broken), "--nodes", "1",
                         "--ssh-key", str(tmp_path / "home" / "id_rsa"), "--download-to", str(tmp_path / "out")],
                        tmp_path, timeout=600)
    finally:
        stop_daemon(state)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    assert "job 'cifar_distributed' failed with exit code" in run.stdout
    assert "not a CIFAR-10 python batch file" in run.stdout  # training's own message, from stderr.txt
    assert "resizing nc6cluster to 0 nodes; the resources are kept" in run.stdout
    assert not (tmp_path / "out").exists()
    assert "Traceback (most recent call last)" not in run.stderr


@pytest.mark.parametrize("args, message", [
    (["--nodes", "0"], "--nodes: expected an integer >= 1"),
    (["--data-dir", "/nonexistent/cifar"], "--data-dir: '/nonexistent/cifar' does not hold CIFAR-10"),
    (["--target", "azure"], "--subscription"),
    (["--data-dir", "x", "--synthetic"], "not allowed with argument"),
    (["--storage-account", "My_Storage"], "--storage-account: 'My_Storage' is not a storage account name"),
    (["--timeout", "-5"], "--timeout: expected seconds > 0"),
])
def test_option_mistakes_exit_2_before_anything_starts(tmp_path: Path, args: list[str], message: str) -> None:
    state = tmp_path / "state"
    run = _tutorial(["--state-dir", str(state), *args], tmp_path, timeout=120)
    assert run.returncode == 2
    assert message in run.stderr
    assert "Traceback" not in run.stderr
    assert not state.exists()  # no service was started, nothing was created


def test_help_names_the_options(tmp_path: Path) -> None:
    run = _tutorial(["--help"], tmp_path, timeout=120)
    assert run.returncode == 0
    for option in ("--target", "--nodes", "--epochs", "--data-dir", "--synthetic", "--keep", "--state-dir",
                   "--download-to"):
        assert option in run.stdout


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tutorial_example", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # importing does no work: main() runs only as a script
    return module


def _notebook_code() -> list[str]:
    return ["".join(cell["source"]) for cell in json.loads(NOTEBOOK.read_text())["cells"]
            if cell["cell_type"] == "code"]


def _in_order(text: str, steps: list[str]) -> list[str]:
    """The steps not found in ``text`` after the step before them."""
    missing, position = [], 0
    for step in steps:
        found = text.find(step, position)
        if found < 0:
            missing.append(step)
        else:
            position = found + len(step)
    return missing


def test_the_default_node_count_is_what_this_machine_holds() -> None:
    module = _load_script()
    cores = len(os.sched_getaffinity(0))
    assert module.machine_nodes() == max(1, min(4, cores))
    assert module.parse_args([]).nodes == module.machine_nodes()
    assert module.parse_args(["--nodes", "4"]).nodes == 4
    assert module.parse_args(["--target", "azure", "--subscription", "00000000-0000-0000-0000-000000000001"]).nodes == 4


def test_the_script_takes_the_tutorial_steps_in_order() -> None:
    module = _load_script()
    # run() watches the job through a helper; the notebook writes that loop out
    watch = STEPS.index(".execution_state")
    steps = STEPS[:watch] + ["watch_until_started("] + STEPS[watch + 2:]
    assert _in_order(inspect.getsource(module.run), steps) == []
    assert _in_order(inspect.getsource(module.watch_until_started), [".execution_state", "node_counts("]) == []
    assert ".node_state_counts" in inspect.getsource(module.node_counts)


def test_the_notebook_is_nbformat_4_with_the_same_steps() -> None:
    document = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    assert document["nbformat"] == 4 and isinstance(document["nbformat_minor"], int)
    assert document["metadata"]["kernelspec"]["language"] == "python"
    ids = [cell["id"] for cell in document["cells"]]
    assert len(ids) == len(set(ids))
    for cell in document["cells"]:
        assert cell["cell_type"] in ("markdown", "code")
        assert isinstance(cell["metadata"], dict)
        assert isinstance(cell["source"], list) and all(isinstance(line, str) for line in cell["source"])
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
            compile("".join(cell["source"]), cell["id"], "exec")
    assert _in_order("\n".join(_notebook_code()), STEPS) == []


@pytest.mark.parametrize("where", ["script", "notebook"])
def test_the_examples_use_job_json_verbatim_and_never_import_tensorflow(where: str) -> None:
    source = SCRIPT.read_text() if where == "script" else "\n".join(_notebook_code())
    assert re.search(r'HorovodJob\.from_file\((JOB_JSON|EXAMPLES / "job\.json"), storage=share\)', source)
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & {"tensorflow", "keras", "horovod"}
    assert "horovod_batchai" in imported


AZUREML = ["--target", "azureml", "--subscription", "00000000-0000-0000-0000-000000000001", "--resource-group",
           "mlgroup", "--workspace", "mlworkspace", "--storage-account", "mlstorage123"]


def test_azureml_says_what_it_will_create_and_wants_yes_when_not_at_a_terminal(tmp_path: Path) -> None:
    run = _tutorial([*AZUREML, "--nodes", "2"], tmp_path, timeout=120)  # stdin is not a terminal here
    assert run.returncode == 2, run.stdout + run.stderr
    assert "AmlCompute cluster nc6cluster: 2 x Standard_NC6s_v3, priority dedicated" in run.stdout
    assert "datastore mlstorage123_myshare" in run.stdout
    assert "--yes is needed" in run.stderr and "Traceback" not in run.stderr
    assert "Target:" not in run.stdout  # nothing was built, let alone created


@pytest.mark.parametrize("drop, message", [("--workspace", "--workspace"), ("--resource-group", "--resource-group")])
def test_azureml_needs_its_workspace(tmp_path: Path, drop: str, message: str) -> None:
    args = list(AZUREML)
    del args[args.index(drop):args.index(drop) + 2]
    run = _tutorial(args, tmp_path, timeout=120)
    assert run.returncode == 2 and f"--target azureml needs {message}" in run.stderr
