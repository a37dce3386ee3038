"""The tutorial on Azure ML, through the public classes, against replayed traffic.

Every request the SDK sends is checked against a recorded (or spec-derived, or -- for logs,
storage and the environment built from a Docker context -- built) one by the replay transport, in
order; see scenario.py for where each comes from. One call is stubbed instead of replayed: the
upload of the Docker build context, which azure-ai-ml sends through blob clients of its own that
do not take the target's transport (see StubbedUpload).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from horovod_batchai import (AllocationState, ExecutionState, FileShare, HorovodJob, JobStatus, Target,
                             Workspace)

import scenario as S
from replay import ReplayTransport

JOB_JSON = Path(__file__).resolve().parents[2] / "examples" / "job.json"
LOG = b"Epoch 1/1\n391/391 - 12s - loss: 1.61\nTest loss: 1.31\nTest accuracy: 0.5312\n"


def test_the_tutorial_runs_on_azure_ml(target: Target, transport: ReplayTransport, tmp_path: Path) -> None:
    # Workspace and experiment: Azure ML makes an experiment with its first job, so no request.
    transport.add(*S.workspace_get())
    workspace = Workspace.create(target, S.RG, S.WS, location=S.LOCATION)
    assert workspace.location == S.LOCATION
    experiment = workspace.create_experiment(S.EXPERIMENT)

    # The cluster: 2 dedicated nodes, created, then waited on until steady with both idle.
    transport.add(*S.cluster_create())
    cluster = workspace.create_cluster(S.CLUSTER, vm_size=S.VM_SIZE, vm_priority="dedicated", target_node_count=2,
                                       admin_user_name="azureuser", ssh_public_key=S.SSH_KEY)
    assert (cluster.vm_size, cluster.maximum_node_count) == (S.VM_SIZE, 2)
    transport.add(*S.cluster_ready())
    seen = []
    ready = cluster.wait_until_ready(timeout=60, poll_interval=0, on_status=seen.append)
    assert [s.allocation_state for s in seen] == [AllocationState.RESIZING, AllocationState.STEADY]
    assert seen[0].node_state_counts.preparing == 2 and ready.node_state_counts.idle == 2
    assert ready.target_node_count == 2 and ready.is_ready

    # The share, registered as an AzureFile datastore with the account key.
    transport.add(*S.share_create(*S.storage_api_versions()))
    share = FileShare.create(target, S.RG, S.ACCOUNT, S.SHARE, location=S.LOCATION)

    # The tutorial's job.json, unchanged, on 2 nodes x 1 process.
    spec = HorovodJob.from_file(JOB_JSON, storage=share).replace(node_count=2)
    assert spec.process_count is None and spec.container_image == S.TUTORIAL_IMAGE
    submitted = S.SubmittedJob()
    transport.add(*S.job_submit(submitted))
    job = experiment.submit(S.JOB, spec, cluster=cluster)
    assert job.execution_state is ExecutionState.QUEUED  # Starting
    assert job.spec.script == spec.script and job.spec.node_count == 2  # read back from the job's properties
    assert submitted.sent is not None and "secrets" not in str(submitted.sent)
    assert S.ACCOUNT_KEY not in str(submitted.sent)  # the job names the datastore, never the key

    # Its states, then its output streamed: rank 0's log, read in two pieces, then the final read.
    transport.add(S.job_get(submitted, "Preparing"), S.job_get(submitted, "Running"))
    assert [job.refresh().execution_state for _ in range(2)] == [ExecutionState.QUEUED, ExecutionState.RUNNING]
    cut = 25
    transport.add(S.job_get(submitted, "Running"), *S.discovery(), S.run_details("Running"),
                  S.blob_properties(cut), S.blob_range(LOG[:cut], 0, cut),
                  S.job_get(submitted, "Completed"), S.blob_properties(len(LOG)), S.blob_range(LOG, cut, len(LOG)))
    stream = job.stream("stdout.txt", poll_interval=0)
    pieces = list(stream)
    assert "".join(pieces).encode() == LOG and len(pieces) == 2 and stream.offset == len(LOG)
    transport.add(S.job_get(submitted, "Completed"))
    final = job.wait(timeout=60, poll_interval=0)
    assert isinstance(final, JobStatus) and final.execution_state is ExecutionState.SUCCEEDED

    # Its logs: listed, and one downloaded.
    transport.add(S.run_details("Completed"))
    names = {(f.name, f.is_directory) for f in job.list_output_files()}
    assert names == {("stdout.txt", False), ("stderr.txt", False), ("user_logs", True), ("system_logs", True)}
    transport.add(S.run_details("Completed"), S.blob_whole(LOG))
    downloaded = job.download("stdout.txt", tmp_path)
    assert downloaded == tmp_path / "stdout.txt" and downloaded.read_bytes() == LOG

    # A second job, cancelled: Azure ML's Canceled ends as failed, as a terminated Batch AI job did.
    second = S.SubmittedJob()
    transport.add(*S.job_submit(second, "cifar_cancelled"))
    doomed = experiment.submit("cifar_cancelled", spec, cluster=cluster)
    transport.add(S.job_get(second, "Running", "cifar_cancelled"), *S.job_cancel("cifar_cancelled"),
                  S.job_get(second, "Canceled", "cifar_cancelled"))
    assert doomed.terminate().execution_state is ExecutionState.FAILED

    # Resize to 0, delete the jobs and the cluster.
    transport.add(*S.cluster_resize(0))
    status = cluster.resize(0, timeout=120)
    assert status.target_node_count == 0 and status.node_state_counts.total == 0
    transport.add(S.job_delete("cifar_cancelled"), S.job_delete(S.JOB))
    doomed.delete()
    job.delete()
    transport.add(*S.cluster_delete())
    cluster.delete()

    transport.verify()
    assert all(duration >= 0 for duration in transport.sleeps)  # LRO polls waited through the transport


class StubbedUpload:
    """Stands in for exactly one thing: azure-ai-ml's ``BlobStorageClient.upload``, which sends
    the build context to the workspace's blob datastore through azure-storage-blob clients it
    builds itself, without the target's transport (so the replay cannot see or answer them).
    Everything before it (the datastore and its SAS) and after it (the environment that names
    the uploaded context, the job) goes through the replay. It keeps what it was given to upload
    (the context is deleted after the submit) and answers as the real method does."""

    def __init__(self) -> None:
        self.calls: list[dict[str, object]] = []

    def __call__(self, client: Any, source: str, name: str, version: str, ignore_file: object = None,
                 asset_hash: str = "", show_progress: bool = True) -> dict[str, object]:
        from azure.ai.ml._utils._asset_utils import generate_asset_id
        folder = Path(source)
        files = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
        # where the real method puts a folder: LocalUpload/<hash>/<the folder's name>
        dest = f"{generate_asset_id(asset_hash, include_directory=True)}/{folder.name}"
        self.calls.append({"account": getattr(client, "account_name", None), "container": client.container,
                           "source": folder.name, "dest": dest, "files": files})
        return {"remote path": dest, "name": name, "version": version, "indicator file": None}

    def context_uri(self) -> str:
        assert self.calls, "the build context was never uploaded"
        return S.build_context_uri(str(self.calls[-1]["dest"]))


def test_the_tutorials_azure_ml_job_runs_in_the_shipped_environment(target: Target, transport: ReplayTransport,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """What examples/tutorial.py submits on Azure ML: job.json without its TensorFlow 1.8 image and
    its job preparation, so that Azure ML builds the environment from the package's Dockerfile."""
    from azure.ai.ml._artifacts._blob_storage_helper import BlobStorageClient

    from horovod_batchai._backends.azureml.environment import CONTEXT_NAME, DOCKERFILE
    from horovod_batchai._experiment import Experiment
    upload = StubbedUpload()
    monkeypatch.setattr(BlobStorageClient, "upload", lambda client, *args, **kwargs: upload(client, *args, **kwargs))
    experiment = Experiment(Workspace(target, S.RG, S.WS), S.EXPERIMENT)
    cluster = S.steady_cluster(target)
    share_spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name=S.ACCOUNT, account_key=S.ACCOUNT_KEY)
    # examples/tutorial.py, --target azureml: the same replace() it makes
    spec = share_spec.replace(node_count=2, container_image=None, job_preparation=None)
    submitted = S.SubmittedJob()
    # The share was registered by an earlier process: its datastore is looked up (a read).
    transport.add(S.datastore_get(), *S.job_submit_built(submitted, upload.context_uri))
    job = experiment.submit(S.JOB, spec, cluster=cluster)
    assert job.execution_state is ExecutionState.QUEUED
    transport.verify()

    (call,) = upload.calls
    assert (call["account"], call["container"]) == (S.BLOBSTORE_ACCOUNT, S.BLOBSTORE_CONTAINER)
    assert call["source"] == CONTEXT_NAME  # so the same context is the same upload path run after run
    files = call["files"]
    assert isinstance(files, dict) and files["Dockerfile"] == DOCKERFILE.read_bytes()
    assert "training/train.py" in files
    assert submitted.sent is not None
    environment_id = submitted.sent["properties"]["environmentId"]
    assert "/environments/CliV2AnonymousEnvironment/versions/" in environment_id
    assert S.TUTORIAL_IMAGE not in str(submitted.sent)


def test_a_resize_waits_no_longer_than_its_timeout(target: Target, transport: ReplayTransport) -> None:
    """The compute update is a long-running operation, and the cluster then reaches its new size:
    resize(timeout=) bounds the wait for both (it was a fixed hour). The service is held at the
    update's first status poll until the wait is over; the poller then carries on to the end."""
    import threading
    import time

    from horovod_batchai import WaitTimeoutError
    held, release = threading.Event(), threading.Event()
    exchanges = S.cluster_resize(0)
    status = exchanges[2]

    def hold(request: object, body: object) -> None:  # a check that finds nothing wrong, after a while
        held.set()
        release.wait(30)

    status.check = hold
    transport.add(*exchanges)
    started = time.monotonic()
    with pytest.raises(WaitTimeoutError, match="resizing cluster .* had not finished after 0.2s"):
        S.steady_cluster(target).resize(0, timeout=0.2)
    assert time.monotonic() - started < 10 and held.is_set()
    release.set()  # azure-core's poller finishes in the background: the update itself goes on
    deadline = time.monotonic() + 30
    while len(transport.served) < len(exchanges) and time.monotonic() < deadline:
        time.sleep(0.05)
    transport.verify()


def test_sources_are_named_for_every_exchange() -> None:
    """Each exchange says where its response came from; only logs and storage are built."""
    submitted = S.SubmittedJob()
    exchanges = [*S.workspace_get(), *S.cluster_create(), *S.cluster_ready(), *S.share_create("v", "v"),
                 *S.job_submit(submitted), S.job_get(submitted, "Running"), *S.discovery(), S.run_details("Running"),
                 *S.job_cancel(S.JOB), *S.cluster_resize(0), *S.cluster_delete(), S.job_delete(S.JOB),
                 S.datastore_get(), *S.job_submit_built(submitted, lambda: "")]
    kinds = {e.source.split(":", 1)[0] for e in exchanges}
    assert kinds == {"recording", "spec", "built"}
    built = [e for e in exchanges if e.source.startswith("built:")]
    assert all(("UNVERIFIED" in e.source or "storage" in e.source or "does not exist" in e.source
                or "not recorded" in e.source or "hold a build context" in e.source) for e in built), [
        e.source for e in built]
    # the default datastore and its SAS, which precede the build context's upload, are recorded
    assert [e.source.split("#")[0] for e in S.default_datastore()] == [f"recording:{S.JOB_FILE}"] * 2


def test_a_failed_job_reports_the_service_error_and_the_tail_of_its_log(target: Target,
                                                                       transport: ReplayTransport) -> None:
    from horovod_batchai import JobFailedError
    from horovod_batchai._experiment import Experiment
    submitted = S.SubmittedJob()
    submitted.sent = {"properties": {"computeId": S.COMPUTE_PATH, "experimentName": S.EXPERIMENT, "properties": {}}}
    error = {"code": "UserError", "message": "Execution failed: process exited with code 1"}
    log = b"".join(b"line %d\n" % i for i in range(40)) + b"ModuleNotFoundError: No module named 'training'\n"
    experiment = Experiment(Workspace(target, S.RG, S.WS), S.EXPERIMENT)
    # Reading a failed job asks run history for its error (the ARM resource carries none).
    transport.add(S.job_get(submitted, "Failed"), *S.discovery(), S.run_details("Failed", error=error))
    job = experiment.get_job(S.JOB)
    assert job.execution_state is ExecutionState.FAILED
    assert [str(e) for e in job.status.errors] == ["UserError: Execution failed: process exited with code 1"]
    transport.add(S.job_get(submitted, "Failed"), S.run_details("Failed", error=error),
                  S.run_details("Failed", error=error), S.blob_properties(len(log)), S.blob_range(log, 0, len(log)))
    with pytest.raises(JobFailedError) as caught:
        job.wait(timeout=10, poll_interval=0)
    assert "No module named 'training'" in caught.value.stderr_tail
    assert caught.value.stderr_tail.count("\n") == 29  # the last 30 lines
    assert "UserError" in str(caught.value)
    transport.verify()


def test_an_experiment_lists_its_own_jobs(target: Target, transport: ReplayTransport) -> None:
    """Azure ML lists the workspace's jobs; the experiment keeps those named after it."""
    from horovod_batchai._experiment import Experiment
    transport.add(S.job_list((S.JOB, S.EXPERIMENT), ("other_job", "other"), api_version=S.JOB_LIST))
    experiment = Experiment(Workspace(target, S.RG, S.WS), S.EXPERIMENT)
    assert [(j.name, j.execution_state) for j in experiment.list_jobs()] == [(S.JOB, ExecutionState.SUCCEEDED)]
    transport.add(S.job_list((S.JOB, S.EXPERIMENT), ("other_job", "other"), api_version=S.JOB_LIST))
    assert [e.name for e in Workspace(target, S.RG, S.WS).list_experiments()] == [S.EXPERIMENT, "other"]
    transport.verify()


def test_the_stream_renews_a_refused_log_link_and_loses_nothing(target: Target, transport: ReplayTransport) -> None:
    from horovod_batchai._experiment import Experiment
    submitted = S.SubmittedJob()
    submitted.sent = {"properties": {"computeId": S.COMPUTE_PATH, "experimentName": S.EXPERIMENT, "properties": {}}}
    refused = S.blob_properties(0)
    refused.status, refused.headers = 403, {"x-ms-error-code": "AuthenticationFailed"}
    refused.source += " (a SAS link that expired: 403)"
    transport.add(S.job_get(submitted, "Running"))
    job = Experiment(Workspace(target, S.RG, S.WS), S.EXPERIMENT).get_job(S.JOB)
    transport.add(S.job_get(submitted, "Running"), *S.discovery(), S.run_details("Running"), refused,
                  S.run_details("Running"), S.blob_properties(20), S.blob_range(LOG[:20], 0, 20),
                  S.job_get(submitted, "Completed"), S.blob_properties(len(LOG)), S.blob_range(LOG, 20, len(LOG)))
    stream = job.stream("stdout.txt", poll_interval=0)
    assert "".join(stream).encode() == LOG
    assert stream.links_fetched == 2
    transport.verify()
