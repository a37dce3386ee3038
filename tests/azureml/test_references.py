"""Azure ML resources back from their ARM ids, against replayed traffic: a job's id does not name
its experiment, so ``Job.from_id`` reads it from the job; the target pickles only without a
credential of the caller's."""
from __future__ import annotations

import pickle

import pytest

from horovod_batchai import ExecutionState, GpuCluster, InvalidSpecError, Job, Target, TargetError, Workspace

import scenario as S
from replay import ReplayTransport


def test_a_job_comes_back_from_its_id(target: Target, transport: ReplayTransport) -> None:
    submitted = S.SubmittedJob()
    submitted.sent = {"properties": {"computeId": S.COMPUTE_PATH, "experimentName": S.EXPERIMENT, "properties": {}}}
    # one read for the experiment the job is in, one as get_job makes it
    transport.add(S.job_get(submitted, "Completed"), S.job_get(submitted, "Completed"))
    job = Job.from_id(target, f"{S.WS_PATH}/jobs/{S.JOB}")
    assert (job.experiment.name, job.name, job.execution_state) == (S.EXPERIMENT, S.JOB, ExecutionState.SUCCEEDED)
    assert job.id == f"{S.WS_PATH}/jobs/{S.JOB}"
    transport.verify()


def test_a_cluster_and_the_workspace_come_back_from_their_ids(target: Target, transport: ReplayTransport) -> None:
    transport.add(S.compute_get())
    assert GpuCluster.from_id(target, S.COMPUTE_PATH).vm_size.lower() == "standard_ds2_v2"  # as recorded
    transport.add(*S.workspace_get())
    assert Workspace.from_id(target, S.WS_PATH).location == S.LOCATION
    transport.verify()


def test_an_id_of_another_workspace_or_form_is_refused(target: Target, transport: ReplayTransport) -> None:
    with pytest.raises(InvalidSpecError, match="'other' is not the target's Azure ML workspace"):
        Job.from_id(target, f"{S.WS_PATH.replace(S.WS, 'other')}/jobs/{S.JOB}")
    with pytest.raises(InvalidSpecError) as caught:
        Job.from_id(target, f"{S.WS_PATH}/experiments/{S.EXPERIMENT}/jobs/{S.JOB}")  # Batch AI's form
    assert caught.value.field == "id"
    transport.verify()  # nothing was sent


def test_a_target_with_the_callers_credential_is_not_pickled(target: Target) -> None:
    with pytest.raises(TargetError, match="credential of the caller's"):
        pickle.dumps(target)


def test_an_aio_job_comes_back_from_its_id(transport: ReplayTransport) -> None:
    """The aio Job.from_id reads the job's experiment too, each read in a worker thread."""
    import asyncio

    from horovod_batchai import aio
    from replay import FakeCredential

    submitted = S.SubmittedJob()
    submitted.sent = {"properties": {"computeId": S.COMPUTE_PATH, "experimentName": S.EXPERIMENT, "properties": {}}}
    transport.add(S.job_get(submitted, "Completed"), S.job_get(submitted, "Completed"))

    async def scenario() -> aio.Job:
        async with aio.Target.azureml(S.SUB, S.RG, S.WS, credential=FakeCredential(), transport=transport) as target:
            return await aio.Job.from_id(target, f"{S.WS_PATH}/jobs/{S.JOB}")
    job = asyncio.run(scenario())
    assert isinstance(job, aio.Job) and isinstance(job.experiment, aio.Experiment)
    assert (job.experiment.name, job.name, job.execution_state) == (S.EXPERIMENT, S.JOB, ExecutionState.SUCCEEDED)
    transport.verify()
