"""Jobs through the command line, run for real by horovodrun on the local service: the tutorial's
job.json submitted as `az batchai job create` did, stream / wait / show / list / file list /
file download, a failing job's exit status (1), a wait that times out (4), terminate and delete,
and job.json mistakes (2) that submit nothing."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from horovod_batchai import FileShare, Target
from horovod_batchai.cli import EXIT_CONFLICT, EXIT_FAILED, EXIT_NOT_FOUND, EXIT_TIMEOUT, EXIT_USAGE
from horovod_batchai.local import LocalService

from cli_support import ACCOUNT, RG, SHARE, STORAGE, WS, CliRun

pytestmark = pytest.mark.slow

Cli = Callable[..., CliRun]
REPO = Path(__file__).resolve().parents[2]
TUTORIAL_JOB = REPO / "examples" / "job.json"
EXP = ["-g", RG, "-w", WS, "-e", "cifar"]

# Stands in for cifar_cnn_distributed.py where the tutorial's job.json looks for it: the same
# --dir argument and model location, a second instead of an hour.
STAND_IN = """\
import argparse, os
parser = argparse.ArgumentParser()
parser.add_argument("-d", "--dir")
args, extra = parser.parse_known_args()
rank = os.environ.get("HOROVOD_RANK", "?")
print("rank", rank, "trains with", extra, flush=True)
if rank == "0":
    os.makedirs(os.path.join(args.dir, "saved_models"), exist_ok=True)
    with open(os.path.join(args.dir, "saved_models", "keras_cifar10_trained_model.h5"), "wb") as fh:
        fh.write(b"model" * 100)
    print("Test accuracy: 0.5", flush=True)
"""
FAILER = """\
import sys
print("about to fail", flush=True)
print("ValueError: the data set is missing", file=sys.stderr, flush=True)
sys.exit(3)
"""
SLEEPER = """\
import time
print("sleeping", flush=True)
time.sleep(300)
"""


@pytest.fixture
def ready(cli: Cli, workspace: str, share: str, tmp_path: Path) -> Path:
    """Experiment cifar, a steady 2-node cluster, the share with the stand-in script uploaded."""
    assert cli("experiment", "create", "-g", RG, "-w", WS, "-n", "cifar").code == 0
    created = cli("cluster", "create", "-g", RG, "-w", WS, "-n", "nc6cluster", "--target", "2",
                  "--generate-ssh-keys", "--wait", "--timeout", "120")
    assert created.code == 0, created.err
    for name, text in (("cifar_cnn_distributed.py", STAND_IN), ("failer.py", FAILER), ("sleeper.py", SLEEPER)):
        (tmp_path / name).write_text(text)
        assert cli("file", "upload", *STORAGE, "--source", str(tmp_path / name), "--path", "cifar/").code == 0
    return tmp_path


def _job_json(tmp_path: Path, script: str) -> Path:
    """The tutorial's job.json, naming another script of the cifar directory."""
    document = json.loads(TUTORIAL_JOB.read_text())
    settings = document["properties"]["horovodSettings"]
    settings["pythonScriptFilePath"] = settings["pythonScriptFilePath"].replace("cifar_cnn_distributed.py", script)
    path = tmp_path / f"job-{script}.json"
    path.write_text(json.dumps(document))
    return path


def _create(cli: Cli, name: str, config: Path, *extra: str) -> CliRun:
    return cli("job", "create", *EXP, "-n", name, "--cluster", "nc6cluster", "--config-file", str(config),
               "--storage-account-name", ACCOUNT, *extra)


def test_tutorial_job_json_from_submit_to_model(cli: Cli, ready: Path, service: LocalService) -> None:
    created = _create(cli, "cifar_distributed", TUTORIAL_JOB, "-v", "--node-count", "2", "--append-args",
                      "--epochs=1 --data-dir=$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/data", "-o", "json")
    assert created.code == 0, created.err
    job = created.json()
    assert job["name"] == "cifar_distributed" and job["executionState"] in ("queued", "running")
    properties = job["properties"]
    assert properties["nodeCount"] == 2
    assert properties["horovodSettings"]["commandLineArgs"] == (
        "--dir=$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar --epochs=1 --data-dir=$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/data")
    share = properties["mountVolumes"]["azureFileShares"][0]
    assert share["azureFileUrl"] == f"https://{ACCOUNT}.file.core.windows.net/{SHARE}"  # placeholder filled
    with Target.local(service=service) as target:
        key = FileShare(target, RG, ACCOUNT, SHARE).get_account_key()
    assert "submitting job" in created.err  # -v logs the steps to stderr ...
    assert key not in created.out + created.err  # ... and never the account key

    streamed = cli("job", "stream", *EXP, "-n", "cifar_distributed")
    assert streamed.code == 0, streamed.err
    # the appended arguments reached the script, with $AZ_BATCHAI_JOB_MOUNT_ROOT expanded on the node
    appended = re.findall(r"rank (\d) trains with \['--epochs=1', '--data-dir=(/\S+)/myshare/data'\]", streamed.out)
    assert sorted(rank for rank, _ in appended) == ["0", "1"]
    assert "Test accuracy: 0.5" in streamed.out

    waited = cli("job", "wait", *EXP, "-n", "cifar_distributed", "--timeout", "120", "--query", "executionState")
    assert (waited.code, waited.out) == (0, "succeeded\n")
    assert cli("job", "show", *EXP, "-n", "cifar_distributed", "--query", "exitCode").out == "0\n"
    listed = cli("job", "list", *EXP)
    assert listed.out.splitlines()[-1].split()[:4] == ["cifar_distributed", "cifar", "succeeded", "0"]

    files = cli("job", "file", "list", *EXP, "-j", "cifar_distributed")
    assert files.out.splitlines()[0].split() == ["Name", "Type", "Size", "Modified"]
    rows = {line.split()[0]: line.split() for line in files.out.splitlines()[2:]}
    assert {"stdout.txt", "stderr.txt"} <= set(rows)
    assert rows["stdout.txt"][1] == "file" and int(rows["stdout.txt"][2]) == len(streamed.out.encode())
    as_json = cli("job", "file", "list", *EXP, "-j", "cifar_distributed", "-o", "json")
    assert all(set(f) == {"name", "fileType", "contentLength", "lastModified"} for f in as_json.json())
    assert "sig=" not in as_json.out  # download links are credentials: never printed

    out = ready / "out"
    got = cli("job", "file", "download", *EXP, "-j", "cifar_distributed", "--path", "stdout.txt",
              "--dest", f"{out}/")
    assert got.code == 0, got.err
    assert (out / "stdout.txt").read_text() == streamed.out
    model = cli("file", "download", *STORAGE, "--path", "cifar/saved_models/keras_cifar10_trained_model.h5",
                "--dest", str(out / "model.h5"))
    assert model.code == 0 and (out / "model.h5").read_bytes() == b"model" * 100


def test_failing_job_exits_1(cli: Cli, ready: Path) -> None:
    assert _create(cli, "failing", _job_json(ready, "failer.py"), "--node-count", "1").code == 0
    waited = cli("job", "wait", *EXP, "-n", "failing", "--timeout", "120", "-o", "json")
    assert waited.code == EXIT_FAILED
    # horovodrun's exit status: it reports a failed rank as 1, not the rank's own 3
    code = waited.json()["exitCode"]
    assert waited.json()["executionState"] == "failed" and isinstance(code, int) and code != 0
    assert f"failed with exit code {code}" in waited.err
    assert "ValueError: the data set is missing" in waited.err  # the tail of stderr.txt
    streamed = cli("job", "stream", *EXP, "-n", "failing")
    assert streamed.code == EXIT_FAILED
    assert "about to fail" in streamed.out and f"exit code {code}" in streamed.err
    # showing a failed job is not itself a failure
    shown = cli("job", "show", *EXP, "-n", "failing", "--query", "executionState")
    assert (shown.code, shown.out) == (0, "failed\n")


def test_wait_timeout_exits_4_then_terminate_and_delete(cli: Cli, ready: Path) -> None:
    assert _create(cli, "sleepy", _job_json(ready, "sleeper.py"), "--node-count", "1").code == 0
    waited = cli("job", "wait", *EXP, "-n", "sleepy", "--timeout", "1")
    assert waited.code == EXIT_TIMEOUT and "sleepy" in waited.err
    looked = cli("job", "wait", *EXP, "-n", "sleepy", "--timeout", "0", "-o", "json")  # 0: look once
    assert looked.code == EXIT_TIMEOUT and "sleepy" in looked.err
    assert looked.json()["name"] == "sleepy" and looked.json()["executionState"] in ("queued", "running")
    # the same name with other arguments: a conflict (5), not a failed job (1); '--epochs=3' is the value
    again = _create(cli, "sleepy", _job_json(ready, "sleeper.py"), "--node-count", "1", "--append-args", "--epochs=3")
    assert again.code == EXIT_CONFLICT and "sleepy" in again.err, again.err
    terminated = cli("job", "terminate", *EXP, "-n", "sleepy", "-o", "json")
    assert terminated.code == 0, terminated.err
    assert terminated.json()["executionState"] == "failed"
    assert cli("job", "delete", *EXP, "-n", "sleepy").code == 0
    assert cli("job", "show", *EXP, "-n", "sleepy").code == EXIT_NOT_FOUND
    assert cli("job", "wait", *EXP, "-n", "sleepy").code == EXIT_NOT_FOUND
    assert cli("job", "stream", *EXP, "-n", "sleepy").code == EXIT_NOT_FOUND


def test_showing_a_job_imports_no_generated_client(cli: Cli, ready: Path, service: LocalService) -> None:
    """`job show` reads the job as JSON through an ARM pipeline of the target's options: a fresh
    process that shows a job holds neither azure-mgmt-batchai nor msrest (their import was ~40 ms
    of each command), and its JSON still carries the job as submitted."""
    assert _create(cli, "shown", _job_json(ready, "sleeper.py"), "--node-count", "1").code == 0
    script = ("import json, sys\nfrom horovod_batchai.cli import main\n"
              f"code = main(['--state-dir', {str(service.state_dir)!r}, 'job', 'show', *{EXP!r}, '-n', 'shown'])\n"
              "print(json.dumps([code, sorted(sys.modules)]), file=sys.__stderr__)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    code, modules = json.loads(done.stderr.strip().splitlines()[-1])
    assert code == 0 and "shown" in done.stdout, done.stderr
    assert "azure.core.rest" in modules  # the process did send its request
    assert [m for m in modules if m.startswith(("azure.mgmt.batchai", "msrest"))] == []
    shown = cli("job", "show", *EXP, "-n", "shown", "-o", "json").json()
    assert shown["properties"]["horovodSettings"]["pythonScriptFilePath"].endswith("sleeper.py")
    assert shown["properties"]["nodeCount"] == 1
    assert cli("job", "terminate", *EXP, "-n", "shown").code == 0


def test_job_json_mistakes_exit_2_and_submit_nothing(cli: Cli, ready: Path) -> None:
    no_account = cli("job", "create", *EXP, "-n", "j1", "--cluster", "nc6cluster", "--config-file", str(TUTORIAL_JOB))
    assert no_account.code == EXIT_USAGE and "--storage-account-name" in no_account.err

    bad_type = ready / "bad-type.json"
    document = json.loads(TUTORIAL_JOB.read_text())
    document["properties"]["nodeCount"] = "four"
    bad_type.write_text(json.dumps(document))
    run = _create(cli, "j2", bad_type)
    assert run.code == EXIT_USAGE and "nodeCount" in run.err

    not_json = ready / "broken.json"
    not_json.write_text('{"properties": {"nodeCount": 4,}}')
    run = _create(cli, "j3", not_json)
    assert run.code == EXIT_USAGE and "not valid JSON" in run.err and "line 1" in run.err

    run = _create(cli, "j4", ready / "absent.json")
    assert run.code == EXIT_USAGE and "--config-file" in run.err

    too_many = _create(cli, "j5", TUTORIAL_JOB)  # the tutorial's 4 nodes on a 2-node cluster
    assert too_many.code == EXIT_USAGE and "1..2" in too_many.err
    assert f"{TUTORIAL_JOB}: properties.nodeCount: 4 is more than" in too_many.err  # as the file names it

    run = _create(cli, "bad name!", TUTORIAL_JOB, "--node-count", "2")
    assert run.code == EXIT_USAGE and "job" in run.err

    run = _create(cli, "j6", TUTORIAL_JOB, "--node-count", "0")
    assert run.code == EXIT_USAGE and "--node-count" in run.err

    no_cluster = cli("job", "create", *EXP, "-n", "j7", "--cluster", "nowhere", "--config-file", str(TUTORIAL_JOB),
                     "--storage-account-name", ACCOUNT, "--node-count", "1")
    assert no_cluster.code == EXIT_NOT_FOUND and "nowhere" in no_cluster.err

    assert cli("job", "list", *EXP, "-o", "json").json() == []
