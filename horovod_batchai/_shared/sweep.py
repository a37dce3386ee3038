"""What a sweep decides without a request, for the sync and the aio Sweep alike: its state, its
trials and their results, the best trial, and the trial jobs a definition makes."""
from __future__ import annotations

import enum
import logging
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar

from azure.core.exceptions import AzureError

from .._models.errors import ConflictError, HorovodBatchAIError, InvalidSpecError, NotFoundError, WaitTimeoutError
from .._models.html import html_table
from .._models.names import check_mode
from .._models.states import ExecutionState
from .._models.sweep_spec import SWEEP_VARIABLE, TRIAL_VARIABLE, SweepDefinition, trial_arguments, trial_name
from .metrics import MetricsTable, best_of, format_number, json_records, text_table

if TYPE_CHECKING:
    from .._models.job_spec import HorovodJob
    from .job import JobBase

log = logging.getLogger(__name__)

__all__ = ["AnyJob", "BestOf", "SweepBase", "SweepResults", "SweepState", "TERMINATE_PATIENCE_S", "Trial", "TrialResult",
           "sweeps_in", "trial_spec", "check_no_sweep_variables"]


#: a sync or an aio Job
AnyJob = TypeVar("AnyJob", bound="JobBase")


_TERMINATED = "JobTerminated"  # the error code a terminated job ends with


#: how long the stopping rule lets a trial's termination run before asking the service again
TERMINATE_PATIENCE_S = 60.0


class SweepState(str, enum.Enum):
    """Where a sweep stands."""

    RUNNING = "running"        #: trials run, or wait for this process to submit them
    STOPPED = "stopped"        #: trials not submitted yet and none running: continue with resume(spec)
    SUCCEEDED = "succeeded"    #: every trial ended, none failed (trials stopped early or terminated count as ended)
    COMPLETED = "completed"    #: a sweep the service held ended, and a trial recorded the objective
    FAILED = "failed"          #: every trial ended, and at least one failed
    CANCELLED = "cancelled"    #: cancel() ended it

    def is_terminal(self) -> bool:
        """True once the sweep has ended (any state but running).

        :returns: whether the sweep has ended."""
        return self is not SweepState.RUNNING


def trial_spec(base: "HorovodJob", definition: SweepDefinition, index: int) -> "HorovodJob":
    """The job of trial ``index``: ``base`` with the trial's options after its arguments and the
    sweep's definition in its environment."""
    variables = {**base.environment_variables, SWEEP_VARIABLE: definition.to_json(), TRIAL_VARIABLE: str(index)}
    return base.replace(arguments=trial_arguments(base.arguments, definition.trials[index]),
                        environment_variables=variables)


def _definition_of(job: "JobBase") -> Optional[Tuple[SweepDefinition, int]]:
    record = job._record
    if record is None:
        return None
    try:
        variables = record.read_spec().environment_variables
        text, index = variables.get(SWEEP_VARIABLE), variables.get(TRIAL_VARIABLE)
        if text is None or index is None:
            return None
        return SweepDefinition.from_json(text), int(index)
    except (ValueError, KeyError, TypeError):  # another program's variable of the same name
        return None


def sweeps_in(jobs: Sequence[AnyJob]) -> Dict[str, Tuple[SweepDefinition, Dict[int, AnyJob]]]:
    """The sweeps whose trials are among ``jobs`` (sync or aio ones): name -> (definition, trial
    jobs by index)."""
    found: Dict[str, Tuple[SweepDefinition, Dict[int, AnyJob]]] = {}
    for job in jobs:
        carried = _definition_of(job)
        if carried is None:
            continue
        definition, index = carried
        if not 0 <= index < len(definition.trials) or job.name != trial_name(definition.name, index):
            continue
        known = found.setdefault(definition.name, (definition, {}))
        known[1][index] = job
    return found


@dataclass(frozen=True)
class Trial:
    """One configuration of a sweep and its job (None until submitted)."""

    index: int
    name: str
    parameters: Mapping[str, Any]
    #: pending (not submitted yet), queued, running, terminating, succeeded, failed, terminated,
    #: stopped early (by the stopping rule) or cancelled (never submitted, the sweep was cancelled)
    status: str
    job: Optional["JobBase"]
    #: why it failed, was stopped or cancelled, when the service says (None otherwise)
    reason: Optional[str] = None


@dataclass(frozen=True)
class TrialResult:
    trial: Trial
    epochs: int
    final: Optional[float]
    best: Optional[float]
    metrics: Optional[MetricsTable]


class SweepResults:
    """A sweep's results: one row per trial -- its parameters, status, epochs, and the final and
    best value of the sweep's metric. In Jupyter it shows as a table."""

    def __init__(self, sweep: str, metric: str, mode: str, state: SweepState, parameters: Sequence[str],
                 results: Sequence[TrialResult], *, best_trial: Optional[str] = None) -> None:
        self.sweep = sweep
        self.metric = metric
        self.mode = mode
        self.state = state
        self.parameters = tuple(parameters)
        self.results = tuple(results)
        self._best_trial = best_trial  # the service's pick, for a sweep it holds

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self):
        return iter(self.results)

    @property
    def columns(self) -> Tuple[str, ...]:
        """The table's columns: ``trial``, the parameters, ``status``, ``reason`` (why a trial failed,
        was stopped or cancelled), ``epochs``, ``final_<metric>``, ``best_<metric>``."""
        return ("trial", *self.parameters, "status", "reason", "epochs", f"final_{self.metric}", f"best_{self.metric}")

    def to_records(self) -> List[Dict[str, Any]]:
        """One dict per trial, keyed by :attr:`columns`.

        :returns: a list of dicts."""
        return [{"trial": r.trial.name, **{p: r.trial.parameters.get(p) for p in self.parameters},
                 "status": r.trial.status, "reason": r.trial.reason, "epochs": r.epochs, f"final_{self.metric}": r.final,
                 f"best_{self.metric}": r.best} for r in self.results]

    def best(self) -> Optional[TrialResult]:
        """The trial with the best value of the metric (None when no trial recorded it).

        :returns: the :class:`TrialResult`, or None."""
        if self._best_trial is not None:
            return next((r for r in self.results if r.trial.name == self._best_trial), None)
        scored = [r for r in self.results if r.best is not None]
        if not scored:
            return None
        pick = max if self.mode == "max" else min
        return pick(scored, key=lambda r: r.best)  # type: ignore[arg-type,return-value]

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` of :meth:`to_records`, indexed by trial (pandas: the ``notebook`` extra).

        :returns: a ``pandas.DataFrame``.
        :raises MissingDependencyError: when pandas is not installed."""
        from .._models.errors import import_optional
        pandas = import_optional("pandas", "SweepResults.to_pandas()")
        return pandas.DataFrame.from_records(self.to_records(), columns=list(self.columns)).set_index("trial")

    def to_dict(self) -> Dict[str, Any]:
        """``{"sweep", "state", "metric", "mode", "bestTrial", "trials"}``, each trial ``{"name",
        "parameters", "status", "reason", "epochs", "final", "best"}`` (the objective's last and best
        value): camelCase keys, as the CLI's JSON.

        :returns: a dict of JSON values."""
        best = self.best()
        trials = [{"name": r.trial.name, "parameters": dict(r.trial.parameters), "status": r.trial.status,
                   "reason": r.trial.reason, "epochs": r.epochs, "final": r.final, "best": r.best} for r in self.results]
        return {"sweep": self.sweep, "state": self.state.value, "metric": self.metric, "mode": self.mode,
                "bestTrial": best.trial.name if best else None, "trials": json_records(trials)}

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text.

        :returns: the JSON text."""
        import json
        return json.dumps(self.to_dict())

    def to_csv(self) -> str:
        """The table as CSV: a header of :attr:`columns`, then one line per trial.

        :returns: the CSV text."""
        import csv
        import io
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.columns)
        for record in self.to_records():
            writer.writerow(["" if v is None else v for v in record.values()])
        return out.getvalue()

    def _cells(self) -> Tuple[List[str], List[List[str]], frozenset]:
        headers = list(self.columns)
        rows = [[str("" if v is None else format_number(v) if isinstance(v, float) else v) for v in rec.values()]
                for rec in self.to_records()]
        numeric = frozenset(i for i, h in enumerate(headers) if h not in ("trial", "status", "reason")
                            and all(isinstance(rec[h], (int, float)) or rec[h] is None for rec in self.to_records()))
        return headers, rows, numeric

    def __str__(self) -> str:
        headers, rows, numeric = self._cells()
        best = self.best()
        tail = f"\nbest: {best.trial.name} ({self.metric} {format_number(best.best)})" if best else ""
        return f"sweep {self.sweep}: {self.state.value}\n" + text_table(headers, rows, numeric=numeric) + tail

    def __repr__(self) -> str:
        return f"SweepResults(sweep={self.sweep!r}, state={self.state.value!r}, trials={len(self.results)})"

    def _repr_html_(self) -> str:
        import html
        headers, rows, numeric = self._cells()
        best = self.best()
        caption = f"<p>Sweep <code>{html.escape(self.sweep)}</code>: {html.escape(self.state.value)}"
        if best is not None:
            caption += (f"; best trial <code>{html.escape(best.trial.name)}</code> "
                        f"({html.escape(self.metric)} {html.escape(format_number(best.best))})")
        return caption + "</p>" + html_table(headers, rows, numeric=numeric)

    # -- comparing the trials: charts drawn by _shared/sweep_plots.py (matplotlib: the notebook extra) --
    def _metric_of(self, metric: Optional[str]) -> str:
        from .sweep_plots import check_metric
        known = sorted({c for r in self.results if r.metrics is not None for c in r.metrics.columns})
        return check_metric(self.metric if metric is None else metric, known)

    def plot(self, metric: Optional[str] = None) -> Any:
        """Every trial's curve of ``metric`` (default: the sweep's) per epoch on one chart, the
        best trial's drawn thicker, as a matplotlib ``Figure`` (matplotlib: the ``notebook`` extra).

        :param str metric: the metric to draw (default: the sweep's).
        :returns: a matplotlib ``Figure``.
        :raises MissingDependencyError: when matplotlib is not installed."""
        from .sweep_plots import TrialCurve, curves_figure
        metric = self._metric_of(metric)
        curves = [TrialCurve(r.trial.name, r.metrics.epochs, r.metrics.column(metric))
                  if r.metrics is not None and metric in r.metrics.columns else TrialCurve(r.trial.name, (), ())
                  for r in self.results]
        best = self.best() if metric == self.metric else None
        return curves_figure(self.sweep, metric, curves, best=best.trial.name if best is not None else None)

    def plot_parallel_coordinates(self, metric: Optional[str] = None) -> Any:
        """Parallel coordinates: an axis per parameter and one for the final value of ``metric``
        (default: the sweep's), a line per trial coloured by that value, as a matplotlib ``Figure``
        (matplotlib: the ``notebook`` extra).

        :param str metric: the metric whose final value is the last axis (default: the sweep's).
        :returns: a matplotlib ``Figure``.
        :raises MissingDependencyError: when matplotlib is not installed."""
        from .sweep_plots import TrialPoint, parallel_coordinates_figure
        metric = self._metric_of(metric)
        points = []
        for r in self.results:
            values = r.metrics.column(metric) if r.metrics is not None and metric in r.metrics.columns else []
            present = [v for v in values if v is not None]
            points.append(TrialPoint(r.trial.name, r.trial.parameters, present[-1] if present else None))
        return parallel_coordinates_figure(self.sweep, self.parameters, metric, self.mode, points)


class BestOf:
    """Picking the best trial by any metric from the trials' metrics tables, for every kind of
    sweep (its ``name``, ``metric``, ``mode`` and ``experiment`` say which)."""

    experiment: Any

    @property
    def name(self) -> str:
        raise NotImplementedError

    @property
    def metric(self) -> str:
        raise NotImplementedError

    @property
    def mode(self) -> str:
        raise NotImplementedError

    def _best_arguments(self, metric: Optional[str], mode: Optional[str]) -> Tuple[str, str]:
        metric = self.metric if metric is None else metric
        mode = self.mode if mode is None else check_mode(mode)
        if not isinstance(metric, str) or not metric:
            raise InvalidSpecError("metric", f"{metric!r} is not a metric name", "e.g. 'val_accuracy'")
        return metric, mode

    def _best_in(self, results: SweepResults, metric: str, mode: str) -> Trial:
        scored: List[Tuple[float, Trial]] = []
        for row in results:
            table = row.metrics
            if table is not None and metric in table.columns:
                value = best_of(table.column(metric), mode)
                if value is not None and not math.isnan(value):
                    scored.append((value, row.trial))
        if not scored:
            raise NotFoundError(f"no trial of sweep {self.name!r} has recorded {metric!r} yet",
                                resource=f"{self.experiment.id}/sweeps/{self.name}")
        pick = max if mode == "max" else min
        return pick(scored, key=lambda pair: pair[0])[1]


class SweepBase(BestOf):
    """What a sweep decides from what was last fetched, with no request: the sync and the aio
    Sweep share it, and differ only in how they fetch, submit and terminate."""

    def __init__(self, experiment: Any, definition: SweepDefinition, *,
                 spec: Optional["HorovodJob"] = None, jobs: Optional[Dict[int, Any]] = None) -> None:
        self.experiment = experiment
        self.definition = definition
        self._spec = spec  # with its keys: only the process that submits trials holds it
        self._jobs: Dict[int, Any] = dict(jobs or {})
        self._stopped_early: set[int] = set()
        self._judged: Dict[int, int] = {}
        self._cancelled = False
        self._finished: Dict[int, MetricsTable] = {}
        # trials the stopping rule asked to terminate: what follows each termination (a poller, or
        # the aio sweep's task) and when it was asked
        self._terminating: Dict[int, Tuple[Any, float]] = {}

    def __repr__(self) -> str:
        return (f"Sweep(experiment={self.experiment.name!r}, name={self.name!r}, trials={len(self.definition.trials)}, "
                f"state={self.state.value!r})")

    @property
    def name(self) -> str:
        """The sweep's name, the prefix of its trials' names."""
        return self.definition.name

    @property
    def metric(self) -> str:
        """The ``metrics.csv`` column trials are judged by."""
        return self.definition.metric

    @property
    def mode(self) -> str:
        """``'max'`` or ``'min'``: which end of :attr:`metric` is best."""
        return self.definition.mode

    @property
    def driving(self) -> bool:
        """Whether this object submits the sweep's remaining trials (it holds the spec)."""
        return self._spec is not None and not self._cancelled

    # -- state ----------------------------------------------------------------------------------
    def _adopt(self, found: Optional[Tuple[SweepDefinition, Dict[int, Any]]]) -> None:
        """Take the trial jobs a listing found (a definition of another sweep under this name is a
        ConflictError)."""
        if found is not None:
            if found[0] != self.definition:
                raise ConflictError(f"sweep {self.name!r} of experiment {self.experiment.name!r} exists with other "
                                    f"settings ({', '.join(_differences(found[0], self.definition))}); choose "
                                    "another name, or get it with experiment.get_sweep()",
                                    resource=f"{self.experiment.id}/sweeps/{self.name}")
            self._jobs.update(found[1])

    def _trial_status(self, index: int) -> str:
        job = self._jobs.get(index)
        if job is None:
            return "cancelled" if self._cancelled else "pending"
        status = job.status
        if index in self._stopped_early and status.execution_state.is_terminal():
            return "stopped early"
        if status.execution_state is ExecutionState.FAILED and any(e.code == _TERMINATED for e in status.errors):
            return "terminated"
        return status.execution_state.value

    @property
    def trials(self) -> List[Trial]:
        """Every trial, as last fetched."""
        return [Trial(i, trial_name(self.name, i), dict(p), self._trial_status(i), self._jobs.get(i),
                      self._trial_reason(i)) for i, p in enumerate(self.definition.trials)]

    def _trial_reason(self, index: int) -> Optional[str]:
        job = self._jobs.get(index)
        if job is None:
            return "the sweep was cancelled before it started" if self._cancelled else None
        if index in self._stopped_early and job.status.execution_state.is_terminal():
            return f"its {self.metric} was worse than the median of the other trials"
        errors = job.status.errors if job.status.execution_state is ExecutionState.FAILED else ()
        return "; ".join(e.message or e.code for e in errors) or None

    def _active(self) -> List[int]:
        return [i for i, job in self._jobs.items() if not job.status.execution_state.is_terminal()]

    @property
    def state(self) -> SweepState:
        """The sweep's state as last fetched."""
        if self._cancelled:
            return SweepState.CANCELLED
        pending = len(self._jobs) < len(self.definition.trials)
        if self._active() or (pending and self._spec is not None):
            return SweepState.RUNNING
        if pending:
            return SweepState.STOPPED
        return SweepState.FAILED if any(t.status == "failed" for t in self.trials) else SweepState.SUCCEEDED

    # -- driving --------------------------------------------------------------------------------
    def _to_submit(self) -> List[Tuple[int, str, "HorovodJob"]]:
        """The trials that may start now: (index, job name, job spec) -- none unless driving."""
        if not self.driving:
            return []
        assert self._spec is not None
        free = self.definition.max_concurrent_trials - len(self._active())
        pending = [i for i in range(len(self.definition.trials)) if i not in self._jobs][:max(free, 0)]
        return [(i, trial_name(self.name, i), trial_spec(self._spec, self.definition, i)) for i in pending]

    def _submitted(self, index: int, job: Any) -> None:
        log.info("sweep %s: submitted trial %s %s", self.name, job.name, dict(self.definition.trials[index]))
        self._jobs[index] = job

    def _notice_cancel(self) -> None:
        """A trial terminated by someone else means the sweep was cancelled elsewhere (e.g. the CLI)."""
        if self._spec is None or self._cancelled:
            return
        for index, job in self._jobs.items():
            if (index not in self._stopped_early and job.status.execution_state is ExecutionState.FAILED
                    and any(e.code == _TERMINATED for e in job.status.errors)):
                log.info("sweep %s: trial %s was terminated elsewhere; submitting no more trials", self.name, job.name)
                self._cancelled = True
                return

    def _to_read(self, index: int) -> Optional[Any]:
        """The trial job whose metrics must be read now: None when it has none yet or its final
        table is kept (:meth:`_read`)."""
        return None if index in self._finished else self._jobs.get(index)

    def _read(self, index: int, table: Optional[MetricsTable]) -> Optional[MetricsTable]:
        """A trial's table: ``table`` just read, kept once the trial has ended; else the kept one."""
        if index in self._finished:
            return self._finished[index]
        job = self._jobs.get(index)
        if table is not None and job is not None and job.status.execution_state.is_terminal():
            self._finished[index] = table
        return table

    def _judging(self) -> bool:
        return self.definition.median_stopping is not None and not self._cancelled

    def _to_stop(self, tables: Mapping[int, Optional[MetricsTable]]) -> List[int]:
        """The running trials the stopping rule stops on these tables (each marked stopped early;
        an epoch is judged once)."""
        rule = self.definition.median_stopping
        if rule is None or self._cancelled:
            return []
        stop: List[int] = []
        values: Dict[int, Dict[int, float]] = {}
        for index, table in tables.items():
            if table is not None and self.metric in table.columns:
                values[index] = {e: v for e, v in zip(table.epochs, table.column(self.metric)) if v is not None}
        for index in self._active():
            mine = values.get(index)
            if not mine:
                continue
            epoch = max(mine)
            if self._judged.get(index) == epoch:
                continue
            self._judged[index] = epoch
            others = [v[epoch] for i, v in values.items() if i != index and epoch in v]
            if rule.should_stop(mine[epoch], epoch, others, self.mode):
                job = self._jobs[index]
                log.info("sweep %s: stopping trial %s early: %s %.4g at epoch %d is worse than the median of %d "
                         "other trial(s)", self.name, job.name, self.metric, mine[epoch], epoch, len(others))
                self._stopped_early.add(index)
                stop.append(index)
        return stop

    # -- the stopping rule's terminations: asked for without waiting, followed by each step -----
    def _start_termination(self, job: Any) -> Any:
        """Ask the service to terminate ``job`` without waiting; returns what follows it (``done()``,
        ``result(0)`` raising its error, ``status()``)."""
        raise NotImplementedError

    def _abandon_termination(self, termination: Any) -> None:
        """Stop following a termination the sweep no longer waits for."""

    def _terminate_stopped(self, index: int) -> None:
        """Ask the service to stop a trial the rule stopped, without waiting: the steps that follow
        watch the termination (a service that never finishes it must not hang the sweep)."""
        self._terminating[index] = (self._start_termination(self._jobs[index]), time.monotonic())

    def _follow_terminations(self) -> None:
        """Forget the terminations that ended; ask again for one that failed or has run longer than
        :data:`TERMINATE_PATIENCE_S`, and log it, and for a stopped trial that runs with none
        followed (the aio sweep stops following them when its wait ends)."""
        for index in sorted(self._stopped_early - set(self._terminating)):
            if not self._jobs[index].status.execution_state.is_terminal():
                self._terminate_stopped(index)
        for index, (termination, asked) in list(self._terminating.items()):
            job = self._jobs[index]
            if job.status.execution_state.is_terminal():
                self._abandon_termination(termination)
                del self._terminating[index]
            elif termination.done():
                try:
                    termination.result(0)
                except (AzureError, HorovodBatchAIError) as err:  # refused or failed: the next step asks again
                    log.warning("sweep %s: terminating trial %s failed (%s); asking again", self.name, job.name, err)
                    self._terminate_stopped(index)
                else:
                    del self._terminating[index]
            elif time.monotonic() - asked >= TERMINATE_PATIENCE_S:
                log.warning("sweep %s: terminating trial %s had not finished after %gs (status %s); asking again",
                            self.name, job.name, TERMINATE_PATIENCE_S, termination.status())
                self._abandon_termination(termination)
                self._terminate_stopped(index)

    @staticmethod
    def _cancel_deadline(timeout: Optional[float]) -> Optional[float]:
        """When :meth:`cancel` stops waiting for the terminations (None: never)."""
        return None if timeout is None or math.isinf(timeout) else time.monotonic() + timeout

    def _cancel_timeout_error(self, unfinished: Sequence[str], timeout: Optional[float]) -> WaitTimeoutError:
        return WaitTimeoutError(f"cancelling sweep {self.name!r}: terminating trial(s) {', '.join(unfinished)} had "
                                f"not finished after {timeout:g}s (the sweep submits no more trials; the service "
                                "goes on stopping them)", last_state=None)

    def _take_spec(self, spec: "HorovodJob") -> None:
        """Resume with ``spec``, checked to be the one the sweep was made from."""
        from .._models.job_spec import HorovodJob
        if not isinstance(spec, HorovodJob):
            raise InvalidSpecError("spec", f"{type(spec).__name__} is not a HorovodJob", "the spec the sweep was made from")
        spec.check_resolved()
        if spec.arguments != self.definition.base_arguments:
            raise InvalidSpecError("spec", f"its arguments {spec.arguments!r} are not the sweep's "
                                   f"{self.definition.base_arguments!r}", "the spec the sweep was made from")
        self._spec = spec
        self._cancelled = False

    def _timeout_error(self, timeout: Optional[float]) -> WaitTimeoutError:
        return WaitTimeoutError(f"sweep {self.name!r} was still running after {timeout:g}s "
                                f"({len(self._active())} trial(s) running)", last_state=None)

    def _poll_interval(self, poll_interval: Optional[float]) -> float:
        return poll_interval if poll_interval is not None else max(1.0, self.experiment._backend.default_poll_interval)

    def _results(self, tables: Mapping[int, Optional[MetricsTable]]) -> SweepResults:
        """The results table from the trials' metrics tables (by trial index)."""
        rows = []
        for trial in self.trials:
            table = tables.get(trial.index)
            values = table.column(self.metric) if table is not None and self.metric in table.columns else []
            present = [v for v in values if v is not None]
            rows.append(TrialResult(trial, len(table) if table is not None else 0, present[-1] if present else None,
                                    best_of(values, self.mode), table))
        return SweepResults(self.name, self.metric, self.mode, self.state, list(self.definition.space), rows)


#: a definition's fields as the caller of Experiment.sweep() names them
_ARGUMENTS = (("cluster", "cluster"), ("base_arguments", "spec.arguments"), ("space", "parameters"),
              ("trials", "parameters"), ("sampling", "sampling"), ("seed", "seed"), ("metric", "metric"),
              ("mode", "mode"), ("max_concurrent_trials", "max_concurrent_trials"),
              ("median_stopping", "early_stopping"))


def _differences(old: SweepDefinition, new: SweepDefinition) -> List[str]:
    names: List[str] = []
    for attribute, argument in _ARGUMENTS:
        if getattr(old, attribute) != getattr(new, attribute) and argument not in names:
            names.append(argument)
    return names


def check_no_sweep_variables(spec: "HorovodJob") -> None:
    for name in (SWEEP_VARIABLE, TRIAL_VARIABLE):
        if name in spec.environment_variables:
            raise InvalidSpecError(f"environment_variables[{name!r}]", "is set, and the sweep sets it for each trial",
                                   "a spec without it")
