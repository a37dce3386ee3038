"""The local service's MLflow tracking server, with the real MLflow: started when first needed,
behind the service's authenticated HTTPS front, each job an MLflow run that the job's own script
logs to with ``mlflow.log_metric``; restarted after it is killed, stopped with the service."""
from __future__ import annotations

import os
import signal
import stat
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests
from azure.mgmt.batchai import BatchAI

from horovod_batchai.local import LocalService
from horovod_batchai.local.tracking.endpoint import TrackingEndpoint
from horovod_batchai.local.tracking.server import TrackingUnavailable

from jobs_support import EXP, RG, SUBSCRIPTION, WS, make_lab, wait_for

pytest.importorskip("mlflow")

SCRIPT = """\
import os
import mlflow
run_id = os.environ["MLFLOW_RUN_ID"]  # MLflow takes it out of the environment once it has resumed the run
mlflow.log_param("learning_rate", "0.01")
for step in range(3):
    mlflow.log_metric("loss", 1.0 / (step + 1), step=step)
mlflow.log_text("hello from the job", "notes/hello.txt")  # an artifact, through the service's front
print("logged to run", run_id)
"""


def _api(svc: LocalService, method: str, path: str, *, token: str | None = "arm", **kwargs: Any) -> requests.Response:
    headers = {}
    if token == "arm":
        token = svc.credential().get_token("https://management.azure.com/.default").token
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return requests.request(method, f"{svc.endpoint}/_mlflow/api/2.0/mlflow/{path}", headers=headers,
                            verify=str(svc.info.ca_cert), timeout=300, **kwargs)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return any(p.info["status"] != psutil.STATUS_ZOMBIE for p in psutil.process_iter(["status"])
               if _pgid(p.pid) == pgid)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def test_a_job_logging_with_mlflow_alone_is_a_run_read_back_through_the_authenticated_front(tracked):
    endpoint = tracked.context.tracking
    assert endpoint.server is None and not (endpoint.directory / "server.sock").exists()  # not before it is needed

    # Refused before anything reaches MLflow: no token, a token of nobody's, a malformed header.
    for token in (None, "not-a-token", ""):
        refused = _api(tracked, "GET", "experiments/search", token=token, params={"max_results": 5})
        assert refused.status_code == 401, refused.text
        assert refused.json()["error_code"] == "UNAUTHENTICATED"
    assert endpoint.server is None

    with BatchAI(tracked.credential(), SUBSCRIPTION, base_url=tracked.endpoint,
                 connection_verify=str(tracked.info.ca_cert)) as batchai:
        lab = make_lab(tracked, batchai)
        lab.upload("scripts/log_only.py", SCRIPT)
        lab.create_cluster()
        lab.submit("logjob", {"horovodSettings": {
            "pythonScriptFilePath": "$AZ_BATCHAI_JOB_MOUNT_ROOT/afs/scripts/log_only.py", "processCount": 1}})
        job = lab.wait_state("logjob", timeout=240)
        stdout = lab.read("logjob", "stdout.txt")
        assert job.execution_state == "succeeded", stdout + lab.read("logjob", "stderr.txt")
        # Runs end as their jobs do: a failure FAILED, a terminated job KILLED.
        lab.submit("fails", {"customToolkitSettings": {"commandLine": "exit 3"}})
        assert lab.wait_state("fails").execution_state == "failed"
        lab.submit("stopped", {"customToolkitSettings": {"commandLine": "sleep 300"}})
        lab.wait_state("stopped", "running")
        batchai.jobs.begin_terminate(RG, WS, EXP, "stopped").result()
        assert lab.wait_state("stopped").execution_state == "failed"
        ended = {}
        for name in ("fails", "stopped"):
            runs = _api(tracked, "POST", "runs/search", json={
                "experiment_ids": [_api(tracked, "GET", "experiments/get-by-name",
                                        params={"experiment_name": EXP}).json()["experiment"]["experiment_id"]],
                "filter": f"attributes.run_name = '{name}'"}).json()["runs"]
            ended[name] = [r["info"]["status"] for r in runs]
        assert ended == {"fails": ["FAILED"], "stopped": ["KILLED"]}

    # Started on demand, on a socket only this user can reach, with no TCP port of its own.
    server = endpoint.server
    assert server is not None
    assert stat.S_IMODE(endpoint.directory.stat().st_mode) == 0o700
    assert stat.S_ISSOCK(server.socket_path.stat().st_mode)
    group = [p for p in psutil.process_iter() if _pgid(p.pid) == server.pid]
    assert group and not [c for p in group for c in p.net_connections(kind="inet")]

    # The run, found by its tags through MLflow's REST API over the service's front.
    experiment = _api(tracked, "GET", "experiments/get-by-name", params={"experiment_name": EXP}).json()["experiment"]
    job_id = job.id
    found = _api(tracked, "POST", "runs/search", json={
        "experiment_ids": [experiment["experiment_id"]],
        "filter": f"tags.`horovod_batchai.job_id` = '{job_id}'"}).json()["runs"]
    assert len(found) == 1
    run = found[0]
    assert f"logged to run {run['info']['run_id']}" in stdout
    assert run["info"]["run_name"] == "logjob"
    assert run["info"]["status"] == "FINISHED" and run["info"]["end_time"] >= run["info"]["start_time"]
    tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
    assert tags["horovod_batchai.node_count"] == "1"
    assert tags["horovod_batchai.cluster_id"].lower().endswith("/clusters/cluster")
    assert {p["key"]: p["value"] for p in run["data"]["params"]} == {"learning_rate": "0.01"}
    history = _api(tracked, "GET", "metrics/get-history",
                   params={"run_id": run["info"]["run_id"], "metric_key": "loss"}).json()["metrics"]
    assert sorted((m["step"], m["value"]) for m in history) == [(0, 1.0), (1, 0.5), (2, 1.0 / 3)]

    listed = _api(tracked, "GET", "artifacts/list", params={"run_id": run["info"]["run_id"], "path": "notes"}).json()
    assert [f["path"] for f in listed["files"]] == ["notes/hello.txt"]
    artifact = requests.get(f"{tracked.endpoint}/_mlflow/get-artifact", params={
        "path": "notes/hello.txt", "run_uuid": run["info"]["run_id"]}, verify=str(tracked.info.ca_cert), timeout=60,
        headers={"Authorization": f"Bearer {tracked.credential().get_token('https://management.azure.com/.default').token}"})
    assert artifact.status_code == 200 and artifact.text == "hello from the job"
    assert (tracked.state_dir / "mlflow" / "artifacts").is_dir()

    # The job's token reads too; it is in no file the job's user sees, nor in the service's log.
    token = endpoint.token
    assert _api(tracked, "GET", "runs/get", token=token, params={"run_id": run["info"]["run_id"]}).status_code == 200
    shared = tracked.state_dir / "files"
    for path in [p for p in shared.rglob("*") if p.is_file()]:
        assert token not in path.read_text(errors="replace"), path


def test_ui_then_server_restarted_after_it_is_killed_and_stopped_with_the_service(tracked):
    _check_the_ui(tracked)  # which starts the server
    first = tracked.context.tracking.server
    assert first is not None and first.running
    os.killpg(first.pid, signal.SIGKILL)  # the launcher, MLflow and uvicorn at once, as a crash would
    wait_for(lambda: not first.running, 60, what="the killed server to be seen gone")

    again = _api(tracked, "GET", "experiments/get-by-name", params={"experiment_name": "Default"})
    assert again.status_code == 200, again.text
    second = tracked.context.tracking.server
    assert second is not None and second.pid != first.pid

    tracked.stop()
    wait_for(lambda: not _group_alive(second.pid), 60, what="the tracking server's processes to end")
    assert not second.socket_path.exists() or not _group_alive(second.pid)


def _python_without_mlflow() -> str:
    python = "/usr/bin/python3"
    if not Path(python).exists() or Path(python).resolve() == Path(sys.executable).resolve():
        pytest.skip("needs a Python without mlflow")
    return python


def _check_the_ui(tracked: LocalService) -> None:
    """MLflow's UI through `local mlflow-ui`'s proxy: on loopback, for whoever holds the printed key."""
    from horovod_batchai.local.tracking.ui import MlflowUiProxy

    credential = tracked.credential()
    proxy = MlflowUiProxy(tracked.endpoint, tracked.info.ca_cert,
                          lambda: credential.get_token("https://management.azure.com/.default").token).start()
    try:
        assert proxy.health()[0] == 200  # starts the tracking server through the front
        assert proxy.key not in repr(proxy)
        # Another local user can connect to the port, but gets nothing without the key.
        assert requests.get(proxy.url, timeout=60).status_code == 403
        assert requests.get(proxy.url + "?key=guess", timeout=60).status_code == 403
        assert requests.post(proxy.url + "ajax-api/2.0/mlflow/experiments/search", json={"max_results": 5},
                             timeout=60).status_code == 403

        browser = requests.Session()
        page = browser.get(proxy.login_url, timeout=120)  # 303 to / with the key as a cookie
        assert page.status_code == 200 and "<html" in page.text.lower()
        assert page.url == proxy.url  # the key is out of the address bar
        found = browser.post(proxy.url + "ajax-api/2.0/mlflow/experiments/search", json={"max_results": 5},
                             timeout=120)
        assert found.status_code == 200
        assert "Default" in {e["name"] for e in found.json()["experiments"]}
    finally:
        proxy.stop()


def test_without_mlflow_the_error_says_what_to_install(tmp_path):
    endpoint = TrackingEndpoint(tmp_path, python=_python_without_mlflow())
    with pytest.raises(TrackingUnavailable, match=r"pip install 'horovod-batchai\[mlflow\]'"):
        endpoint.require()
    assert endpoint.server is None


def test_without_mlflow_jobs_run_untracked_and_say_why(tracked):
    # The service's tracking, as it is where the mlflow package is missing beside the service.
    tracked.context.tracking = TrackingEndpoint(tracked.state_dir, python=_python_without_mlflow())
    refused = _api(tracked, "GET", "experiments/search", params={"max_results": 5})
    assert refused.status_code == 501 and refused.json()["error_code"] == "FEATURE_DISABLED"  # not retried
    assert "horovod-batchai[mlflow]" in refused.json()["message"]

    with BatchAI(tracked.credential(), SUBSCRIPTION, base_url=tracked.endpoint,
                 connection_verify=str(tracked.info.ca_cert)) as batchai:
        lab = make_lab(tracked, batchai)
        lab.create_cluster()
        lab.submit("plain", {"customToolkitSettings": {"commandLine": "echo uri=${MLFLOW_TRACKING_URI:-none}"}})
        job = lab.wait_state("plain")
        assert job.execution_state == "succeeded"
        assert lab.read("plain", "stdout.txt").strip() == "uri=none"
        assert "MLflow tracking is off for this job" in lab.read("plain", "execution.log")
        assert "horovod-batchai[mlflow]" in lab.read("plain", "execution.log")
