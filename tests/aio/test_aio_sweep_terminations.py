"""An aio sweep facing a service that never finishes a termination, as tests/sdk/test_sweep_terminations.py
does for the sync one: ``await sweep.cancel(timeout=)`` gives up with WaitTimeoutError, and the median
stopping rule logs it and asks again instead of waiting. The service is the real local one; the hang is
a pipeline policy holding the terminate requests on the event loop (as a service that does not answer
would) until the test lets them go."""
from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from azure.core.pipeline.policies import AsyncHTTPPolicy

from horovod_batchai import HorovodJob, InvalidSpecError, MedianStopping, SweepResults, SweepState, WaitTimeoutError
from horovod_batchai._shared import sweep as _sweep
from horovod_batchai.aio import Experiment, GpuCluster, Target

from aio_support import other_tasks, setup_jobs
from sweep_support import TRIAL, drive_sweeps_from_the_client

@pytest.fixture(autouse=True)
def _client_driven(monkeypatch: pytest.MonkeyPatch) -> None:
    """These are the sweeps the SDK drives where the service holds none (Batch AI on Azure): the
    local service, which holds sweeps, is read as not holding them (tests/sdk/test_held_sweeps.py)."""
    drive_sweeps_from_the_client(monkeypatch)


pytestmark = pytest.mark.slow


class HeldTerminations(AsyncHTTPPolicy):  # type: ignore[type-arg]
    """Every request to terminate a job waits until ``release`` is set, as on a service that does
    not answer; the loop goes on meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.terminates = 0

    async def send(self, request: Any) -> Any:
        http = request.http_request
        if http.method == "POST" and http.url.split("?")[0].endswith("/terminate"):
            self.terminates += 1
            await self.release.wait()
        return await self.next.send(request)


async def _setup(target: Target, tmp_path: Path) -> tuple[Experiment, GpuCluster, HorovodJob]:
    ws, cluster, share = await setup_jobs(target, tmp_path, {"trial.py": TRIAL}, nodes=2)
    spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/trial.py", mounts=[await share.mount()],
                      std_out_err_path_prefix="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/logs")
    return await ws.create_experiment("sweeps"), cluster, spec


def test_cancel_gives_up_after_its_timeout_when_terminations_do_not_finish(service: Any, tmp_path: Path) -> None:
    async def scenario() -> None:
        held = HeldTerminations()
        async with Target.local(service=service, per_call_policies=[held]) as target:
            experiment, cluster, spec = await _setup(target, tmp_path)
            sweep = await experiment.sweep(spec.replace(arguments="--pause 600"), name="stuck",
                                           parameters={"lr": [0.3, 0.2, 0.1]}, cluster=cluster, max_concurrent_trials=2)
            with pytest.raises(InvalidSpecError, match=r"timeout: -1 is negative"):
                await sweep.cancel(timeout=-1)
            assert held.terminates == 0 and sweep.state is SweepState.RUNNING  # refused before any request

            started = time.monotonic()
            with pytest.raises(WaitTimeoutError, match=r"cancelling sweep 'stuck': terminating trial\(s\) stuck-000, "
                                                       r"stuck-001 had not finished after 2s"):
                await sweep.cancel(timeout=2)
            assert time.monotonic() - started < 60  # bounded by the timeout, not by the service
            assert held.terminates == 2 and not other_tasks()  # nothing left waiting on the service
            # cancelled all the same: nothing more is submitted, and once the service answers the trials end
            assert sweep.state is SweepState.CANCELLED and await sweep.step() is SweepState.CANCELLED
            assert sorted(j.name for j in await experiment.list_jobs()) == ["stuck-000", "stuck-001"]
            held.release.set()
            await sweep.cancel(timeout=120)
            assert [t.status for t in sweep.trials] == ["terminated", "terminated", "cancelled"]

    asyncio.run(scenario())


def test_the_stopping_rule_asks_again_when_a_termination_does_not_finish(
        service: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(_sweep, "TERMINATE_PATIENCE_S", 1.0)
    caplog.set_level(logging.WARNING, logger="horovod_batchai._shared.sweep")

    async def until(condition: Any, what: str) -> None:
        deadline = time.monotonic() + 300
        while not condition():
            assert time.monotonic() < deadline, what
            await asyncio.sleep(0.2)

    async def scenario() -> None:
        held = HeldTerminations()
        async with Target.local(service=service, per_call_policies=[held]) as target:
            experiment, cluster, spec = await _setup(target, tmp_path)
            sweep = await experiment.sweep(spec, name="median", parameters={"lr": [0.3, 0.2, 0.1]}, cluster=cluster,
                                           max_concurrent_trials=2,
                                           early_stopping=MedianStopping(min_epochs=1, min_trials=2))
            waiting = asyncio.ensure_future(sweep.wait(timeout=600, poll_interval=0.5))
            # the sweep went on past the termination that did not finish, and asked the service again
            await until(lambda: held.terminates >= 2 or waiting.done(), "the stopping rule never asked again")
            assert not waiting.done(), waiting
            assert any("terminating trial median-002 had not finished after 1s" in r.getMessage()
                       for r in caplog.records)

            # a cancelled wait leaves no termination behind; the next wait asks again for the stopped trial
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            assert not other_tasks()
            asked = held.terminates
            held.release.set()
            results = await sweep.wait(timeout=600, poll_interval=0.5)
            assert held.terminates > asked
            assert isinstance(results, SweepResults)
            assert [r.trial.status for r in results] == ["succeeded", "succeeded", "stopped early"]
            assert sweep.state is SweepState.SUCCEEDED and not other_tasks()

    asyncio.run(scenario())
