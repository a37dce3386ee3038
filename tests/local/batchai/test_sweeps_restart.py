"""A sweep needs no client: the service that holds it drives it. The process that created it may
exit at once, and the service may be killed mid-sweep and started again: the sweep goes on from
where it was, and no trial runs twice. (The service runs as a daemon of its own here, as
tests/local/runner/test_jobs_restart.py runs it.)"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Iterator, Optional

import pytest
from azure.mgmt.batchai import BatchAI

from horovod_batchai.local import ensure_running
from jobs_support import DaemonView, Lab, make_lab, tagged_processes, wait_for
from service_support import SUBSCRIPTION, kill_daemon
from sweeps_support import TRIAL_SCRIPT, Sweeps, sweep_body, sweep_path

#: the creator: one PUT with plain requests, then it exits.
CREATOR = r'''
import json, sys, requests
from horovod_batchai.local import find_running
info = find_running(sys.argv[1])
token = info.credential().get_token("https://management.azure.com/.default").token
answer = requests.put(info.endpoint + sys.argv[2], params={"api-version": "2018-05-01"},
                      json=json.load(open(sys.argv[3])), headers={"Authorization": "Bearer " + token},
                      verify=str(info.ca_cert), timeout=60)
print(answer.status_code)
'''


@pytest.fixture(autouse=True)
def _no_trial_outlives_its_test(tmp_path: Path):
    yield
    for pid in tagged_processes(tmp_path / "state"):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@contextlib.contextmanager
def _daemon(state: Path, before: Optional[Lab] = None) -> Iterator[tuple[Lab, Sweeps]]:
    """A daemon service on ``state`` with a lab (new, or on ``before``'s storage account), killed
    with SIGKILL when the block ends."""
    info = ensure_running(state)
    try:
        view = DaemonView(info)
        with BatchAI(view.credential(), SUBSCRIPTION, base_url=info.endpoint,
                     connection_verify=str(info.ca_cert)) as batchai:
            lab = make_lab(view, batchai) if before is None else Lab(view, batchai, before.account, before.key)
            sweeps = Sweeps(view)
            try:
                yield lab, sweeps
            finally:
                sweeps.close()
    finally:
        kill_daemon(info.pid)


def test_a_sweep_goes_on_after_the_process_that_created_it_exits(tmp_path: Path):
    state, trace = tmp_path / "state", tmp_path / "trace"
    with _daemon(state) as (lab, sweeps):
        lab.create_cluster(nodes=2)
        lab.upload("sweep/trial.py", TRIAL_SCRIPT)
        body = tmp_path / "sweep.json"
        body.write_text(json.dumps(sweep_body(lab, space={"x": ["choice", [[0.0, 0.5, 1.0]]]}, args=f"--trace {trace}",
                                              limits={"maxConcurrentTrials": 1})))
        creator = subprocess.run([sys.executable, "-c", CREATOR, str(state), sweep_path("detached"), str(body)],
                                 capture_output=True, text=True, timeout=120)
        assert creator.returncode == 0 and creator.stdout.strip() == "201", creator.stdout + creator.stderr
        # Nobody waits on the sweep: the test only reads it, now and then, until it has ended.
        props = sweeps.wait_status("detached")["properties"]
        assert props["status"] == "completed", [t.get("reason") for t in props["trials"]]
        assert props["bestTrial"]["parameters"] == {"x": 0.5}
        assert [t["status"] for t in props["trials"]] == ["completed"] * 3
        assert sorted(trace.read_text().split()) == ["0", "0.5", "1"]


def test_a_killed_service_started_again_carries_the_sweep_on_with_no_trial_run_twice(tmp_path: Path):
    state, trace, go = tmp_path / "state", tmp_path / "trace", tmp_path / "go"
    grid = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    with _daemon(state) as (lab, sweeps):
        lab.create_cluster(nodes=2)
        lab.upload("sweep/trial.py", TRIAL_SCRIPT)
        body = sweep_body(lab, space={"x": ["choice", [grid]]}, args=f"--trace {trace} --wait-for {go}",
                          limits={"maxConcurrentTrials": 2})
        assert sweeps.put("survivor", body).status_code == 201
        for index in (0, 1):
            sweeps.wait_trial("survivor", index, lambda t: t["status"] == "running")
        wait_for(lambda: trace.exists() and len(trace.read_text().split()) == 2, 60, what="two trials to start")
    # Killed with two trials running: they run on, and end while the service is down.
    go.touch()
    wait_for(lambda: len(list(state.glob("jobs/*/runs/*/exit.json"))) == 2, 60, what="the two trials to end")

    with _daemon(state, lab) as (lab, sweeps):
        props = sweeps.wait_status("survivor")["properties"]
        assert props["status"] == "completed", [t.get("reason") for t in props["trials"]]
        assert [t["parameters"]["x"] for t in props["trials"]] == grid
        assert [t["status"] for t in props["trials"]] == ["completed"] * len(grid)
        assert props["bestTrial"]["parameters"] == {"x": 0.3}
        # Every trial ran exactly once, each as one job of the experiment.
        assert sorted(float(x) for x in trace.read_text().split()) == grid
        jobs = sorted(job.name for job in lab.batchai.jobs.list_by_experiment("jobs-rg", "ws", "exp"))
        assert jobs == sorted(f"survivor-{i}" for i in range(len(grid)))


def test_whenever_the_service_is_killed_each_trial_runs_once(tmp_path: Path):
    """The service is killed again and again while the sweep runs (a little later each time, so the
    kills land while trials are being recorded, submitted, run and judged); after the last restart
    every trial has run exactly once."""
    state, trace = tmp_path / "state", tmp_path / "trace"
    grid = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    lab = None
    for i in range(5):
        with _daemon(state, lab) as (lab, sweeps):
            if i == 0:
                lab.create_cluster(nodes=2)
                lab.upload("sweep/trial.py", TRIAL_SCRIPT)
                body = sweep_body(lab, space={"x": ["choice", [grid]]}, args=f"--trace {trace}",
                                  limits={"maxConcurrentTrials": 2})
                assert sweeps.put("often", body).status_code == 201
            wait_for(lambda: trace.exists() and len(trace.read_text().split()) > i, 60, what="one more trial to start")
    assert lab is not None
    with _daemon(state, lab) as (lab, sweeps):
        props = sweeps.wait_status("often")["properties"]
        assert props["status"] == "completed", [t.get("reason") for t in props["trials"]]
        assert [t["parameters"]["x"] for t in props["trials"]] == grid
        assert sorted(float(x) for x in trace.read_text().split()) == grid
