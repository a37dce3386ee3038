"""A job's MLflow run on Azure ML, read through MLflow's REST API with the caller's credential and
the target's transport (replayed; every request checked, none may leave the transport).

No recording of this traffic exists in ``shared/reference``, so the exchanges are built
(``scenario.py``, "MLflow tracking"), and the tests assume:

- the workspace GET carries ``properties.mlFlowTrackingUri`` (azure-ai-ml's REST model has the
  field; the REST spec's example lacks it) in the shape Azure ML documents,
  ``azureml://<region>.api.azureml.ms/mlflow/v1.0/subscriptions/<sub>/resourceGroups/<rg>/
  providers/Microsoft.MachineLearningServices/workspaces/<ws>``, and azure-ai-ml hands it on as
  ``Workspace.mlflow_tracking_uri`` (it does when azureml-mlflow is not installed);
- MLflow's REST API 2.0 is served at the https form of that URI (what azureml-mlflow sends to),
  with MLflow's own requests and JSON (``runs/get``, ``metrics/get-history``), and takes a bearer
  token of the caller's credential for ``https://ml.azure.com/.default`` (the scope azure-ai-ml's
  run-history client asks for on the same host);
- a job's MLflow run id is the job's name.
"""
from __future__ import annotations

import asyncio
from pathlib import Path

from horovod_batchai import HorovodJob, Job, Target, Workspace

import scenario as S
from replay import FakeCredential, ReplayTransport

JOB_JSON = Path(__file__).resolve().parents[2] / "examples" / "job.json"


def _job(target: Target, transport: ReplayTransport, status: str) -> tuple[Job, S.SubmittedJob]:
    from horovod_batchai._experiment import Experiment
    submitted = _submitted()
    transport.add(S.job_get(submitted, status))
    return Experiment(Workspace(target, S.RG, S.WS), S.EXPERIMENT).get_job(S.JOB), submitted


def _run_exchanges(status: str = "FINISHED") -> list[S.Exchange]:
    return [S.mlflow_run_get(metrics={"step_loss": 0.9, "val_accuracy": 0.53}, params={"epochs": "2"}, status=status),
            S.mlflow_history("step_loss", [(50, 1.2), (100, 0.9)]),
            S.mlflow_history("val_accuracy", [(0, 0.41), (1, 0.53)])]


def test_the_tracking_uri_is_the_workspaces_read_once(target: Target, transport: ReplayTransport) -> None:
    transport.add(*S.mlflow_workspace_get())
    assert target.mlflow_tracking_uri == S.TRACKING_URI
    before = transport.mark()
    assert target.mlflow_tracking_uri == S.TRACKING_URI  # no second request
    assert transport.mark() == before
    transport.verify()


def test_metrics_come_from_the_jobs_mlflow_run_with_the_callers_credential(target: Target,
                                                                           transport: ReplayTransport) -> None:
    job, submitted = _job(target, transport, "Completed")
    transport.add(S.job_get(submitted, "Completed"), *S.mlflow_workspace_get(), *_run_exchanges())
    table = job.metrics()
    assert table.source == "mlflow" and table.run_id == S.JOB and job.mlflow_run_id == S.JOB
    assert table.epochs == [1, 2] and table.columns == ("val_accuracy",)
    assert table.column("val_accuracy") == [0.41, 0.53] and table.params == {"epochs": "2"}
    assert [(p.step, p.value) for p in table.history("step_loss")] == [(50, 1.2), (100, 0.9)]
    assert table.execution_state == "succeeded"
    assert not any(S.FILE_HOST in r or "/history/" in r for r in transport.requests)  # no metrics.csv read
    transport.verify()


def test_the_aio_target_reads_the_same_run(transport: ReplayTransport) -> None:
    from horovod_batchai import aio
    transport.add(*S.mlflow_workspace_get(), S.job_get(_submitted(), "Running"), S.job_get(_submitted(), "Running"),
                  *_run_exchanges("RUNNING"))

    async def scenario() -> None:
        async with aio.Target.azureml(S.SUB, S.RG, S.WS, credential=FakeCredential(), transport=transport) as target:
            assert await target.mlflow_tracking_uri() == S.TRACKING_URI
            job = await aio.Experiment(aio.Workspace(target, S.RG, S.WS), S.EXPERIMENT).get_job(S.JOB)
            table = await job.metrics()
            assert table.source == "mlflow" and table.column("val_accuracy") == [0.41, 0.53]
            assert table.execution_state == "running" and job.mlflow_run_id == S.JOB
    asyncio.run(scenario())
    transport.verify()


def _submitted() -> S.SubmittedJob:
    from horovod_batchai._places.azureml.conversions import SPEC_PROPERTY, spec_property
    spec = HorovodJob.from_file(JOB_JSON).with_storage(account_name=S.ACCOUNT, account_key=S.ACCOUNT_KEY)
    submitted = S.SubmittedJob()
    submitted.sent = {"properties": {"computeId": S.COMPUTE_PATH, "experimentName": S.EXPERIMENT,
                                     "properties": {SPEC_PROPERTY: spec_property(spec.replace(node_count=2))}}}
    return submitted
