"""What a job writes to ``$AZ_BATCHAI_STDOUTERR_DIR`` on Azure ML -- ``metrics.csv`` and its
TensorBoard event files -- read from its file share: listed with its logs, through the share's
datastore (recorded GET and listSecrets) and the Files data plane (built; see scenario.py).
"""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from horovod_batchai import ConflictError, ExecutionState, HorovodJob, Job, Target, Workspace

import scenario as S
from replay import ReplayTransport

JOB_JSON = Path(__file__).resolve().parents[2] / "examples" / "job.json"
METRICS = (b"epoch,accuracy,loss,lr,val_accuracy,val_loss\n"
           b"0,0.25,2.0,0.001,0.3,1.9\n"
           b"1,0.5,1.5,0.001,0.45,1.6\n")


def _job(target: Target, transport: ReplayTransport, status: str = "Running") -> tuple[Job, S.SubmittedJob]:
    """The tutorial's job, as submitted by this package (its spec in its properties), read once."""
    from horovod_batchai._places.azureml.conversions import SPEC_PROPERTY, spec_property
    from horovod_batchai._experiment import Experiment
    spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name=S.ACCOUNT, account_key=S.ACCOUNT_KEY)
    submitted = S.SubmittedJob()
    submitted.sent = {"properties": {"computeId": S.COMPUTE_PATH, "experimentName": S.EXPERIMENT,
                                     "properties": {SPEC_PROPERTY: spec_property(spec.replace(node_count=2))}}}
    transport.add(S.job_get(submitted, status))
    return Experiment(Workspace(target, S.RG, S.WS), S.EXPERIMENT).get_job(S.JOB), submitted


def test_metrics_are_read_from_the_share_while_the_job_runs(target: Target, transport: ReplayTransport) -> None:
    job, submitted = _job(target, transport)
    transport.add(S.job_get(submitted, "Running"), *S.mlflow_workspace_get(), S.mlflow_run_get(status="RUNNING"),
                  *S.discovery(), S.run_details("Running"),
                  *S.stdouterr({"metrics.csv": len(METRICS)}, ("tensorboard",)),
                  S.share_file(f"{S.STDOUTERR_PATH}/metrics.csv", METRICS))
    metrics = job.metrics()  # its MLflow run has no metrics: the share's metrics.csv is read
    assert metrics.epochs == [1, 2] and metrics.column("val_accuracy") == [0.3, 0.45] and not metrics.reason
    assert metrics.execution_state == "running"
    transport.verify()


def test_the_share_files_are_listed_with_the_logs_without_a_credential(target: Target,
                                                                       transport: ReplayTransport) -> None:
    job, submitted = _job(target, transport, "Completed")
    transport.add(*S.discovery(), S.run_details("Completed"),
                  *S.stdouterr({"metrics.csv": len(METRICS), "stdout.txt": 7}, ("tensorboard",)))
    files = {f.name: f for f in job.list_output_files()}
    assert set(files) == {"stdout.txt", "stderr.txt", "user_logs", "system_logs", "metrics.csv", "tensorboard"}
    assert files["stdout.txt"].download_url == S.LOG_URL  # run history's log wins over a file of that name
    assert files["metrics.csv"].size == len(METRICS) and files["tensorboard"].is_directory
    assert files["metrics.csv"].download_url == f"https://{S.FILE_HOST}/{S.SHARE}/{S.STDOUTERR_PATH}/metrics.csv"
    assert S.recorded_sas().lstrip("?") not in repr(files) + str(files["metrics.csv"].download_url)
    transport.verify()


def test_network_traces_the_caller_turned_on_hold_no_link_and_no_datastore_secret(
        transport: ReplayTransport, caplog: pytest.LogCaptureFixture) -> None:
    """With ``logging_enable=True`` azure-core logs every response body; the run details (the
    logs' SAS links) and the datastore's ``listSecrets`` (its SAS) are asked for without it."""
    from replay import FakeCredential
    caplog.set_level(logging.DEBUG)
    with Target.azureml(S.SUB, S.RG, S.WS, credential=FakeCredential(), transport=transport,
                        logging_enable=True) as target:
        job, _ = _job(target, transport, "Completed")
        transport.add(*S.discovery(), S.run_details("Completed"),
                      *S.stdouterr({"metrics.csv": len(METRICS), "stdout.txt": 7}, ("tensorboard",)))
        assert "metrics.csv" in {f.name for f in job.list_output_files()}
    transport.verify()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "computeId" in logged  # the traces were on: the job's own body is there
    for secret in (S.LOG_URL.split("sig=")[1], S.recorded_sas().lstrip("?"), S.ACCOUNT_KEY):
        assert secret not in logged


def test_a_job_that_has_not_started_has_no_metrics_yet(target: Target, transport: ReplayTransport) -> None:
    job, submitted = _job(target, transport, "Queued")
    transport.add(S.job_get(submitted, "Queued"), *S.mlflow_workspace_get(), S.mlflow_run_get(status="SCHEDULED"),
                  *S.discovery(), S.run_details("Queued"), *S.stdouterr(None))
    metrics = job.metrics()
    assert len(metrics) == 0 and metrics.reason.startswith("it is queued")
    transport.verify()


def test_tensorboard_event_files_are_synced_from_the_share(target: Target, transport: ReplayTransport,
                                                           tmp_path: Path) -> None:
    job, _ = _job(target, transport)
    event = b"\x18\x00\x00\x00\x00\x00\x00\x00event-bytes"
    name = "events.out.tfevents.1700000000.node-0"
    transport.add(*S.discovery(), S.run_details("Running"), *S.stdouterr({"metrics.csv": 9}, ("tensorboard",)),
                  S.run_details("Running"), *S.stdouterr({}, ("train",), directory="tensorboard"),
                  S.run_details("Running"), *S.stdouterr({name: len(event)}, directory="tensorboard/train"),
                  # the download lists the file's directory again, then reads it
                  S.run_details("Running"), *S.stdouterr({name: len(event)}, directory="tensorboard/train"),
                  S.share_file(f"{S.STDOUTERR_PATH}/tensorboard/train/{name}", event))
    assert job.sync_tensorboard(tmp_path) == 1
    assert (tmp_path / "train" / name).read_bytes() == event
    transport.verify()


def test_an_older_service_hands_out_the_account_key(target: Target, transport: ReplayTransport) -> None:
    """listSecrets answered with the account key (recording 6's answer): the Files requests are
    signed with it (SharedKey), and the key is in no listed link."""
    job, submitted = _job(target, transport, "Completed")
    path = S.STDOUTERR_PATH
    transport.add(S.job_get(submitted, "Completed"), *S.mlflow_workspace_get(), S.mlflow_run_get(),
                  *S.discovery(), S.run_details("Completed"), S.datastore_get(),
                  S.datastore_secret(1, S.ENVIRONMENT_FILE),
                  S.share_listing(path, {"metrics.csv": len(METRICS)}, signed="key"),
                  S.share_file(f"{path}/metrics.csv", METRICS, signed="key"))
    metrics = job.metrics()
    assert metrics.last("loss") == 1.5 and metrics.best("val_loss", mode="min") == 1.6
    transport.verify()


def test_a_datastore_that_is_now_other_storage_is_refused(target: Target, transport: ReplayTransport) -> None:
    job, _ = _job(target, transport)
    transport.add(*S.discovery(), S.run_details("Running"),
                  S.datastore_get(storage={"Sanitized": "otheraccount", "testfileshare": S.SHARE}))
    with pytest.raises(ConflictError, match="storage account 'otheraccount', not 'mystorageaccount'"):
        job.list_output_files()
    assert not any(S.FILE_HOST in r for r in transport.requests)  # no secret asked for, no share read
    transport.verify()


def test_a_job_whose_output_is_on_no_share_lists_its_logs_only(target: Target, transport: ReplayTransport) -> None:
    """A job not submitted by this package (no spec in its properties): where its script writes is
    unknown, so only run history is read."""
    from horovod_batchai._experiment import Experiment
    submitted = S.SubmittedJob()
    submitted.sent = {"properties": {"computeId": S.COMPUTE_PATH, "experimentName": S.EXPERIMENT, "properties": {}}}
    transport.add(S.job_get(submitted, "Completed"), S.job_get(submitted, "Completed"), *S.mlflow_workspace_get(),
                  S.mlflow_run_get(), *S.discovery(), S.run_details("Completed"))
    job = Experiment(Workspace(target, S.RG, S.WS), S.EXPERIMENT).get_job(S.JOB)
    metrics = job.metrics()
    assert len(metrics) == 0 and job.execution_state is ExecutionState.SUCCEEDED
    assert "without writing metrics.csv" in metrics.reason
    transport.verify()


def test_a_reader_without_the_datastore_secret_still_gets_the_logs(target: Target,
                                                                   transport: ReplayTransport) -> None:
    """listSecrets refused (403, ARM's AuthorizationFailed error shape; no recording has one): the
    logs are listed as before and metrics.csv is not, instead of the whole listing failing."""
    job, _ = _job(target, transport, "Completed")
    refused = S.datastore_secret()
    refused.status = 403
    refused.response = {"error": {"code": "AuthorizationFailed", "message": "The client does not have authorization "
                                  "to perform action 'Microsoft.MachineLearningServices/workspaces/datastores/"
                                  "listSecrets/action'."}}
    refused.source = "ARM's AuthorizationFailed answer (error shape from the REST spec; no recording has one)"
    transport.add(*S.discovery(), S.run_details("Completed"), S.datastore_get(), refused)
    assert {f.name for f in job.list_output_files()} == {"stdout.txt", "stderr.txt", "user_logs", "system_logs"}
    transport.verify()


def test_the_aio_job_reads_metrics_and_event_files_the_same_way(transport: ReplayTransport, tmp_path: Path) -> None:
    """horovod_batchai.aio on Azure ML: the same requests as the sync reads above, each in a worker thread."""
    import asyncio
    import threading

    from horovod_batchai import MetricsTable, aio
    from horovod_batchai._places.azureml.conversions import SPEC_PROPERTY, spec_property
    from replay import FakeCredential

    spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name=S.ACCOUNT, account_key=S.ACCOUNT_KEY)
    submitted = S.SubmittedJob()
    submitted.sent = {"properties": {"computeId": S.COMPUTE_PATH, "experimentName": S.EXPERIMENT,
                                     "properties": {SPEC_PROPERTY: spec_property(spec.replace(node_count=2))}}}
    event = b"event-bytes"
    name = "events.out.tfevents.1700000000.node-0"
    transport.add(S.job_get(submitted, "Running"),
                  S.job_get(submitted, "Running"), *S.mlflow_workspace_get(), S.mlflow_run_get(status="RUNNING"),
                  *S.discovery(), S.run_details("Running"),
                  *S.stdouterr({"metrics.csv": len(METRICS)}, ("tensorboard",)),
                  S.share_file(f"{S.STDOUTERR_PATH}/metrics.csv", METRICS),
                  S.run_details("Running"), *S.stdouterr({"metrics.csv": len(METRICS)}, ("tensorboard",)),
                  S.run_details("Running"), *S.stdouterr({name: len(event)}, directory="tensorboard"),
                  S.run_details("Running"), *S.stdouterr({name: len(event)}, directory="tensorboard"),
                  S.share_file(f"{S.STDOUTERR_PATH}/tensorboard/{name}", event))
    threads: list[str] = []
    send = transport.send

    def recording_send(request: object, **kwargs: object) -> object:
        threads.append(threading.current_thread().name)
        return send(request, **kwargs)

    transport.send = recording_send  # type: ignore[method-assign]

    async def scenario() -> tuple[MetricsTable, int, str]:
        async with aio.Target.azureml(S.SUB, S.RG, S.WS, credential=FakeCredential(), transport=transport) as target:
            job = await aio.Experiment(aio.Workspace(target, S.RG, S.WS), S.EXPERIMENT).get_job(S.JOB)
            return await job.metrics(), await job.sync_tensorboard(tmp_path), threading.current_thread().name
    metrics, fetched, loop_thread = asyncio.run(scenario())
    assert metrics.column("val_accuracy") == [0.3, 0.45] and metrics.execution_state == "running"
    assert fetched == 1 and (tmp_path / name).read_bytes() == event
    assert threads and loop_thread not in threads  # no request on the event loop's thread
    transport.verify()
