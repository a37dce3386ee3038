"""A sweep request, checked: Azure ML's sweep-job shape (``samplingAlgorithm``, ``searchSpace``,
``objective``, ``limits``, ``earlyTermination``) around a Batch AI job's properties as the trial.

The trial is a job's ``properties`` as a job PUT takes them. Its toolkit settings (e.g.
``horovodSettings.commandLineArgs``) and its ``environmentVariables`` values may name parameters
as Azure ML's command does, ``${{search_space.<name>}}``: each trial gets its values there, quoted
for the shell in command lines (a value the shell reads as itself is left bare), as they are in
environment variables. Every trial also gets an output directory of its own,
``$AZ_BATCHAI_OUTPUT_TRIAL`` (id ``TRIAL``, beside its ``stdouterr``), which the ``training``
package writes its results into instead of a fixed ``--dir``.

Everything is checked here before anything is stored, the trial by the job parser itself (with a
sample of the parameters filled in), so a sweep that is accepted has trials the service can submit.
"""
from __future__ import annotations

import copy
import json
import re
import shlex
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ...core.arm_errors import ArmError, InvalidParameter, InvalidRequestContent, MissingRequiredProperty
from ...core.durations import format_duration, parse_duration
from ...tracking.runs import SWEEP_NAME_VARIABLE, TRIAL_INDEX_VARIABLE, TRIAL_PARAMETERS_VARIABLE
from ..validation import TOOLKITS, Parsed, parse_job_create
from .policies import BANDIT, POLICIES, TRUNCATION, Policy
from .sampling import ALGORITHMS, BAYESIAN, BAYESIAN_DISTRIBUTIONS, GRID, GRID_DISTRIBUTIONS, planned_trials
from .search_space import Parameter, parse_search_space, random_point

__all__ = ["SweepSpec", "parse_sweep_create", "spec_of", "stored_properties", "fill_trial", "trial_job_body",
           "TRIAL_VARIABLES",
           "TRIAL_OUTPUT_ID", "PLACEHOLDER", "MAX_NAME"]

#: the id of each trial's own output directory: ``$AZ_BATCHAI_OUTPUT_TRIAL`` on its nodes.
TRIAL_OUTPUT_ID = "TRIAL"
#: what a trial's job is told of its sweep (the service's: a trial that declares one is refused)
TRIAL_VARIABLES = (SWEEP_NAME_VARIABLE, TRIAL_INDEX_VARIABLE, TRIAL_PARAMETERS_VARIABLE)
PLACEHOLDER = re.compile(r"\$\{\{\s*search_space\.([A-Za-z0-9_]+)\s*\}\}")
#: the longest sweep name: trial jobs are named <sweep>-<index> and a job name is at most 64 long.
MAX_NAME = 54
#: the most trials one sweep may ask for.
MAX_TRIALS = 1000


@dataclass(frozen=True)
class SweepSpec:
    """A sweep's settings, as the driver reads them."""

    algorithm: str
    seed: Optional[int]
    space: list[Parameter]
    metric: str
    maximize: bool
    max_total: int
    max_concurrent: int
    timeout_s: Optional[float]
    trial_timeout_s: Optional[float]
    policy: Optional[Policy]
    #: the trial job's properties, placeholders and all.
    trial: dict[str, Any]


def _object(props: dict[str, Any], key: str, *, required: bool = True) -> dict[str, Any]:
    value = props.get(key)
    if value is None and not required:
        return {}
    if value is None:
        raise MissingRequiredProperty(f"The property 'properties.{key}' is required.", target=f"properties.{key}")
    if not isinstance(value, dict):
        raise InvalidParameter(f"The property 'properties.{key}' must be an object.", target=f"properties.{key}")
    return value


def _int(raw: dict[str, Any], key: str, where: str, *, minimum: int, maximum: int,
         default: Optional[int]) -> Optional[int]:
    value = raw.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise InvalidParameter(f"The property '{where}.{key}' must be an integer from {minimum} to {maximum}; "
                               f"got {value!r}.", target=f"{where}.{key}")
    return value


def _float(raw: dict[str, Any], key: str, where: str) -> float:
    value = raw.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise InvalidParameter(f"The property '{where}.{key}' must be a number >= 0; got {value!r}.",
                               target=f"{where}.{key}")
    return float(value)


def _duration(raw: dict[str, Any], key: str) -> Optional[float]:
    value = raw.get(key)
    if value is None:
        return None
    seconds = parse_duration(value) if isinstance(value, str) else None
    if seconds is None or seconds <= 0:
        raise InvalidParameter(f"The property 'properties.limits.{key}' must be an ISO 8601 duration such as "
                               f"'PT1H'; got {value!r}.", target=f"properties.limits.{key}")
    return seconds


def _choose(value: Any, valid: tuple[str, ...], where: str) -> str:
    for name in valid:
        if isinstance(value, str) and value.lower() == name.lower():
            return name
    raise InvalidParameter(f"The property '{where}' must be one of {', '.join(valid)}; got {value!r}.", target=where)


def _policy(raw: dict[str, Any]) -> Optional[Policy]:
    if not raw:
        return None
    where = "properties.earlyTermination"
    kind = _choose(raw.get("policyType"), POLICIES, f"{where}.policyType")
    policy = Policy(kind, evaluation_interval=_int(raw, "evaluationInterval", where, minimum=0, maximum=10**6,
                                                   default=0) or 0,
                    delay_evaluation=_int(raw, "delayEvaluation", where, minimum=0, maximum=10**6, default=0) or 0,
                    slack_factor=_float(raw, "slackFactor", where) if kind == BANDIT else 0.0,
                    slack_amount=_float(raw, "slackAmount", where) if kind == BANDIT else 0.0,
                    truncation_percentage=(_int(raw, "truncationPercentage", where, minimum=1, maximum=99, default=None)
                                           or 0) if kind == TRUNCATION else 0)
    if kind == BANDIT and (policy.slack_factor > 0) == (policy.slack_amount > 0):
        raise InvalidParameter("A Bandit policy takes exactly one of 'slackFactor' and 'slackAmount' (> 0).",
                               target=where)
    if kind == TRUNCATION and not policy.truncation_percentage:
        raise MissingRequiredProperty("A TruncationSelection policy needs 'truncationPercentage' (1 to 99).",
                                      target=f"{where}.truncationPercentage")
    return policy


def _each_string(node: Any, path: str, visit: Callable[[str, str], str]) -> Any:
    """``node`` with every string replaced by ``visit(string, its path)``."""
    if isinstance(node, dict):
        return {k: _each_string(v, f"{path}.{k}", visit) for k, v in node.items()}
    if isinstance(node, list):
        return [_each_string(v, f"{path}[{i}]", visit) for i, v in enumerate(node)]
    return visit(node, path) if isinstance(node, str) else node


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def fill_trial(trial: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """The trial's properties with ``values`` in place of its placeholders."""
    def in_command(text: str, path: str) -> str:
        return PLACEHOLDER.sub(lambda m: shlex.quote(_shown(values[m.group(1)])), text)

    def in_variable(text: str, path: str) -> str:
        return PLACEHOLDER.sub(lambda m: _shown(values[m.group(1)]), text)

    filled = copy.deepcopy(trial)
    for toolkit in TOOLKITS:
        if toolkit in filled:
            filled[toolkit] = _each_string(filled[toolkit], toolkit, in_command)
    if isinstance(filled.get("environmentVariables"), list):
        filled["environmentVariables"] = _each_string(filled["environmentVariables"], "", in_variable)
    return filled


def _check_placeholders(trial: dict[str, Any], names: set[str]) -> None:
    def visit(text: str, path: str) -> str:
        for m in PLACEHOLDER.finditer(text):
            where = f"properties.trial{path}"
            top = path.lstrip(".").split(".")[0].split("[")[0]
            if top not in TOOLKITS and top != "environmentVariables":
                raise InvalidParameter(f"The property '{where}' names {m.group(0)}: parameters go only in the "
                                       "trial's toolkit settings and environmentVariables.", target=where)
            if m.group(1) not in names:
                raise InvalidParameter(f"The property '{where}' names {m.group(0)}, which is not in the search space "
                                       f"({', '.join(sorted(names))}).", target=where)
        return text
    _each_string(trial, "", visit)


def trial_job_body(spec: SweepSpec, values: dict[str, Any], *, sweep: str = "", index: int = 0) -> dict[str, Any]:
    """A trial's job PUT body: the trial with ``values`` filled in, its own output directory, the
    trial timeout as its wall-clock limit, and variables naming its sweep, its number and its values
    (which the job's MLflow run carries as tags)."""
    props = fill_trial(spec.trial, values)
    props["environmentVariables"] = [*(props.get("environmentVariables") or []),
                                     {"name": SWEEP_NAME_VARIABLE, "value": sweep},
                                     {"name": TRIAL_INDEX_VARIABLE, "value": str(index)},
                                     {"name": TRIAL_PARAMETERS_VARIABLE,
                                      "value": json.dumps(values, separators=(",", ":"), sort_keys=True)}]
    prefix = props.get("stdOutErrPathPrefix") or "$AZ_BATCHAI_SHARED_JOB_TEMP"
    props["outputDirectories"] = [*(props.get("outputDirectories") or []),
                                  {"id": TRIAL_OUTPUT_ID, "pathPrefix": prefix}]
    if spec.trial_timeout_s is not None:
        props["constraints"] = {**(props.get("constraints") or {}),
                                "maxWallClockTime": format_duration(spec.trial_timeout_s)}
    return {"properties": props}


def _parse_trial_job(spec: SweepSpec, values: dict[str, Any]) -> Parsed:
    """A trial's job, checked as a job PUT is; errors name the sweep's property."""
    try:
        return parse_job_create(trial_job_body(spec, values))
    except ArmError as err:
        if err.target and err.target.startswith("properties"):
            err.target = "properties.trial" + err.target[len("properties"):]
        err.message = err.message.replace("'properties.", "'properties.trial.")
        raise


def spec_of(props: dict[str, Any]) -> SweepSpec:
    """The settings of a sweep's properties (a request's, or as stored), checked."""
    sampling = _object(props, "samplingAlgorithm")
    algorithm = _choose(sampling.get("samplingAlgorithmType"), ALGORITHMS,
                        "properties.samplingAlgorithm.samplingAlgorithmType")
    seed = _int(sampling, "seed", "properties.samplingAlgorithm", minimum=0, maximum=2**31 - 1, default=None)
    space = parse_search_space(props.get("searchSpace"))
    allowed = {GRID: GRID_DISTRIBUTIONS, BAYESIAN: BAYESIAN_DISTRIBUTIONS}.get(algorithm)
    for p in space:
        if allowed is not None and p.distribution not in allowed:
            raise InvalidParameter(f"{algorithm} sampling cannot draw from {p.distribution} (parameter '{p.name}'); "
                                   f"it takes {', '.join(allowed)}.", target=f"properties.searchSpace.{p.name}")
    objective = _object(props, "objective")
    metric = objective.get("primaryMetric")
    if not isinstance(metric, str) or not metric.strip():
        raise MissingRequiredProperty("The property 'properties.objective.primaryMetric' must name the metric the "
                                      "trials record (a column of their metrics.csv).",
                                      target="properties.objective.primaryMetric")
    goal = _choose(objective.get("goal"), ("maximize", "minimize"), "properties.objective.goal")
    limits = _object(props, "limits", required=False)
    planned = planned_trials(algorithm, space)
    max_total = _int(limits, "maxTotalTrials", "properties.limits", minimum=1, maximum=MAX_TRIALS, default=planned)
    if max_total is None:
        raise MissingRequiredProperty(f"{algorithm} sampling has no end of its own: set "
                                      "'properties.limits.maxTotalTrials'.", target="properties.limits.maxTotalTrials")
    max_concurrent = _int(limits, "maxConcurrentTrials", "properties.limits", minimum=1, maximum=MAX_TRIALS,
                          default=max_total)
    trial = props.get("trial")
    if not isinstance(trial, dict):
        raise MissingRequiredProperty("The property 'properties.trial' must be a job's properties, as a job PUT "
                                      "takes them.", target="properties.trial")
    if any(isinstance(d, dict) and str(d.get("id", "")).upper() == TRIAL_OUTPUT_ID
           for d in trial.get("outputDirectories") or []):
        raise InvalidParameter(f"The output directory id '{TRIAL_OUTPUT_ID}' is the service's: each trial gets it "
                               "as its own output directory.", target="properties.trial.outputDirectories")
    declared = [v.get("name") for v in trial.get("environmentVariables") or [] if isinstance(v, dict)]
    taken = [name for name in TRIAL_VARIABLES if name in declared]
    if taken:
        raise InvalidParameter(f"The environment variable '{taken[0]}' is the service's: each trial gets it, naming "
                               "its sweep, its number and its values.", target="properties.trial.environmentVariables")
    _check_placeholders(trial, {p.name for p in space})
    return SweepSpec(algorithm=algorithm, seed=seed, space=space, metric=metric.strip(), maximize=goal == "maximize",
                     max_total=max_total, max_concurrent=max_concurrent or max_total,
                     timeout_s=_duration(limits, "timeout"), trial_timeout_s=_duration(limits, "trialTimeout"),
                     policy=_policy(_object(props, "earlyTermination", required=False)), trial=trial)


def parse_sweep_create(body: Any) -> tuple[SweepSpec, Parsed]:
    """A sweep PUT's settings, and its first trial's job as the job parser reads it (the caller checks
    its cluster); the stored properties are :func:`stored_properties`."""
    if not isinstance(body, dict) or not isinstance(body.get("properties"), dict):
        raise InvalidRequestContent("The request body must be {\"properties\": {...}}: a sweep's samplingAlgorithm, "
                                    "searchSpace, objective, limits, earlyTermination and trial.")
    spec = spec_of(body["properties"])
    sample = random_point(spec.space, spec.seed, 0)
    return spec, _parse_trial_job(spec, sample)


def stored_properties(spec: SweepSpec, request: dict[str, Any]) -> dict[str, Any]:
    """The request's settings as the sweep answers them: the names Azure ML uses, defaults filled in."""
    props = request["properties"]
    sampling: dict[str, Any] = {"samplingAlgorithmType": spec.algorithm}
    if spec.seed is not None:
        sampling["seed"] = spec.seed
    limits: dict[str, Any] = {"jobLimitsType": "Sweep", "maxTotalTrials": spec.max_total,
                              "maxConcurrentTrials": spec.max_concurrent}
    if spec.timeout_s is not None:
        limits["timeout"] = format_duration(spec.timeout_s)
    if spec.trial_timeout_s is not None:
        limits["trialTimeout"] = format_duration(spec.trial_timeout_s)
    out: dict[str, Any] = {"samplingAlgorithm": sampling, "searchSpace": props["searchSpace"],
                           "objective": {"primaryMetric": spec.metric,
                                         "goal": "maximize" if spec.maximize else "minimize"},
                           "limits": limits}
    if spec.policy is not None:
        p = spec.policy
        policy: dict[str, Any] = {"policyType": p.kind, "evaluationInterval": p.evaluation_interval,
                                  "delayEvaluation": p.delay_evaluation}
        if p.kind == BANDIT:
            policy.update({"slackFactor": p.slack_factor, "slackAmount": p.slack_amount})
        elif p.kind == TRUNCATION:
            policy["truncationPercentage"] = p.truncation_percentage
        out["earlyTermination"] = policy
    out["trial"] = spec.trial
    return out
