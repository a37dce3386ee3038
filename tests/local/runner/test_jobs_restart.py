"""A restart loses nothing. Stopping the service stops its running jobs (failed with an error that
says so, none of their processes left behind); queued jobs run after the restart and finished jobs
keep their outputs. Killing the service (kill -9) does not stop its jobs: they run on, record
their exit status, and the restarted service reports it, or re-attaches to those still running;
a job whose PUT was answered runs exactly once."""
from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Iterator, Optional

import pytest
from azure.mgmt.batchai import BatchAI
from azure.mgmt.batchai.models import JobCreateParameters

from service_support import SUBSCRIPTION, kill_daemon
from horovod_batchai.local import LocalService, ServiceSettings, ensure_running
from horovod_batchai.local.core.tokens import LocalCredential
from jobs_support import EXP, RG, WS, DaemonView, Lab, make_lab, tagged_processes, wait_for


@pytest.fixture(autouse=True)
def _no_job_outlives_its_test(tmp_path: Path):
    """Jobs here are built to outlive a killed service; a test that fails half-way must not leave
    them running on the machine (some wait for a flag that will never come)."""
    yield
    for pid in tagged_processes(tmp_path / "state"):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

FAST = ServiceSettings(provision_delay_s=0.3, deallocation_delay_s=0.1)


def _client(service: LocalService) -> BatchAI:
    return BatchAI(service.credential(), SUBSCRIPTION, base_url=service.endpoint,
                   connection_verify=str(service.info.ca_cert))


@contextlib.contextmanager
def _restarted(state: Path, before: Lab) -> Iterator[tuple[Lab, BatchAI]]:
    """The service started again on ``state``, with a lab on the storage account ``before`` used."""
    service = LocalService(state, settings=FAST).start()
    try:
        with _client(service) as batchai:
            yield Lab(service, batchai, before.account, before.key), batchai
    finally:
        service.stop()


def test_restart_keeps_queued_and_finished_jobs_and_fails_running_ones(tmp_path: Path):
    state = tmp_path / "state"
    first = LocalService(state, settings=FAST).start()
    try:
        with _client(first) as batchai:
            lab = make_lab(first, batchai)
            lab.create_cluster(nodes=1)
            lab.submit("done", {"customToolkitSettings": {"commandLine": "echo finished before the restart"}})
            assert lab.wait_state("done").execution_state == "succeeded"
            lab.submit("running", {"customToolkitSettings": {"commandLine": "echo started; sleep 300"}})
            lab.wait_state("running", "running")
            lab.submit("queued", {"customToolkitSettings": {"commandLine": "echo ran after the restart"}})
            wait_for(lambda: tagged_processes(state), 30, what="the running job's processes")
    finally:
        first.stop()
    assert tagged_processes(state) == []  # stopping the service stopped its jobs

    with _restarted(state, lab) as (lab, batchai):
        running = lab.job("running")
        assert running.execution_state == "failed"
        [error] = running.execution_info.errors
        assert error.code == "LocalServiceStopped" and "local service stopped" in error.message
        assert lab.wait_state("queued").execution_state == "succeeded"
        assert lab.read("queued", "stdout.txt") == "ran after the restart\n"
        assert lab.read("done", "stdout.txt") == "finished before the restart\n"
        cluster = lab.wait_steady()
        assert cluster.current_node_count == 1 and cluster.node_state_counts.idle_node_count == 1


def _start_daemon(state: Path):
    """A service in a process of its own (this process's child), which the test can kill -9."""
    return ensure_running(state)


def _daemon_client(info) -> BatchAI:
    return BatchAI(LocalCredential(info.state_dir), SUBSCRIPTION, base_url=info.endpoint,
                   connection_verify=str(info.ca_cert))


@contextlib.contextmanager
def _until_killed(state: Path, before: Optional[Lab] = None) -> Iterator[tuple[Lab, BatchAI]]:
    """A daemon service on ``state`` with a lab (a new one, or on the storage account ``before``
    used), killed with SIGKILL when the block ends, however it ends."""
    info = _start_daemon(state)
    try:
        with _daemon_client(info) as batchai:
            view = DaemonView(info)
            lab = make_lab(view, batchai) if before is None else Lab(view, batchai, before.account, before.key)
            yield lab, batchai  # type: ignore[misc]
    finally:
        kill_daemon(info.pid)


def _wait_until(path: Path, timeout: float = 60.0) -> None:
    wait_for(path.exists, timeout, what=str(path))


def test_jobs_outlive_a_killed_service_and_report_their_real_result_after_a_restart(tmp_path: Path):
    """Killed while three jobs ran: two finish during the outage (exit 0 and exit 7), one is still
    running when the service comes back, which re-attaches to it and sees it to its end."""
    state, flags = tmp_path / "state", tmp_path / "flags"
    flags.mkdir()

    def command(name: str, code: int) -> str:
        # Runs until the test creates flags/go-<name>, then leaves a trace and exits with ``code``.
        return (f"echo {name} started; while [ ! -f {flags}/go-{name} ]; do sleep 0.1; done; "
                f"echo {name} ends; touch {flags}/ended-{name}; exit {code}")

    with _until_killed(state) as (lab, batchai):
        lab.create_cluster(nodes=3)
        for name, code in (("ok", 0), ("bad", 7), ("long", 0)):
            lab.submit(name, {"customToolkitSettings": {"commandLine": command(name, code)}})
        for name in ("ok", "bad", "long"):
            lab.wait_state(name, "running")
        wait_for(lambda: len(tagged_processes(state)) >= 3, 30, what="the jobs' processes")

    # The jobs' processes did not die with the service...
    assert tagged_processes(state)
    # ...and two of them finish while it is down.
    for name in ("ok", "bad"):
        (flags / f"go-{name}").touch()
    for name in ("ok", "bad"):
        _wait_until(flags / f"ended-{name}")
    wait_for(lambda: len(list(state.glob("jobs/*/runs/*/exit.json"))) == 2, 30, what="their exit records")

    with _restarted(state, lab) as (lab, batchai):
        ok, bad = lab.wait_state("ok"), lab.wait_state("bad")
        assert ok.execution_state == "succeeded" and ok.execution_info.exit_code == 0
        assert bad.execution_state == "failed" and bad.execution_info.exit_code == 7
        assert bad.execution_info.errors[0].code == "JobFailed"
        assert lab.read("ok", "stdout.txt") == "ok started\nok ends\n"
        # The one still running was picked up again: it is running, and ends as its process does.
        assert lab.job("long").execution_state == "running"
        assert lab.cluster().node_state_counts.running_node_count == 1
        (flags / "go-long").touch()
        long = lab.wait_state("long")
        assert long.execution_state == "succeeded" and long.execution_info.exit_code == 0
        assert lab.read("long", "stdout.txt") == "long started\nlong ends\n"
        assert "re-attached" in lab.read("long", "execution.log")
        assert lab.wait_steady().node_state_counts.idle_node_count == 3
        assert tagged_processes(state) == []


def test_a_job_whose_put_was_answered_runs_exactly_once_whenever_the_service_is_killed(tmp_path: Path):
    """Each job is submitted and the service killed at once (a little later each time, so the kill
    lands before, while and after the job starts); after the last restart every job has run to
    its end exactly once."""
    state, trace = tmp_path / "state", tmp_path / "runs.txt"
    names = [f"job{i}" for i in range(6)]
    lab = None
    for i, name in enumerate(names):
        with _until_killed(state, lab) as (lab, batchai):
            if i == 0:
                lab.create_cluster(nodes=1)
            lab.cluster()
            body = {"properties": {"cluster": {"id": lab.cluster_id("cluster")}, "nodeCount": 1,
                                   "stdOutErrPathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs",
                                   "mountVolumes": lab.share_mount("afs"),
                                   "customToolkitSettings": {"commandLine": f"echo {name} >> {trace}"}}}
            batchai.jobs.begin_create(RG, WS, EXP, name, JobCreateParameters.from_dict(body))  # answered
            time.sleep(0.05 * i)

    with _restarted(state, lab) as (lab, batchai):
        for name in names:
            job = lab.wait_state(name)
            assert job.execution_state == "succeeded", (name, job.execution_info.errors)
        assert sorted(trace.read_text().split()) == names


def test_limits_and_terminate_hold_across_a_kill(tmp_path: Path):
    """The wall-clock limit is enforced while the service is down (by the run's supervisor), and a
    job re-attached after the restart can be terminated like any other."""
    state = tmp_path / "state"
    with _until_killed(state) as (lab, batchai):
        lab.create_cluster(nodes=2)
        lab.submit("limited", {"customToolkitSettings": {"commandLine": "sleep 300"},
                               "constraints": {"maxWallClockTime": "PT2S"}})
        lab.submit("endless", {"customToolkitSettings": {"commandLine": "sleep 300"}})
        lab.wait_state("limited", "running")
        lab.wait_state("endless", "running")
    wait_for(lambda: list(state.glob("jobs/*/runs/*/exit.json")), 30, what="the limited job to be stopped")

    with _restarted(state, lab) as (lab, batchai):
        limited = lab.wait_state("limited")
        assert limited.execution_state == "failed"
        assert limited.execution_info.errors[0].code == "MaxWallClockTimeExceeded"
        assert lab.job("endless").execution_state == "running"
        batchai.jobs.begin_terminate(RG, WS, EXP, "endless").result()
        endless = lab.wait_state("endless")
        assert endless.execution_state == "failed"
        assert endless.execution_info.errors[0].code == "JobTerminated"
        wait_for(lambda: tagged_processes(state) == [], 30, what="the terminated job's processes to go")


def test_a_job_whose_processes_died_with_the_service_fails_saying_so(tmp_path: Path):
    state = tmp_path / "state"
    with _until_killed(state) as (lab, batchai):
        lab.create_cluster(nodes=1)
        lab.submit("job", {"customToolkitSettings": {"commandLine": "echo started; sleep 300"}})
        lab.wait_state("job", "running")
        wait_for(lambda: list(state.glob("jobs/*/runs/*/started.json")), 30, what="the job to start")
    # Killed along with the service (as a machine's reboot would): nothing recorded how it ended.
    for pid in tagged_processes(state):
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not tagged_processes(state), 30, what="the job's processes to go")

    with _restarted(state, lab) as (restarted, batchai):
        job = restarted.wait_state("job")
        assert job.execution_state == "failed" and job.execution_info.exit_code is None
        [error] = job.execution_info.errors
        assert error.code in ("LocalServiceKilled", "JobProcessesLost"), error.code
        assert "killed" in error.message

