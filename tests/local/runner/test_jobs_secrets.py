"""A job's secrets reach its processes' environments and nothing else: no command line of any
process on the machine, no other process's environment; and nothing of the service's own
environment reaches the job."""
from __future__ import annotations

import shutil
import stat
import sys
import uuid
from pathlib import Path

import pytest

from horovod_batchai.local import LocalService, ServiceSettings
from jobs_support import make_lab, tagged_processes, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (Path(sys.executable).parent / "horovodrun").exists() or shutil.which("bash") is None,
                       reason="horovod is not installed in this Python environment"),
]

FAST = ServiceSettings(provision_delay_s=0.3, deallocation_delay_s=0.1)

#: each rank says whether it sees the secret and the canary, then waits until it is released.
RANK = """\
import hashlib, os, sys, time
rank = os.environ["HOROVOD_RANK"]
secret = os.environ.get("MY_SECRET", "")
print(f"rank {rank} secret sha {hashlib.sha256(secret.encode()).hexdigest()}", flush=True)
print(f"rank {rank} canary {'AZURE_CLIENT_SECRET' in os.environ} setting {os.environ.get('MY_SETTING')}",
      flush=True)
print(f"rank {rank} ready", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.1)
"""


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""  # gone, or another user's


def _children(pids: set[int]) -> set[int]:
    """``pids`` and every process below them."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _read(entry / "stat").rsplit(b")", 1)[-1].split()
            if len(fields) > 2:
                parents[int(entry.name)] = int(fields[1])
    found, grown = set(pids), True
    while grown:
        more = {pid for pid, parent in parents.items() if parent in found} - found
        found |= more
        grown = bool(more)
    return found


def test_secrets_stay_in_the_jobs_environment_and_the_service_environment_stays_out(tmp_path: Path, monkeypatch):
    secret = f"s3cret-{uuid.uuid4().hex}"
    canary = f"canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("AZURE_CLIENT_SECRET", canary)  # the service's environment, as a user may have it
    state, release = tmp_path / "state", tmp_path / "release"
    service = LocalService(state, settings=FAST).start()
    try:
        from azure.mgmt.batchai import BatchAI
        from service_support import SUBSCRIPTION
        with BatchAI(service.credential(), SUBSCRIPTION, base_url=service.endpoint,
                     connection_verify=str(service.info.ca_cert)) as batchai:
            lab = make_lab(service, batchai)
            lab.create_cluster(nodes=2)
            lab.upload("scripts/rank.py", RANK)
            lab.submit("hvd", {
                "nodeCount": 2,
                "horovodSettings": {"pythonScriptFilePath": "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs/scripts/rank.py",
                                    "commandLineArgs": str(release), "processCount": 2},
                "environmentVariables": [{"name": "MY_SETTING", "value": "42"}],
                "secrets": [{"name": "MY_SECRET", "value": secret}]})
            wait_for(lambda: "stdout.txt" in lab.files("hvd") and lab.read("hvd", "stdout.txt").count("ready") == 2,
                     180, what="both ranks to be ready")

            # Every process of the job: those carrying its tag, and everything below them.
            job = _children(set(tagged_processes(state)))
            assert len(job) >= 4  # the supervisor, horovodrun and the two ranks at least
            for pid in job:
                cmdline = _read(Path(f"/proc/{pid}/cmdline"))
                assert secret.encode() not in cmdline, (pid, cmdline)
                assert canary.encode() not in cmdline, (pid, cmdline)
                assert canary.encode() not in _read(Path(f"/proc/{pid}/environ")), pid
            # No process of the machine has the secret on its command line, nor (outside the job)
            # in its environment.
            for entry in Path("/proc").iterdir():
                if entry.name.isdigit():
                    assert secret.encode() not in _read(entry / "cmdline"), entry.name
                    if int(entry.name) not in job:
                        assert secret.encode() not in _read(entry / "environ"), entry.name
            # Where the ranks read it from: a file only its owner can read, in a private directory.
            [secrets_file] = state.glob("jobs/*/runs/*/rank-secrets.json")
            assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600
            assert stat.S_IMODE(secrets_file.parent.stat().st_mode) == 0o700

            release.touch()
            done = lab.wait_state("hvd", timeout=120)
            assert done.execution_state == "succeeded", (done.execution_info.errors, lab.read("hvd", "stderr.txt"))
            stdout = lab.read("hvd", "stdout.txt")
            import hashlib
            sha = hashlib.sha256(secret.encode()).hexdigest()
            for rank in (0, 1):
                # The job sees its own secret and setting, and not the service's canary.
                assert f"rank {rank} secret sha {sha}" in stdout, stdout
                assert f"rank {rank} canary False setting 42" in stdout, stdout
            assert "<stdout>" not in stdout  # horovodrun's tags are gone
            assert not list(state.glob("jobs/*/runs/*/rank-secrets.json"))  # removed when the job ended
            assert secret not in lab.read("hvd", "execution-" + _node_log(lab) + ".log")
    finally:
        service.stop()


def _node_log(lab) -> str:
    return next(name for name in lab.files("hvd") if name.startswith("execution-"))[len("execution-"):-len(".log")]
