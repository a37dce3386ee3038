"""The SDK on Python 3.13, installed alone, running a Horovod job on a Python 3.11 node runtime.

Where the local service runs: inside the chroot, on 3.13, started by the SDK as any 3.13 user's
SDK starts it -- so the service's own code (HTTP server, planes, scheduler, job runner) is tested
on 3.13 too, not only the client. The node runtime is this test's own environment (the project's
.venv: Python 3.11, TensorFlow 2.15.1, Keras 2.15, Horovod 0.28.1), mounted read-only into the
chroot at the same paths (its prefix and its base interpreter's), as a node's image would be
there; the chroot's own libraries (trixie's glibc and libstdc++, newer than bookworm's) serve it.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import uuid
from pathlib import Path

import pytest

import trixie

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (Path(sys.executable).parent / "horovodrun").exists(),
                       reason="this Python environment is no node runtime: it lacks horovod"),
]

FLOW = Path(__file__).with_name("sdk_flow.py")


def _runtime_dirs() -> list[str]:
    """The directories the node runtime (this environment) needs, outermost only: its scripts'
    shebangs name the path the venv was made at, which differs from ``sys.prefix`` behind a link."""
    wanted = sorted({sys.prefix, os.path.realpath(sys.prefix), sys.base_prefix,
                     str(Path(os.path.realpath(sys.executable)).parents[1])})
    return [d for d in wanted if not any(d != other and d.startswith(other.rstrip("/") + "/") for other in wanted)]


def test_the_sdk_flow_from_python_313_runs_a_horovod_job_on_the_311_node_runtime() -> None:
    try:
        trixie.check_usable()
    except trixie.ChrootUnavailable as exc:
        pytest.skip(str(exc))
    run = f"/tmp/hb-{uuid.uuid4().hex[:12]}"
    with trixie.session(binds=_runtime_dirs()) as chroot:
        try:
            assert chroot.python_version().startswith("3.13.")
            chroot.install_sdk(f"{run}/sdk")
            shutil.copy(FLOW, chroot.path(f"{run}/sdk_flow.py"))
            result = chroot.run([f"{run}/sdk/bin/python", f"{run}/sdk_flow.py", "--state-dir", f"{run}/state",
                                 "--node-runtime", sys.prefix], check=False, timeout=1500)
            installed = chroot.run([f"{run}/sdk/bin/python", "-m", "pip", "list", "--format=json"]).stdout
        finally:
            chroot.stop_processes()  # a service the flow left running (it failed) writes into the run
            shutil.rmtree(chroot.path(run), ignore_errors=True)
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    report = json.loads(result.stdout.strip().splitlines()[-1])

    # The client: Python 3.13, with the SDK and nothing of the training stack.
    assert report["sdk_python"].startswith("3.13.") and report["stack_importable"] == []
    names = {p["name"].lower() for p in json.loads(installed)}
    assert "horovod-batchai" in names and not names & {"tensorflow", "tensorflow-cpu", "keras", "horovod"}

    # The job: two ranks under horovodrun on the 3.11 node runtime, with the stack setup.py pins.
    runtime = f"{sys.version_info.major}.{sys.version_info.minor}."
    assert report["job"]["python"].startswith(runtime) and report["job"]["size"] == 2
    assert report["job"]["sum"] == 3.0  # 1 + 2: the allreduce went through Gloo
    assert (report["job"]["tensorflow"], report["job"]["keras"], report["job"]["horovod"]) == \
        ("2.15.1", "2.15.0", "0.28.1")
    for rank in (0, 1):
        assert re.search(rf"^rank {rank} of 2 on Python {re.escape(report['job']['python'])}$",
                         report["streamed"], re.MULTILINE), report["streamed"]
    python = str(Path(sys.prefix) / "bin" / "python")
    assert (f"node runtime: {python} (the node runtime the service was started with): Python "
            f"{report['job']['python']}, TensorFlow 2.15.1, Keras 2.15.0, Horovod 0.28.1") in report["execution_log"]

    # Nothing set on 3.13: the job fails before horovodrun, naming what is missing and how to provide it.
    failure = report["bare_failure"]
    assert failure is not None and failure["codes"] == ["NodeRuntimeIncomplete"]
    assert "(the local service's own Python, as no node runtime was set) lacks TensorFlow and Horovod, which " \
        f"Horovod jobs need (it has Python {report['sdk_python']})" in failure["message"]
    assert "make install" in failure["message"] and "--node-runtime" in failure["message"]
    assert "stdout.txt" not in report["bare_outputs"] and "Traceback" not in failure["message"]
