"""The ``begin_`` pollers on Azure ML, against replayed traffic: their typed results, the caller's
timeout honoured while azure-ai-ml's poller is held at a status poll, and continuation tokens resumed
where azure-ai-ml takes them back (a cancel through its public ``begin_cancel``; a compute creation
through its generated client) or read again where there is nothing to resume (a submitted job)."""
from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from horovod_batchai import ExecutionState, GpuCluster, Job, JobStatus, Target, WaitTimeoutError, Workspace

import scenario as S
from replay import Exchange, ReplayTransport
from test_bad_input import _spec


class Held:
    """Makes an exchange's check wait until released: the service 'takes its time' to answer."""

    def __init__(self, exchange: Exchange) -> None:
        self.reached, self.released = threading.Event(), threading.Event()
        exchange.check = self.check

    def check(self, request: object, body: object) -> None:
        self.reached.set()
        self.released.wait(30)

    def release(self) -> None:
        self.released.set()


def _spent(poller: Any, timeout: float, match: str, held: Held) -> None:
    started = time.monotonic()
    with pytest.raises(WaitTimeoutError, match=match):
        poller.result(timeout)
    assert time.monotonic() - started >= timeout and not poller.done()
    assert held.reached.wait(30)
    held.release()


def _wait_served(transport: ReplayTransport) -> None:
    deadline = time.monotonic() + 30
    while len(transport.served) < len(transport.expected) and time.monotonic() < deadline:
        time.sleep(0.02)


def test_submit_and_cancel_pollers(target: Target, transport: ReplayTransport) -> None:
    experiment = Workspace(target, S.RG, S.WS).get_experiment(S.EXPERIMENT)  # sends nothing on Azure ML
    cluster = S.steady_cluster(target)
    submitted = S.SubmittedJob()
    transport.add(S.datastore_get(), *S.job_submit(submitted))
    poller = experiment.begin_submit(S.JOB, _spec(), cluster=cluster)
    assert poller.done()  # Azure ML accepted the command job in the request that created it
    job = poller.result(0)
    assert isinstance(job, Job) and job.execution_state is ExecutionState.QUEUED

    # Its token has nothing left to wait for: resuming reads the job again.
    transport.add(S.job_get(submitted, "Running"))
    resumed = experiment.begin_submit(S.JOB, _spec(), cluster=cluster, continuation_token=poller.continuation_token())
    assert resumed.result(0) == job and resumed.result(0).execution_state is ExecutionState.RUNNING

    # Cancelling: the caller's timeout while the service holds the first status poll.
    cancel = S.job_cancel(S.JOB)
    held = Held(cancel[1])
    transport.add(S.job_get(submitted, "Running"), *cancel, S.job_get(submitted, "Canceled"))
    stopping = job.begin_terminate()
    token = stopping.continuation_token()
    _spent(stopping, 0.2, "terminating job .* had not finished after 0.2s", held)
    status = stopping.result(30)
    assert isinstance(status, JobStatus) and status.execution_state is ExecutionState.FAILED

    # The token resumes azure-ai-ml's own poller (begin_cancel(continuation_token=...)): it polls the
    # operation again, then this package reads the job.
    transport.add(S.job_cancel(S.JOB)[2], S.job_get(submitted, "Canceled"))
    again = Job(experiment, S.JOB).begin_terminate(continuation_token=token).result(30)
    assert again.execution_state is ExecutionState.FAILED
    transport.verify()


def test_cluster_creation_poller_resumes_through_the_generated_client(target: Target,
                                                                      transport: ReplayTransport) -> None:
    workspace = Workspace(target, S.RG, S.WS)
    exchanges = S.cluster_create()
    # 404, the workspace's location, PUT, two status polls, the LRO's final GET, this package's GET
    assert [e.method for e in exchanges] == ["GET", "GET", "PUT", "GET", "GET", "GET", "GET"]
    held = Held(exchanges[3])  # the operation's first status poll
    transport.add(*exchanges)
    poller = workspace.begin_create_cluster(S.CLUSTER, vm_size=S.VM_SIZE, target_node_count=2,
                                            admin_user_name="azureuser", ssh_public_key=S.SSH_KEY)
    token = poller.continuation_token()
    _spent(poller, 0.2, "creating cluster .* had not finished after 0.2s", held)
    cluster = poller.result(30)
    assert isinstance(cluster, GpuCluster) and cluster.maximum_node_count == 2

    # Resumed: the operation's status polls and final GET again, then this package's GET.
    transport.add(*S.cluster_create()[3:])
    resumed = workspace.begin_create_cluster(S.CLUSTER, continuation_token=token).result(30)
    assert resumed == cluster and resumed.vm_size == cluster.vm_size  # the compute as recorded
    _wait_served(transport)
    transport.verify()
