"""horovod_batchai.aio on Azure ML, against replayed traffic: azure-ai-ml has no async API, so
every request runs in a worker thread (never on the event loop's), and the waits are awaited.

The same exchanges as the sync tutorial test (scenario.py), checked in order by the replay
transport; nothing may leave it (conftest.no_network).
"""
from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from horovod_batchai import AllocationState, ExecutionState, HorovodJob, JobStatus
from horovod_batchai.aio import Experiment, GpuCluster, Target, Workspace

import scenario as S
from replay import FakeCredential, ReplayTransport

JOB_JSON = Path(__file__).resolve().parents[2] / "examples" / "job.json"
LOG = b"Epoch 1/1\n391/391 - 12s - loss: 1.61\nTest loss: 1.31\nTest accuracy: 0.5312\n"


@pytest.fixture
def request_threads(transport: ReplayTransport, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of the thread each request was sent from."""
    threads: list[str] = []
    send = transport.send

    def recording_send(request: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return send(request, **kwargs)

    monkeypatch.setattr(transport, "send", recording_send)
    return threads


def test_the_tutorial_runs_off_the_loop_on_azure_ml(transport: ReplayTransport, request_threads: list[str]) -> None:
    async def scenario() -> None:
        loop_thread = threading.current_thread().name
        async with Target.azureml(S.SUB, S.RG, S.WS, credential=FakeCredential(), transport=transport) as target:
            transport.add(*S.workspace_get())
            workspace = await Workspace.create(target, S.RG, S.WS, location=S.LOCATION)
            assert workspace.location == S.LOCATION
            experiment = await workspace.create_experiment(S.EXPERIMENT)
            assert isinstance(experiment, Experiment)

            transport.add(*S.cluster_create())
            poller = await workspace.begin_create_cluster(S.CLUSTER, vm_size=S.VM_SIZE, target_node_count=2,
                                                          admin_user_name="azureuser", ssh_public_key=S.SSH_KEY)
            cluster = await poller.result(60)
            assert isinstance(cluster, GpuCluster) and cluster.maximum_node_count == 2
            transport.add(*S.cluster_ready())
            seen: list[Any] = []
            ready = await cluster.wait_until_ready(timeout=60, poll_interval=0, on_status=seen.append)
            assert [s.allocation_state for s in seen] == [AllocationState.RESIZING, AllocationState.STEADY]
            assert ready.is_ready

            spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name=S.ACCOUNT, account_key=S.ACCOUNT_KEY)
            submitted = S.SubmittedJob()
            transport.add(S.datastore_get(), *S.job_submit(submitted))
            job = await experiment.submit(S.JOB, spec.replace(node_count=2), cluster=cluster)
            assert job.execution_state is ExecutionState.QUEUED

            cut = 25
            transport.add(S.job_get(submitted, "Running"), *S.discovery(), S.run_details("Running"),
                          *S.stdouterr(None),  # the job has not made its stdouterr directory on the share yet
                          S.blob_properties(cut), S.blob_range(LOG[:cut], 0, cut),
                          S.job_get(submitted, "Completed"), S.blob_properties(len(LOG)),
                          S.blob_range(LOG, cut, len(LOG)))
            pieces = [text async for text in job.stream("stdout.txt", poll_interval=0)]
            assert "".join(pieces).encode() == LOG and len(pieces) == 2
            transport.add(S.job_get(submitted, "Completed"))
            final = await job.wait(timeout=60, poll_interval=0)
            assert isinstance(final, JobStatus) and final.execution_state is ExecutionState.SUCCEEDED

            transport.add(*S.cluster_resize(0))
            status = await cluster.resize(0, timeout=120)
            assert status.node_state_counts.total == 0
            transport.add(S.job_delete(S.JOB))
            await job.delete()
            transport.add(*S.cluster_delete())
            await cluster.delete()
        transport.verify()
        assert request_threads and loop_thread not in request_threads  # no request from the loop's thread

    asyncio.run(scenario())
