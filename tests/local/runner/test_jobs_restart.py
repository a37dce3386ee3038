"""A restart loses nothing: queued jobs run after it, finished jobs keep their outputs, and jobs
that were running when the service stopped (or died) are failed with an error that says so,
with none of their processes left behind."""
from __future__ import annotations

import os
import signal
from pathlib import Path

from azure.mgmt.batchai import BatchAI

from service_support import SUBSCRIPTION
from horovod_batchai.local import LocalService, ServiceSettings, ensure_running
from horovod_batchai.local.core.tokens import LocalCredential
from jobs_support import Lab, make_lab, tagged_processes, wait_for

FAST = ServiceSettings(provision_delay_s=0.3, deallocation_delay_s=0.1)


def _client(service: LocalService) -> BatchAI:
    return BatchAI(service.credential(), SUBSCRIPTION, base_url=service.endpoint,
                   connection_verify=str(service.info.ca_cert))


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

    second = LocalService(state, settings=FAST).start()
    try:
        with _client(second) as batchai:
            lab = Lab(second, batchai, lab.account, lab.key)
            running = lab.job("running")
            assert running.execution_state == "failed"
            [error] = running.execution_info.errors
            assert error.code == "LocalServiceStopped" and "local service stopped" in error.message
            assert lab.wait_state("queued").execution_state == "succeeded"
            assert lab.read("queued", "stdout.txt") == "ran after the restart\n"
            assert lab.read("done", "stdout.txt") == "finished before the restart\n"
            cluster = lab.wait_steady()
            assert cluster.current_node_count == 1 and cluster.node_state_counts.idle_node_count == 1
    finally:
        second.stop()


def test_jobs_of_a_service_that_died_are_failed_and_their_processes_killed(tmp_path: Path):
    state = tmp_path / "state"
    info = ensure_running(state)  # a daemon in its own process, which we then kill -9
    try:
        kwargs = {"base_url": info.endpoint, "connection_verify": str(info.ca_cert)}
        with BatchAI(LocalCredential(state), SUBSCRIPTION, **kwargs) as batchai:
            daemon = _DaemonView(info)
            lab = make_lab(daemon, batchai)  # type: ignore[arg-type]
            lab.create_cluster(nodes=1)
            lab.submit("job", {"customToolkitSettings": {"commandLine": "echo started; sleep 300"}})
            lab.wait_state("job", "running")
            orphans = wait_for(lambda: tagged_processes(state), 30, what="the job's processes")
    finally:
        os.kill(info.pid, signal.SIGKILL)
        # The daemon is this process's child: reaping it returns once all its threads are gone (a
        # zombie group leader may still have threads holding its files, the state lock included).
        os.waitpid(info.pid, 0)
    # Nobody stopped them: the job's processes outlived the service that started them...
    assert set(orphans) & set(tagged_processes(state))

    service = LocalService(state, settings=FAST).start()
    try:
        # ...until a service starts on the same state directory.
        assert tagged_processes(state) == []
        with _client(service) as batchai:
            job = Lab(service, batchai, lab.account, lab.key).job("job")
            assert job.execution_state == "failed"
            assert job.execution_info.errors[0].code == "LocalServiceStopped"
    finally:
        service.stop()


class _DaemonView:
    """What the test helpers need of a service, for a daemon running in another process."""

    def __init__(self, info) -> None:
        self.info = info
        self.endpoint = info.endpoint
        self.state_dir = info.state_dir

    def credential(self) -> LocalCredential:
        return LocalCredential(self.state_dir)
