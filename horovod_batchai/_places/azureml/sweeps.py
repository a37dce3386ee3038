"""Azure ML's own sweep jobs (``jobType: Sweep``) for :meth:`Experiment.sweep`: the checked
:class:`SweepRequest` (already Azure ML's sweep shape) as azure-ai-ml's ``SweepJob`` around the
command job a submit builds, and the sweep job and its child runs read back as a
:class:`SweepRecord`. No I/O here: the backend reads, this module converts.

What the service says, in this package's words (docs/azureml.rst, "Sweeps"):

- the sweep's status: ``Completed`` -> completed, ``Failed`` -> failed, ``Canceled`` or
  ``CancelRequested`` -> cancelled, anything else -> running. A sweep the service completed
  with no trial that recorded the objective is ``failed``, with that reason.
- a trial is a child run of the sweep job, named ``<sweep>_<index>`` by the service; its
  parameters are the sweep job's tag ``<sweep>_<index>`` (a JSON object by search-space name, as
  HyperDrive stores them). ``Canceled`` while the sweep was not cancelled is ``stopped`` (Azure
  ML cancels the trials its early-termination policy stops); a trial that ended without recording
  the objective is ``failed``.
- the best trial is the service's ``best_child_run_id`` property when it has one, else the
  completed or stopped trial with the best objective at its last recorded epoch.
- a trial that records metrics without the objective (a misspelt metric) is the sweep's reason
  as soon as it is read, while Azure ML runs the sweep on.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..._models.errors import InvalidSpecError
from ..._models.records import SweepRecord, SweepTrialRecord
from ..._models.states import ExecutionState
from ..._models.sweep_job import SweepRequest, caller_names
from .states import execution_state

__all__ = ["SWEEP_PROPERTY", "BEST_TRIAL_PROPERTY", "sweep_job_entity", "request_property", "check_sweep_request",
           "TrialRun", "sweep_record", "trial_index", "sweep_status"]

#: the sweep job's property that keeps the request it was created from (the sweep's shape, as sent)
SWEEP_PROPERTY = "horovod_batchai.sweep"
#: where the service names its best trial (a property of the sweep job, as of a HyperDrive run)
BEST_TRIAL_PROPERTY = "best_child_run_id"
_CANCELLATION_TAG = "_aml_system_cancellation_requested"
_DURATION = re.compile(r"PT(\d+)S\Z")


def request_property(request: SweepRequest) -> str:
    """The request's sweep properties, as stored on the sweep job (compared by a second create)."""
    return json.dumps(dict(request.properties), sort_keys=True, separators=(",", ":"))


def _seconds(duration: Optional[str]) -> Optional[int]:
    if duration is None:
        return None
    match = _DURATION.match(duration)
    assert match, f"plan_request writes durations as PT<seconds>S, not {duration!r}"
    return int(match.group(1))


#: the distributions Azure ML's Bayesian sampling takes (its documentation's rule)
_BAYESIAN = ("choice", "uniform", "quniform")


def check_sweep_request(request: SweepRequest) -> None:
    """What Azure ML's sweep job cannot express, refused before anything is sent: a seed but for
    random sampling; with Bayesian sampling, distributions other than choice, uniform and
    quniform, and an early-termination policy (Azure ML's Bayesian sampling takes none)."""
    sampling = request.properties["samplingAlgorithm"]
    kind = sampling["samplingAlgorithmType"]
    if "seed" in sampling and kind != "Random":
        raise InvalidSpecError("seed", f"is set with sampling={kind.lower()!r}; Azure ML takes a seed for random "
                               "sampling only", "None, or sampling='random'")
    if kind != "Bayesian":
        return
    options = caller_names(request.arguments)
    for name, (distribution, _) in request.properties["searchSpace"].items():
        if distribution not in _BAYESIAN:
            raise InvalidSpecError(f"parameters[{options.get(name, name)!r}]", f"is a {distribution} distribution, "
                                   "which Azure ML's Bayesian sampling does not take",
                                   "a list of values, Uniform or QUniform (or sampling='random')")
    if "earlyTermination" in request.properties:
        raise InvalidSpecError("early_termination", "is set with sampling='bayesian'; Azure ML's Bayesian sampling "
                               "takes no early-termination policy", "None, or sampling='random'")


def _grid_size(space: Mapping[str, List[Any]]) -> int:
    return math.prod(len(arguments[0]) for _, arguments in space.values())


def _distribution(wire: List[Any]) -> Any:
    """azure-ai-ml's distribution for a search-space entry in its wire form (``["uniform", [a, b]]``):
    the numbers are sent as they are (``loguniform`` takes logarithms already)."""
    from azure.ai.ml import sweep
    kind, a = wire
    makers = {"choice": lambda: sweep.Choice(values=list(a[0])),
              "uniform": lambda: sweep.Uniform(min_value=a[0], max_value=a[1]),
              "loguniform": lambda: sweep.LogUniform(min_value=a[0], max_value=a[1]),
              "quniform": lambda: sweep.QUniform(min_value=a[0], max_value=a[1], q=a[2]),
              "qloguniform": lambda: sweep.QLogUniform(min_value=a[0], max_value=a[1], q=a[2]),
              "normal": lambda: sweep.Normal(mu=a[0], sigma=a[1]),
              "lognormal": lambda: sweep.LogNormal(mu=a[0], sigma=a[1]),
              "qnormal": lambda: sweep.QNormal(mu=a[0], sigma=a[1], q=a[2]),
              "qlognormal": lambda: sweep.QLogNormal(mu=a[0], sigma=a[1], q=a[2]),
              "randint": lambda: sweep.Randint(upper=a[0])}
    return makers[kind]()


def _policy(wire: Optional[Mapping[str, Any]]) -> Any:
    from azure.ai.ml import sweep
    if wire is None:
        return None
    timing = dict(evaluation_interval=wire["evaluationInterval"], delay_evaluation=wire["delayEvaluation"])
    kind = wire["policyType"]
    if kind == "Bandit":
        return sweep.BanditPolicy(slack_factor=wire.get("slackFactor") or 0, slack_amount=wire.get("slackAmount") or 0,
                                  **timing)
    if kind == "MedianStopping":
        return sweep.MedianStoppingPolicy(**timing)
    return sweep.TruncationSelectionPolicy(truncation_percentage=wire["truncationPercentage"], **timing)


def _sampling(wire: Mapping[str, Any]) -> Any:
    from azure.ai.ml import sweep
    kind = wire["samplingAlgorithmType"]
    if kind == "Random":
        return sweep.RandomSamplingAlgorithm(seed=wire.get("seed"))
    return sweep.GridSamplingAlgorithm() if kind == "Grid" else sweep.BayesianSamplingAlgorithm()


def sweep_job_entity(request: SweepRequest, trial: Any, *, name: str, experiment: str,
                     properties: Mapping[str, str]) -> Any:
    """azure-ai-ml's ``SweepJob`` for ``request`` around ``trial``, the command job (``Command``
    node) built for the trial spec. Its mounts (the command's inputs and outputs) become the sweep
    job's, as azure-ai-ml takes them from a command job trial. A grid runs every combination:
    its ``maxTotalTrials`` is their number."""
    from azure.ai.ml import sweep
    props = request.properties
    space = props["searchSpace"]
    limits = props["limits"]
    total = limits.get("maxTotalTrials", _grid_size(space) if props["samplingAlgorithm"]["samplingAlgorithmType"]
                       == "Grid" else None)
    objective = props["objective"]
    return sweep.SweepJob(
        name=name, display_name=name, experiment_name=experiment, compute=trial.compute,
        properties=dict(properties), trial=trial._to_job(),
        search_space={key: _distribution(value) for key, value in space.items()},
        sampling_algorithm=_sampling(props["samplingAlgorithm"]),
        objective=sweep.Objective(goal=objective["goal"], primary_metric=objective["primaryMetric"]),
        limits=sweep.SweepJobLimits(max_total_trials=total, max_concurrent_trials=limits["maxConcurrentTrials"],
                                    timeout=_seconds(limits.get("timeout")),
                                    trial_timeout=_seconds(limits.get("trialTimeout"))),
        early_termination=_policy(props.get("earlyTermination")))


# -- reading it back --------------------------------------------------------------------------------
def trial_index(sweep: str, trial: str) -> Optional[int]:
    """The index of the service's child run ``<sweep>_<index>``; None for another name."""
    head, _, tail = trial.rpartition("_")
    return int(tail) if head == sweep and tail.isdigit() else None


def _name(value: Any) -> str:
    return str(getattr(value, "value", value) or "")


def sweep_status(status: Any, tags: Mapping[str, Any]) -> str:
    """The sweep job's status in this package's sweep words (see the module's text)."""
    text = _name(status).lower()
    if text == "completed":
        return "completed"
    if text == "failed":
        return "failed"
    if text in ("canceled", "cancelrequested") or str(tags.get(_CANCELLATION_TAG, "")).lower() == "true":
        return "cancelled"
    return "running"


@dataclass(frozen=True)
class TrialRun:
    """A child run of the sweep, as the backend read it: its status, its error when it failed,
    and the objective at each epoch it recorded (with the names it recorded, to say why not)."""

    name: str
    status: Any
    error: Optional[str]
    values: Tuple[Optional[float], ...]
    #: every metric it recorded (empty when it recorded none yet)
    recorded: Tuple[str, ...]


def _trial(run: TrialRun, index: int, parameters: Mapping[str, Any], metric: str, cancelled: bool) -> SweepTrialRecord:
    state = execution_state(run.status)
    values = run.values
    objective = values[-1] if values else None
    reason: Optional[str] = None
    if state in (ExecutionState.QUEUED,):
        status = "queued"
    elif state in (ExecutionState.RUNNING,):
        status = "running"
    elif _name(run.status).lower() in ("canceled", "cancelrequested"):
        status = "cancelled" if cancelled else "stopped"
        reason = "the sweep was cancelled" if cancelled else "stopped by the sweep's early-termination policy"
    elif state is ExecutionState.FAILED:
        status, reason = "failed", run.error or "it failed on Azure ML (see its logs)"
    elif objective is None:
        status = "failed"
        reason = (f"it recorded {', '.join(run.recorded)} but no value of {metric!r}" if run.recorded
                  else f"it recorded no value of {metric!r}")
    else:
        status = "completed"
    return SweepTrialRecord(index=index, name=run.name, parameters=dict(parameters), status=status, reason=reason,
                            epochs=len(values), values=values, objective=objective)


def _parameters(tags: Mapping[str, Any], trial: str) -> Dict[str, Any]:
    text = tags.get(trial)
    try:
        found = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        found = None
    return dict(found) if isinstance(found, dict) else {}


def _best(trials: Sequence[SweepTrialRecord], service_best: Optional[str], mode: str) -> Optional[str]:
    names = {t.name for t in trials}
    if service_best and service_best in names:
        return service_best
    scored = [t for t in trials if t.objective is not None and t.status in ("completed", "stopped")]
    if not scored:
        return None
    pick = max if mode == "max" else min
    return pick(scored, key=lambda t: t.objective).name  # type: ignore[arg-type, return-value]


def sweep_record(*, name: str, id: str, status: Any, tags: Mapping[str, Any], properties: Mapping[str, Any],
                 metric: str, goal: str, arguments: str, runs: Sequence[TrialRun], error: Optional[str],
                 raw: Any = None) -> SweepRecord:
    """The sweep as the service describes it: the sweep job (``status``, ``tags``,
    ``properties``, objective), its child runs, and its error when it failed."""
    state = sweep_status(status, tags)
    mode = "min" if goal.lower() == "minimize" else "max"
    cancelled = state == "cancelled"
    indexed = sorted(((trial_index(name, r.name), r) for r in runs), key=lambda item: (item[0] is None, item[0] or 0))
    trials = tuple(_trial(run, index if index is not None else position, _parameters(tags, run.name), metric,
                          cancelled)
                   for position, (index, run) in enumerate(indexed))
    best = _best(trials, properties.get(BEST_TRIAL_PROPERTY), mode)
    # a misspelt objective shows at the first trial that records metrics without it
    misspelt = next((f"the objective {metric!r} is not among the metrics trial {r.name} records "
                     f"({', '.join(r.recorded)}); check the metric's name" for r in runs
                     if r.recorded and metric not in r.recorded), None)
    reason: Optional[str] = None
    if state == "failed":
        reason = error or "the sweep failed on Azure ML (see its logs)"
    elif state == "cancelled":
        reason = "cancelled"
    elif state == "completed" and best is None:
        state = "failed"
        reason = misspelt or (f"no trial recorded a value of {metric!r}" if trials else "the service ran no trial")
    elif state == "running":
        reason = misspelt  # Azure ML runs the sweep on: this package only reads it
    return SweepRecord(name=name, id=id, status=state, reason=reason, metric=metric, mode=mode, arguments=arguments,
                       best=best, trials=trials, raw=raw)
