"""Experiment.sweep on Azure ML: one native sweep job (``jobType: Sweep``) whose trial is the
command job a submit builds, its trials read as the sweep job's child runs, cancel and delete as
the service's -- replayed, with nothing leaving the transport (conftest.no_network).

Where each exchange comes from:

- the sweep's PUT and GET: recording 7 (``sweep_job__test_sweep_job...test_sweep_job_submit``,
  azure-ai-ml 1.32.0, 2024-01-01-preview, which 1.35.2 still sends for sweeps). This package's PUT
  must have the recorded request's shape -- samplingAlgorithm, searchSpace, objective, limits,
  earlyTermination, trial -- with the differences named where it is built; the answers are the
  recorded ones, echoing the definition sent, as the recorded answer echoes its request.
- the environment: read (GET) and never written -- the workspace has it (scenario.py).
- the trials: no recording lists a sweep's children, and the REST specs in
  shared/reference/azureml-2025-12-01 do not cover run history. azure-ai-ml 1.35.2 lists them
  with run history's ``GET /history/v1.0/.../runs/{sweep}/children`` (found through the
  workspace's discoveryUrl, as it reads logs); the answer is built in the shape of its
  runhistory models (PaginatedRunList of Run: runId, parentRunId, status, tags, properties).
  What the replay ASSUMES of the service, from HyperDrive, UNVERIFIED against a live sweep:
  children are named ``<sweep>_<index>``; each one's parameters are the sweep job's tag
  ``<sweep>_<index>`` (a JSON object; azureml-train-core's HyperDriveRun.get_hyperparameters reads
  them there); the best trial is the sweep job's ``best_child_run_id`` property (as a HyperDrive
  run's details show it); a trial the early-termination policy stops ends ``Canceled``; the tag
  ``_aml_system_samples_generated_count`` (recorded: "0" on a new sweep) counts the trials
  sampled; ``$AZUREML_RUN_ID`` is the child's name on its nodes.
- each trial's metrics: its metrics.csv, in its own stdouterr directory on the share (datastore
  GET and listSecrets recorded, Files data plane built: scenario.py).
- cancel: recording 4's POST cancel and its operation results; delete: the spec's Job/delete.json.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

from horovod_batchai import (BanditPolicy, ConflictError, HorovodJob, InvalidSpecError, LogNormal, LogUniform,
                             MedianStoppingPolicy, Normal, QLogNormal, QLogUniform, QNormal, QUniform, Randint, Target,
                             Uniform, Workspace)
from horovod_batchai._experiment import Experiment
from horovod_batchai._models.sweep_job import TruncationSelectionPolicy

import scenario as S
from replay import Exchange, FakeCredential, ReplayTransport, recorded, recording, renamed

JOB_JSON = Path(__file__).resolve().parents[2] / "examples" / "job.json"
SWEEP_FILE = "sweep_job__test_sweep_job.pyTestSweepJobtest_sweep_job_submit"
RECORDED_SWEEP = "test_191180105196"
SWEEP = "cifar_sweep"
SWEEP_PATH = f"{S.WS_PATH}/jobs/{SWEEP}"
#: azure-ai-ml 1.35.2's api-version for a sweep job's PUT (as recorded by 1.32.0)
SWEEP_CREATE = "2024-01-01-preview"
NAMES = {**S.SCOPE, RECORDED_SWEEP: SWEEP, "sdk-cli-v2": S.EXPERIMENT, "testCompute": S.CLUSTER}
#: the recorded search space, asked for with this package's distributions (conv-size: an option with '-')
PARAMETERS = {"lr": Uniform(0.001, 0.1), "conv-size": [2, 5, 7], "dropout_rate": Uniform(0.1, 0.5)}
POLICY = TruncationSelectionPolicy(truncation_percentage=40, evaluation_interval=100, delay_evaluation=200)
METRICS = b"epoch,loss,val_accuracy\n0,1.9,0.3\n1,1.6,0.45\n"


def _spec() -> HorovodJob:
    return HorovodJob.from_file(JOB_JSON).with_storage(account_name=S.ACCOUNT, account_key=S.ACCOUNT_KEY).replace(
        node_count=2)


def _experiment(target: Target) -> Experiment:
    return Experiment(Workspace(target, S.RG, S.WS), S.EXPERIMENT)


class SentSweep:
    """What the sweep's PUT sent: the service echoes its definition in every later answer."""

    def __init__(self) -> None:
        self.sent: Optional[dict[str, Any]] = None

    def answer(self, index: int, *, status: str = "Running", tags: Optional[dict[str, str]] = None,
               properties: Optional[dict[str, str]] = None) -> Any:
        """Recording 7's answer ``index`` (the PUT's 201 or the GET's 200) with the definition sent."""
        def adapt(response: Any, body: Any) -> Any:
            assert self.sent is not None, "the sweep was never created"
            props, mine = response["properties"], self.sent["properties"]
            for key in ("computeId", "displayName", "experimentName", "searchSpace", "earlyTermination", "inputs",
                        "outputs"):
                props[key] = mine.get(key)
            props["samplingAlgorithm"] = {**mine["samplingAlgorithm"], "logbase": None, "rule": "Random"}
            props["limits"] = {"trialTimeout": None, **mine["limits"]}
            props["objective"] = {"primaryMetric": mine["objective"]["primaryMetric"],
                                  "goal": mine["objective"]["goal"].capitalize()}  # recorded: "Maximize"
            props["trial"] = {"codeId": None, **mine["trial"]}
            props["properties"] = {**props["properties"], **mine["properties"], **(properties or {})}
            props["tags"] = {**props["tags"], **(tags or {})}
            props["status"] = status
            return response
        return adapt


def _sweep_put(sent: SentSweep, environment_id: str) -> Exchange:
    """The sweep job's PUT, with the shape of recording 7's, apart from: no codeId (the command
    runs the script from the share, as a submitted job does); the trial's Mpi distribution and
    resources, and the sweep's resources that azure-ai-ml copies from them (recording 5's
    command job has them); the share mounted as an output; the sampling's seed and the trial
    timeout (recording 7's test set neither); this package's properties and no environment
    variables (job.json has none)."""
    entries = recording(SWEEP_FILE)
    body = renamed(entries[2]["RequestBody"], NAMES)

    def check(request: Any, sent_body: Any) -> Optional[str]:
        from horovod_batchai._places.azureml.conversions import SPEC_PROPERTY
        from horovod_batchai._places.azureml.sweeps import SWEEP_PROPERTY
        sent.sent = sent_body
        props = sent_body["properties"]
        expected = {"jobType": "Sweep", "experimentName": S.EXPERIMENT, "displayName": SWEEP,
                    "samplingAlgorithm": {"samplingAlgorithmType": "Random", "seed": 7},
                    "searchSpace": body["properties"]["searchSpace"],  # the recorded space, as recorded
                    "objective": {"goal": "maximize", "primaryMetric": "val_accuracy"},
                    "limits": {"jobLimitsType": "Sweep", "timeout": "PT1H", "maxConcurrentTrials": 2,
                               "maxTotalTrials": 4, "trialTimeout": "PT10M"},
                    "earlyTermination": body["properties"]["earlyTermination"]}  # the recorded policy
        for key, value in expected.items():
            if props.get(key) != value:
                return f"{key} {props.get(key)!r}, expected {value!r}"
        if not props["computeId"].endswith(f"/computes/{S.CLUSTER}"):
            return f"computeId {props['computeId']}"
        trial = props["trial"]
        if trial["environmentId"] != environment_id:
            return f"trial.environmentId {trial['environmentId']!r}, expected the environment read: {environment_id!r}"
        if trial["distribution"] != {"distributionType": "Mpi", "processCountPerInstance": 1}:
            return f"trial.distribution {trial['distribution']}"
        for needed in ("--lr ${{search_space.lr}}", "--conv-size ${{search_space.conv_size}}",
                       "--dropout_rate ${{search_space.dropout_rate}}", '"$AZUREML_RUN_ID"',
                       "export AZ_BATCHAI_OUTPUT_TRIAL=", "ln -sfn \"${{outputs.mount0_myshare}}\""):
            if needed not in trial["command"]:
                return f"the trial's command lacks {needed!r}"
        if not {SPEC_PROPERTY, SWEEP_PROPERTY} <= set(props["properties"]):  # azure-ai-ml adds git's where it runs
            return f"properties {sorted(props['properties'])}"
        if S.ACCOUNT_KEY in json.dumps(sent_body):
            return "the account key was sent"
        return None

    exchange = recorded(entries, 2, SWEEP_FILE, names=NAMES, api_version=SWEEP_CREATE, body=body, check=check,
                        free_form=("properties.searchSpace", "properties.properties", "properties.outputs",
                                   "properties.tags", "properties.inputs", "properties.trial.environmentVariables"),
                        missing_ok=("properties.trial.codeId", "properties.trial.environmentVariables.*"),
                        extra_ok=("properties.trial.distribution", "properties.trial.resources", "properties.resources",
                                  "properties.outputs.*", "properties.properties.*", "properties.samplingAlgorithm.seed",
                                  "properties.limits.trialTimeout"))
    exchange.adapt = sent.answer(2)
    exchange.source += " (definition echoed back, as the recorded answer echoes its request)"
    return exchange


def _sweep_get(sent: SentSweep, **changes: Any) -> Exchange:
    exchange = recorded(recording(SWEEP_FILE), 3, SWEEP_FILE, names=NAMES, api_version=S.JOB_GET)
    exchange.adapt = sent.answer(3, **changes)
    exchange.source += f" (definition as created; {changes or 'as recorded'})"
    return exchange


def _create(target: Target, transport: ReplayTransport, sent: SentSweep) -> Any:
    environment = S.environment_image_get()
    transport.add(S.compute_get(3),  # Experiment.sweep reads the cluster
                  S.datastore_get(),  # check_submission: the share's datastore is the share
                  S.not_found(SWEEP_PATH, S.JOB_GET, "UserError", "no job has the sweep's name yet"),
                  environment,  # the environment is read, and the workspace has it: nothing is written
                  _sweep_put(sent, environment.response["id"]))
    return _experiment(target).sweep(_spec(), parameters=PARAMETERS, cluster=S.CLUSTER, name=SWEEP,
                                     sampling="random", num_trials=4, seed=7, max_concurrent_trials=2,
                                     metric="val_accuracy", early_termination=POLICY, sweep_timeout=3600,
                                     trial_timeout=600)


def test_a_sweep_is_one_sweep_job_and_its_environment_is_read_not_written(target: Target,
                                                                          transport: ReplayTransport) -> None:
    sent = SentSweep()
    sweep = _create(target, transport, sent)
    assert (sweep.name, sweep.metric, sweep.mode, sweep.state.value) == (SWEEP, "val_accuracy", "max", "running")
    assert sweep.trials == [] and sweep.id == SWEEP_PATH  # HyperDrive has sampled none yet: no listing
    assert not sweep.driving
    assert not any(r.startswith("PUT") and "/environments/" in r for r in transport.requests)
    assert [r.split()[0] for r in transport.requests].count("PUT") == 1  # the sweep job, nothing per trial

    transport.add(_sweep_get(sent))
    again = _experiment(target).get_sweep(SWEEP)
    assert again.state.value == "running" and again.trials == []
    transport.verify()


def test_the_same_sweep_again_is_returned_and_another_under_its_name_refused(target: Target,
                                                                           transport: ReplayTransport) -> None:
    sent = SentSweep()
    _create(target, transport, sent)
    transport.add(S.compute_get(3), _sweep_get(sent))  # the share's datastore was read: it is known
    same = _experiment(target).sweep(_spec(), parameters=PARAMETERS, cluster=S.CLUSTER, name=SWEEP,
                                     sampling="random", num_trials=4, seed=7, max_concurrent_trials=2,
                                     metric="val_accuracy", early_termination=POLICY, sweep_timeout=3600,
                                     trial_timeout=600)
    assert same.name == SWEEP
    transport.add(S.compute_get(3), _sweep_get(sent))
    with pytest.raises(ConflictError, match="limits or early termination differ"):
        _experiment(target).sweep(_spec(), parameters=PARAMETERS, cluster=S.CLUSTER, name=SWEEP, sampling="random",
                                  num_trials=5, seed=7, max_concurrent_trials=2, metric="val_accuracy",
                                  early_termination=POLICY, sweep_timeout=3600, trial_timeout=600)
    assert sum(r.startswith("PUT") for r in transport.requests) == 1
    transport.verify()


@pytest.mark.parametrize("options, field", [
    (dict(parameters={"lr": Uniform(0.001, 0.1)}, seed=7), "seed"),
    (dict(parameters={"learning-rate": LogUniform(0.001, 0.1)}), "parameters['learning-rate']"),
    (dict(parameters={"lr": Uniform(0.001, 0.1)}, early_termination=MedianStoppingPolicy()), "early_termination")])
def test_what_azure_ml_bayesian_sampling_does_not_take_is_refused_before_the_sweep_is_sent(
        target: Target, transport: ReplayTransport, options: dict[str, Any], field: str) -> None:
    """Azure ML takes a seed for random sampling only; its Bayesian sampling takes choice, uniform
    and quniform, and no early-termination policy."""
    transport.add(S.compute_get(3), S.datastore_get())  # Experiment.sweep's own checks read these
    with pytest.raises(InvalidSpecError) as raised:
        _experiment(target).sweep(_spec(), cluster=S.CLUSTER, name=SWEEP, sampling="bayesian", num_trials=4,
                                  **options)
    assert raised.value.field == field
    assert not any("/jobs/" in r for r in transport.requests)
    transport.verify()


# -- trials: the sweep job's child runs --------------------------------------------------------------
RUN_WHY = ("built: no recording or REST spec covers run history's children of a run; the shape of azure-ai-ml "
           "1.35.2's runhistory PaginatedRunList / Run models (see the module's text for what it assumes)")
CHILDREN_PATH = (f"/history/v1.0/subscriptions/{S.SUB}/resourceGroups/{S.RG}/providers/"
                 f"Microsoft.MachineLearningServices/workspaces/{S.WS}/runs/{SWEEP}/children")


def _children(*runs: tuple[int, str]) -> Exchange:
    value = [{"runId": f"{SWEEP}_{i}", "parentRunId": SWEEP, "rootRunId": SWEEP, "experimentId":
              "9a1c5b52-0d3a-4a43-9d43-0f1b3c7c6b11", "status": status, "displayName": f"{SWEEP}_{i}",
              "tags": {}, "properties": {}, "target": S.CLUSTER, "runType": "azureml.scriptrun"}
             for i, status in runs]
    return Exchange("GET", CHILDREN_PATH, RUN_WHY, host=S.API_HOST, api_version="v1.0",  # as run details
                    response={"value": value, "continuationToken": None, "nextLink": None})


def _trial_metrics(index: int, data: Optional[bytes], *, first: bool = False) -> list[Exchange]:
    """A trial's metrics as the sweep reads them: its MLflow run (with no metrics: its script wrote
    a metrics.csv instead; ``first``: the workspace is read for its tracking URI before), then its
    metrics.csv from its own stdouterr directory (None: it has none yet)."""
    run = [*(S.mlflow_workspace_get() if first else []), S.mlflow_run_get(f"{SWEEP}_{index}")]
    directory = f"cifar/{SWEEP}_{index}/stdouterr"
    if data is None:
        return [*run, S.datastore_get(), S.datastore_secret(), S.share_directory_missing(directory)]
    return [*run, S.datastore_get(), S.datastore_secret(), S.share_listing(directory, {"metrics.csv": len(data)}),
            S.share_file(f"{directory}/metrics.csv", data)]


PARAMETER_TAGS = {f"{SWEEP}_{i}": json.dumps({"lr": lr, "conv_size": size, "dropout_rate": 0.2})
                  for i, (lr, size) in enumerate([(0.01, 5), (0.05, 2), (0.002, 7), (0.08, 7)])}


def test_trials_are_the_sweep_jobs_child_runs_with_their_metrics(target: Target, transport: ReplayTransport) -> None:
    sent = SentSweep()
    _create(target, transport, sent)
    tags = {**PARAMETER_TAGS, "_aml_system_samples_generated_count": "4"}
    transport.add(_sweep_get(sent, tags=tags, properties={"best_child_run_id": f"{SWEEP}_0", "score": "0.45"}),
                  *S.discovery(), _children((0, "Completed"), (1, "Canceled"), (2, "Running"), (3, "Completed")),
                  *_trial_metrics(0, METRICS, first=True), *_trial_metrics(1, b"epoch,loss,val_accuracy\n0,2.1,0.2\n"),
                  *_trial_metrics(2, b"epoch,loss,val_accuracy\n0,1.8,0.35\n"),
                  *_trial_metrics(3, b"epoch,loss\n0,1.7\n"))
    sweep = _experiment(target).get_sweep(SWEEP)
    trials = sweep.trials
    assert [(t.index, t.name, t.status) for t in trials] == [
        (0, f"{SWEEP}_0", "completed"), (1, f"{SWEEP}_1", "stopped"), (2, f"{SWEEP}_2", "running"),
        (3, f"{SWEEP}_3", "failed")]
    assert trials[0].parameters == {"lr": 0.01, "conv-size": 5, "dropout_rate": 0.2}  # the caller's option names
    assert trials[1].reason == "stopped by the sweep's early-termination policy"
    assert trials[3].reason == "it recorded loss but no value of 'val_accuracy'"
    assert trials[0].job is not None and trials[0].job.name == f"{SWEEP}_0"
    assert sweep.state.value == "running"
    assert sweep.status_reason == (f"the objective 'val_accuracy' is not among the metrics trial {SWEEP}_3 records "
                                   "(loss); check the metric's name")

    # Read again: the trials that ended are not read again; the running one is, and it ended.
    done = dict(status="Completed", tags=tags, properties={"best_child_run_id": f"{SWEEP}_0", "score": "0.45"})
    ended = _children((0, "Completed"), (1, "Canceled"), (2, "Completed"), (3, "Completed"))
    transport.add(_sweep_get(sent, **done), ended, *_trial_metrics(2, METRICS.replace(b"0.45", b"0.41")))
    results = sweep.results()
    assert [(r.trial.status, r.epochs, r.final, r.best) for r in results] == [
        ("completed", 2, 0.45, 0.45), ("stopped", 1, 0.2, 0.2), ("completed", 2, 0.41, 0.41), ("failed", 0, None, None)]
    assert results.state.value == "completed"
    transport.add(_sweep_get(sent, **done), ended)  # nothing left to read of the trials
    assert sweep.best().name == f"{SWEEP}_0"  # the service's best_child_run_id
    transport.verify()


def test_a_completed_sweep_whose_trials_recorded_no_objective_failed(target: Target,
                                                                     transport: ReplayTransport) -> None:
    sent = SentSweep()
    _create(target, transport, sent)
    tags = {**PARAMETER_TAGS, "_aml_system_samples_generated_count": "1"}
    transport.add(_sweep_get(sent, status="Completed", tags=tags), *S.discovery(), _children((0, "Completed")),
                  *_trial_metrics(0, None, first=True))
    sweep = _experiment(target).get_sweep(SWEEP)
    assert sweep.state.value == "failed" and sweep.status_reason == "no trial recorded a value of 'val_accuracy'"
    assert sweep.trials[0].status == "failed" and sweep.trials[0].reason == "it recorded no value of 'val_accuracy'"
    transport.verify()


def test_a_trial_that_logs_with_mlflow_is_judged_by_its_run(target: Target, transport: ReplayTransport) -> None:
    """The trial's script logged only with mlflow.log_metric: its run's history is its curve, and no
    metrics.csv is looked for."""
    sent = SentSweep()
    _create(target, transport, sent)
    tags = {**PARAMETER_TAGS, "_aml_system_samples_generated_count": "1"}
    trial = f"{SWEEP}_0"
    transport.add(_sweep_get(sent, status="Completed", tags=tags, properties={"best_child_run_id": trial}),
                  *S.discovery(), _children((0, "Completed")), *S.mlflow_workspace_get(),
                  S.mlflow_run_get(trial, metrics={"val_accuracy": 0.5}),
                  S.mlflow_history("val_accuracy", [(0, 0.4), (1, 0.5)], run_id=trial))
    sweep = _experiment(target).get_sweep(SWEEP)
    again = (_sweep_get(sent, status="Completed", tags=tags, properties={"best_child_run_id": trial}),
             _children((0, "Completed")))  # a read again: the trial that ended is not read again
    transport.add(*again, *again)
    assert sweep.state.value == "completed" and sweep.best().name == trial
    (row,) = sweep.results()
    assert (row.trial.status, row.epochs, row.final, row.best) == ("completed", 2, 0.5, 0.5)
    transport.verify()


# -- cancel and delete: the service's own -----------------------------------------------------------
def test_cancel_is_the_services_cancel_and_delete_deletes_the_sweep_job(target: Target,
                                                                        transport: ReplayTransport) -> None:
    sent = SentSweep()
    sweep = _create(target, transport, sent)
    tags = {**PARAMETER_TAGS, "_aml_system_samples_generated_count": "1"}
    cancelled = {"_aml_system_cancellation_requested": "true", **tags}
    transport.add(_sweep_get(sent), *S.job_cancel(SWEEP), _sweep_get(sent, status="Canceled", tags=cancelled),
                  *S.discovery(), _children((0, "Canceled")), *_trial_metrics(0, None, first=True))
    sweep.cancel()
    assert sweep.state.value == "cancelled" and sweep.status_reason == "cancelled"
    assert [(t.status, t.reason) for t in sweep.trials] == [("cancelled", "the sweep was cancelled")]

    # Cancelling again sends no cancel: the sweep has ended (its ended trial is not read again).
    transport.add(_sweep_get(sent, status="Canceled", tags=cancelled), _children((0, "Canceled")))
    sweep.cancel()
    assert sum("/cancel" in r for r in transport.requests) == 1

    transport.add(_sweep_get(sent, status="Canceled", tags=cancelled), S.job_delete(SWEEP))
    sweep.delete()
    transport.add(S.not_found(SWEEP_PATH, S.JOB_GET, "UserError", "the sweep job is gone"))
    sweep.delete()  # gone: nothing to do
    transport.verify()


# -- the trial's command on a node -----------------------------------------------------------------
def test_each_trial_writes_into_its_own_directories(tmp_path: Path) -> None:
    """The trials' shared command, run by sh as Azure ML runs it on a node (placeholders
    substituted as Azure ML does): two trials get two stdouterr and output directories on the
    share, a variable naming a parameter gets its value, and no run id stops it."""
    from horovod_batchai._places.azureml.conversions import command_job_entity
    share = tmp_path / "share"
    (share / "cifar").mkdir(parents=True)
    script = share / "cifar" / "show.py"
    script.write_text("import os, sys\nprint(repr([os.environ[k] for k in ('AZ_BATCHAI_STDOUTERR_DIR', "
                      "'AZ_BATCHAI_OUTPUT_TRIAL', 'DROPOUT')] + sys.argv[1:]))\n")
    spec = _spec().replace(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar/show.py", interpreter=sys.executable,
                           arguments="--lr ${{search_space.lr}}", job_preparation=None,
                           environment_variables={"DROPOUT": "${{search_space.dropout_rate}}"}, container_image=None)
    entity = command_job_entity(spec, job_name=SWEEP, experiment=S.EXPERIMENT, compute=S.CLUSTER, environment="env",
                                sweep_trial=True)
    assert "DROPOUT" not in (entity.environment_variables or {})  # the command exports it, substituted
    command = (entity.command.replace("${{outputs.mount0_myshare}}", str(share))
               .replace("${{search_space.lr}}", "0.01").replace("${{search_space.dropout_rate}}", "0.2"))
    seen = []
    for run_id in (f"{SWEEP}_0", f"{SWEEP}_1"):
        env = {"PATH": os.environ["PATH"], "TMPDIR": str(tmp_path / "node"), "AZUREML_RUN_ID": run_id}
        done = subprocess.run(["sh", "-c", command], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        seen.append(eval(done.stdout.strip().splitlines()[-1]))
    for run_id, (stdouterr, trial_dir, dropout, *args) in zip((f"{SWEEP}_0", f"{SWEEP}_1"), seen):
        assert Path(stdouterr).resolve() == (share / "cifar" / run_id / "stdouterr").resolve()
        assert Path(trial_dir).resolve() == (share / "cifar" / run_id / "outputs").resolve()
        assert Path(trial_dir).is_dir() and dropout == "0.2" and args == ["--lr", "0.01"]
    env = {"PATH": os.environ["PATH"], "TMPDIR": str(tmp_path / "node")}
    done = subprocess.run(["sh", "-c", command], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "AZUREML_RUN_ID" in done.stderr


def test_a_plain_job_naming_a_sweep_parameter_is_still_refused() -> None:
    from horovod_batchai._places.azureml.conversions import check_job_spec
    spec = _spec().replace(arguments="--lr ${{search_space.lr}}")
    check_job_spec(spec, SWEEP, sweep_trial=True)
    with pytest.raises(InvalidSpecError, match=r"\$\{\{"):
        check_job_spec(spec, SWEEP)


def test_a_trials_job_reads_its_metrics_from_its_own_directory(target: Target, transport: ReplayTransport) -> None:
    """A trial is a job of the experiment: ``Job.metrics()`` finds its metrics.csv through its
    sweep's spec (the child job carries none of its own; built: the child's GET is recording 3's
    command job GET under the child's name, without this package's spec property)."""
    sent = SentSweep()
    _create(target, transport, sent)
    child = f"{SWEEP}_1"
    as_child = S.SubmittedJob()
    as_child.sent = {"properties": {"computeId": S.COMPUTE_PATH, "experimentName": S.EXPERIMENT, "properties": {}}}
    details = Exchange("GET", CHILDREN_PATH.replace(f"runs/{SWEEP}/children", f"runs/{child}/details"),
                       f"built:{S.LOG_WHY}", host=S.API_HOST, api_version="v1.0",
                       response={"runId": child, "status": "Running", "target": S.CLUSTER, "logFiles": {}})
    transport.verify()
    # Another process: it knows nothing of the sweep but the trial's name.
    other = ReplayTransport([S.job_get(as_child, "Running", child)])
    with Target.azureml(S.SUB, S.RG, S.WS, credential=FakeCredential(), transport=other) as elsewhere:
        job = _experiment(elsewhere).get_job(child)
        # its MLflow run first (this trial logged no metrics there), then its metrics.csv
        other.add(S.job_get(as_child, "Running", child), *S.mlflow_workspace_get(),
                  S.mlflow_run_get(child, status="RUNNING"), *S.discovery(), details, _sweep_get(sent),
                  *_trial_metrics(1, METRICS)[1:])  # the Job read its run: the CSV is what is left
        metrics = job.metrics()
    assert metrics.column("val_accuracy") == [0.3, 0.45] and metrics.job == child
    other.verify()


@pytest.mark.parametrize("sampling, parameters, policy", [
    ("grid", {"lr": [0.1, 0.01, 0.001], "batch-size": [32, 64]}, BanditPolicy(slack_amount=0.05)),
    ("random", {"a": LogUniform(1e-4, 1e-1), "b": Normal(0, 1), "c": LogNormal(0, 1), "d": QUniform(0, 10, 0.5),
                "e": QLogUniform(1, 100, 1), "f": QNormal(0, 1, 2), "g": QLogNormal(1, 2, 3), "h": Randint(4),
                "i": ["x", "y"]}, BanditPolicy(slack_factor=0.1, evaluation_interval=2, delay_evaluation=3)),
    ("bayesian", {"lr": Uniform(0.001, 0.1), "q": QUniform(0, 10, 0.5), "k": [1, 2]}, None),
    ("random", {"lr": Uniform(0.001, 0.1)}, MedianStoppingPolicy(delay_evaluation=2))])
def test_the_sweep_job_azure_ai_ml_sends_is_the_request(sampling: str, parameters: dict[str, Any],
                                                        policy: Any) -> None:
    """Every distribution and policy reaches the wire as the request has it (azure-ai-ml's own
    serialiser; Bandit's other slack goes as 0, as azure-ai-ml sends it); a grid's
    ``maxTotalTrials`` is its number of combinations."""
    from azure.ai.ml.entities._job.to_rest_functions import to_rest_job_object
    from horovod_batchai._models.sweep_job import plan_request
    from horovod_batchai._places.azureml.conversions import command_job_entity
    from horovod_batchai._places.azureml.sweeps import check_sweep_request, sweep_job_entity
    spec = _spec()
    request = plan_request(SWEEP, cluster=S.CLUSTER, arguments=spec.arguments, variables={}, parameters=parameters,
                           sampling=sampling, num_trials=None if sampling == "grid" else 5, seed=None,
                           max_concurrent_trials=2, metric="val_loss", mode="min", early_termination=policy,
                           sweep_timeout=None, trial_timeout=None)
    check_sweep_request(request)
    trial = command_job_entity(spec.replace(arguments=request.arguments), job_name=SWEEP, experiment=S.EXPERIMENT,
                               compute=S.CLUSTER, environment="env", sweep_trial=True)
    sent = to_rest_job_object(sweep_job_entity(request, trial, name=SWEEP, experiment=S.EXPERIMENT,
                                               properties={})).as_dict()["properties"]
    wanted = request.properties
    assert sent["searchSpace"] == wanted["searchSpace"]
    assert sent["samplingAlgorithm"] == wanted["samplingAlgorithm"]
    assert sent["objective"] == {"primaryMetric": "val_loss", "goal": "minimize"}
    total = 6 if sampling == "grid" else 5
    assert sent["limits"] == {"jobLimitsType": "Sweep", "maxConcurrentTrials": 2, "maxTotalTrials": total}
    expected_policy = dict(wanted.get("earlyTermination") or {})
    if expected_policy.get("policyType") == "Bandit":
        expected_policy = {"slackFactor": 0, "slackAmount": 0, **expected_policy}
    assert sent.get("earlyTermination") == (expected_policy or None)


def test_the_experiments_sweeps_are_its_sweep_jobs(target: Target, transport: ReplayTransport) -> None:
    """``list_sweeps`` keeps the sweep jobs of the experiment from the workspace's job list (the
    spec's list envelope holding recording 3's command job and recording 7's sweep job; one more
    sweep job in another experiment)."""
    sweep_job = renamed(recording(SWEEP_FILE)[3]["ResponseBody"], NAMES)
    elsewhere = renamed(recording(SWEEP_FILE)[3]["ResponseBody"], {**NAMES, "sdk-cli-v2": "other"})
    elsewhere["name"] = "other_sweep"
    listing = S.job_list((S.JOB, S.EXPERIMENT), api_version=S.JOB_LIST)
    listing.response["value"] += [sweep_job, elsewhere]
    listing.source += f" + recording:{SWEEP_FILE}#3's sweep job (twice: one in another experiment)"
    transport.add(listing)
    sweeps = _experiment(target).list_sweeps()
    assert [(s.name, s.metric, s.mode, s.state.value, s.trials) for s in sweeps] == [
        (SWEEP, "accuracy", "max", "running", [])]  # recorded: no trial sampled yet
    transport.verify()


def test_a_command_job_is_not_a_sweep(target: Target, transport: ReplayTransport) -> None:
    from horovod_batchai import NotFoundError
    submitted = S.SubmittedJob()
    submitted.sent = {"properties": {"computeId": S.COMPUTE_PATH, "experimentName": S.EXPERIMENT}}
    transport.add(S.job_get(submitted, "Running"), S.job_get(submitted, "Running"))
    with pytest.raises(NotFoundError, match="is a command job, not a sweep"):
        _experiment(target).get_sweep(S.JOB)
    from horovod_batchai._models.records import JobRef
    with pytest.raises(NotFoundError, match="not a sweep"):  # what Sweep.cancel calls, for a name that is a job
        _experiment(target)._backend.cancel_sweep(JobRef(S.RG, S.WS, S.EXPERIMENT, S.JOB))
    assert not any("/cancel" in r for r in transport.requests)
    transport.verify()
