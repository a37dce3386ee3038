"""A sweep the service holds and drives, as the sync and the aio Sweep both read it: its state, its
trials, results and best trial, from the record the service last gave (no request here).

The service decides everything (which trial next, early termination, the best trial); the client
only reads. Parameters are shown under the caller's option names (``batch-size``), which the
trial's arguments map to search-space names (``${{search_space.batch_size}}``).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional

from .._models.errors import NotFoundError, WaitTimeoutError
from .._models.records import JobRef, SweepRecord, SweepTrialRecord
from .._models.sweep_job import caller_names
from .metrics import EpochMetrics, MetricsTable, best_of
from .sweep import BestOf, SweepResults, SweepState, Trial, TrialResult

__all__ = ["HeldSweepBase", "HELD_STATES"]

#: the service's sweep states
HELD_STATES = {"running": SweepState.RUNNING, "completed": SweepState.COMPLETED, "failed": SweepState.FAILED,
               "cancelled": SweepState.CANCELLED}


class HeldSweepBase(BestOf):
    """What a held sweep is, from its last record: the sync and the aio Sweep share it."""

    def __init__(self, experiment: Any, record: SweepRecord, job: Callable[[str], Any]) -> None:
        self.experiment = experiment
        self._record = record
        self._job = job  # a trial job's name -> the (sync or aio) Job

    def __repr__(self) -> str:
        return (f"Sweep(experiment={self.experiment.name!r}, name={self.name!r}, trials={len(self._record.trials)}, "
                f"state={self.state.value!r})")

    def _poll_interval(self, poll_interval: Optional[float]) -> float:
        """Seconds between reads: the caller's, else the target's (the service drives the sweep)."""
        return poll_interval if poll_interval is not None else self.experiment._backend.default_poll_interval

    @property
    def _ref(self) -> JobRef:
        ws = self.experiment.workspace
        return JobRef(ws.resource_group, ws.name, self.experiment.name, self.name)

    @property
    def name(self) -> str:
        """The sweep's name, the prefix of its trials' job names."""
        return self._record.name

    @property
    def id(self) -> str:
        """The sweep's id on the service."""
        return self._record.id

    @property
    def metric(self) -> str:
        """The objective: the metric trials are judged by."""
        return self._record.metric

    @property
    def mode(self) -> str:
        """``'max'`` or ``'min'``: which end of :attr:`metric` is best."""
        return self._record.mode

    @property
    def driving(self) -> bool:
        """False: the service drives the sweep, not this process."""
        return False

    @property
    def state(self) -> SweepState:
        """``running``, ``completed``, ``failed`` or ``cancelled``, as the service last said."""
        return HELD_STATES.get(self._record.status.lower(), SweepState.RUNNING)

    @property
    def best_trial_name(self) -> Optional[str]:
        """The name of the trial the service holds best, as last read (None: none yet)."""
        return self._record.best

    @property
    def status_reason(self) -> Optional[str]:
        """Why the sweep failed or was cancelled, as the service says (None when it completed plainly)."""
        return self._record.reason

    def _parameters(self, trial: SweepTrialRecord) -> Dict[str, Any]:
        names = caller_names(self._record.arguments)
        return {names.get(wire, wire): value for wire, value in trial.parameters.items()}

    @property
    def trials(self) -> List[Trial]:
        """The trials the service has started, in order: their parameters (by option name), status
        (pending, queued, running, completed, failed, stopped, cancelled), why, and job."""
        return [Trial(t.index, t.name, self._parameters(t), t.status,
                      self._job(t.name) if t.status != "pending" else None, t.reason)
                for t in self._record.trials]

    def _results(self) -> SweepResults:
        return self._results_with({})

    def _results_with(self, tables: Mapping[int, Optional[MetricsTable]]) -> SweepResults:
        """The results; ``tables``: the trials' metrics tables read from their jobs, by index (a trial
        without one, or with an empty one, shows the objective as the service recorded it)."""
        parameters: List[str] = []
        for trial in self.trials:
            parameters += [p for p in trial.parameters if p not in parameters]
        rows = [TrialResult(trial, record.epochs, record.objective, best_of(list(record.values), self.mode),
                            tables.get(trial.index) or self._objective_table(record))
                for trial, record in zip(self.trials, self._record.trials)]
        best = self._record.best
        return SweepResults(self.name, self.metric, self.mode, self.state, parameters, rows, best_trial=best)

    def _objective_table(self, record: SweepTrialRecord) -> MetricsTable:
        """The objective epoch by epoch, as the service recorded it: what the results' curves draw
        without reading every trial's job."""
        rows = tuple(EpochMetrics(epoch, {self.metric: value}) for epoch, value in enumerate(record.values, 1))
        return MetricsTable(job=record.name, columns=(self.metric,), rows=rows,
                            reason="" if rows else "no epoch recorded yet", execution_state=record.status)

    def _timeout_error(self, timeout: Optional[float]) -> WaitTimeoutError:
        running = sum(t.status == "running" for t in self.trials)
        return WaitTimeoutError(f"sweep {self.name!r} was still running after {timeout:g}s ({running} trial(s) "
                                "running; the service goes on driving it)", last_state=self.state.value)

    def _best_trial(self) -> Trial:
        found = [t for t in self.trials if t.name == self._record.best] if self._record.best else []
        if not found:
            why = f": {self._record.reason}" if self._record.reason else ""
            raise NotFoundError(f"sweep {self.name!r} has no best trial yet{why}", resource=self.id)
        return found[0]
