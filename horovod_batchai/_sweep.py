"""Sweeps: trial jobs of one spec, each with other values of its hyper-parameters.

Where the service holds sweeps (the local service; Azure ML's sweep jobs), :class:`Sweep` is a
view of the service's sweep resource: the service samples the trials, submits them as slots free
up, applies the early-termination policy and keeps the best trial, with no client attached, and
through a restart. Creating one returns at once; :meth:`Sweep.wait` only reads.

Where it does not (Batch AI on Azure, which had no sweeps), :class:`ClientSweep` drives it from the
caller's process: its trials are jobs ``<sweep>-000``, ``<sweep>-001``, ... carrying the sweep's
definition in their environment, so another process finds it again from the jobs alone; the
process that created it submits trials while it waits, and another continues it with
:meth:`ClientSweep.resume` and the same spec (the storage keys no service gives back).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Optional, cast

from ._models.constants import DEFAULT_LRO_TIMEOUT
from ._models.errors import WaitTimeoutError
from ._models.records import SweepRecord
from ._shared.deprecation import positional_options
from ._shared.lro import background_poller, check_timeout
from ._shared.metrics import MetricsTable
from ._shared.polling import Polling
from ._shared.held_sweep import HeldSweepBase
from ._shared.sweep import SweepBase, SweepResults, SweepState, Trial, sweeps_in

if TYPE_CHECKING:
    from pathlib import Path as _Path

    from azure.core.polling import LROPoller

    from ._experiment import Experiment
    from ._job import Job
    from ._models.job_spec import HorovodJob
    from ._tensorboard import SweepTensorBoard as _SweepTensorBoard

__all__ = ["Sweep", "ClientSweep"]

log = logging.getLogger(__name__)


def _begin_terminate(job: "Job") -> "LROPoller[Any]":
    """``job.terminate()`` on azure-core's poller thread, its first request included: a service
    that does not answer holds that thread, never the sweep's caller."""
    return background_poller(lambda: job.terminate(timeout=None), action="terminating job", resource=job.id)


class ClientSweep(SweepBase):
    """A sweep driven from the caller's process, on a target whose service holds no sweeps (Batch
    AI on Azure); made by :meth:`Experiment.sweep`, found again by :meth:`Experiment.get_sweep`."""

    experiment: "Experiment"

    def refresh(self) -> "ClientSweep":
        """Fetch the trial jobs' states (one listing of the experiment's jobs).

        :returns: the sweep itself."""
        self._adopt(sweeps_in(self.experiment.list_jobs()).get(self.name))
        return self

    def _submit_ready(self) -> None:
        for index, name, spec in self._to_submit():
            self._submitted(index, self.experiment.submit(name, spec, cluster=self.definition.cluster))

    def _metrics_of(self, index: int) -> Optional[MetricsTable]:
        job = self._to_read(index)
        return self._read(index, job.metrics() if job is not None else None)

    def _apply_stopping_rule(self) -> None:
        if not self._judging():
            return
        for index in self._to_stop({i: self._metrics_of(i) for i in self._jobs}):
            self._terminate_stopped(index)

    def _start_termination(self, job: "Job") -> "LROPoller[Any]":
        return _begin_terminate(job)

    def step(self) -> SweepState:
        """One round: fetch the trials, apply the stopping rule, submit what may start. ``wait``
        calls it until the sweep ends.

        :returns: the sweep's :class:`SweepState` after the round."""
        self.refresh()
        self._notice_cancel()
        self._follow_terminations()
        self._apply_stopping_rule()
        self._submit_ready()
        return self.state

    def wait(self, timeout: Optional[float] = None, *, poll_interval: Optional[float] = None,
             on_step: Optional[Callable[["ClientSweep"], None]] = None,
             clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
             stop: Optional[threading.Event] = None) -> "SweepResults":
        """Run the sweep to its end -- submitting trials as others end, when this process drives it --
        and return :meth:`results`. Trials that fail do not stop the sweep (see :attr:`state`);
        :class:`WaitTimeoutError` after ``timeout`` seconds (None: no limit) leaves the trials running.
        Setting ``stop`` (a ``threading.Event``) from another thread ends the wait within one poll
        interval with :class:`StoppedError`; the trials run on, and :meth:`wait` continues the sweep.

        :param float timeout: seconds to wait; None: no limit.
        :keyword float poll_interval: seconds between rounds (default: the target's).
        :keyword on_step: called with the sweep after each round.
        :keyword clock: the monotonic clock the timeout is measured with (tests give a fake one).
        :keyword sleep: what waits between rounds (tests give a fake one).
        :keyword stop: a ``threading.Event`` that ends the wait when set.
        :returns: the sweep's :class:`SweepResults`.
        :raises WaitTimeoutError: when ``timeout`` is spent.
        :raises StoppedError: when ``stop`` is set."""
        polling = Polling(timeout=timeout, clock=clock, sleep=sleep, stop=stop,
                          poll_interval=self._poll_interval(poll_interval))
        what = f"waiting for sweep {self.name!r}"
        while True:
            polling.check_stopped(what)
            state = self.step()
            if on_step is not None:
                on_step(self)
            if state.is_terminal():
                return self.results()
            if polling.expired():
                raise self._timeout_error(timeout)
            polling.pause()

    def resume(self, spec: "HorovodJob") -> "ClientSweep":
        """Take over submitting the remaining trials, with the spec the sweep was made from (its
        storage keys are needed, and no service returns them). Then call :meth:`wait`.

        :param HorovodJob spec: the spec the sweep was made from, with its storage keys.
        :returns: the sweep itself.
        :raises InvalidSpecError: for a spec the sweep was not made from."""
        self._take_spec(spec)
        return self

    def cancel(self, *, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> None:
        """Terminate the running trials and submit no more; trials that ended keep their results.
        Waits at most ``timeout`` seconds (None: no limit) for the terminations, then
        :class:`WaitTimeoutError` naming the trials still terminating (the sweep stays cancelled
        and the service goes on stopping them).

        :keyword float timeout: seconds to wait; None: no limit.
        :raises WaitTimeoutError: when ``timeout`` is spent."""
        check_timeout(timeout)
        self.refresh()
        self._cancelled = True
        deadline = self._cancel_deadline(timeout)
        pollers = [(job, _begin_terminate(job)) for index, job in self._jobs.items() if index in self._active()]
        unfinished = []
        for job, poller in pollers:
            try:
                poller.result(None if deadline is None else max(0.0, deadline - time.monotonic()))
            except WaitTimeoutError:
                unfinished.append(job.name)
        if unfinished:
            raise self._cancel_timeout_error(unfinished, timeout)
        self.refresh()

    # -- results --------------------------------------------------------------------------------
    def results(self) -> SweepResults:
        """One row per trial: parameters, status, epochs, the final and best value of the metric.

        :returns: the :class:`SweepResults`."""
        self.refresh()
        return self._results({i: self._metrics_of(i) for i in self._jobs})

    @positional_options("metric", "mode")
    def best(self, *, metric: Optional[str] = None, mode: Optional[str] = None) -> Trial:
        """The trial with the best value of ``metric`` (default: the sweep's) over its epochs;
        ``mode`` 'max' or 'min' (default: the sweep's). :class:`NotFoundError` when no trial has
        recorded it yet.

        :keyword str metric: the metric (default: the sweep's).
        :keyword str mode: ``'max'`` or ``'min'`` (default: the sweep's).
        :returns: the best :class:`Trial`.
        :raises NotFoundError: when no trial has recorded ``metric``."""
        metric, mode = self._best_arguments(metric, mode)
        return self._best_in(self.results(), metric, mode)

    def tensorboard(self, *, logdir: "str | _Path | None" = None, port: Optional[int] = None, start: bool = True,
                    keep_alive: bool = False) -> "_SweepTensorBoard":
        """Sync every trial's TensorBoard event files to ``logdir/<trial>`` (default
        ``./tensorboard/<sweep>``), write each trial's parameters and the final value of the sweep's
        metric as HParams, and start one TensorBoard on them (on ``port``, default one the system
        chooses): each trial is a run, and the HPARAMS tab compares them. TensorBoard ends when this
        interpreter ends unless ``keep_alive``. Where TensorBoard is not installed nothing is
        started and ``command_line`` says what to run (it comes with TensorFlow; or ``pip install
        tensorboard``).

        :keyword logdir: the local directory for the trials' event files (default ``./tensorboard/<sweep>``).
        :keyword int port: the port TensorBoard listens on (default: one the system chooses).
        :keyword bool start: False: only sync, do not start TensorBoard.
        :keyword bool keep_alive: let TensorBoard outlive this interpreter.
        :returns: a ``TensorBoard`` whose ``sync()`` fetches what the trials wrote since.
        :raises InvalidSpecError: for a bad port."""
        return _open_tensorboard(self.name, self.metric, self.results(), logdir, port, start, keep_alive)


class Sweep(HeldSweepBase):
    """A sweep the service holds and drives (see the module's text); made by
    :meth:`Experiment.sweep`, found again by :meth:`Experiment.get_sweep` from any process."""

    experiment: "Experiment"

    def __init__(self, experiment: "Experiment", record: SweepRecord) -> None:
        from ._job import Job
        super().__init__(experiment, record, lambda name: Job(experiment, name))

    def refresh(self) -> "Sweep":
        """Read the sweep's state, trials and best trial from the service (one request).

        :returns: the sweep itself."""
        self._record = self.experiment._backend.get_sweep(self._ref)
        return self

    def wait(self, timeout: Optional[float] = None, *, poll_interval: Optional[float] = None,
             on_step: Optional[Callable[["Sweep"], None]] = None,
             clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
             stop: Optional[threading.Event] = None) -> SweepResults:
        """Wait for the sweep to end and return :meth:`results`. The service drives it: waiting
        only reads, and a wait that ends early (``timeout``, ``stop``, Ctrl-C) changes nothing.
        :class:`WaitTimeoutError` after ``timeout`` seconds (None: no limit); setting ``stop`` (a
        ``threading.Event``) from another thread ends the wait within one poll with
        :class:`StoppedError`.

        :param float timeout: seconds to wait; None: no limit.
        :keyword float poll_interval: seconds between reads (default: the target's).
        :keyword on_step: called with the sweep after each read.
        :keyword clock: the monotonic clock the timeout is measured with (tests give a fake one).
        :keyword sleep: what waits between reads (tests give a fake one).
        :keyword stop: a ``threading.Event`` that ends the wait when set.
        :returns: the sweep's :class:`SweepResults`.
        :raises WaitTimeoutError: when ``timeout`` is spent.
        :raises StoppedError: when ``stop`` is set."""
        polling = Polling(timeout=timeout, clock=clock, sleep=sleep, stop=stop,
                          poll_interval=self._poll_interval(poll_interval))
        while True:
            polling.check_stopped(f"waiting for sweep {self.name!r}")
            self.refresh()
            if on_step is not None:
                on_step(self)
            if self.state.is_terminal():
                return self._results()
            if polling.expired():
                raise self._timeout_error(timeout)
            polling.pause()

    def watch(self, *, poll_interval: Optional[float] = None, timeout: Optional[float] = None) -> SweepResults:
        """Show the trials' table, kept up to date in place in a notebook (printed each time it
        changes elsewhere), until the sweep ends, ``timeout`` seconds pass, or an interrupt (the
        notebook's stop button; the sweep goes on). Never raises for a failed sweep.

        :keyword float poll_interval: seconds between reads (default: the target's).
        :keyword float timeout: seconds to watch; None: until the sweep ends.
        :returns: the last :class:`SweepResults` read."""
        from ._watch import results_view
        show = results_view()
        try:
            return self.wait(timeout, poll_interval=poll_interval, on_step=lambda s: show(s._results()))
        except (KeyboardInterrupt, WaitTimeoutError):
            return self._results()

    def results(self, *, with_metrics: bool = False) -> SweepResults:
        """One row per trial: parameters, status, reason, epochs, the objective's final and best
        value, and its curve, as the service keeps them (one request). ``with_metrics=True`` reads
        every trial's metrics from its job too (a request or more per trial), so that
        :meth:`SweepResults.plot` draws any metric the trials record.

        :keyword bool with_metrics: read each trial's metrics from its job.
        :returns: the :class:`SweepResults`."""
        self.refresh()
        if not with_metrics:
            return self._results()
        return self._results_with({t.index: cast(Any, t.job).metrics() for t in self.trials if t.job is not None})

    @positional_options("metric", "mode")
    def best(self, *, metric: Optional[str] = None, mode: Optional[str] = None) -> Trial:
        """The best trial: the service's (the best objective value at a trial's last epoch), or,
        given another ``metric`` or ``mode``, the trial with the best value of it over its epochs
        (read from the trials' jobs). :class:`NotFoundError` when there is none yet, with the
        sweep's reason when it failed.

        :keyword str metric: another metric than the objective.
        :keyword str mode: ``'max'`` or ``'min'`` (default: the objective's goal).
        :returns: the best :class:`Trial`.
        :raises NotFoundError: when no trial is best yet."""
        self.refresh()
        if (metric is None or metric == self.metric) and (mode is None or mode == self.mode):
            return self._best_trial()
        metric, mode = self._best_arguments(metric, mode)
        return self._best_in(self.results(with_metrics=True), metric, mode)

    def cancel(self) -> None:
        """Cancel the sweep: the service starts no more trials and cancels the live ones (their jobs
        are terminated); trials that ended keep their results. Cancelling again changes nothing."""
        self._record = self.experiment._backend.cancel_sweep(self._ref)

    def delete(self) -> None:
        """Delete the sweep from the service (its live trials are cancelled first); the trials'
        jobs stay in the experiment, with their outputs."""
        self.experiment._backend.delete_sweep(self._ref)

    def tensorboard(self, *, logdir: "str | _Path | None" = None, port: Optional[int] = None, start: bool = True,
                    keep_alive: bool = False) -> "_SweepTensorBoard":
        """Every trial's event files in one TensorBoard, with HParams (see :meth:`ClientSweep.tensorboard`).

        :keyword logdir: the local directory for the trials' event files (default ``./tensorboard/<sweep>``).
        :keyword int port: the port TensorBoard listens on (default: one the system chooses).
        :keyword bool start: False: only sync, do not start TensorBoard.
        :keyword bool keep_alive: let TensorBoard outlive this interpreter.
        :returns: a ``TensorBoard`` whose ``sync()`` fetches what the trials wrote since.
        :raises InvalidSpecError: for a bad port."""
        return _open_tensorboard(self.name, self.metric, self.results(), logdir, port, start, keep_alive)


def _open_tensorboard(name: str, metric: str, results: SweepResults, logdir: Any, port: Optional[int], start: bool,
                      keep_alive: bool) -> Any:
    """One TensorBoard over a sweep's trials, each a run with its parameters as HParams."""
    from pathlib import Path

    from ._shared.job import check_tensorboard_port
    from ._shared.tensorboard import SweepRun
    from ._tensorboard import open_sweep_tensorboard
    check_tensorboard_port(port)
    runs = [SweepRun(r.trial.name, r.trial.parameters, r.trial.job, r.final, r.epochs) for r in results]
    return open_sweep_tensorboard(name, metric, list(results.parameters), runs,
                                  None if logdir is None else Path(logdir), port=port, start=start,
                                  keep_alive=keep_alive)
