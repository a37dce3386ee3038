"""The pattern docs/service.rst shows, with plain asyncio: a handler that submits a job and awaits
it while the loop goes on serving; a client that goes away (the handler cancelled) terminates the
job; Ctrl-C ends a process waiting on a job at once."""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from horovod_batchai import AzureFileShareMount, ExecutionState, HorovodJob, InvalidSpecError, JobFailedError
from horovod_batchai.aio import FileShare, Target, Workspace

from aio_support import ACCOUNT, RG, SSH_KEY, run
from service_support import interruptible

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
COUNTER = """\
import time
for i in range(8):
    print(i, flush=True)
    time.sleep(0.25)
"""
SLEEPER = """\
import time
print("sleeping", flush=True)
time.sleep(300)
"""


async def _prepare(target: Target, tmp_path: Path) -> None:
    ws = await Workspace.create(target, RG, "batchaidev", location="eastus")
    cluster = await ws.create_cluster("nc6cluster", vm_size="Standard_NC6", target_node_count=1,
                                      admin_user_name="demo", ssh_public_key=SSH_KEY)
    share = await FileShare.create(target, RG, ACCOUNT, "myshare", location="eastus")
    for name, text in (("counter.py", COUNTER), ("sleeper.py", SLEEPER)):
        (tmp_path / name).write_text(text)
        await share.upload_file(tmp_path / name, f"scripts/{name}", progress=False)
    await cluster.wait_until_ready(timeout=120)


async def train(target: Target, name: str, script: str, on_state: Any = None) -> dict:
    """The docs' handler, with the job built in code instead of read from job.json (and the
    states its wait sees reported to ``on_state``)."""
    ws = await Workspace.get(target, RG, "batchaidev")
    cluster = await ws.get_cluster("nc6cluster")
    share = await FileShare.get(target, RG, ACCOUNT, "myshare")
    spec = HorovodJob(script=f"$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/{script}", mounts=[await share.mount()])
    experiment = await ws.create_experiment("cifar")
    job = await experiment.submit(name, spec, cluster=cluster)
    try:
        status = await job.wait(timeout=3600, terminate_on_cancel=True, on_state=on_state)
    except JobFailedError as err:
        return {"job": job.name, "state": "failed", "log": err.stderr_tail}
    return {"job": job.name, "state": status.execution_state.value}


@pytest.mark.serial
def test_a_handler_awaits_a_job_while_the_loop_serves(service: Any, tmp_path: Path) -> None:
    async def scenario(target: Target) -> None:
        await _prepare(target, tmp_path)
        ticks = 0

        async def other_requests() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        serving = asyncio.ensure_future(other_requests())
        started = time.monotonic()
        answer = await train(target, "counted", "counter.py")
        elapsed = time.monotonic() - started
        serving.cancel()
        assert answer == {"job": "counted", "state": "succeeded"}
        # the other coroutine ran all along: at least half the ticks a free loop would have made
        assert ticks >= elapsed / 0.05 / 2, (ticks, elapsed)

        # A client that goes away: its handler is cancelled, and the job is terminated with it.
        # Cancelled once its wait has seen the job run: a cancel that lands in submit() leaves
        # the accepted job alone, as documented (only the wait terminates on cancel).
        running = asyncio.Event()
        handler = asyncio.ensure_future(train(target, "abandoned", "sleeper.py",
                                              lambda state: state is ExecutionState.RUNNING and running.set()))
        await asyncio.wait_for(running.wait(), 120)
        handler.cancel()
        with pytest.raises(asyncio.CancelledError):
            await handler
        experiment = await (await Workspace.get(target, RG, "batchaidev")).get_experiment("cifar")
        with pytest.raises(JobFailedError):  # terminated: ends failed, as on Batch AI
            await (await experiment.get_job("abandoned")).wait(timeout=60)

    run(service, scenario)


WAITER = """\
import asyncio, sys, time
from pathlib import Path
from horovod_batchai.aio import Target, Workspace
from horovod_batchai.local import ServiceInfo

async def main(info):
    async with Target.local(info) as target:
        ws = await Workspace.get(target, {rg!r}, "batchaidev")
        job = await (await ws.get_experiment("cifar")).get_job("sleeping")
        print("waiting", flush=True)
        await job.wait()

info = ServiceInfo({endpoint!r}, Path({ca!r}), Path({state!r}), {pid!r})
asyncio.run(main(info))
"""


@pytest.mark.serial
def test_ctrl_c_ends_a_waiting_process_at_once(service: Any, tmp_path: Path) -> None:
    async def submit(target: Target) -> None:
        await _prepare(target, tmp_path)
        ws = await Workspace.get(target, RG, "batchaidev")
        share = await FileShare.get(target, RG, ACCOUNT, "myshare")
        spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/sleeper.py", mounts=[await share.mount()])
        await (await ws.create_experiment("cifar")).submit("sleeping", spec, cluster="nc6cluster")

    run(service, submit)
    info = service.info
    script = WAITER.format(rg=RG, endpoint=info.endpoint, ca=str(info.ca_cert), state=str(info.state_dir),
                           pid=info.pid)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    waiter = subprocess.Popen([sys.executable, "-c", script], preexec_fn=interruptible,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env, text=True)
    try:
        assert waiter.stdout is not None and waiter.stdout.readline().strip() == "waiting"
        time.sleep(0.5)  # a few polls under way
        interrupted = time.monotonic()
        waiter.send_signal(signal.SIGINT)
        waiter.wait(timeout=30)
        assert time.monotonic() - interrupted < 5.0  # not held up by the job or a polling thread
        assert "KeyboardInterrupt" in (waiter.stderr.read() if waiter.stderr else "")
    finally:
        if waiter.poll() is None:
            waiter.kill()

    async def still_running(target: Target) -> None:
        ws = await Workspace.get(target, RG, "batchaidev")
        job = await (await ws.get_experiment("cifar")).get_job("sleeping")
        assert job.execution_state is ExecutionState.RUNNING  # Ctrl-C stopped the wait, not the job
        await job.terminate(timeout=60)

    run(service, still_running)


def test_an_aio_share_fills_placeholders_with_an_awaited_key(service: Any) -> None:
    async def scenario(target: Target) -> None:
        share = await FileShare.create(target, RG, ACCOUNT, "myshare", location="eastus")
        with pytest.raises(InvalidSpecError, match="await share.get_account_key"):
            HorovodJob.from_file(REPO / "examples" / "job.json", storage=share)  # type: ignore[arg-type]
        spec = HorovodJob.from_file(REPO / "examples" / "job.json", storage_account_name=share.account_name,
                                    storage_account_key=await share.get_account_key())
        shares = [m for m in spec.mounts if isinstance(m, AzureFileShareMount)]
        assert shares and all(m.account_name == ACCOUNT and m.account_key for m in shares)

    run(service, scenario)
