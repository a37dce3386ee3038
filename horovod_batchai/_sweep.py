"""Sweeps: one ordinary trial job per configuration of hyper-parameters, run a few at a time.

A sweep has no resource of its own on any of the services: its trials are jobs of the experiment
named ``<sweep>-000``, ``<sweep>-001``, ..., each carrying the sweep's definition (every trial's
parameters, the metric and how it is judged) in its environment. So another process finds the
sweep again from the service alone (:meth:`Experiment.get_sweep`), on every place to run.

The process that created the sweep submits trials as others end (at most ``max_concurrent_trials``
at once) while it waits, and applies the early-stopping rule. Submitting needs the spec with its
storage keys, which no service gives back, so another process continues a sweep with
:meth:`Sweep.resume` and the same spec.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Optional

from ._models.constants import DEFAULT_LRO_TIMEOUT
from ._models.errors import WaitTimeoutError
from ._shared.deprecation import positional_options
from ._shared.lro import background_poller, check_timeout
from ._shared.metrics import MetricsTable
from ._shared.polling import Polling
from ._shared.sweep import SweepBase, SweepResults, SweepState, Trial, sweeps_in

if TYPE_CHECKING:
    from azure.core.polling import LROPoller

    from ._experiment import Experiment
    from ._job import Job
    from ._models.job_spec import HorovodJob

__all__ = ["Sweep"]

log = logging.getLogger(__name__)


def _begin_terminate(job: "Job") -> "LROPoller[Any]":
    """``job.terminate()`` on azure-core's poller thread, its first request included: a service
    that does not answer holds that thread, never the sweep's caller."""
    return background_poller(lambda: job.terminate(timeout=None), action="terminating job", resource=job.id)


class Sweep(SweepBase):
    """A sweep of trial jobs in an :class:`Experiment`; made by :meth:`Experiment.sweep`, found
    again by :meth:`Experiment.get_sweep`."""

    experiment: "Experiment"

    def refresh(self) -> "Sweep":
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
             on_step: Optional[Callable[["Sweep"], None]] = None,
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

    def resume(self, spec: "HorovodJob") -> "Sweep":
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

    # -- every trial in one TensorBoard, with HParams (the block ends the class: see _tensorboard.py) --
    if TYPE_CHECKING:
        from pathlib import Path as _Path

        from ._tensorboard import SweepTensorBoard as _SweepTensorBoard

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
        from pathlib import Path

        from ._shared.job import check_tensorboard_port
        from ._shared.tensorboard import SweepRun
        from ._tensorboard import open_sweep_tensorboard
        check_tensorboard_port(port)
        runs = [SweepRun(r.trial.name, r.trial.parameters, r.trial.job, r.final, r.epochs) for r in self.results()]
        return open_sweep_tensorboard(self.name, self.metric, list(self.definition.space), runs,
                                      None if logdir is None else Path(logdir), port=port, start=start,
                                      keep_alive=keep_alive)
