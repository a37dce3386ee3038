"""A sweep facing a service that never finishes a termination: ``Sweep.cancel(timeout=)`` gives
up with WaitTimeoutError, and the median stopping rule logs it and asks again instead of hanging.
The service is the real local one; the hang is a request hook holding the terminate requests
(as a service that does not answer would) until the test lets them go."""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any, Iterator, List

import pytest

from horovod_batchai import (Experiment, FileShare, GpuCluster, HorovodJob, InvalidSpecError, MedianStopping, SweepResults, SweepState,
                             Target, WaitTimeoutError, Workspace)
from horovod_batchai._shared import sweep as _sweep
from horovod_batchai.local import LocalService

from sdk_support import ACCOUNT, RG, SSH_KEY
from sweep_support import TRIAL, drive_sweeps_from_the_client

@pytest.fixture(autouse=True)
def _client_driven(monkeypatch: pytest.MonkeyPatch) -> None:
    """These are the sweeps the SDK drives where the service holds none (Batch AI on Azure): the
    local service, which holds sweeps, is read as not holding them (tests/sdk/test_held_sweeps.py)."""
    drive_sweeps_from_the_client(monkeypatch)


pytestmark = pytest.mark.slow


class HeldTerminations:
    """A request hook: every request to terminate a job waits until ``release`` is set, as on a
    service that does not answer."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.terminates = 0
        self._lock = threading.Lock()

    def __call__(self, request: Any) -> None:
        http = request.http_request
        if http.method == "POST" and http.url.split("?")[0].endswith("/terminate"):
            with self._lock:
                self.terminates += 1
            self.release.wait(300)


@pytest.fixture
def held(service: LocalService) -> Iterator[tuple[Target, HeldTerminations]]:
    hook = HeldTerminations()
    with Target.local(service=service, raw_request_hook=hook) as target:
        try:
            yield target, hook
        finally:
            hook.release.set()


@pytest.fixture
def setup(held: tuple[Target, HeldTerminations], tmp_path: Path) -> tuple[Experiment, GpuCluster, HorovodJob]:
    target, _ = held
    workspace = Workspace.create(target, RG, "batchaidev", location="eastus")
    cluster = workspace.create_cluster("nc6cluster", vm_size="Standard_NC6", target_node_count=2,
                                       admin_user_name="demo", ssh_public_key=SSH_KEY)
    cluster.wait_until_ready(timeout=120)
    share = FileShare.create(target, RG, ACCOUNT, "myshare", location="eastus")
    local = tmp_path / "trial.py"
    local.write_text(TRIAL)
    share.upload_file(local, "scripts/trial.py", progress=False)
    spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/scripts/trial.py", mounts=[share.mount()],
                      std_out_err_path_prefix="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/logs")
    return workspace.create_experiment("sweeps"), cluster, spec


def test_cancel_gives_up_after_its_timeout_when_terminations_do_not_finish(
        held: tuple[Target, HeldTerminations], setup: tuple[Experiment, GpuCluster, HorovodJob]) -> None:
    _, hooks = held
    experiment, cluster, spec = setup
    sweep = experiment.sweep(spec.replace(arguments="--pause 600"), name="stuck", parameters={"lr": [0.3, 0.2, 0.1]},
                             cluster=cluster, max_concurrent_trials=2)
    started = time.monotonic()
    with pytest.raises(WaitTimeoutError, match=r"cancelling sweep 'stuck': terminating trial\(s\) stuck-000, "
                                               r"stuck-001 had not finished after 2s"):
        sweep.cancel(timeout=2)
    assert time.monotonic() - started < 60  # bounded by the timeout (and the terminate requests), not the service
    assert hooks.terminates == 2
    # cancelled all the same: nothing more is submitted, and once the service is let go the trials end
    assert sweep.state is SweepState.CANCELLED and sweep.step() is SweepState.CANCELLED
    assert sorted(j.name for j in experiment.list_jobs()) == ["stuck-000", "stuck-001"]
    hooks.release.set()
    sweep.cancel(timeout=120)
    assert [t.status for t in sweep.trials] == ["terminated", "terminated", "cancelled"]


def test_cancel_refuses_a_bad_timeout_before_any_request(held: tuple[Target, HeldTerminations],
                                                         setup: tuple[Experiment, GpuCluster, HorovodJob]) -> None:
    _, hooks = held
    hooks.release.set()
    experiment, cluster, spec = setup
    sweep = experiment.sweep(spec.replace(arguments="--pause 600"), name="bad", parameters={"lr": [0.3]},
                             cluster=cluster)
    with pytest.raises(InvalidSpecError, match=r"timeout: -1 is negative"):
        sweep.cancel(timeout=-1)
    assert hooks.terminates == 0 and sweep.state is SweepState.RUNNING
    sweep.cancel(timeout=120)
    assert hooks.terminates == 1 and [t.status for t in sweep.trials] == ["terminated"]


def test_the_stopping_rule_asks_again_when_a_termination_does_not_finish(
        held: tuple[Target, HeldTerminations], setup: tuple[Experiment, GpuCluster, HorovodJob],
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    _, hooks = held
    experiment, cluster, spec = setup
    monkeypatch.setattr(_sweep, "TERMINATE_PATIENCE_S", 1.0)
    caplog.set_level(logging.WARNING, logger="horovod_batchai._shared.sweep")
    sweep = experiment.sweep(spec, name="median", parameters={"lr": [0.3, 0.2, 0.1]}, cluster=cluster,
                             max_concurrent_trials=2, early_stopping=MedianStopping(min_epochs=1, min_trials=2))
    outcome: List[Any] = []

    def drive() -> None:
        try:
            outcome.append(sweep.wait(timeout=600, poll_interval=0.5))
        except BaseException as err:  # handed to the test's thread
            outcome.append(err)

    thread = threading.Thread(target=drive, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 300
        while hooks.terminates < 2 and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        # the sweep went on past the termination that did not finish, and asked the service again
        assert hooks.terminates >= 2, "the stopping rule did not ask again: it waits on the first termination"
        assert any("terminating trial median-002 had not finished after 1s" in r.getMessage()
                   for r in caplog.records)
    finally:
        hooks.release.set()
        thread.join(300)
    assert not thread.is_alive() and len(outcome) == 1
    results = outcome[0]
    assert isinstance(results, SweepResults), results
    assert [r.trial.status for r in results] == ["succeeded", "succeeded", "stopped early"]
    assert sweep.state is SweepState.SUCCEEDED
