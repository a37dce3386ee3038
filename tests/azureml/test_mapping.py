"""The Azure ML vocabulary mapped onto this package's: job statuses, the node command, the
environment's pins, the spec kept on the job."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from horovod_batchai import ExecutionState, HorovodJob, InputDirectory
from horovod_batchai._places.azureml.command import node_command, output_placeholder
from horovod_batchai._places.azureml.conversions import read_spec_property, spec_property
from horovod_batchai._places.azureml.environment import DOCKERFILE, content_hash, context_files
from horovod_batchai._places.azureml.states import JOB_STATES, execution_state

import scenario as S
from replay import REFERENCE

ROOT = Path(__file__).resolve().parents[2]
JOB_JSON = ROOT / "examples" / "job.json"


def test_every_job_status_of_the_spec_has_a_state() -> None:
    spec = json.loads((REFERENCE / "azureml-2025-12-01" / "mfe.extract.json").read_text(encoding="utf-8"))
    statuses = spec["definitions"]["JobStatus"]["enum"]
    assert sorted(JOB_STATES) == sorted(statuses)
    terminal = {s for s in statuses if JOB_STATES[s].is_terminal()}
    assert terminal == {"Completed", "Failed", "Canceled"}  # the spec README's terminal values
    assert execution_state("Completed") is ExecutionState.SUCCEEDED
    assert execution_state("canceled") is ExecutionState.FAILED
    assert execution_state("CancelRequested") is ExecutionState.TERMINATING
    assert execution_state("SomethingNew") is ExecutionState.QUEUED  # a newer service's word: keep waiting


def test_the_docs_table_is_the_code_table() -> None:
    text = (ROOT / "docs" / "azureml.rst").read_text(encoding="utf-8")
    for status, state in JOB_STATES.items():
        assert re.search(rf"``{status}``\s+``{state.value}``", text), status


def test_the_command_builds_the_batch_ai_world_on_a_node(tmp_path: Path) -> None:
    """Run the node command as Azure ML would (placeholders replaced by mount paths, two MPI ranks
    on one node) with a stand-in interpreter that reports what it was given."""
    share = tmp_path / "mounted-share"
    (share / "cifar").mkdir(parents=True)
    (share / "cifar" / "cifar_cnn_distributed.py").write_text(
        "import os, sys\n"
        "rank = os.environ['AZ_BATCHAI_TASK_INDEX']\n"
        "open(os.path.join(os.path.dirname(__file__), f'ran-{rank}.txt'), 'w').write(' '.join(sys.argv[1:]) + '\\n'"
        " + os.environ['AZ_BATCHAI_JOB_MOUNT_ROOT'] + '\\n' + os.environ.get('AZ_BATCHAI_INPUT_DATA', ''))\n",
        encoding="utf-8")
    spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name="mystorageaccount", account_key="a2V5")
    spec = spec.replace(node_count=1, process_count=2, interpreter=sys.executable,
                        input_directories=(InputDirectory(id="DATA", path="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar"),),
                        job_preparation="echo prepared >> $AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/prepared.txt")
    command = node_command(spec, job_name="cifar_distributed", mounts={"myshare": output_placeholder("mount0_myshare")})
    assert output_placeholder("mount0_myshare") in command
    runnable = command.replace(output_placeholder("mount0_myshare"), str(share))
    env = {"PATH": os.environ["PATH"], "TMPDIR": str(tmp_path / "node-tmp")}
    ranks = [subprocess.Popen(["sh", "-c", runnable], env={**env, "OMPI_COMM_WORLD_RANK": str(r),
                                                          "OMPI_COMM_WORLD_LOCAL_RANK": str(r)})
             for r in (1, 0)]  # the waiting rank starts first
    assert [p.wait(timeout=60) for p in ranks] == [0, 0]
    for rank in (0, 1):
        args, mount_root, data = (share / "cifar" / f"ran-{rank}.txt").read_text(encoding="utf-8").splitlines()
        assert args == f"--dir={mount_root}/myshare/cifar"  # $AZ_BATCHAI_JOB_MOUNT_ROOT expanded on the node
        assert Path(mount_root, "myshare").resolve() == share.resolve()
        assert data == f"{mount_root}/myshare/cifar"
    assert (share / "prepared.txt").read_text(encoding="utf-8") == "prepared\n"  # once per node
    assert (Path(mount_root) / "myshare" / "cifar").is_dir()
    # $AZ_BATCHAI_STDOUTERR_DIR is made where the SDK reads the job's metrics from the share
    from horovod_batchai._places.azureml.stdouterr import stdouterr_place
    place = stdouterr_place(spec, "cifar_distributed")
    assert place is not None and place.datastore == "mystorageaccount_myshare"
    assert place.path == "cifar/cifar_distributed/stdouterr" and (share / place.path).is_dir()


def test_a_failed_preparation_fails_every_process_of_the_node(tmp_path: Path) -> None:
    spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name="mystorageaccount", account_key="a2V5")
    spec = spec.replace(job_preparation="exit 3", interpreter="true")
    runnable = node_command(spec, job_name="j", mounts={"myshare": output_placeholder("m")}).replace(output_placeholder("m"), str(tmp_path))
    env = {"PATH": os.environ["PATH"], "TMPDIR": str(tmp_path / "t")}
    ranks = [subprocess.Popen(["sh", "-c", runnable], env={**env, "OMPI_COMM_WORLD_LOCAL_RANK": str(r)},
                              stderr=subprocess.PIPE) for r in (0, 1)]
    assert [p.wait(timeout=60) for p in ranks] == [1, 1]


def test_the_spec_kept_on_the_job_has_no_key_and_reads_back() -> None:
    spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name="mystorageaccount", account_key="c2VjcmV0a2V5")
    text = spec_property(spec)
    assert "c2VjcmV0a2V5" not in text and "credentials" not in text
    again = read_spec_property({"horovod_batchai.spec": text}, "cifar_distributed")
    assert (again.script, again.arguments, again.node_count, again.container_image, again.job_preparation) == (
        spec.script, spec.arguments, spec.node_count, spec.container_image, spec.job_preparation)
    assert again.mounts[0].account_key is None


def _setup_pins() -> dict[str, str]:
    source = (ROOT / "setup.py").read_text(encoding="utf-8")
    block = source[source.index("TRAINING_REQUIRES = ["):source.index("]", source.index("TRAINING_REQUIRES = ["))]
    pins = dict(re.findall(r'"([a-z0-9-]+)([<>=!][^"]*)"', block))
    pins["tensorflow"] = pins.pop("tensorflow-cpu")  # the image has the GPU build of the same version
    return pins


def test_the_dockerfile_pins_what_setup_py_pins() -> None:
    dockerfile = DOCKERFILE.read_text(encoding="utf-8")
    pins = _setup_pins()
    assert set(pins) == {"tensorflow", "keras", "numpy", "h5py", "scipy", "setuptools"}
    for name, spec in pins.items():
        wanted = f'"tensorflow[and-cuda]{spec}"' if name == "tensorflow" else f'"{name}{spec}"'
        assert wanted in dockerfile, wanted
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    (horovod,) = re.findall(r"horovod==[0-9.]+", makefile)
    assert f'"{horovod}"' in dockerfile
    assert "HOROVOD_GPU_OPERATIONS=NCCL" in dockerfile and "HOROVOD_WITH_MPI=1" in dockerfile
    assert re.search(r"^FROM nvidia/cuda:12\.2\.\d+-cudnn8-devel-ubuntu22\.04$", dockerfile, re.M)  # TF 2.15's CUDA


def test_the_dockerfile_installs_the_mlflow_client_setup_py_pins_with_the_training_stack() -> None:
    """Azure ML jobs log with MLflow (the training package, a user's script): the image has the
    logging client of setup.py's training extra and azureml-mlflow (for the azureml:// tracking
    URI), resolved in the training stack's own pip install so that its pins hold."""
    source = (ROOT / "setup.py").read_text(encoding="utf-8")
    block = source[source.index("TRACKING_CLIENT_REQUIRES = ["):]
    (pin,) = re.findall(r'"(mlflow-skinny[<>=!][^"]*)"', block[:block.index("]")])
    dockerfile = DOCKERFILE.read_text(encoding="utf-8")
    install = next(run for run in dockerfile.split("\nRUN ") if '"tensorflow[and-cuda]' in run)
    assert f'"{pin}"' in install and '"azureml-mlflow==' in install


def test_the_build_context_holds_the_dockerfile_and_training() -> None:
    files = context_files()
    assert files["Dockerfile"] == DOCKERFILE.read_bytes()
    assert files["training/train.py"] == (ROOT / "training" / "train.py").read_bytes()
    assert not [name for name in files if "__pycache__" in name or name.endswith(".pyc")]
    # the same content is the same upload path run after run; any change is another
    assert content_hash(files) == content_hash(dict(reversed(list(files.items()))))
    assert content_hash({**files, "Dockerfile": files["Dockerfile"] + b"\n"}) != content_hash(files)
    moved = {("other/" + k if k == "Dockerfile" else k): v for k, v in files.items()}
    assert content_hash(moved) != content_hash(files)


def test_the_dockerfile_ships_in_the_package() -> None:
    source = (ROOT / "setup.py").read_text(encoding="utf-8")
    assert "_places/azureml/environment/Dockerfile" in source


# -- what the entities carry (what azure-ai-ml then sends) -------------------------------------------


@pytest.mark.parametrize("priority, tier, wire", [("dedicated", "dedicated", "Dedicated"),
                                                  ("lowpriority", "low_priority", "LowPriority")])
def test_vm_priority_is_the_compute_tier(priority: str, tier: str, wire: str) -> None:
    from horovod_batchai import ClusterSpec
    from horovod_batchai._places.azureml.conversions import compute_entity
    spec = ClusterSpec(vm_size="Standard_NC6s_v3", vm_priority=priority, target_node_count=2,
                       admin_user_name="azureuser", ssh_public_key=S.SSH_KEY)
    entity = compute_entity("nc6cluster", spec)
    assert entity.tier == tier
    assert entity._to_rest_object().properties.properties.vm_priority == wire


def _job(**changes: object) -> tuple[object, dict]:
    """The command job entity for job.json with ``changes``, and the REST body azure-ai-ml makes of it."""
    from azure.ai.ml.entities import Environment

    from horovod_batchai._places.azureml.conversions import command_job_entity
    spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name="mystorageaccount", account_key="a2V5")
    spec = spec.replace(node_count=2, **changes)
    entity = command_job_entity(spec, job_name="cifar_distributed", experiment="cifar", compute="nc6cluster",
                                environment=Environment(image="tensorflow/tensorflow:1.8.0-gpu"))
    return entity, entity._to_job()._to_rest_object().as_dict()["properties"]  # the job PUT body


@pytest.mark.parametrize("wall_clock, seconds, wire", [
    (timedelta(hours=2), 7200, "PT2H"),
    (timedelta(days=7), 604800, "P7D"),
    (None, None, None),
])
def test_max_wall_clock_time_is_the_job_limit(wall_clock: object, seconds: object, wire: object) -> None:
    entity, body = _job(max_wall_clock_time=wall_clock)
    assert getattr(entity.limits, "timeout", None) == seconds
    assert (body.get("limits") or {}).get("timeout") == wire
    if wire is not None:
        assert body["limits"]["jobLimitsType"] == "Command"


@pytest.mark.parametrize("variables", [{"NCCL_DEBUG": "INFO"}, {"A": "1", "B": "two words", "EMPTY": ""}, {}])
def test_environment_variables_are_the_jobs(variables: dict) -> None:
    entity, body = _job(environment_variables=variables)
    assert dict(entity.environment_variables or {}) == variables
    assert (body.get("environmentVariables") or {}) == variables
