"""Jobs run on the local service's node runtime: one that lacks the training stack, or that does not
exist, fails the job before anything of it runs, and the failure says what is missing and how to
provide it -- in the job's errors (so in ``JobFailedError``) and in its execution log."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from horovod_batchai import FileShare, HorovodJob, JobFailedError, Target, Workspace
from horovod_batchai.local import LocalService

from sdk_support import ACCOUNT, RG, SSH_KEY
from service_support import FAST

SCRIPT = "import horovod.tensorflow as hvd\nhvd.init()\nprint('rank', hvd.rank(), flush=True)\n"


@pytest.fixture(scope="module")
def bare_runtime(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python environment without TensorFlow or Horovod: a fresh virtualenv (no pip, to be quick)."""
    path = tmp_path_factory.mktemp("runtimes") / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path


def _failed_horovod_job(tmp_path: Path, node_runtime: Path) -> tuple[JobFailedError, str, list[str]]:
    """Submit a Horovod job to a service whose node runtime is ``node_runtime``; return the job's
    failure, the master node's execution log and the names of its stdouterr files."""
    with LocalService(tmp_path / "state", settings=FAST, node_runtime=node_runtime) as service, \
            Target.local(service=service) as target:
        ws = Workspace.create(target, RG, "ws", location="eastus")
        cluster = ws.create_cluster("cluster", vm_size="Standard_NC6", target_node_count=1,
                                    admin_user_name="demo", ssh_public_key=SSH_KEY)
        share = FileShare.create(target, RG, ACCOUNT, "share", location="eastus")
        (tmp_path / "ranks.py").write_text(SCRIPT)
        share.upload_file(tmp_path / "ranks.py", "ranks.py")
        spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/share/ranks.py", node_count=1,
                          mounts=[share.mount()])
        cluster.wait_until_ready(timeout=120)
        job = ws.create_experiment("exp").submit("hvd", spec, cluster=cluster)
        with pytest.raises(JobFailedError) as failed:
            job.wait(timeout=120)
        names = [f.name for f in job.list_output_files()]
        log_name = next(n for n in names if n.startswith("execution"))
        log = job.download(log_name, tmp_path / log_name).read_text()
    return failed.value, log, names


def _says_how_to_provide(message: str) -> None:
    for words in ("TensorFlow 2.15.1, Keras 2.15 and Horovod 0.28.1", "make install", "node_runtime=",
                  "$HOROVOD_BATCHAI_NODE_RUNTIME", "--node-runtime"):
        assert words in message, (words, message)


def test_a_runtime_without_the_stack_fails_the_job_before_horovodrun(tmp_path: Path, bare_runtime: Path) -> None:
    failure, log, names = _failed_horovod_job(tmp_path, bare_runtime)
    [error] = failure.errors
    assert error.code == "NodeRuntimeIncomplete"
    python = str(bare_runtime / "bin" / "python")  # the directory names its bin/python
    assert f"The node runtime {python} (the node runtime the service was started with)" in error.message
    assert "lacks TensorFlow and Horovod, which Horovod jobs need" in error.message
    _says_how_to_provide(error.message)
    assert str(error) in str(failure) and failure.exit_code is None
    # The execution log says the same; nothing of the job ran, so there is no rank's traceback.
    assert f"the job could not start: {error.message}" in log
    assert "stdout.txt" not in names and "Traceback" not in failure.stderr_tail


def test_a_runtime_that_does_not_exist_fails_the_job_saying_so(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-env"
    missing.mkdir()  # a directory without bin/python
    failure, log, _ = _failed_horovod_job(tmp_path, missing)
    [error] = failure.errors
    assert error.code == "NodeRuntimeNotFound"
    assert f"{missing / 'bin' / 'python'} (the node runtime the service was started with) does not exist" \
        in error.message and f"({missing} holds no bin/python)" in error.message
    _says_how_to_provide(error.message)
    assert f"the job could not start: {error.message}" in log


@pytest.fixture
def no_runtime_setting(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("HOROVOD_BATCHAI_NODE_RUNTIME", raising=False)
    yield


def test_the_argument_wins_over_the_environment_which_wins_over_the_service_python(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_runtime_setting: None) -> None:
    assert LocalService(tmp_path).node_runtime.python == str(Path(sys.executable).absolute())
    assert LocalService(tmp_path).node_runtime.source == "service"
    monkeypatch.setenv("HOROVOD_BATCHAI_NODE_RUNTIME", "/opt/from-env/bin/python")
    assert LocalService(tmp_path).node_runtime.python == "/opt/from-env/bin/python"
    assert LocalService(tmp_path).node_runtime.source == "environment"
    chosen = LocalService(tmp_path, node_runtime="/opt/argument/bin/python3.11").node_runtime
    assert (chosen.python, chosen.source) == ("/opt/argument/bin/python3.11", "argument")
    # A relative path is the caller's, made absolute at once; a link is kept (a virtualenv's
    # bin/python links to a base interpreter that lacks the virtualenv's packages).
    monkeypatch.chdir(tmp_path)
    assert LocalService(tmp_path, node_runtime="env/bin/python").node_runtime.python == \
        str(tmp_path / "env" / "bin" / "python")


def test_from_env_reads_the_node_runtime_as_it_reads_the_state_dir(tmp_path: Path) -> None:
    (tmp_path / "rt").mkdir()  # an environment's directory: its bin/python is meant
    target = Target.from_env({"HOROVOD_BATCHAI_STATE_DIR": str(tmp_path),
                              "HOROVOD_BATCHAI_NODE_RUNTIME": str(tmp_path / "rt")})
    assert target._connection.node_runtime == str(tmp_path / "rt" / "bin" / "python")
    assert Target.from_env({"HOROVOD_BATCHAI_STATE_DIR": str(tmp_path)})._connection.node_runtime is None


def test_a_target_refuses_a_runtime_that_is_not_a_path(tmp_path: Path) -> None:
    from horovod_batchai import InvalidSpecError, TargetError
    with pytest.raises(InvalidSpecError, match=r"node_runtime: '' is not a path \(valid: the path of a Python"):
        Target.local(state_dir=tmp_path, node_runtime="")
    with LocalService(tmp_path / "state", settings=FAST) as service:
        with pytest.raises(TargetError, match="LocalService\\(node_runtime=...\\)"):
            Target.local(service=service, node_runtime=sys.executable)


def test_a_daemon_running_with_another_runtime_is_reported_not_reused(
        tmp_path: Path, bare_runtime: Path, monkeypatch: pytest.MonkeyPatch, no_runtime_setting: None) -> None:
    from horovod_batchai.local import NodeRuntimeMismatch, ensure_running, stop_daemon
    state = tmp_path / "state"
    bare = str(bare_runtime / "bin" / "python")
    try:
        info = ensure_running(state, node_runtime=bare_runtime)
        assert info.node_runtime == bare
        # The same runtime, however named, and no runtime at all: the running daemon is used.
        assert ensure_running(state, node_runtime=bare).pid == info.pid
        assert ensure_running(state).pid == info.pid
        with pytest.raises(NodeRuntimeMismatch) as raised:
            ensure_running(state, node_runtime=sys.executable)
        message = str(raised.value)
        assert (f"the local service running for {state} (pid {info.pid}) runs jobs with the node runtime {bare}, "
                f"not {Path(sys.executable).absolute()} (asked for)") in message
        assert f"`horovod-batchai local stop --state-dir {state}`" in message
        monkeypatch.setenv("HOROVOD_BATCHAI_NODE_RUNTIME", sys.executable)
        with pytest.raises(NodeRuntimeMismatch, match=r"\(named by \$HOROVOD_BATCHAI_NODE_RUNTIME\)"):
            ensure_running(state)
        monkeypatch.delenv("HOROVOD_BATCHAI_NODE_RUNTIME")
        # A target says so on the first call that needs the service; the command exits 1 saying the same.
        with Target.local(state_dir=state, node_runtime=sys.executable) as target:
            with pytest.raises(NodeRuntimeMismatch):
                target.management_endpoint
        started = subprocess.run([sys.executable, "-m", "horovod_batchai.local", "start", "--state-dir", str(state),
                                  "--node-runtime", sys.executable], capture_output=True, text=True, timeout=120)
        assert started.returncode == 1 and "runs jobs with the node runtime" in started.stderr
        reused = subprocess.run([sys.executable, "-m", "horovod_batchai.local", "start", "--state-dir", str(state),
                                 "--node-runtime", str(bare_runtime)], capture_output=True, text=True, timeout=120)
        assert reused.returncode == 0 and f"node runtime: {bare}" in reused.stdout, reused.stderr
        cli = [sys.executable, "-m", "horovod_batchai.cli", "local", "start", "--state-dir", str(state), "-o", "json"]
        refused = subprocess.run([*cli, "--node-runtime", sys.executable], capture_output=True, text=True, timeout=120)
        assert refused.returncode == 1 and "horovod-batchai: error: the local service running for" in refused.stderr
        assert json.loads(refused.stdout)["nodeRuntime"] == bare  # what runs, for a script to read
        shown = subprocess.run([*cli, "--node-runtime", str(bare_runtime)], capture_output=True, text=True, timeout=120)
        assert shown.returncode == 0 and json.loads(shown.stdout)["nodeRuntime"] == bare, shown.stderr
        bad = subprocess.run([*cli, "--node-runtime", ""], capture_output=True, text=True, timeout=120)
        assert bad.returncode == 2 and "error: --node-runtime: node_runtime must be the path" in bad.stderr
    finally:
        stop_daemon(state)
