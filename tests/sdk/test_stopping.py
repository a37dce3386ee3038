"""Every wait, stream and transfer can be stopped from another thread through its ``stop`` event,
well within one poll interval, with StoppedError; and Ctrl-C stops a wait at once.

The poll intervals here are long (30 s) so that a stop that only took effect at the next poll
would be seen for what it is; the bound asserted is a fraction of that interval."""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from horovod_batchai import (ClientSweep, ExecutionState, Experiment, FileShare, GpuCluster, HorovodBatchAIError,
                             HorovodJob, InvalidSpecError, Job, StoppedError, Sweep, Target, Workspace)
from horovod_batchai._shared.fileshare import UPLOAD_TEMP_MARK
from horovod_batchai._shared.lro import MappedPoller
from horovod_batchai._models.records import SweepRecord
from horovod_batchai._models.sweep_spec import SweepDefinition
from horovod_batchai.local import LocalService, ServiceSettings
from sdk_support import ACCOUNT, RG, SSH_KEY
from service_support import interruptible

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # they measure how soon a wait ends

LONG_POLL = 30.0
#: how soon a stop must take effect: far below LONG_POLL, far above a request to a loaded machine
PROMPT = 5.0
MIB = 1024 * 1024

SLEEPER = """\
import time
print("sleeping", flush=True)
time.sleep(300)
"""


def _stop_later(stop: threading.Event, after: float) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(after), stop.set()), daemon=True)
    thread.start()
    return thread


class TimedEvent(threading.Event):
    """An Event that remembers when it was set."""

    def set(self) -> None:
        self.set_at = time.monotonic()
        super().set()


def _stop_after(call: Callable[[threading.Event], Any], after: float = 0.5) -> tuple[StoppedError, float]:
    """Run ``call(stop)`` and set ``stop`` from another thread ``after`` seconds in; (the
    StoppedError raised, seconds from the stop to the return)."""
    stop = TimedEvent()
    _stop_later(stop, after)
    with pytest.raises(StoppedError) as caught:
        call(stop)
    return caught.value, time.monotonic() - stop.set_at


@pytest.fixture
def sleeping_job(workspace: Workspace, cluster: GpuCluster, share: FileShare, tmp_path: Path) -> Job:
    local = tmp_path / "sleeper.py"
    local.write_text(SLEEPER)
    share.upload_file(local, "scripts/sleeper.py", progress=False)
    spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/sleeper.py", mounts=[share.mount()])
    job = workspace.create_experiment("stops").submit("sleeper", spec, cluster=cluster)
    yield job
    job.terminate(timeout=60)


def test_a_job_wait_stops_when_told(sleeping_job: Job) -> None:
    err, took = _stop_after(lambda stop: sleeping_job.wait(poll_interval=LONG_POLL, stop=stop))
    assert took < PROMPT, f"the wait went on {took:.2f}s after the stop"
    assert "waiting for job 'sleeper' was stopped" in str(err)
    assert isinstance(err, HorovodBatchAIError)
    # stopping the wait is not stopping the job
    assert sleeping_job.refresh().execution_state in (ExecutionState.QUEUED, ExecutionState.RUNNING)


def test_an_asyncio_caller_that_gives_up_leaves_no_thread_polling(sleeping_job: Job) -> None:
    """The pattern docs/service.rst shows: asyncio.run returns only once its worker threads are
    done, so a wait that went on polling would hold it for a whole poll interval or more."""
    async def wait(stop: threading.Event) -> Any:
        try:
            return await asyncio.to_thread(sleeping_job.wait, poll_interval=LONG_POLL, stop=stop)
        except asyncio.CancelledError:
            stop.set()
            raise

    async def give_up_after_a_second() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(wait(threading.Event()), 1.0)

    started = time.monotonic()
    asyncio.run(give_up_after_a_second())
    took = time.monotonic() - started
    assert took < 1.0 + PROMPT, f"asyncio.run returned {took:.2f}s after it started"


def test_a_stream_stops_when_told(sleeping_job: Job) -> None:
    seen: list[str] = []

    def follow(stop: threading.Event) -> None:
        for text in sleeping_job.stream("stdout.txt", poll_interval=LONG_POLL, stop=stop):
            seen.append(text)

    # The first poll may find the file not yet written; wait for the job to print first.
    deadline = time.monotonic() + 120
    while "sleeping" not in sleeping_job.stdout_tail():
        assert time.monotonic() < deadline, "the sleeper never printed"
        time.sleep(0.2)
    err, took = _stop_after(follow, after=1.0)
    assert took < PROMPT, f"the stream went on {took:.2f}s after the stop"
    assert "".join(seen) == "sleeping\n"
    assert "streaming stdout.txt of job 'sleeper' was stopped" in str(err)


def _held(name: str) -> SweepRecord:
    """A running sweep as a service holding it describes it."""
    return SweepRecord(name=name, id=f"/sweeps/{name}", status="running", reason=None, metric="val_accuracy", mode="max",
                       arguments="", best=None, trials=())


def test_a_stop_already_set_returns_before_any_request(offline_target: Target) -> None:
    stop = threading.Event()
    stop.set()
    job = Job(Experiment(Workspace(offline_target, RG, "ws"), "exp"), "job")  # its service refuses connections
    with pytest.raises(StoppedError):
        job.wait(stop=stop)
    with pytest.raises(StoppedError):
        next(job.stream(stop=stop))
    definition = SweepDefinition.build("sweep", cluster="nc6cluster", base_arguments="", parameters={"lr": [0.1]},
                                       sampling="grid", num_trials=None, seed=None, metric="val_accuracy", mode="max",
                                       max_concurrent_trials=1, early_stopping=None)
    with pytest.raises(StoppedError, match="waiting for sweep 'sweep' was stopped"):
        ClientSweep(job.experiment, definition).wait(stop=stop)
    with pytest.raises(StoppedError, match="waiting for sweep 'held' was stopped"):
        Sweep(job.experiment, _held("held")).wait(stop=stop)


def test_waiting_for_a_cluster_stops_when_told(tmp_path: Path) -> None:
    # Nodes that take a minute to provision: the cluster is still resizing when the stop comes.
    slow = LocalService(tmp_path / "slow", settings=ServiceSettings(provision_delay_s=60)).start()
    try:
        with Target.local(service=slow) as target:
            ws = Workspace.create(target, RG, "batchaidev", location="eastus")
            cluster = ws.create_cluster("slow", vm_size="Standard_NC6", target_node_count=1, admin_user_name="demo",
                                        ssh_public_key=SSH_KEY)
            err, took = _stop_after(lambda stop: cluster.wait_until_ready(timeout=600, poll_interval=LONG_POLL,
                                                                          stop=stop))
            assert took < PROMPT, f"the wait went on {took:.2f}s after the stop"
            assert "waiting for cluster 'slow' was stopped" in str(err)
            assert not err.last_state.is_ready  # type: ignore[union-attr]
    finally:
        slow.stop()


class NeverDone:
    """Stands for azure-core's LROPoller of an operation that does not finish: its wait blocks."""

    def wait(self, timeout: Optional[float] = None) -> None:
        time.sleep(LONG_POLL if timeout is None else timeout)

    def done(self) -> bool:
        return False

    def status(self) -> str:
        return "InProgress"


def test_a_long_operation_wait_stops_when_told() -> None:
    poller = MappedPoller(NeverDone(), lambda raw: raw, action="deleting workspace", resource="ws")  # type: ignore[arg-type]
    err, took = _stop_after(lambda stop: poller.result(timeout=600, stop=stop))
    assert took < 1.0, f"the wait went on {took:.2f}s after the stop"
    assert "waiting for deleting workspace ws was stopped" in str(err) and err.last_state == "InProgress"


def test_a_stop_that_is_not_an_event_is_refused(offline_target: Target) -> None:
    job = Job(Experiment(Workspace(offline_target, RG, "ws"), "exp"), "job")
    held = Sweep(job.experiment, _held("held"))
    sweep = ClientSweep(job.experiment, SweepDefinition.build(
        "sweep", cluster="nc6cluster", base_arguments="", parameters={"lr": [0.1]}, sampling="grid", num_trials=None,
        seed=None, metric="val_accuracy", mode="max", max_concurrent_trials=1, early_stopping=None))
    for call in (lambda: job.wait(stop=True), lambda: job.stream(stop="yes"), lambda: sweep.wait(stop="no"), lambda: held.wait(stop="no"),
                 lambda: MappedPoller(NeverDone(), lambda r: r, action="a", resource="r").result(stop=1)):  # type: ignore[arg-type]
        with pytest.raises(InvalidSpecError) as caught:
            call()
        assert caught.value.field == "stop"


def _share_files(service: LocalService, share: FileShare) -> dict[str, int]:
    assert service.context is not None
    root = service.context.files_root / ACCOUNT / share.share_name
    return {p.relative_to(root).as_posix(): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def _stop_once_bytes_flow(stop: TimedEvent) -> Callable[[int, int], None]:
    """A progress callback that has another thread set ``stop`` once the first bytes are through
    (and waits until it has, so that the transfer's next check sees it)."""
    def progress(done: int, total: int) -> None:
        if done and not stop.is_set():
            _stop_later(stop, 0.0).join()
    return progress


def test_transfers_stop_when_told(service: LocalService, share: FileShare, tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(24 * MIB))
    old = tmp_path / "old.bin"
    old.write_bytes(b"the previous model")
    share.upload_file(old, "keep/model.bin", progress=False)

    # one file, over the old one: stopped, the old one stays and no temporary file is left
    stop = TimedEvent()
    with pytest.raises(StoppedError):
        share.upload_file(big, "keep/model.bin", progress=_stop_once_bytes_flow(stop), max_concurrency=1, stop=stop)
    assert _share_files(service, share) == {"keep/model.bin": len(b"the previous model")}

    # a tree, up and down
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(6):
        (tree / f"part-{i}.bin").write_bytes(os.urandom(8 * MIB))
    stop = TimedEvent()
    with pytest.raises(StoppedError):
        share.upload_directory(tree, "tree", progress=_stop_once_bytes_flow(stop), stop=stop)
    files = _share_files(service, share)
    assert not [p for p in files if UPLOAD_TEMP_MARK in p], files
    assert all(size == 8 * MIB for p, size in files.items() if p.startswith("tree/")), files

    share.upload_directory(tree, "tree", progress=False, verify=False)
    stop = TimedEvent()
    with pytest.raises(StoppedError):
        share.download_directory("tree", tmp_path / "copy", progress=_stop_once_bytes_flow(stop), stop=stop)
    left = [p for p in (tmp_path / "copy").rglob("*") if p.is_file()]
    assert all(p.stat().st_size == 8 * MIB and not p.name.endswith(".partial") for p in left), left
    assert len(left) < 6

    stop = TimedEvent()
    with pytest.raises(StoppedError):
        share.download_file("tree/part-0.bin", tmp_path / "one.bin", progress=_stop_once_bytes_flow(stop),
                            max_concurrency=1, stop=stop)
    assert not (tmp_path / "one.bin").exists() and not (tmp_path / "one.bin.partial").exists()


_CHILD = """
import sys
from horovod_batchai import Target, Workspace
state, rg = sys.argv[1:3]
job = Workspace(Target.local(state_dir=state), rg, "batchaidev").get_experiment("stops").get_job("sleeper")
print("waiting", flush=True)
job.wait(poll_interval=30)
print("finished", flush=True)
"""


def test_ctrl_c_stops_a_job_wait_at_once(service: LocalService, sleeping_job: Job) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(service.state_dir), RG], preexec_fn=interruptible,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None and child.stderr is not None
        line = child.stdout.readline()
        assert line.strip() == "waiting", (line, child.stderr.read())
        time.sleep(1.0)  # inside the 30 s pause by now
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        child.wait(timeout=LONG_POLL)
        took = time.monotonic() - sent
        assert "finished" not in child.stdout.read()
        assert "KeyboardInterrupt" in child.stderr.read()
        assert took < PROMPT, f"the wait took {took:.2f}s to end after Ctrl-C"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
