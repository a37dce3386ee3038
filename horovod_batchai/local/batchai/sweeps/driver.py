"""The sweep driver: a thread of the service that moves every running sweep on, with no client attached.

Each pass (every ``TICK_S``, and at once when :meth:`SweepDriver.notify` is called) looks at every
sweep that is running or still has trials to stop, and in one store update of its document:

1. brings each live trial up to date from its job (``queued``, ``running``, its end) and from the
   metrics the job records (``metrics.py``: its MLflow run's, else its ``metrics.csv``); a job
   that succeeded without a value of the objective is a ``failed`` trial, saying what it did record;
2. fails the sweep when a trial records metrics without the objective among them (a misspelt
   ``primaryMetric``), naming those it does record: at once for a metrics.csv (its header names
   them all), once the run has ended for an MLflow run (whose metrics come one by one);
3. applies the early termination policy (``policies.py``) at the epochs it is due, once each;
4. ends the sweep's running when its ``timeout`` has passed (its live trials are cancelled);
5. records new trials (values drawn by ``sampling.py``, job named ``<sweep>-<n>``) while fewer
   than ``maxConcurrentTrials`` are live and fewer than ``maxTotalTrials`` were recorded;
6. ends the sweep when no trial is live and none is left to start: ``completed`` with its best
   trial when a trial recorded the objective, else ``failed`` saying so; a sweep that ended
   (cancelled, failed) has its live trials cancelled.

Then, outside the update, it submits the jobs of ``pending`` trials through the Batch AI provider
(the same checks and the same scheduler as any job PUT) and terminates the jobs of trials it has
stopped. The document is the driver's only state: a service started again after a kill carries
on from it, and a trial recorded before the kill is submitted once (see ``records.py``).
"""
from __future__ import annotations

import datetime
import logging
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Optional

from ...core.arm_errors import ArmError
from ...core.context import ServiceContext
from ...runner.states import ExecutionState
from ..provider import BatchAIProvider
from ..validation import parse_job_create
from .metrics import Recorded, read_trial_metrics
from .policies import evaluation_epochs, stop_reason
from .provider import CANCELLED_BY_USER, SweepProvider, sweep_private_trial
from .records import LIVE, SWEEP_TYPE, SweepStatus, TrialStatus, move_sweep, move_trial
from .sampling import next_point, planned_trials
from .spec import SweepSpec, spec_of, trial_job_body

__all__ = ["SweepDriver"]

log = logging.getLogger(__name__)

#: how often the driver looks at running sweeps (notify() wakes it at once).
TICK_S = 0.5

_JOB_TO_TRIAL = {ExecutionState.QUEUED.value: TrialStatus.QUEUED, ExecutionState.RUNNING.value: TrialStatus.RUNNING,
                 ExecutionState.TERMINATING.value: TrialStatus.RUNNING}


@dataclass
class _Seen:
    """What a pass read of one trial before the update: its job document and its metrics."""

    job: Optional[dict[str, Any]]
    recorded: Recorded = field(default_factory=Recorded)


@dataclass
class _Actions:
    """What a pass does after the update."""

    submit: list[dict[str, Any]] = field(default_factory=list)
    stop: list[str] = field(default_factory=list)


def _seconds_since(stamp: str) -> float:
    when = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return (datetime.datetime.now(datetime.timezone.utc) - when).total_seconds()


def _last(values: list[Optional[float]]) -> Optional[float]:
    present = [v for v in values if v is not None and math.isfinite(v)]
    return present[-1] if present else None


def _job_failure(job: dict[str, Any]) -> str:
    errors = (job.get("properties", {}).get("executionInfo") or {}).get("errors") or []
    if errors:
        return f"Its job failed: {errors[0].get('code')}: {errors[0].get('message')}"
    code = (job.get("properties", {}).get("executionInfo") or {}).get("exitCode")
    return f"Its job failed (exit code {code})."


class SweepDriver:
    """Drives the sweeps of one service (see the module docstring)."""

    def __init__(self, context: ServiceContext) -> None:
        self.context = context
        self.store = context.store
        self.batchai = context.provider(BatchAIProvider)
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        self._stopping.clear()
        self._thread = threading.Thread(target=self._loop, name="horovod-batchai-sweeps", daemon=True)
        self._thread.start()
        self.notify()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def notify(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(TICK_S)
            self._wake.clear()
            if self._stopping.is_set():
                break
            for doc in self.store.list(SWEEP_TYPE):
                props = doc["properties"]
                if props["status"] != SweepStatus.RUNNING.value and not any(
                        t["status"] in LIVE or t.get("stopping") for t in props["trials"]):
                    continue
                try:
                    self.advance(doc["id"])
                except Exception:  # a bug of ours must not stop every sweep for good
                    log.exception("advancing the sweep %s failed", doc["id"])

    # -- one sweep, one pass ----------------------------------------------------------------------

    def advance(self, sweep_id: str) -> None:
        with self.context.provider(SweepProvider).lock:
            self._advance(sweep_id)

    def _advance(self, sweep_id: str) -> None:
        doc = self.store.get(sweep_id)
        if doc is None:
            return
        spec = spec_of({**doc["properties"], "trial": sweep_private_trial(self.context, sweep_id)})
        experiment_id = sweep_id.rsplit("/sweeps/", 1)[0]
        seen: dict[str, _Seen] = {}
        for trial in doc["properties"]["trials"]:
            if TrialStatus(trial["status"]).is_terminal() and not trial.get("stopping"):
                continue
            job_id = f"{experiment_id}/jobs/{trial['name']}"
            job = self.store.get(job_id)  # read before the metrics: a job seen ended has written them all
            seen[trial["name"]] = _Seen(job, read_trial_metrics(self.context, job_id) if job else Recorded())
        actions = _Actions()

        def change(body: dict[str, Any]) -> None:
            actions.submit.clear()
            actions.stop.clear()
            _decide(body["name"], body["properties"], spec, seen, actions)
        if self.store.update(sweep_id, change) is None:
            return
        for job_name in actions.stop:
            self.batchai.scheduler.terminate_job(f"{experiment_id}/jobs/{job_name}", wait=False)
        for trial in actions.submit:
            self._submit(sweep_id, experiment_id, spec, trial)

    def _submit(self, sweep_id: str, experiment_id: str, spec: SweepSpec, trial: dict[str, Any]) -> None:
        parts = experiment_id.strip("/").split("/")
        sub, rg, ws, exp = parts[1], parts[3], parts[7], parts[9]
        try:
            slot = self.batchai.job_slot(sub, rg, ws, exp, trial["name"])
            if slot.existing is None:
                parsed = parse_job_create(trial_job_body(spec, trial["parameters"], sweep=sweep_id.rsplit("/", 1)[-1],
                                                         index=int(trial["index"])))
                self.batchai.check_job_cluster(parsed.properties, sub)
                self.batchai.put_job(slot, parsed)
        except ArmError as err:
            reason = f"Its job could not be submitted: {err.code}: {err.message}"

            def failed(body: dict[str, Any]) -> None:
                for entry in body["properties"]["trials"]:
                    if entry["name"] == trial["name"] and entry["status"] == TrialStatus.PENDING.value:
                        move_trial(entry, TrialStatus.FAILED, reason)
            self.store.update(sweep_id, failed)
            self.notify()


def _refresh(trial: dict[str, Any], spec: SweepSpec, seen: _Seen) -> None:
    """A live trial brought up to date from its job and what it recorded."""
    recorded = seen.recorded
    if recorded.rows:
        values = recorded.values(spec.metric)
        trial["metrics"] = list(recorded.columns)
        trial["epochs"] = len(recorded.rows)
        if spec.metric in recorded.columns:
            trial["metricValues"] = values
            trial["objectiveValue"] = _last(values)
    job = seen.job
    if job is None:
        status = TrialStatus(trial["status"])
        if status.is_terminal():
            trial.pop("stopping", None)  # never submitted, or deleted: nothing to stop
        elif status is not TrialStatus.PENDING:
            move_trial(trial, TrialStatus.FAILED, "Its job was deleted.")
        return
    state = job.get("properties", {}).get("executionState")
    if trial.get("stopping") and state in (ExecutionState.SUCCEEDED.value, ExecutionState.FAILED.value):
        trial.pop("stopping")
    status = TrialStatus(trial["status"])
    if status.is_terminal():
        return
    if state in _JOB_TO_TRIAL:
        move_trial(trial, _JOB_TO_TRIAL[state])
    elif state == ExecutionState.SUCCEEDED.value:
        if trial.get("objectiveValue") is not None:
            move_trial(trial, TrialStatus.COMPLETED)
        else:
            said = (f"it recorded {', '.join(recorded.columns)}" if recorded.columns
                    else "it logged no epoch metric to its MLflow run and wrote no metrics.csv with a finished "
                         "epoch into $AZ_BATCHAI_STDOUTERR_DIR")
            move_trial(trial, TrialStatus.FAILED, f"Its job succeeded but recorded no value of the objective "
                                                  f"metric '{spec.metric}': {said}.")
    elif state == ExecutionState.FAILED.value:
        move_trial(trial, TrialStatus.FAILED, _job_failure(job))


def _decide(name: str, props: dict[str, Any], spec: SweepSpec, seen: dict[str, _Seen], actions: _Actions) -> None:
    trials: list[dict[str, Any]] = props["trials"]
    for trial in trials:
        if trial["name"] in seen:
            _refresh(trial, spec, seen[trial["name"]])
    running = props["status"] == SweepStatus.RUNNING.value
    # A misspelt objective: reported as soon as a trial records metrics without it.
    if running:
        for trial in trials:
            recorded = trial.get("metrics")
            final = trial["name"] not in seen or seen[trial["name"]].recorded.final
            if recorded and spec.metric not in recorded and final:
                move_sweep(props, SweepStatus.FAILED,
                           f"The objective metric '{spec.metric}' is not among the metrics trial {trial['name']} "
                           f"records ({', '.join(recorded)}); check properties.objective.primaryMetric.")
                running = False
                break
    # Early termination, at the epochs each running trial has reached and not yet been judged at.
    if running and spec.policy is not None:
        values = {t["index"]: t.get("metricValues") or [] for t in trials}
        for trial in trials:
            if trial["status"] != TrialStatus.RUNNING.value:
                continue
            for epoch in evaluation_epochs(spec.policy, trial.get("evaluatedEpochs", 0), trial.get("epochs", 0)):
                reason = stop_reason(spec.policy, maximize=spec.maximize, trial=trial["index"], values=values,
                                     epoch=epoch)
                if reason:
                    move_trial(trial, TrialStatus.STOPPED, reason + ".")
                    trial["stopping"] = True
                    break
            trial["evaluatedEpochs"] = trial.get("epochs", 0)
    timed_out = running and spec.timeout_s is not None and _seconds_since(props["creationTime"]) > spec.timeout_s
    # The sweep's end (cancelled, failed, timed out): its live trials are cancelled.
    if not running or timed_out:
        reason = (props.get("statusReason") or CANCELLED_BY_USER) if not running else \
            f"The sweep's timeout ({props['limits']['timeout']}) passed."
        for trial in trials:
            if trial["status"] in LIVE:
                move_trial(trial, TrialStatus.CANCELLED, reason if running else f"The sweep ended: {reason}")
                trial["stopping"] = True  # until its job, if it has one, has ended (see _refresh)
    # New trials, while there is room.
    exhausted = False
    if running and not timed_out:
        live = sum(1 for t in trials if t["status"] in LIVE)
        history = [(t["parameters"], t["objectiveValue"]) for t in trials
                   if t["status"] == TrialStatus.COMPLETED.value and t.get("objectiveValue") is not None]
        while live < spec.max_concurrent and len(trials) < spec.max_total:
            index = len(trials)
            values_drawn = next_point(spec.algorithm, spec.space, seed=spec.seed, index=index,
                                      maximize=spec.maximize, max_total=spec.max_total, history=history)
            if values_drawn is None:
                exhausted = True
                break
            trials.append({"index": index, "name": f"{name}-{index}", "parameters": values_drawn,
                           "status": TrialStatus.PENDING.value})
            live += 1
        planned = planned_trials(spec.algorithm, spec.space)
        exhausted = exhausted or (planned is not None and len(trials) >= planned)
    actions.submit.extend(t for t in trials if t["status"] == TrialStatus.PENDING.value)
    actions.stop.extend(t["name"] for t in trials if t.get("stopping"))
    _best(props, spec)
    # The end: nothing live and nothing left to start.
    if props["status"] == SweepStatus.RUNNING.value and not any(
            t["status"] in LIVE for t in trials) and (
            timed_out or exhausted or len(trials) >= spec.max_total):
        if props["bestTrial"] is not None:
            move_sweep(props, SweepStatus.COMPLETED,
                       f"The sweep's timeout ({props['limits']['timeout']}) passed." if timed_out else None)
        elif timed_out:
            move_sweep(props, SweepStatus.FAILED,
                       f"The sweep's timeout ({props['limits']['timeout']}) passed before any of its {len(trials)} "
                       f"trials completed with a value of the objective metric '{spec.metric}'.")
        else:
            names = sorted({name for t in trials for name in t.get("metrics", ())})
            move_sweep(props, SweepStatus.FAILED,
                       f"None of its {len(trials)} trials recorded a value of the objective metric '{spec.metric}'"
                       + (f" (they recorded {', '.join(names)})." if names else
                          " (none logged an epoch metric to MLflow or wrote a metrics.csv with a finished epoch)."))


def _best(props: dict[str, Any], spec: SweepSpec) -> None:
    done = [t for t in props["trials"] if t["status"] == TrialStatus.COMPLETED.value
            and t.get("objectiveValue") is not None]
    if not done:
        props["bestTrial"] = None
        return
    best = (max if spec.maximize else min)(done, key=lambda t: (t["objectiveValue"], -t["index"])
                                            if spec.maximize else (t["objectiveValue"], t["index"]))
    props["bestTrial"] = {"name": best["name"], "parameters": best["parameters"],
                          "objectiveValue": best["objectiveValue"]}
