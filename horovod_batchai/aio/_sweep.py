"""Sweeps, for asyncio: :class:`horovod_batchai.Sweep`'s methods, awaited.

What a sweep decides -- which trials to submit, the stopping rule, its state, results and best
trial -- is the sync sweep's (:class:`horovod_batchai._sweep.SweepBase`); this class only fetches,
submits and terminates through the aio classes. :meth:`Sweep.wait` polls between
``asyncio.sleep``s: cancelling it stops the polling (and the submitting) at once, and leaves the
trials running; ``wait()`` again continues the sweep.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Callable, Optional

from .._metrics import MetricsTable
from .._polling import Polling
from .._sweep import SweepBase, SweepResults, SweepState, Trial, sweeps_in

if TYPE_CHECKING:
    from .._job_spec import HorovodJob
    from ._experiment import Experiment

__all__ = ["Sweep"]


class Sweep(SweepBase):
    """A sweep of trial jobs in an aio :class:`Experiment` (see :class:`horovod_batchai.Sweep`);
    made by :meth:`Experiment.sweep`, found again by :meth:`Experiment.get_sweep`. ``state`` and
    ``trials`` describe it as last fetched."""

    experiment: "Experiment"

    async def refresh(self) -> "Sweep":
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
            await (await self._jobs[index].begin_terminate()).result()

    async def step(self) -> SweepState:
        """One round: fetch the trials, apply the stopping rule, submit what may start."""
        await self.refresh()
        self._notice_cancel()
        await self._apply_stopping_rule()
        await self._submit_ready()
        return self.state

    async def wait(self, timeout: Optional[float] = None, *, poll_interval: Optional[float] = None,
                   on_step: Optional[Callable[["Sweep"], None]] = None) -> SweepResults:
        """Run the sweep to its end -- submitting trials as others end, when this object drives it
        -- and return :meth:`results` (see :meth:`horovod_batchai.Sweep.wait`).
        :class:`WaitTimeoutError` after ``timeout`` seconds leaves the trials running; so does
        cancelling the wait, which stops polling at once."""
        polling = Polling(timeout=timeout, poll_interval=self._poll_interval(poll_interval))
        while True:
            state = await self.step()
            if on_step is not None:
                on_step(self)
            if state.is_terminal():
                return await self.results()
            if polling.expired():
                raise self._timeout_error(timeout)
            await asyncio.sleep(polling.next_pause())

    def resume(self, spec: "HorovodJob") -> "Sweep":
        """Take over submitting the remaining trials, with the spec the sweep was made from; then
        await :meth:`wait`. (It makes no request.)"""
        self._take_spec(spec)
        return self

    async def cancel(self) -> None:
        """Terminate the running trials and submit no more; trials that ended keep their results."""
        await self.refresh()
        self._cancelled = True
        # every request is sent before the first wait; waiting one after the other leaves no task behind
        pollers = [await job.begin_terminate() for index, job in self._jobs.items() if index in self._active()]
        for poller in pollers:
            await poller.result()
        await self.refresh()

    async def results(self) -> SweepResults:
        """One row per trial: parameters, status, epochs, the final and best value of the metric."""
        await self.refresh()
        return self._results({i: await self._metrics_of(i) for i in self._jobs})

    async def best(self, metric: Optional[str] = None, mode: Optional[str] = None) -> Trial:
        """The trial with the best value of ``metric`` (default: the sweep's) over its epochs
        (see :meth:`horovod_batchai.Sweep.best`)."""
        metric, mode = self._best_arguments(metric, mode)
        return self._best_in(await self.results(), metric, mode)
