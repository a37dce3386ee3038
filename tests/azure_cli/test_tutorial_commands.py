"""The tutorial's own `az` commands, verbatim, run by azure-cli (from PyPI, in its own virtualenv)
against a fresh local service, after `eval "$(horovod-batchai local az-env)"`.

Each command must exit 0, in the tutorial's order; the model `az storage file download` fetches must
be byte for byte the file on the share. Two things the tutorial did off-screen are done here too,
and said so: the training data goes onto the share with `az storage file upload-batch` (this machine
cannot download CIFAR-10; a small set in its format is generated instead), and job.json is the
tutorial's with `--data-dir` and `--epochs=1` appended to its commandLineArgs.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from az_support import az_env as _az_env, checked as _checked, run as _run
from client_venvs import REPO, azure_cli, ensure
from horovod_batchai.local import LocalService, ServiceSettings

SEEDS = REPO.parent / "shared" / "seeds"

#: `grep -n "^ *az " shared/seeds/000*.txt`, in order; `az group delete` asks for confirmation,
#: which --yes gives.
TUTORIAL = [
    'az group create --name batchai.horovod --location eastus',
    'az batchai workspace create --resource-group batchai.horovod --workspace batchaidev ',
    'az batchai experiment create --resource-group batchai.horovod --workspace batchaidev --name cifar ',
    'az batchai cluster create --resource-group batchai.horovod --workspace batchaidev --name nc6cluster '
    '--vm-priority dedicated  --vm-size Standard_NC6 --target 4 --generate-ssh-keys',
    'az batchai cluster show --name nc6cluster --workspace batchaidev --resource-group batchai.horovod --output table',
    'az storage account create --resource-group batchai.horovod --name mystorageaccount --location eastus '
    '--sku Standard_LRS',
    'az storage share create --name myshare --account-name mystorageaccount',
    'az storage directory create --name cifar --share-name myshare --account-name mystorageaccount',
    'az storage file upload --path cifar --share-name myshare --source cifar_cnn_distributed.py '
    '--account-name mystorageaccount',
    'az batchai job create --cluster nc6cluster --name cifar_distributed --resource-group batchai.horovod '
    '--workspace batchaidev --experiment cifar --config-file job.json --storage-account-name mystorageaccount',
    'az batchai job show --experiment cifar --name cifar_distributed --resource-group batchai.horovod '
    '--workspace batchaidev --query "executionState"',
    'az batchai cluster show --name nc6cluster --workspace batchaidev --resource-group batchai.horovod '
    '--query "nodeStateCounts"',
    'az batchai job file list --experiment cifar --job cifar_distributed --resource-group batchai.horovod '
    '--workspace batchaidev --output table',
    'az batchai job file stream --experiment cifar --file-name stdout.txt --job cifar_distributed '
    '--resource-group batchai.horovod --workspace batchaidev',
    'az storage file download --path cifar/saved_models/keras_cifar10_trained_model.h5 --share-name myshare '
    '--account-name mystorageaccount',
    'az batchai cluster resize --name nc6cluster --resource-group batchai.horovod --target 0 --workspace batchaidev',
    'az group delete --name batchai.horovod',
]
MODEL = "cifar/saved_models/keras_cifar10_trained_model.h5"


def test_the_list_is_the_tutorials_own():
    seed = sorted(SEEDS.glob("000*.txt"))
    if not seed:
        pytest.skip("shared/seeds is not checked out beside the repository")
    lines = [line.strip() for line in seed[0].read_text(encoding="utf-8").splitlines() if line.lstrip().startswith("az ")]
    assert lines == [command.strip() for command in TUTORIAL]


@pytest.mark.slow
def test_every_tutorial_command_runs_against_the_local_service(tmp_path: Path) -> None:
    venv = ensure(azure_cli())
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    settings = ServiceSettings(provision_delay_s=0.5, deallocation_delay_s=0.1)
    with LocalService(tmp_path / "state", settings=settings) as svc:
        env = _az_env(svc.state_dir, home, venv)

        # What the tutorial had in its working directory: the script and job.json.
        shutil.copy(REPO / "training" / "cifar_cnn_distributed.py", work / "cifar_cnn_distributed.py")
        job = json.loads((REPO / "examples" / "job.json").read_text())
        job["properties"]["horovodSettings"]["commandLineArgs"] += \
            " --data-dir=$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar/cifar-10-batches-py --epochs=1"
        (work / "job.json").write_text(json.dumps(job, indent=4))
        subprocess.run([sys.executable, "-m", "training.synthetic", str(work / "cifar-10-batches-py"),
                        "--train", "400", "--test", "100"], cwd=REPO, check=True, capture_output=True, timeout=300)

        outputs: list[str] = []
        for command in TUTORIAL:
            if command.startswith("az batchai job create"):
                # Off-screen in the tutorial: the data the job reads, next to the uploaded script.
                upload = _run("az storage file upload-batch --destination myshare "
                              "--destination-path cifar/cifar-10-batches-py --source cifar-10-batches-py "
                              "--account-name mystorageaccount --output none", env, work)
                assert upload.returncode == 0, upload.stderr[-3000:]
            if command.startswith("az batchai job show"):
                deadline = time.monotonic() + 600   # the tutorial's "run it until it says succeeded"
                while json.loads(_checked(command, env, work)) not in ("succeeded", "failed"):
                    assert time.monotonic() < deadline, "the job did not finish in 10 minutes"
                    time.sleep(5)  # each look is a new `az` process: over a CPU-second of imports
            if command.startswith("az group delete"):
                command += " --yes"
            outputs.append(_checked(command, env, work))
            if command.startswith("az storage file download"):
                on_share = svc.state_dir / "files" / "mystorageaccount" / "myshare" / MODEL
                assert (work / Path(MODEL).name).read_bytes() == on_share.read_bytes()

        by_command = dict(zip(TUTORIAL, outputs))
        assert json.loads(by_command[TUTORIAL[10]]) == "succeeded"
        # The cluster table, shown right after the create: still resizing or already steady, as on Azure.
        [row] = [line.split() for line in by_command[TUTORIAL[4]].splitlines() if line.startswith("nc6cluster")]
        assert row[:4] == ["nc6cluster", "batchai.horovod", "batchaidev", "Standard_NC6"] and row[4] in (
            "resizing", "steady"), row
        assert set(json.loads(by_command[TUTORIAL[11]])) >= {"idleNodeCount", "runningNodeCount"}
        assert "stdout.txt" in by_command[TUTORIAL[12]]
        assert "Test accuracy" in by_command[TUTORIAL[13]]
        assert (work / Path(MODEL).name).read_bytes()[:8] == b"\x89HDF\r\n\x1a\n"   # HDF5, as Keras saves it


def test_a_cloud_registered_without_endpoint_discovery_works_too(tmp_path: Path) -> None:
    """`az cloud register --skip-endpoint-discovery` with the endpoints az requires, then login."""
    venv = ensure(azure_cli())
    home = tmp_path / "home"
    home.mkdir()
    with LocalService(tmp_path / "state", settings=ServiceSettings(provision_delay_s=0.1)) as svc:
        env = _az_env(svc.state_dir, home, venv)
        env["AZURE_CONFIG_DIR"] = str(tmp_path / "another-profile")
        endpoint = svc.endpoint
        for command in (f"az cloud register --name Explicit --skip-endpoint-discovery --endpoint-resource-manager "
                        f"{endpoint} --endpoint-active-directory {endpoint} --endpoint-active-directory-resource-id "
                        f"https://management.core.windows.net/ --suffix-storage-endpoint core.windows.net",
                        "az cloud set --name Explicit", "az login --identity --output none",
                        "az group create --name explicit.rg --location eastus"):
            _checked(command, env, home)
        assert json.loads(_checked("az group list --query [].name", env, home)) == ["explicit.rg"]
        account = json.loads(_checked("az account show", env, home))
        assert account["id"] == "00000000-0000-0000-0000-000000000000" and account["environmentName"] == "Explicit"



#: a sitecustomize for the CLI's Python that writes down every host name it resolves.
_RESOLVED_NAMES_PROBE = '''import os, socket
_resolve = socket.getaddrinfo
def _noted(host, *args, **kwargs):
    with open(os.environ["RESOLVED_NAMES_LOG"], "a") as log:
        log.write(f"{host}\\n")
    return _resolve(host, *args, **kwargs)
socket.getaddrinfo = _noted
'''


def test_nothing_the_cli_does_by_itself_leaves_the_machine(tmp_path: Path) -> None:
    """The lines and the first commands of a fresh profile resolve no name but the service's: no
    telemetry, no survey, no lookup of the CLI's latest version (az-env records the installed one)."""
    venv = ensure(azure_cli())
    home = tmp_path / "home"
    home.mkdir()
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "sitecustomize.py").write_text(_RESOLVED_NAMES_PROBE)
    log = tmp_path / "resolved.txt"
    log.touch()
    with LocalService(tmp_path / "state", settings=ServiceSettings(provision_delay_s=0.1)) as svc:
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("AZURE_", "IDENTITY_", "MSI_", "REQUESTS_CA_BUNDLE", "HOROVOD_BATCHAI_"))}
        base.update(HOME=str(home), PATH=f"{venv / 'bin'}{os.pathsep}{base.get('PATH', '')}",
                    HOROVOD_BATCHAI_STATE_DIR=str(svc.state_dir), PYTHONPATH=str(probe), RESOLVED_NAMES_LOG=str(log))
        # az-env itself runs with the repository on its path; every az after it with the probe.
        script = (f'set -e; eval "$(PYTHONPATH={shlex.quote(str(REPO))} {shlex.quote(sys.executable)} '
                  '-m horovod_batchai.cli local az-env)"; az group create --name quiet.rg --location eastus -o none; '
                  'az group list -o none')
        result = subprocess.run(["bash", "-c", script], env=base, cwd=home, capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
    names = set(log.read_text().split())
    assert names and names <= {"127.0.0.1", "localhost"}, names
