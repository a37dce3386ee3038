"""A sweep the service holds, in Azure ML's sweep-job shape (sampling algorithm, search space,
objective, limits, early termination), built from :meth:`Experiment.sweep`'s arguments and checked
before anything is sent.

The trial is the caller's job with its parameters named as Azure ML's command names them,
``${{search_space.<name>}}``: the option ``--<name> ${{search_space.<name>}}`` is added to the
script's arguments for each parameter the arguments and variables do not already name. An option
name may hold ``-`` (``batch-size``), which a search-space name may not: its search-space name has
``_`` instead (``${{search_space.batch_size}}``), and results are shown under the caller's name.

Distributions take numbers in the space of the values they draw: :class:`LogUniform(low, high)`
draws from ``[low, high]`` (Azure ML's ``loguniform`` takes ``log(low)``, ``log(high)``: the wire
form is converted), and so does :class:`QLogUniform`. Pure: no I/O.
"""
from __future__ import annotations

import datetime
import math
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from .errors import InvalidSpecError
from .names import check_mode, check_objective, check_seed, check_sweep_name, describe_value
from .sweep_spec import LogUniform, MedianStopping, Uniform

__all__ = ["Choice", "Normal", "LogNormal", "QUniform", "QLogUniform", "QNormal", "QLogNormal", "Randint",
           "BanditPolicy", "MedianStoppingPolicy", "TruncationSelectionPolicy", "SweepRequest", "plan_request",
           "Policy", "Seconds", "SAMPLINGS", "PLACEHOLDER", "MAX_HELD_SWEEP_NAME", "wire_name", "caller_names"]

SAMPLINGS = ("grid", "random", "bayesian")
PLACEHOLDER = re.compile(r"\$\{\{\s*search_space\.([A-Za-z0-9_]+)\s*\}\}")
#: trial jobs are named ``<sweep>-<index>`` (index < 1000) and a job name has at most 64 characters
MAX_HELD_SWEEP_NAME = 54
_OPTION = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}\Z")
_OPTION_OF = re.compile(r"--([A-Za-z][A-Za-z0-9_-]*)[ =]\$\{\{\s*search_space\.([A-Za-z0-9_]+)\s*\}\}")
_MAX_TRIALS = 1000


def _number(value: Any, field: str, form: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidSpecError(field, f"{describe_value(value)} is not a finite number", form)
    return float(value)


def _positive(value: Any, field: str, form: str) -> float:
    number = _number(value, field, form)
    if number <= 0:
        raise InvalidSpecError(field, f"{value!r} is not above 0", form)
    return number


@dataclass(frozen=True)
class Choice:
    """One of ``values`` (numbers or strings): what a plain list of values means."""

    values: Tuple[Union[int, float, str], ...]

    def __init__(self, values: Any) -> None:
        form = "Choice([value, ...]): a non-empty list of distinct numbers or strings"
        if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__iter__"):
            raise InvalidSpecError("values", f"{describe_value(values)} is not a list of values", form)
        items = tuple(values)
        for i, v in enumerate(items):
            if isinstance(v, bool) or not isinstance(v, (int, float, str)) or (
                    isinstance(v, float) and not math.isfinite(v)):
                raise InvalidSpecError(f"values[{i}]", f"{describe_value(v)} is not a finite number or a string", form)
            if isinstance(v, str) and (not v or any(c.isspace() or ord(c) < 32 for c in v)):
                raise InvalidSpecError(f"values[{i}]", f"{v!r} is empty or holds whitespace", form)
        if not items:
            raise InvalidSpecError("values", "is empty", form)
        if len(set(map(repr, items))) != len(items):
            raise InvalidSpecError("values", "holds a value twice", form)
        object.__setattr__(self, "values", items)

    def _wire(self) -> List[Any]:
        return ["choice", [list(self.values)]]


@dataclass(frozen=True)
class Normal:
    """A number drawn from the normal distribution of mean ``mu`` and deviation ``sigma``."""

    mu: float
    sigma: float

    def __post_init__(self) -> None:
        _number(self.mu, "mu", f"{type(self).__name__}(mu, sigma), sigma > 0")
        _positive(self.sigma, "sigma", f"{type(self).__name__}(mu, sigma), sigma > 0")

    def _wire(self) -> List[Any]:
        return [type(self).__name__.lower(), [self.mu, self.sigma]]


@dataclass(frozen=True)
class LogNormal(Normal):
    """``exp(x)``, ``x`` drawn from the normal distribution of mean ``mu`` and deviation ``sigma``."""


@dataclass(frozen=True)
class QNormal:
    """:class:`Normal`, rounded to a multiple of ``q``."""

    mu: float
    sigma: float
    q: float

    def __post_init__(self) -> None:
        form = f"{type(self).__name__}(mu, sigma, q), sigma > 0, q > 0"
        _number(self.mu, "mu", form)
        _positive(self.sigma, "sigma", form)
        _positive(self.q, "q", form)

    def _wire(self) -> List[Any]:
        return [type(self).__name__.lower(), [self.mu, self.sigma, self.q]]


@dataclass(frozen=True)
class QLogNormal(QNormal):
    """:class:`LogNormal`, rounded to a multiple of ``q``."""


@dataclass(frozen=True)
class QUniform:
    """:class:`Uniform`, rounded to a multiple of ``q``."""

    low: float
    high: float
    q: float

    def __post_init__(self) -> None:
        form = f"{type(self).__name__}(low, high, q), low < high, q > 0"
        low, high = _number(self.low, "low", form), _number(self.high, "high", form)
        if not low < high:
            raise InvalidSpecError("high", f"{self.high!r} is not above low ({self.low!r})", form)
        _positive(self.q, "q", form)

    def _wire(self) -> List[Any]:
        return ["quniform", [self.low, self.high, self.q]]


@dataclass(frozen=True)
class QLogUniform(QUniform):
    """:class:`LogUniform` (``low`` and ``high`` are values, not logarithms), rounded to a multiple of ``q``."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.low <= 0:
            raise InvalidSpecError("low", f"{self.low!r} is not positive", "QLogUniform(low, high, q) with 0 < low < high")

    def _wire(self) -> List[Any]:
        return ["qloguniform", [math.log(self.low), math.log(self.high), self.q]]


@dataclass(frozen=True)
class Randint:
    """An integer from ``0`` to ``upper - 1``."""

    upper: int

    def __post_init__(self) -> None:
        if isinstance(self.upper, bool) or not isinstance(self.upper, int) or self.upper < 1:
            raise InvalidSpecError("upper", f"{describe_value(self.upper)} is not an integer >= 1", "Randint(upper)")

    def _wire(self) -> List[Any]:
        return ["randint", [self.upper]]


def _wire_of(value: Any) -> List[Any]:
    if isinstance(value, Uniform):
        return ["uniform", [value.low, value.high]]
    if isinstance(value, LogUniform):
        return ["loguniform", [math.log(value.low), math.log(value.high)]]
    return value._wire()


_DISTRIBUTIONS = (Choice, Uniform, LogUniform, Normal, QNormal, QUniform, Randint)
#: what each sampling takes (Azure ML's rules): grid only choices; Bayesian no normal forms
_TAKES = {"grid": (Choice,), "bayesian": (Choice, Uniform, LogUniform, QUniform, Randint),
          "random": _DISTRIBUTIONS}


def _check_interval(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidSpecError(field, f"{describe_value(value)} is not an integer >= 0", "e.g. 1")
    return value


@dataclass(frozen=True)
class BanditPolicy:
    """Stop a trial whose objective, at an evaluated epoch, is outside the slack of the best trial's:
    below ``best / (1 + slack_factor)`` (above ``best * (1 + slack_factor)`` when minimizing), or
    further than ``slack_amount`` from it. Exactly one of the two."""

    slack_factor: Optional[float] = None
    slack_amount: Optional[float] = None
    evaluation_interval: int = 1
    delay_evaluation: int = 0

    def __post_init__(self) -> None:
        form = "BanditPolicy(slack_factor=0.1) or BanditPolicy(slack_amount=0.05)"
        if (self.slack_factor is None) == (self.slack_amount is None):
            raise InvalidSpecError("slack_factor", "and slack_amount are both set or both missing", form)
        for name in ("slack_factor", "slack_amount"):
            if getattr(self, name) is not None:
                _positive(getattr(self, name), name, form)
        _check_interval(self.evaluation_interval, "evaluation_interval")
        _check_interval(self.delay_evaluation, "delay_evaluation")

    def _wire(self) -> Dict[str, Any]:
        body: Dict[str, Any] = {"policyType": "Bandit", "evaluationInterval": self.evaluation_interval,
                                "delayEvaluation": self.delay_evaluation}
        if self.slack_factor is not None:
            body["slackFactor"] = self.slack_factor
        else:
            body["slackAmount"] = self.slack_amount
        return body


@dataclass(frozen=True)
class MedianStoppingPolicy:
    """Stop a trial whose running average of the objective, at an evaluated epoch, is worse than
    the median of the other trials' running averages."""

    evaluation_interval: int = 1
    delay_evaluation: int = 0

    def __post_init__(self) -> None:
        _check_interval(self.evaluation_interval, "evaluation_interval")
        _check_interval(self.delay_evaluation, "delay_evaluation")

    def _wire(self) -> Dict[str, Any]:
        return {"policyType": "MedianStopping", "evaluationInterval": self.evaluation_interval,
                "delayEvaluation": self.delay_evaluation}


@dataclass(frozen=True)
class TruncationSelectionPolicy:
    """At each evaluated epoch, stop the worst ``truncation_percentage`` percent of the trials."""

    truncation_percentage: int
    evaluation_interval: int = 1
    delay_evaluation: int = 0

    def __post_init__(self) -> None:
        value = self.truncation_percentage
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 99:
            raise InvalidSpecError("truncation_percentage", f"{describe_value(value)} is not an integer from 1 to 99",
                                   "TruncationSelectionPolicy(truncation_percentage=20)")
        _check_interval(self.evaluation_interval, "evaluation_interval")
        _check_interval(self.delay_evaluation, "delay_evaluation")

    def _wire(self) -> Dict[str, Any]:
        return {"policyType": "TruncationSelection", "evaluationInterval": self.evaluation_interval,
                "delayEvaluation": self.delay_evaluation, "truncationPercentage": self.truncation_percentage}


Policy = Union[BanditPolicy, MedianStoppingPolicy, TruncationSelectionPolicy]
#: a duration: seconds, or a ``timedelta``
Seconds = Union[float, datetime.timedelta]
_POLICY_FORM = ("None, BanditPolicy(slack_factor=0.1), MedianStoppingPolicy() or "
                "TruncationSelectionPolicy(truncation_percentage=20)")


def wire_name(option: str) -> str:
    """The search-space name of the option ``option`` (``batch-size`` -> ``batch_size``)."""
    return option.replace("-", "_")


def caller_names(arguments: str) -> Dict[str, str]:
    """search-space name -> the option that carries it, from a trial's arguments."""
    return {wire: option for option, wire in _OPTION_OF.findall(arguments)}


def _seconds(value: Any, field: str) -> Optional[str]:
    """An ISO 8601 duration from seconds or a ``timedelta``; None stays None."""
    if value is None:
        return None
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    seconds = _positive(value, field, "seconds (a number > 0) or a datetime.timedelta, or None")
    return f"PT{int(math.ceil(seconds))}S"


@dataclass(frozen=True)
class SweepRequest:
    """A held sweep, checked: its name, cluster, the trial's arguments (placeholders added), and
    the sweep's properties but the trial (which the place builds from the job it submits)."""

    name: str
    cluster: str
    arguments: str
    properties: Mapping[str, Any]
    metric: str
    mode: str


def _space(parameters: Any, sampling: str) -> Dict[str, List[Any]]:
    form = ("a dict of option name to a list of values or a distribution, e.g. {'lr': LogUniform(1e-4, 1e-1), "
            "'batch-size': [32, 64]}")
    if not isinstance(parameters, Mapping) or not parameters:
        raise InvalidSpecError("parameters", f"{describe_value(parameters)} is not a non-empty dict", form)
    space: Dict[str, List[Any]] = {}
    for name, value in parameters.items():
        if not isinstance(name, str) or not _OPTION.match(name):
            raise InvalidSpecError("parameters", f"{name!r} is not an option name",
                                   "a name like 'lr' or 'batch-size' (letters, digits, '_' or '-', starting with a "
                                   "letter); the trial's script gets it as --<name> <value>")
        field = f"parameters[{name!r}]"
        if not isinstance(value, _DISTRIBUTIONS):
            try:
                value = Choice(value)
            except InvalidSpecError as err:
                raise InvalidSpecError(field, err.problem, err.valid_form) from None
        if not isinstance(value, _TAKES[sampling]):
            takes = ", ".join(c.__name__ for c in _TAKES[sampling])
            raise InvalidSpecError(field, f"{type(value).__name__} cannot be searched by sampling={sampling!r}",
                                   f"one of: a list of values, {takes}")
        wire = wire_name(name)
        if wire in space:
            raise InvalidSpecError(field, f"has the search-space name {wire!r} of another parameter",
                                   "names that differ by more than '-' and '_'")
        space[wire] = _wire_of(value)
    return space


def _placed(arguments: str, variables: Mapping[str, str]) -> set:
    texts = [arguments, *variables.values()]
    return {m for text in texts for m in PLACEHOLDER.findall(text)}


def plan_request(name: str, *, cluster: str, arguments: str, variables: Mapping[str, str], parameters: Any,
                 sampling: Any, num_trials: Any, seed: Any, max_concurrent_trials: Any, metric: Any, mode: Any,
                 early_termination: Any, sweep_timeout: Any, trial_timeout: Any) -> SweepRequest:
    """``Experiment.sweep``'s arguments, checked and in the sweep-job shape."""
    check_sweep_name(name, MAX_HELD_SWEEP_NAME, "'<name>-<n>'")
    if sampling not in SAMPLINGS:
        raise InvalidSpecError("sampling", f"{describe_value(sampling)} is not a sampling", "'grid', 'random' or "
                               "'bayesian'")
    space = _space(parameters, sampling)
    check_objective(metric, "metric the trials record (MLflow or metrics.csv)")
    check_mode(mode)
    check_seed(seed)
    limits: Dict[str, Any] = {"jobLimitsType": "Sweep"}
    if sampling == "grid":
        if num_trials is not None:
            raise InvalidSpecError("num_trials", "is set for a grid, which has one trial per combination",
                                   "None with sampling='grid', or sampling='random' or 'bayesian'")
    elif isinstance(num_trials, bool) or not isinstance(num_trials, int) or not 1 <= num_trials <= _MAX_TRIALS:
        raise InvalidSpecError("num_trials", f"{describe_value(num_trials)} is not an integer from 1 to {_MAX_TRIALS}",
                               f"how many trials {sampling} sampling draws, e.g. num_trials=8")
    else:
        limits["maxTotalTrials"] = num_trials
    if isinstance(max_concurrent_trials, bool) or not isinstance(max_concurrent_trials, int) or \
            max_concurrent_trials < 1:
        raise InvalidSpecError("max_concurrent_trials", f"{describe_value(max_concurrent_trials)} is not an integer "
                               ">= 1", "e.g. 2")
    limits["maxConcurrentTrials"] = max_concurrent_trials
    for field, value, key in (("sweep_timeout", sweep_timeout, "timeout"), ("trial_timeout", trial_timeout,
                                                                             "trialTimeout")):
        duration = _seconds(value, field)
        if duration is not None:
            limits[key] = duration
    if isinstance(early_termination, MedianStopping):  # the earlier rule, as the service's median policy
        if early_termination.min_trials != MedianStopping().min_trials:
            raise InvalidSpecError("early_stopping.min_trials", f"{early_termination.min_trials} is not what the "
                                   "service's median policy does (it compares with every trial at that epoch)",
                                   "MedianStopping(min_epochs=...) or MedianStoppingPolicy(delay_evaluation=...)")
        early_termination = MedianStoppingPolicy(delay_evaluation=early_termination.min_epochs - 1)
    if early_termination is not None and not isinstance(early_termination, (BanditPolicy, MedianStoppingPolicy,
                                                                              TruncationSelectionPolicy)):
        raise InvalidSpecError("early_termination", f"{describe_value(early_termination)} is not a policy",
                               _POLICY_FORM)
    placed = _placed(arguments, variables)
    unknown = sorted(placed - set(space))
    if unknown:
        raise InvalidSpecError("spec.arguments", f"names ${{{{search_space.{unknown[0]}}}}}, which is not a "
                               "parameter", f"parameters among: {', '.join(sorted(space))}")
    added = " ".join(f"--{option} ${{{{search_space.{wire_name(option)}}}}}" for option in parameters
                     if wire_name(option) not in placed)
    sampling_body: Dict[str, Any] = {"samplingAlgorithmType": sampling.capitalize()}
    if seed is not None:
        sampling_body["seed"] = seed
    properties: Dict[str, Any] = {
        "samplingAlgorithm": sampling_body, "searchSpace": space,
        "objective": {"primaryMetric": metric, "goal": "maximize" if mode == "max" else "minimize"},
        "limits": limits}
    if early_termination is not None:
        properties["earlyTermination"] = early_termination._wire()
    return SweepRequest(name=name, cluster=cluster, arguments=f"{arguments} {added}".strip(), properties=properties,
                        metric=metric, mode=mode)
