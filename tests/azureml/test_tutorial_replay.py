"""The tutorial on Azure ML, through the public classes, against replayed traffic.

Every request the SDK sends is checked against a recorded (or spec-derived, or -- for logs,
storage and the environment built from a Docker context -- built) one by the replay transport, in
order; see scenario.py for where each comes from. Nothing is stubbed, and nothing may leave the
transport (conftest.no_network).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from horovod_batchai import (AllocationState, ExecutionState, FileShare, HorovodJob, JobStatus, Target,
                             Workspace)

import scenario as S
from replay import FakeCredential, ReplayTransport

JOB_JSON = Path(__file__).resolve().parents[2] / "examples" / "job.json"
LOG = b"Epoch 1/1\n391/391 - 12s - loss: 1.61\nTest loss: 1.31\nTest accuracy: 0.5312\n"


def test_the_tutorial_runs_on_azure_ml(target: Target, transport: ReplayTransport, tmp_path: Path) -> None:
    # Workspace and experiment: Azure ML makes an experiment with its first job, so no request.
    transport.add(*S.workspace_get())
    workspace = Workspace.create(target, S.RG, S.WS, location=S.LOCATION)
    assert workspace.location == S.LOCATION
    experiment = workspace.create_experiment(S.EXPERIMENT)

    # The cluster: 2 dedicated nodes asked for (the PUT is checked), then waited on until steady.
    # The answers are the recorded compute's and the spec example's, as they were sent: the
    # package reports what the service says, spelled as Azure documents it.
    transport.add(*S.cluster_create())
    cluster = workspace.create_cluster(S.CLUSTER, vm_size=S.VM_SIZE, vm_priority="dedicated", target_node_count=2,
                                       admin_user_name="azureuser", ssh_public_key=S.SSH_KEY)
    assert (cluster.vm_size, cluster.maximum_node_count) == ("Standard_DS2_v2", 2)  # recording 1's compute
    transport.add(*S.cluster_ready())
    seen = []
    ready = cluster.wait_until_ready(timeout=60, poll_interval=0, on_status=seen.append)
    assert [s.allocation_state for s in seen] == [AllocationState.RESIZING, AllocationState.STEADY]
    assert seen[0].vm_size == "Standard_NC6"  # the spec example's STANDARD_NC6
    assert seen[0].auto_scale == (0, 1) and seen[0].node_state_counts.total == 0
    assert ready.auto_scale == (0, 2) and ready.node_state_counts.total == 0 and ready.is_ready

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
    transport.add(S.job_get(submitted, "Running"), *S.discovery(), S.run_details("Running"), *S.stdouterr(None),
                  S.blob_properties(cut), S.blob_range(LOG[:cut], 0, cut),
                  S.job_get(submitted, "Completed"), S.blob_properties(len(LOG)), S.blob_range(LOG, cut, len(LOG)))
    stream = job.stream("stdout.txt", poll_interval=0)
    pieces = list(stream)
    assert "".join(pieces).encode() == LOG and len(pieces) == 2 and stream.offset == len(LOG)
    transport.add(S.job_get(submitted, "Completed"))
    final = job.wait(timeout=60, poll_interval=0)
    assert isinstance(final, JobStatus) and final.execution_state is ExecutionState.SUCCEEDED

    # Its logs, and what it wrote to $AZ_BATCHAI_STDOUTERR_DIR on the share: listed, one log
    # downloaded, and its metrics read.
    metrics_csv = b"epoch,accuracy,loss,val_accuracy,val_loss\n0,0.41,1.62,0.5312,1.31\n"
    transport.add(S.run_details("Completed"), *S.stdouterr({"metrics.csv": len(metrics_csv)}, ("tensorboard",)))
    names = {(f.name, f.is_directory) for f in job.list_output_files()}
    assert names == {("stdout.txt", False), ("stderr.txt", False), ("user_logs", True), ("system_logs", True),
                     ("metrics.csv", False), ("tensorboard", True)}
    transport.add(S.run_details("Completed"), *S.stdouterr({"metrics.csv": len(metrics_csv)}), S.blob_whole(LOG))
    downloaded = job.download("stdout.txt", tmp_path)
    assert downloaded == tmp_path / "stdout.txt" and downloaded.read_bytes() == LOG
    transport.add(S.job_get(submitted, "Completed"), *S.mlflow_workspace_get(), S.mlflow_run_get(),
                  S.run_details("Completed"), *S.stdouterr({"metrics.csv": len(metrics_csv)}),
                  S.share_file(f"{S.STDOUTERR_PATH}/metrics.csv", metrics_csv))
    assert job.metrics().last("val_accuracy") == 0.5312

    # A second job, cancelled: Azure ML's Canceled ends as failed, as a terminated Batch AI job did.
    second = S.SubmittedJob()
    transport.add(*S.job_submit(second, "cifar_cancelled"))
    doomed = experiment.submit("cifar_cancelled", spec, cluster=cluster)
    transport.add(S.job_get(second, "Running", "cifar_cancelled"), *S.job_cancel("cifar_cancelled"),
                  S.job_get(second, "Canceled", "cifar_cancelled"))
    assert doomed.terminate().execution_state is ExecutionState.FAILED

    # Resize to 0, delete the jobs and the cluster.
    transport.add(*S.cluster_resize(0))
    status = cluster.resize(0, timeout=120)  # the PUT sent min = max = 0 (checked); the recorded answer:
    assert status.auto_scale == (0, 2) and status.node_state_counts.total == 0
    transport.add(S.job_delete("cifar_cancelled"), S.job_delete(S.JOB))
    doomed.delete()
    job.delete()
    transport.add(*S.cluster_delete())
    cluster.delete()

    transport.verify()
    assert all(duration >= 0 for duration in transport.sleeps)  # LRO polls waited through the transport


def _context_files() -> dict[str, bytes]:
    """What the build context must hold, read here from the files themselves."""
    import training
    from horovod_batchai._places.azureml.environment import DOCKERFILE
    package = Path(training.__file__).parent
    files = {f"training/{p.relative_to(package).as_posix()}": p.read_bytes() for p in package.rglob("*.py")}
    files.update({f"training/{p.name}": p.read_bytes() for p in package.glob("*.md")})
    return {"Dockerfile": DOCKERFILE.read_bytes(), **files}


def test_the_tutorials_azure_ml_job_runs_in_the_shipped_environment(transport: ReplayTransport) -> None:
    """What examples/tutorial.py submits on Azure ML: job.json without its TensorFlow 1.8 image and
    its job preparation, so that Azure ML builds the environment from the package's Dockerfile.
    The build context is uploaded through the target's transport, as recording 6 uploaded one,
    with the target's proxy, like every other request."""
    from horovod_batchai._experiment import Experiment
    proxy = "http://proxy.example.com:3128"
    target = Target.azureml(S.SUB, S.RG, S.WS, credential=FakeCredential(), transport=transport,
                            proxies={"https": proxy}, retry_total=1)
    experiment = Experiment(Workspace(target, S.RG, S.WS), S.EXPERIMENT)
    cluster = S.steady_cluster(target)
    share_spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name=S.ACCOUNT, account_key=S.ACCOUNT_KEY)
    # examples/tutorial.py, --target azureml: the same replace() it makes
    spec = share_spec.replace(node_count=2, container_image=None, job_preparation=None)
    submitted, upload = S.SubmittedJob(), S.ContextUpload()
    expected = _context_files()
    # The share was registered by an earlier process: its datastore is looked up (a read).
    transport.add(S.datastore_get(), *S.job_submit_built(submitted, upload, list(expected)))
    job = experiment.submit(S.JOB, spec, cluster=cluster)
    assert job.execution_state is ExecutionState.QUEUED
    transport.verify()

    assert upload.blobs == expected  # every file, byte for byte, and nothing else
    digest = upload.folder.split("/")[-2] if upload.folder else ""
    assert len(digest) == 64 and upload.metadata == {"upload_status": "completed",
                                                     "name": "horovod-batchai-environment", "version": digest}
    assert submitted.sent is not None
    environment_id = submitted.sent["properties"]["environmentId"]
    assert f"/environments/horovod-batchai-environment/versions/{digest[:32]}" in environment_id
    assert S.TUTORIAL_IMAGE not in str(submitted.sent)
    # every request, the blob upload's included, went the caller's way
    assert len(transport.proxies) == len(transport.requests) and all(p.get("https") == proxy
                                                                     for p in transport.proxies)
    assert any("blob.core.windows.net" in r for r in transport.requests)
    target.close()


def test_a_build_context_uploaded_earlier_is_not_uploaded_again(target: Target, transport: ReplayTransport) -> None:
    """The same package, submitted again: the datastore hands out a SAS (recording 8), the first
    file says the upload completed, so nothing is written; the environment names that folder."""
    from horovod_batchai._experiment import Experiment
    spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name=S.ACCOUNT, account_key=S.ACCOUNT_KEY).replace(
        node_count=2, container_image=None, job_preparation=None)
    submitted = S.SubmittedJob()
    uploaded = S.context_already_uploaded()
    container = uploaded[2].path.split("/")[1]

    def context_uri() -> str:  # the folder the HEAD found, on the recorded (sanitized) account
        return f"https://Sanitized.blob.core.windows.net/{container}/LocalUpload/{digest[0]}/horovod-batchai-environment/"

    digest = [""]
    uploaded[2].check = lambda request, body: (digest.__setitem__(0, request.path_url.split("/")[3])
                                               or S._sas_only(request, body))
    transport.add(S.datastore_get(), S.not_found(f"{S.WS_PATH}/jobs/{S.JOB}", S.JOB_GET, "UserError", "a new job"),
                  S.environment_missing("horovod-batchai-environment"), *uploaded,
                  S.environment_build_put(context_uri), S.job_put(submitted))
    Experiment(Workspace(target, S.RG, S.WS), S.EXPERIMENT).submit(S.JOB, spec, cluster=S.steady_cluster(target))
    transport.verify()
    assert [r.split(" ")[0] for r in transport.requests].count("PUT") == 2  # the environment and the job


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
                 S.datastore_get(), *S.job_submit_built(submitted, S.ContextUpload(), ["Dockerfile"]),
                 *S.context_already_uploaded(), *S.stdouterr({"metrics.csv": 1}), S.share_file("x", b"x")]
    kinds = {e.source.split(":", 1)[0] for e in exchanges}
    assert kinds == {"recording", "spec", "built"}
    built = [e for e in exchanges if e.source.startswith("built:")]
    assert all(("UNVERIFIED" in e.source or "storage" in e.source or "does not exist" in e.source
                or "not recorded" in e.source or "file share" in e.source) for e in built), [e.source for e in built]
    # the build context's datastore, secret, upload and environment are all recorded traffic
    context = [*S.context_datastore(), *S.context_upload(S.ContextUpload(), ["Dockerfile"]),
               S.environment_build_put(lambda: "")]
    assert {e.source.split("#")[0] for e in context} == {f"recording:{S.ENVIRONMENT_FILE}"}
    # datastores (absent, other storage, blob), compute shapes and the job input: recorded, unchanged
    recorded_only = [S.datastore_missing(S.DATASTORE), S.blob_datastore_get(S.DATASTORE), *S.stdouterr()[:2],
                     S.blob_datastore_put(S.DATASTORE, S.ACCOUNT, "data", "None"), S.compute_get_creating(),
                     *[S.compute_get(i) for i in (3, 4, 8, 9)], S.blob_job_put(submitted, lambda r, b: None)]
    assert all(e.source.startswith("recording:") for e in recorded_only), [e.source for e in recorded_only]


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

