"""How a table's epoch rows are made from an MLflow run's histories (no service): by step, in the
order logged when every value has one step, per-step metrics kept out; the local sweep driver's
copy of the rule (it does not import the SDK) gives the same epochs; tracking URIs' REST bases."""
from __future__ import annotations

import pytest

from horovod_batchai import InvalidSpecError, TargetError
from horovod_batchai._models.mlflow_run import MetricPoint, RunData
from horovod_batchai._places.mlflow import LOCAL_TRACKING_PATH, azureml_tracking_uri, https_base
from horovod_batchai._shared.metrics import parse_metrics_csv, table_from_run
from horovod_batchai.local.batchai.sweeps.metrics import recorded_from_run
from horovod_batchai.local.tracking.endpoint import PATH_PREFIX

HISTORIES = {
    # logged at step = epoch, a value logged again at step 1 later (a resumed run): the last wins
    "val_accuracy": (MetricPoint(0, 0.5, 10), MetricPoint(1, 0.6, 20), MetricPoint(1, 0.65, 40),
                     MetricPoint(2, 0.7, 50)),
    # logged without a step: MLflow's step 0 each time; epochs in the order logged
    "score": (MetricPoint(0, 3.0, 30), MetricPoint(0, 1.0, 10), MetricPoint(0, 2.0, 20)),
    # per step: in its history only
    "step_loss": (MetricPoint(10, 1.0, 1), MetricPoint(20, 0.5, 2)),
    # one value at a late step: a sparse column
    "test_accuracy": (MetricPoint(2, 0.9, 60),),
}


def _run(histories: dict) -> RunData:
    return RunData("r1", "7", "RUNNING", "mlflow-artifacts:/7/r1/artifacts", {"lr": "0.1"}, histories)


def test_rows_come_by_step_or_in_the_order_logged_and_step_metrics_stay_out() -> None:
    table = table_from_run(_run(HISTORIES), job="j", execution_state="running")
    assert table.source == "mlflow" and table.run_id == "r1" and table.params == {"lr": "0.1"}
    assert table.columns == ("val_accuracy", "score", "test_accuracy")  # the standard columns first
    assert table.epochs == [1, 2, 3]
    assert table.column("val_accuracy") == [0.5, 0.65, 0.7]
    assert table.column("score") == [1.0, 2.0, 3.0]
    assert table.column("test_accuracy") == [None, None, 0.9]
    assert table.metric_names == ["val_accuracy", "score", "test_accuracy", "step_loss"]
    assert [(p.step, p.value) for p in table.history("step_loss")] == [(10, 1.0), (20, 0.5)]
    with pytest.raises(InvalidSpecError, match="'step_los' is not recorded .* 'step_loss'"):
        table.history("step_los")


def test_a_run_with_step_metrics_only_has_no_rows_and_says_why() -> None:
    table = table_from_run(_run({"step_loss": HISTORIES["step_loss"]}), job="j")
    assert len(table) == 0 and "only per-step metrics" in table.reason and table.history("step_loss")
    empty = table_from_run(_run({}), job="j")
    assert len(empty) == 0 and empty.source == "" and "no metrics yet" in empty.reason


def test_the_sweep_driver_makes_the_same_epochs() -> None:
    table = table_from_run(_run(HISTORIES), job="j")
    recorded = recorded_from_run("RUNNING", {name: [(p.step, p.timestamp, p.value) for p in points]
                                             for name, points in HISTORIES.items()})
    assert set(recorded.columns) == set(table.columns) and len(recorded.rows) == len(table)
    for name in table.columns:
        assert recorded.values(name) == table.column(name)
    assert recorded.source == "mlflow" and not recorded.final
    assert recorded_from_run("FINISHED", {}).final


def test_a_csv_table_has_histories_by_epoch() -> None:
    table = parse_metrics_csv("epoch,loss\n0,2.0\n1,NA\n2,1.0\n", job="j")
    assert table.source == "metrics.csv" and table.params == {} and table.run_id is None
    assert [(p.step, p.value) for p in table.history("loss")] == [(0, 2.0), (2, 1.0)]


def test_tracking_uris_and_their_rest_base() -> None:
    ws = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.MachineLearningServices/workspaces/w"
    uri = azureml_tracking_uri("eastus", ws)
    assert uri == f"azureml://eastus.api.azureml.ms/mlflow/v1.0{ws}"
    assert https_base(uri) == f"https://eastus.api.azureml.ms/mlflow/v1.0{ws}"
    assert https_base("https://127.0.0.1:5/_mlflow/") == "https://127.0.0.1:5/_mlflow"
    with pytest.raises(TargetError, match="neither azureml:// nor https://"):
        https_base("http://127.0.0.1:5/_mlflow")
    assert LOCAL_TRACKING_PATH == PATH_PREFIX  # the SDK's copy of where the service's front is


class _NoRequests:
    """A credential, and a transport that fails the test on any request."""

    def get_token(self, *scopes: str, **kwargs: object) -> object:
        raise AssertionError("no token should be asked for")

    def send(self, request: object, **kwargs: object) -> object:
        raise AssertionError(f"no request should be sent: {request}")

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> "_NoRequests":
        return self

    def __exit__(self, *args: object) -> None:
        pass


def test_azure_batch_ai_has_no_tracking_and_says_so_without_a_request() -> None:
    from horovod_batchai import HorovodBatchAIError, Job, Target, Workspace
    from horovod_batchai._experiment import Experiment
    none = _NoRequests()
    with Target.azure("00000000-0000-0000-0000-000000000000", credential=none, transport=none) as target:
        assert target.mlflow_tracking_uri is None
        job = Job(Experiment(Workspace(target, "rg", "ws"), "exp"), "j")
        with pytest.raises(HorovodBatchAIError, match="has no MLflow run: .* Azure Batch AI had none"):
            job.list_artifacts()
        assert job.mlflow_run_id is None
        with pytest.raises(TargetError, match="Azure Batch AI has no MLflow tracking server"):
            target.backend.mlflow_run("any")
