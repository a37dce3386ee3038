"""Sweeps, for asyncio: :class:`horovod_batchai.Sweep`'s and :class:`horovod_batchai.ClientSweep`'s
methods, awaited. A :class:`Sweep` the service holds only reads; the rest of this text is about
the :class:`ClientSweep` this process drives.

What a sweep decides -- which trials to submit, the stopping rule, its state, results and best
trial -- is the sync sweep's (:class:`horovod_batchai._sweep.SweepBase`); this class only fetches,
submits and terminates through the aio classes. :meth:`Sweep.wait` polls between
``asyncio.sleep`` calls: cancelling it stops the polling (and the submitting) at once, and leaves the
trials running; ``wait()`` again continues the sweep.

The stopping rule's terminations run in tasks of their own while the sweep is waited for (or
stepped): a step looks at them and never waits on one, asking again after
:data:`horovod_batchai._shared.sweep.TERMINATE_PATIENCE_S` as the sync sweep does. When a wait ends
they are cancelled with it; the next step asks again for a stopped trial that still runs.
"""
from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, cast

from .._models.constants import DEFAULT_LRO_TIMEOUT
from .._shared.deprecation import positional_options
from .._shared.lro import check_timeout
from .._shared.metrics import MetricsTable
from .._shared.polling import Polling
from .._models.records import SweepRecord
from .._shared.held_sweep import HeldSweepBase
from .._shared.sweep import SweepBase, SweepResults, SweepState, Trial, sweeps_in

if TYPE_CHECKING:
    from pathlib import Path as _Path

    from .._models.job_spec import HorovodJob
    from ._experiment import Experiment
    from ._job import Job
    from ._tensorboard import SweepTensorBoard as _SweepTensorBoard

__all__ = ["Sweep", "ClientSweep"]


def _terminate(job: "Job") -> "asyncio.Task[Any]":
    """``await job.terminate()`` in a task of its own, its first request included: a service that
    does not answer holds that task, never the sweep's caller."""
    task = asyncio.ensure_future(job.terminate(timeout=None))
    # the sweep reads the error of the terminations it still follows; one it dropped logs nothing
    task.add_done_callback(lambda done: done.cancelled() or done.exception())
    return task


class _Termination:
    """A trial's termination in a task of its own, answering as the sync sweep's pollers do
    (``done()``, ``result(0)`` raising its error, ``status()``) so the shared steps follow it."""

    def __init__(self, job: "Job") -> None:
        self._task = _terminate(job)

    def done(self) -> bool:
        return self._task.done()

    def result(self, timeout: float = 0) -> None:
        self._task.result()

    def status(self) -> str:
        return "Finished" if self._task.done() else "InProgress"

    def cancel(self) -> None:
        self._task.cancel()


class ClientSweep(SweepBase):
    """A sweep driven from this process, on a target whose service holds none (see
    :class:`horovod_batchai.ClientSweep`); made by :meth:`Experiment.sweep`, found again by
    :meth:`Experiment.get_sweep`. ``state`` and ``trials`` describe it as last fetched."""

    experiment: "Experiment"

    async def refresh(self) -> "ClientSweep":
        """Fetch the trial jobs' states (one listing of the experiment's jobs)."""
        self._adopt(sweeps_in(await self.experiment.list_jobs()).get(self.name))
        return self

    async def _submit_ready(self) -> None:
        for index, name, spec in self._to_submit():
            self._submitted(index, await self.experiment.submit(name, spec, cluster=self.definition.cluster))

    async def _metrics_of(self, index: int) -> Optional[MetricsTable]:
        job = self._to_read(index)
        return self._read(index, await job.metrics() if job is not None else None)

    async def _apply_stopping_rule(self) -> None:
        if not self._judging():
            return
        for index in self._to_stop({i: await self._metrics_of(i) for i in self._jobs}):
            self._terminate_stopped(index)

    def _start_termination(self, job: "Job") -> _Termination:
        return _Termination(job)

    def _abandon_termination(self, termination: _Termination) -> None:
        termination.cancel()

    async def step(self) -> SweepState:
        """One round: fetch the trials, apply the stopping rule, submit what may start."""
        await self.refresh()
        self._notice_cancel()
        self._follow_terminations()
        await self._apply_stopping_rule()
        await self._submit_ready()
        return self.state

    async def wait(self, timeout: Optional[float] = None, *, poll_interval: Optional[float] = None,
                   on_step: Optional[Callable[["ClientSweep"], None]] = None) -> SweepResults:
        """Run the sweep to its end -- submitting trials as others end, when this object drives it
        -- and return :meth:`results` (see :meth:`horovod_batchai.ClientSweep.wait`).
        :class:`WaitTimeoutError` after ``timeout`` seconds leaves the trials running; so does
        cancelling the wait, which stops polling at once."""
        polling = Polling(timeout=timeout, poll_interval=self._poll_interval(poll_interval))
        try:
            while True:
                state = await self.step()
                if on_step is not None:
                    on_step(self)
                if state.is_terminal():
                    return await self.results()
                if polling.expired():
                    raise self._timeout_error(timeout)
                await asyncio.sleep(polling.next_pause())
        finally:
            self._stop_following()

    def _stop_following(self) -> None:
        """Cancel the terminations still followed (no task outlives the wait); the next step asks
        again for a stopped trial that still runs."""
        for termination, _ in self._terminating.values():
            self._abandon_termination(termination)
        self._terminating.clear()

    def resume(self, spec: "HorovodJob") -> "ClientSweep":
        """Take over submitting the remaining trials, with the spec the sweep was made from; then
        await :meth:`wait`. (It makes no request.)"""
        self._take_spec(spec)
        return self

    async def cancel(self, *, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> None:
        """Terminate the running trials and submit no more; trials that ended keep their results.
        Waits at most ``timeout`` seconds (None: no limit) for the terminations, then
        :class:`WaitTimeoutError` naming the trials still terminating (the sweep stays cancelled,
        the service goes on stopping them, and nothing here follows them any more)."""
        check_timeout(timeout)
        await self.refresh()
        self._cancelled = True
        self._stop_following()
        deadline = self._cancel_deadline(timeout)
        # every termination at once, under one deadline
        tasks: Dict[str, "asyncio.Task[Any]"] = {job.name: _terminate(job) for index, job in self._jobs.items()
                                                 if index in self._active()}
        pending: set = set(tasks.values())
        try:
            if tasks:
                _, pending = await asyncio.wait(tasks.values(), timeout=None if deadline is None
                                                else max(0.0, deadline - time.monotonic()))
        finally:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        unfinished: List[str] = []
        for name, task in tasks.items():
            if task in pending:
                unfinished.append(name)
            else:
                task.result()  # a termination that failed raises its error
        if unfinished:
            raise self._cancel_timeout_error(unfinished, timeout)
        await self.refresh()

    async def results(self) -> SweepResults:
        """One row per trial: parameters, status, epochs, the final and best value of the metric."""
        await self.refresh()
        return self._results({i: await self._metrics_of(i) for i in self._jobs})

    @positional_options("metric", "mode")
    async def best(self, *, metric: Optional[str] = None, mode: Optional[str] = None) -> Trial:
        """The trial with the best value of ``metric`` (default: the sweep's) over its epochs
        (see :meth:`horovod_batchai.ClientSweep.best`)."""
        metric, mode = self._best_arguments(metric, mode)
        return self._best_in(await self.results(), metric, mode)

    async def tensorboard(self, *, logdir: "str | _Path | None" = None, port: Optional[int] = None,
                          start: bool = True, keep_alive: bool = False) -> "_SweepTensorBoard":
        """Every trial's event files in one TensorBoard, with HParams (see
        :meth:`horovod_batchai.ClientSweep.tensorboard`)."""
        return await _open_tensorboard(self.name, self.metric, await self.results(), logdir, port, start, keep_alive)


class Sweep(HeldSweepBase):
    """A sweep the service holds and drives (see :class:`horovod_batchai.Sweep`): waiting only
    reads, so cancelling a wait changes nothing."""

    experiment: "Experiment"

    def __init__(self, experiment: "Experiment", record: SweepRecord) -> None:
        from ._job import Job
        super().__init__(experiment, record, lambda name: Job(experiment, name))

    async def refresh(self) -> "Sweep":
        """Read the sweep's state, trials and best trial from the service (one request)."""
        self._record = await self.experiment._backend.get_sweep(self._ref)
        return self

    async def wait(self, timeout: Optional[float] = None, *, poll_interval: Optional[float] = None,
                   on_step: Optional[Callable[["Sweep"], None]] = None) -> SweepResults:
        """Wait for the sweep to end and return :meth:`results` (see :meth:`horovod_batchai.Sweep.wait`)."""
        polling = Polling(timeout=timeout, poll_interval=self._poll_interval(poll_interval))
        while True:
            await self.refresh()
            if on_step is not None:
                on_step(self)
            if self.state.is_terminal():
                return self._results()
            if polling.expired():
                raise self._timeout_error(timeout)
            await asyncio.sleep(polling.next_pause())

    async def results(self, *, with_metrics: bool = False) -> SweepResults:
        """One row per trial (see :meth:`horovod_batchai.Sweep.results`)."""
        await self.refresh()
        if not with_metrics:
            return self._results()
        return self._results_with({t.index: await cast(Any, t.job).metrics() for t in self.trials
                                   if t.job is not None})

    @positional_options("metric", "mode")
    async def best(self, *, metric: Optional[str] = None, mode: Optional[str] = None) -> Trial:
        """The best trial (see :meth:`horovod_batchai.Sweep.best`)."""
        await self.refresh()
        if (metric is None or metric == self.metric) and (mode is None or mode == self.mode):
            return self._best_trial()
        metric, mode = self._best_arguments(metric, mode)
        return self._best_in(await self.results(with_metrics=True), metric, mode)

    async def cancel(self) -> None:
        """Cancel the sweep (see :meth:`horovod_batchai.Sweep.cancel`)."""
        self._record = await self.experiment._backend.cancel_sweep(self._ref)

    async def delete(self) -> None:
        """Delete the sweep from the service (see :meth:`horovod_batchai.Sweep.delete`)."""
        await self.experiment._backend.delete_sweep(self._ref)

    async def tensorboard(self, *, logdir: "str | _Path | None" = None, port: Optional[int] = None,
                          start: bool = True, keep_alive: bool = False) -> "_SweepTensorBoard":
        """Every trial's event files in one TensorBoard, with HParams (see
        :meth:`horovod_batchai.ClientSweep.tensorboard`)."""
        return await _open_tensorboard(self.name, self.metric, await self.results(), logdir, port, start, keep_alive)


async def _open_tensorboard(name: str, metric: str, results: SweepResults, logdir: Any, port: Optional[int],
                            start: bool, keep_alive: bool) -> Any:
    """One TensorBoard over a sweep's trials, each a run with its parameters as HParams."""
    from pathlib import Path

    from .._shared.job import check_tensorboard_port
    from .._shared.tensorboard import SweepRun
    from ._tensorboard import open_sweep_tensorboard
    check_tensorboard_port(port)
    runs = [SweepRun(r.trial.name, r.trial.parameters, r.trial.job, r.final, r.epochs) for r in results]
    return await open_sweep_tensorboard(name, metric, list(results.parameters), runs,
                                        None if logdir is None else Path(logdir), port=port, start=start,
                                        keep_alive=keep_alive)
