"""What a sweep is made of, checked before any job is submitted: the parameter space, the sampling
that turns it into trial configurations, the early-stopping rule, and the definition every trial
job carries so that another process can find the sweep again.
"""
from __future__ import annotations

import itertools
import json
import math
import random
import re
import shlex
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from .errors import InvalidSpecError
from .names import check_mode, check_objective, check_seed, check_sweep_name, describe_value

__all__ = ["Uniform", "LogUniform", "MedianStopping", "SweepDefinition", "trial_arguments", "trial_name",
           "SWEEP_VARIABLE", "TRIAL_VARIABLE", "MAX_TRIALS", "MAX_SWEEP_NAME"]

#: the environment variables of a trial job that carry its sweep's definition and its own number
SWEEP_VARIABLE = "HOROVOD_BATCHAI_SWEEP"
TRIAL_VARIABLE = "HOROVOD_BATCHAI_TRIAL"
#: a sweep's definition travels in each trial's environment, which the job's limits bound
MAX_TRIALS = 1000
_TRIAL_DIGITS = 3
#: trial names are '<sweep>-<3 digits>', and job names have at most 64 characters
MAX_SWEEP_NAME = 64 - 1 - _TRIAL_DIGITS
_PARAMETER = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}\Z")
_SAMPLINGS = ("grid", "random")

Value = Union[int, float, str]


@dataclass(frozen=True)
class Uniform:
    """Random sampling: a number drawn uniformly from ``[low, high]``."""

    low: float
    high: float

    def __post_init__(self) -> None:
        _check_range(self, "Uniform")

    def draw(self, rng: random.Random) -> float:
        """A value drawn uniformly from ``[low, high]``.

        :param random.Random rng: the sweep's random generator.
        :returns: the value."""
        return rng.uniform(self.low, self.high)


@dataclass(frozen=True)
class LogUniform:
    """Random sampling: a number whose logarithm is uniform in ``[log(low), log(high)]`` -- the
    usual choice for learning rates."""

    low: float
    high: float

    def __post_init__(self) -> None:
        _check_range(self, "LogUniform")
        if self.low <= 0:
            raise InvalidSpecError("low", f"{self.low!r} is not positive", "LogUniform(low, high) with 0 < low < high")

    def draw(self, rng: random.Random) -> float:
        """A value whose logarithm is drawn uniformly from ``[log(low), log(high)]``.

        :param random.Random rng: the sweep's random generator.
        :returns: the value."""
        return math.exp(rng.uniform(math.log(self.low), math.log(self.high)))


Distribution = Union[Uniform, LogUniform]


def _check_range(dist: Any, kind: str) -> None:
    for name in ("low", "high"):
        value = getattr(dist, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise InvalidSpecError(name, f"{describe_value(value)} is not a finite number", f"{kind}(low, high)")
    if not dist.low < dist.high:
        raise InvalidSpecError("high", f"{dist.high!r} is not above low ({dist.low!r})", f"{kind}(low, high), low < high")


@dataclass(frozen=True)
class MedianStopping:
    """Stop a trial whose metric at an epoch is worse than the median of the other trials at that
    epoch (below it for ``mode='max'``, above it for ``'min'``).

    A trial is judged from ``min_epochs`` on, and only against at least ``min_trials`` other
    trials that have reached the same epoch.
    """

    min_epochs: int = 1
    min_trials: int = 2

    def __post_init__(self) -> None:
        for name in ("min_epochs", "min_trials"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidSpecError(name, f"{describe_value(value)} is not an integer >= 1",
                                       "MedianStopping(min_epochs=1, min_trials=2)")

    def should_stop(self, value: Optional[float], epoch: int, others: Sequence[float], mode: str) -> bool:
        """Whether a trial with ``value`` at ``epoch`` stops, given the others' values at that epoch.

        :param value: the trial's value of the metric at ``epoch`` (None: not recorded).
        :param int epoch: the epoch.
        :param others: the other trials' values at that epoch.
        :param str mode: ``'max'`` or ``'min'``.
        :returns: True when the trial stops."""
        if value is None or epoch < self.min_epochs or len(others) < self.min_trials:
            return False
        ordered = sorted(others)
        middle = len(ordered) // 2
        median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
        return value < median if mode == "max" else value > median


def _check_value(value: Any, field: str) -> Value:
    form = "numbers or strings without whitespace or control characters"
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InvalidSpecError(field, f"{describe_value(value)} is not a number or a string", form)
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidSpecError(field, f"{value!r} is not a finite number", form)
    if isinstance(value, str) and (not value or any(c.isspace() or ord(c) < 32 for c in value)):
        raise InvalidSpecError(field, f"{value!r} is empty or holds whitespace", form)
    return value


def _check_space(parameters: Any, sampling: str) -> Dict[str, Union[List[Value], Distribution]]:
    form = ("a dict of option name to a list of values, e.g. {'lr': [0.001, 0.0001], 'batch-size': [32, 64]}"
            + ("; random sampling also takes Uniform(low, high) or LogUniform(low, high)" if sampling == "random" else ""))
    if not isinstance(parameters, Mapping) or not parameters:
        raise InvalidSpecError("parameters", f"{describe_value(parameters)} is not a non-empty dict", form)
    space: Dict[str, Union[List[Value], Distribution]] = {}
    for name, values in parameters.items():
        if not isinstance(name, str) or not _PARAMETER.match(name):
            raise InvalidSpecError("parameters", f"{name!r} is not an option name",
                                   "a name like 'lr' or 'batch-size' (letters, digits, '_' or '-', starting with a "
                                   "letter); the trial's script gets it as --<name> <value>")
        field = f"parameters[{name!r}]"
        if isinstance(values, (Uniform, LogUniform)):
            if sampling != "random":
                raise InvalidSpecError(field, f"{type(values).__name__} cannot be searched by a grid",
                                       "a list of values, or sampling='random'")
            space[name] = values
            continue
        if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__iter__"):
            raise InvalidSpecError(field, f"{describe_value(values)} is not a list of values", form)
        checked = [_check_value(v, f"{field}[{i}]") for i, v in enumerate(values)]
        if not checked:
            raise InvalidSpecError(field, "is empty", form)
        if len(set(map(repr, checked))) != len(checked):
            raise InvalidSpecError(field, "holds a value twice", "distinct values")
        space[name] = checked
    return space


def _encode_space(space: Mapping[str, Union[List[Value], Distribution]]) -> Dict[str, Any]:
    return {name: ({"uniform": [v.low, v.high]} if isinstance(v, Uniform)
                   else {"loguniform": [v.low, v.high]} if isinstance(v, LogUniform) else list(v))
            for name, v in space.items()}


def _decode_space(data: Mapping[str, Any]) -> Dict[str, Union[List[Value], Distribution]]:
    space: Dict[str, Union[List[Value], Distribution]] = {}
    for name, value in data.items():
        if isinstance(value, dict) and "uniform" in value:
            space[name] = Uniform(*value["uniform"])
        elif isinstance(value, dict) and "loguniform" in value:
            space[name] = LogUniform(*value["loguniform"])
        else:
            space[name] = list(value)
    return space


def _round(value: float) -> float:
    """A drawn number with 6 significant digits: what a command line and a table can show exactly."""
    return float(f"{value:.6g}")


def trial_name(sweep: str, index: int) -> str:
    return f"{sweep}-{index:0{_TRIAL_DIGITS}d}"


def trial_arguments(base: str, parameters: Mapping[str, Value]) -> str:
    """``base`` followed by ``--name value`` for each parameter, quoted for the node's shell."""
    options = " ".join(f"--{name} {shlex.quote(_text(value))}" for name, value in parameters.items())
    return f"{base} {options}".strip()


def _text(value: Value) -> str:
    return repr(value) if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class SweepDefinition:
    """A sweep as its trials carry it: every trial's parameters, and how results are judged."""

    name: str
    cluster: str
    base_arguments: str
    metric: str
    mode: str
    max_concurrent_trials: int
    sampling: str
    seed: Optional[int]
    space: Mapping[str, Any]
    trials: tuple  # tuple of dicts: the parameters of trial 0, 1, ...
    median_stopping: Optional[MedianStopping] = None

    @classmethod
    def build(cls, name: Any, *, cluster: str, base_arguments: str, parameters: Any, sampling: Any,
              num_trials: Any, seed: Any, metric: Any, mode: Any, max_concurrent_trials: Any,
              early_stopping: Any) -> "SweepDefinition":
        check_sweep_name(name, MAX_SWEEP_NAME, "'<name>-000'")
        if sampling not in _SAMPLINGS:
            raise InvalidSpecError("sampling", f"{sampling!r} is not a sampling", "'grid' or 'random'")
        space = _check_space(parameters, sampling)
        check_objective(metric, "column of the trials' metrics.csv")
        check_mode(mode)
        check_seed(seed)
        for field, value in (("max_concurrent_trials", max_concurrent_trials),):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidSpecError(field, f"{describe_value(value)} is not an integer >= 1", "e.g. 2")
        if early_stopping is not None and not isinstance(early_stopping, MedianStopping):
            raise InvalidSpecError("early_stopping", f"{describe_value(early_stopping)} is not a stopping rule",
                                   "None (the default) or MedianStopping(min_epochs=1, min_trials=2)")
        if sampling == "grid":
            if num_trials is not None:
                raise InvalidSpecError("num_trials", "is set for a grid, which has one trial per combination",
                                       "None with sampling='grid', or sampling='random'")
            lists = [v for v in space.values() if isinstance(v, list)]
            trials = [dict(zip(space, combo)) for combo in itertools.product(*lists)]
        else:
            if isinstance(num_trials, bool) or not isinstance(num_trials, int) or num_trials < 1:
                raise InvalidSpecError("num_trials", f"{describe_value(num_trials)} is not an integer >= 1",
                                       "how many configurations random sampling draws, e.g. num_trials=8")
            seed = 0 if seed is None else seed  # seeded always, so the same call draws the same trials
            rng = random.Random(seed)
            trials = [{n: (_round(v.draw(rng)) if isinstance(v, (Uniform, LogUniform)) else rng.choice(v))
                       for n, v in space.items()} for _ in range(num_trials)]
        if len(trials) > MAX_TRIALS:
            raise InvalidSpecError("parameters", f"make {len(trials)} trials", f"at most {MAX_TRIALS} trials per sweep")
        return cls(name=name, cluster=cluster, base_arguments=base_arguments, metric=metric, mode=mode,
                   max_concurrent_trials=max_concurrent_trials, sampling=sampling, seed=seed,
                   space=_encode_space(space), trials=tuple(trials), median_stopping=early_stopping)

    def to_json(self) -> str:
        return json.dumps({
            "name": self.name, "cluster": self.cluster, "base_arguments": self.base_arguments,
            "metric": self.metric, "mode": self.mode, "max_concurrent_trials": self.max_concurrent_trials,
            "sampling": self.sampling, "seed": self.seed, "space": dict(self.space), "trials": list(self.trials),
            "median_stopping": None if self.median_stopping is None else {
                "min_epochs": self.median_stopping.min_epochs, "min_trials": self.median_stopping.min_trials},
        }, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "SweepDefinition":
        data = json.loads(text)
        stopping = data.get("median_stopping")
        _decode_space(data["space"])  # fails loudly on a definition this version cannot read
        return cls(name=data["name"], cluster=data["cluster"], base_arguments=data["base_arguments"],
                   metric=data["metric"], mode=data["mode"], max_concurrent_trials=data["max_concurrent_trials"],
                   sampling=data["sampling"], seed=data["seed"], space=data["space"],
                   trials=tuple(data["trials"]), median_stopping=MedianStopping(**stopping) if stopping else None)
