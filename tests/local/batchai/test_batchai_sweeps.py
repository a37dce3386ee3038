"""The sweep resource the local service holds and drives, over raw HTTPS: trials as ordinary jobs of
the experiment with the parameters in their command line and environment, at most
maxConcurrentTrials at once, each with its own output directory; the best trial; a sweep that
records no objective, or a misspelt one, fails saying so; bad requests are refused before anything
is created; cancel and delete."""
from __future__ import annotations

from pathlib import Path

import pytest

from jobs_support import make_lab, wait_for
from sweeps_support import TRIAL_SCRIPT, score, sweep_body, sweep_path


@pytest.fixture
def lab(service, batchai):
    lab = make_lab(service, batchai)
    lab.create_cluster(nodes=3)
    lab.upload("sweep/trial.py", TRIAL_SCRIPT)
    return lab


def test_a_grid_sweep_runs_every_point_at_most_max_concurrent_at_once_and_keeps_the_best(lab, sweeps, tmp_path: Path):
    running = tmp_path / "running"
    running.mkdir()
    trace = tmp_path / "trace"
    body = sweep_body(lab, space={"x": ["choice", [[0.0, 0.25, 0.5, 1.0]]]},
                      args=f"--trace {trace} --running-dir {running}", limits={"maxConcurrentTrials": 2})
    created = sweeps.put("grid", body)
    assert created.status_code == 201, created.text
    doc = created.json()
    assert doc["type"] == "Microsoft.BatchAI/workspaces/experiments/sweeps"
    assert doc["properties"]["status"] == "running"
    assert doc["properties"]["limits"] == {"jobLimitsType": "Sweep", "maxTotalTrials": 4, "maxConcurrentTrials": 2}
    assert doc["properties"]["trial"]["mountVolumes"]["azureFileShares"][0]["credentials"] == {}  # no key answered
    assert lab.key not in created.text
    assert sweeps.put("grid", body).status_code == 200  # the same sweep again: nothing changes

    done = sweeps.wait_status("grid")
    props = done["properties"]
    assert props["status"] == "completed", [t.get("reason") for t in props["trials"]]
    trials = sorted(props["trials"], key=lambda t: t["index"])
    assert [t["parameters"] for t in trials] == [{"x": x} for x in (0.0, 0.25, 0.5, 1.0)]
    assert [t["status"] for t in trials] == ["completed"] * 4
    assert props["bestTrial"]["name"] == "grid-1" and props["bestTrial"]["parameters"] == {"x": 0.25}
    assert props["bestTrial"]["objectiveValue"] == pytest.approx(score(0.25))
    # Each trial ran once, as an ordinary job of the experiment, never more than two at once.
    assert sorted(trace.read_text().split()) == ["0", "0.25", "0.5", "1"]
    assert max(int(n) for n in (tmp_path / "trace.concurrency").read_text().split()) <= 2
    job = lab.job("grid-1")
    assert job.execution_state == "succeeded"
    assert "--x 0.25" in job.custom_toolkit_settings.command_line
    # its own variables, with the value in place, then the service's: its sweep, number and values
    assert [(v.name, v.value) for v in job.environment_variables] == [
        ("X_VALUE", "0.25"), ("AZ_BATCHAI_SWEEP_NAME", "grid"), ("AZ_BATCHAI_TRIAL_INDEX", "1"),
        ("AZ_BATCHAI_TRIAL_PARAMETERS", '{"x":0.25}')]
    # Each trial has its own output directory (TRIAL), listed like any output directory.
    for trial in trials:
        model = lab.files(trial["name"], "TRIAL")["model.txt"]
        assert model.content_length == len(f"x={trial['parameters']['x']:g}\n")
    listed = sweeps.arm.request("GET", sweep_path("grid").rsplit("/", 1)[0])
    assert [s["name"] for s in listed.json()["value"]] == ["grid"]


def test_a_sweep_whose_trials_record_no_objective_fails_saying_so(lab, sweeps):
    assert sweeps.put("silent", sweep_body(lab, space={"x": ["choice", [[0.1, 0.2]]]},
                                           args="--no-metrics")).status_code == 201
    props = sweeps.wait_status("silent")["properties"]
    assert props["status"] == "failed" and props["bestTrial"] is None
    assert "None of its 2 trials recorded a value of the objective metric 'score'" in props["statusReason"]
    for trial in props["trials"]:
        assert trial["status"] == "failed"
        assert "succeeded but recorded no value of the objective metric 'score'" in trial["reason"]
        assert lab.job(trial["name"]).execution_state == "succeeded"  # the job itself did succeed


def test_a_misspelt_objective_is_reported_at_the_first_metrics_naming_those_recorded(lab, sweeps, tmp_path: Path):
    flag = tmp_path / "never"
    body = sweep_body(lab, space={"x": ["uniform", [0, 1]]}, algorithm="Random", seed=1, metric="acuracy",
                      args=f"--metric-name accuracy --wait-for {flag}",
                      limits={"maxTotalTrials": 5, "maxConcurrentTrials": 1})
    assert sweeps.put("typo", body).status_code == 201
    props = sweeps.wait_status("typo")["properties"]
    assert props["status"] == "failed"
    assert "'acuracy' is not among the metrics trial typo-0 records (loss, accuracy)" in props["statusReason"]
    # It stopped there: the running trial is cancelled and no other was started.
    [trial] = props["trials"]
    assert trial["status"] == "cancelled" and "The sweep ended" in trial["reason"]
    job = lab.wait_state("typo-0")
    assert job.execution_state == "failed" and job.execution_info.errors[0].code == "JobTerminated"


@pytest.mark.parametrize("change, target", [
    (lambda p: p["searchSpace"].update(x=["uniform", [0, 1]]), "properties.searchSpace.x"),
    (lambda p: p["searchSpace"].update(x=["gaussian", [0, 1]]), "properties.searchSpace.x"),
    (lambda p: p["trial"]["customToolkitSettings"].update(commandLine="run ${{search_space.z}}"),
     "properties.trial.customToolkitSettings.commandLine"),
    (lambda p: p["trial"].update(nodeCount=0), "properties.trial.nodeCount"),
    (lambda p: p["objective"].update(goal="best"), "properties.objective.goal"),
    (lambda p: p["limits"].update(timeout="an hour"), "properties.limits.timeout"),
    (lambda p: p.update(earlyTermination={"policyType": "Bandit"}), "properties.earlyTermination"),
    (lambda p: p["trial"].update(outputDirectories=[{"id": "TRIAL", "pathPrefix": "$AZ_BATCHAI_JOB_TEMP"}]),
     "properties.trial.outputDirectories"),
])
def test_a_bad_sweep_is_refused_before_anything_is_created(lab, sweeps, change, target):
    body = sweep_body(lab, space={"x": ["choice", [[1, 2]]]})
    change(body["properties"])
    answer = sweeps.put("bad", body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["target"] == target, answer.text
    assert sweeps.arm.request("GET", sweep_path("bad")).status_code == 404


def test_cancel_stops_the_running_trials_and_delete_removes_the_sweep(lab, sweeps, tmp_path: Path):
    body = sweep_body(lab, space={"x": ["choice", [[1, 2, 3, 4]]]}, args=f"--wait-for {tmp_path / 'never'}",
                      limits={"maxConcurrentTrials": 2})
    assert sweeps.put("stopme", body).status_code == 201
    for index in (0, 1):
        sweeps.wait_trial("stopme", index, lambda t: t["status"] == "running")
    cancelled = sweeps.arm.request("POST", sweep_path("stopme", "cancel"))
    assert cancelled.status_code == 200 and cancelled.json()["properties"]["status"] == "cancelled"
    props = wait_for(lambda: (lambda p: p if all(not t.get("stopping") for t in p["trials"]) else None)(
        sweeps.get("stopme")["properties"]), 60, what="the trials' jobs to end")
    assert [t["status"] for t in props["trials"]] == ["cancelled", "cancelled"]
    assert props["statusReason"] == "The sweep was cancelled by the user."
    assert {lab.job(t["name"]).execution_state for t in props["trials"]} == {"failed"}
    assert sweeps.arm.request("DELETE", sweep_path("stopme")).status_code == 200
    assert sweeps.arm.request("GET", sweep_path("stopme")).status_code == 404
    assert sweeps.arm.request("DELETE", sweep_path("stopme")).status_code == 204
    assert lab.job("stopme-0").execution_state == "failed"  # trials' jobs stay, with their outputs


def test_the_tutorials_horovod_job_with_its_fixed_dir_runs_as_a_sweep(lab, sweeps):
    """The tutorial's job shape (horovodSettings, a fixed --dir) as the trial: the parameters reach
    horovodSettings.commandLineArgs, and each trial writes its model to its own directory rather
    than to the --dir every trial shares (the script fails if a model is there already)."""
    body = sweep_body(lab, space={"x": ["choice", [[0.2, 0.4]]]})
    trial = body["properties"]["trial"]
    del trial["customToolkitSettings"]
    trial["horovodSettings"] = {"pythonScriptFilePath": "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs/sweep/trial.py",
                                "commandLineArgs": "--dir=$AZ_BATCHAI_JOB_MOUNT_ROOT/afs/cifar "
                                                   "--x ${{search_space.x}}"}
    assert sweeps.put("tutorial", body).status_code == 201
    props = sweeps.wait_status("tutorial", timeout=300)["properties"]
    assert props["status"] == "completed", [t.get("reason") for t in props["trials"]]
    assert [t["status"] for t in props["trials"]] == ["completed", "completed"]
    assert props["bestTrial"]["parameters"] == {"x": 0.2}
    for t in props["trials"]:
        job = lab.job(t["name"])
        assert job.tool_type == "horovod"
        assert job.horovod_settings.command_line_args.endswith(f"--x {t['parameters']['x']}")
        assert lab.read(t["name"], "model.txt", "TRIAL") == f"x={t['parameters']['x']:g}\n"


def test_the_trial_timeout_fails_a_trial_and_the_timeout_ends_the_sweep(lab, sweeps, tmp_path: Path):
    never = tmp_path / "never"
    body = sweep_body(lab, space={"x": ["choice", [[0.1, 0.2]]]}, args=f"--wait-for {never}",
                      limits={"trialTimeout": "PT1S"})
    assert sweeps.put("slowtrials", body).status_code == 201
    props = sweeps.wait_status("slowtrials")["properties"]
    assert props["limits"]["trialTimeout"] == "PT1S"
    assert props["status"] == "failed"
    for trial in props["trials"]:
        assert trial["status"] == "failed"
        assert trial["reason"].startswith("Its job failed: MaxWallClockTimeExceeded"), trial["reason"]
        assert lab.job(trial["name"]).constraints.max_wall_clock_time.total_seconds() == 1

    body = sweep_body(lab, space={"x": ["choice", [[0.1, 0.2, 0.3]]]}, args=f"--wait-for {never}",
                      limits={"timeout": "PT2S", "maxConcurrentTrials": 2})
    assert sweeps.put("slowsweep", body).status_code == 201
    props = sweeps.wait_status("slowsweep")["properties"]
    assert props["status"] == "failed"
    assert props["statusReason"].startswith("The sweep's timeout (PT2S) passed before any of its")
    assert len(props["trials"]) <= 2 and {t["status"] for t in props["trials"]} <= {"cancelled"}
    assert all(t["reason"] == "The sweep's timeout (PT2S) passed." for t in props["trials"])


def test_a_sweep_cannot_change_once_created(lab, sweeps):
    body = sweep_body(lab, space={"x": ["choice", [[0.1]]]})
    assert sweeps.put("fixed", body).status_code == 201
    body["properties"]["objective"]["goal"] = "minimize"
    answer = sweeps.put("fixed", body)
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "SweepAlreadyExists"
    assert "(objective)" in answer.json()["error"]["message"]
