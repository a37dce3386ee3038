"""Each job an MLflow run: created when the job starts, ended with it.

The experiment is named after the job's Batch AI experiment, the run after the job; tags name
the job's id, its cluster and its node count, and for a sweep's trial its sweep, number and
parameter values (``horovod_batchai.sweep``, ``.trial``, ``.parameter.<name>``). The job's processes get what Azure ML gives its
jobs: ``MLFLOW_TRACKING_URI``, ``MLFLOW_RUN_ID``, ``MLFLOW_EXPERIMENT_NAME`` and
``MLFLOW_EXPERIMENT_ID``, and ``MLFLOW_TRACKING_TOKEN`` (a secret: it travels as the job's own
secrets do) with ``MLFLOW_TRACKING_SERVER_CERT_PATH`` (the service's CA), so that a script's
``mlflow.log_metric(...)`` works unchanged.

Which run belongs to which job is kept in ``<state dir>/mlflow/job-runs/<digest>.json``, so a
job started again after a requeue keeps its run, and a restarted service can still end it.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional
from urllib.parse import urlencode

from ..core.context import ServiceContext
from ..core.store import resource_key
from .endpoint import PATH_PREFIX, TrackingEndpoint, TrackingRequestFailed

__all__ = ["JobTracking", "JobRuns", "RUN_STATUSES", "job_run_tags", "job_runs", "SWEEP_NAME_VARIABLE",
           "TRIAL_INDEX_VARIABLE", "TRIAL_PARAMETERS_VARIABLE"]

#: the variables of a sweep's trial job, which the service's sweep driver sets: its sweep, its number,
#: and its values as a JSON object
SWEEP_NAME_VARIABLE = "AZ_BATCHAI_SWEEP_NAME"
TRIAL_INDEX_VARIABLE = "AZ_BATCHAI_TRIAL_INDEX"
TRIAL_PARAMETERS_VARIABLE = "AZ_BATCHAI_TRIAL_PARAMETERS"

#: how a job's run can end: it succeeded, it failed, the user terminated it (or deleted it running).
RUN_STATUSES = frozenset({"FINISHED", "FAILED", "KILLED"})


@dataclass(frozen=True)
class JobTracking:
    """What a job's processes get: variables, and secret variables (never logged)."""

    run_id: str
    experiment_name: str
    env: Mapping[str, str]
    secrets: Mapping[str, str] = field(repr=False)


def _id_part(job_id: str, name: str) -> str:
    parts = job_id.strip("/").split("/")
    lowered = [p.lower() for p in parts]
    return parts[lowered.index(name) + 1] if name in lowered[:-1] else ""


def job_run_tags(job: Mapping[str, Any]) -> dict[str, str]:
    props = job.get("properties") or {}
    tags = {"horovod_batchai.job_id": str(job.get("id", "")),
            "horovod_batchai.cluster_id": str((props.get("cluster") or {}).get("id") or ""),
            "horovod_batchai.node_count": str(props.get("nodeCount") or 1),
            "horovod_batchai.workspace": _id_part(str(job.get("id", "")), "workspaces")}
    # a sweep's trial: the variables the service gave it (batchai/sweeps/spec.py) name its sweep and values
    variables = {str(v.get("name")): str(v.get("value", "")) for v in props.get("environmentVariables") or []
                 if isinstance(v, dict)}
    if variables.get(SWEEP_NAME_VARIABLE):
        tags["horovod_batchai.sweep"] = variables[SWEEP_NAME_VARIABLE]
        tags["horovod_batchai.trial"] = variables.get(TRIAL_INDEX_VARIABLE, "")
        try:
            values = json.loads(variables.get(TRIAL_PARAMETERS_VARIABLE, "{}"))
        except ValueError:
            values = {}
        for name, value in (values.items() if isinstance(values, dict) else ()):
            tags[f"horovod_batchai.parameter.{name}"] = str(value)
    return tags


class JobRuns:
    """The MLflow runs of one service's jobs."""

    def __init__(self, endpoint: TrackingEndpoint, *, base_url: str, ca_cert: Path) -> None:
        self.endpoint = endpoint
        self.base_url = base_url
        self.ca_cert = Path(ca_cert)

    @property
    def tracking_uri(self) -> str:
        return self.base_url + PATH_PREFIX

    def _record_path(self, job_id: str) -> Path:
        digest = hashlib.sha256(resource_key(job_id).encode()).hexdigest()[:32]
        return self.endpoint.directory / "job-runs" / f"{digest}.json"

    def _recorded(self, job_id: str) -> Optional[dict[str, str]]:
        try:
            record = json.loads(self._record_path(job_id).read_text())
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) and record.get("job_id") == job_id else None

    def _record(self, job_id: str, run_id: str, experiment_id: str, experiment_name: str) -> None:
        path = self._record_path(job_id)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_suffix(".tmp")
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as fh:
            json.dump({"job_id": job_id, "run_id": run_id, "experiment_id": experiment_id,
                       "experiment_name": experiment_name}, fh)
        tmp.replace(path)

    def _experiment_id(self, name: str) -> str:
        try:
            found = self.endpoint.call("GET", "/api/2.0/mlflow/experiments/get-by-name",
                                       query=urlencode({"experiment_name": name}))
            return str(found["experiment"]["experiment_id"])
        except TrackingRequestFailed as exc:
            if exc.status != 404:
                raise
        try:
            return str(self.endpoint.call("POST", "/api/2.0/mlflow/experiments/create", {"name": name})
                       ["experiment_id"])
        except TrackingRequestFailed:  # another job made it meanwhile
            found = self.endpoint.call("GET", "/api/2.0/mlflow/experiments/get-by-name",
                                       query=urlencode({"experiment_name": name}))
            return str(found["experiment"]["experiment_id"])

    def start(self, job: Mapping[str, Any]) -> JobTracking:
        """The job's run (created now, or the one it had before a requeue, marked running again)."""
        job_id = str(job["id"])
        experiment_name = _id_part(job_id, "experiments") or "Default"
        recorded = self._recorded(job_id)
        now_ms = int(time.time() * 1000)
        if recorded is not None:
            run_id, experiment_id = recorded["run_id"], recorded["experiment_id"]
            self.endpoint.call("POST", "/api/2.0/mlflow/runs/update", {"run_id": run_id, "status": "RUNNING"})
        else:
            experiment_id = self._experiment_id(experiment_name)
            tags = [{"key": k, "value": v} for k, v in job_run_tags(job).items()]
            created = self.endpoint.call("POST", "/api/2.0/mlflow/runs/create", {
                "experiment_id": experiment_id, "run_name": str(job.get("name") or job_id.rsplit("/", 1)[-1]),
                "start_time": now_ms, "tags": tags})
            run_id = str(created["run"]["info"]["run_id"])
            self._record(job_id, run_id, experiment_id, experiment_name)
        env = {"MLFLOW_TRACKING_URI": self.tracking_uri, "MLFLOW_RUN_ID": run_id,
               "MLFLOW_EXPERIMENT_NAME": experiment_name, "MLFLOW_EXPERIMENT_ID": experiment_id,
               "MLFLOW_TRACKING_SERVER_CERT_PATH": str(self.ca_cert)}
        return JobTracking(run_id, experiment_name, env, {"MLFLOW_TRACKING_TOKEN": self.endpoint.token})

    def end(self, job_id: str, status: str) -> bool:
        """End the job's run with ``status`` (FINISHED, FAILED or KILLED); False when it had none."""
        if status not in RUN_STATUSES:
            raise ValueError(f"status must be one of {sorted(RUN_STATUSES)}, got {status!r}")
        recorded = self._recorded(job_id)
        if recorded is None:
            return False
        self.endpoint.call("POST", "/api/2.0/mlflow/runs/update", {
            "run_id": recorded["run_id"], "status": status, "end_time": int(time.time() * 1000)})
        return True

    def run_id(self, job_id: str) -> Optional[str]:
        recorded = self._recorded(job_id)
        return recorded["run_id"] if recorded is not None else None


def job_runs(context: ServiceContext) -> Optional[JobRuns]:
    """The runs of ``context``'s jobs, or None when its tracking is off."""
    if context.tracking is None:
        return None
    return JobRuns(context.tracking, base_url=context.base_url, ca_cert=context.state_dir / "tls-cert.pem")
