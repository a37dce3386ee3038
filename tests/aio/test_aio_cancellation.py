"""A cancelled wait on an aio poller ends with ``CancelledError`` whatever moment the cancellation
lands at -- above all the moment the operation finishes -- and its deadline stays a
``WaitTimeoutError``. The pollers are azure-core's ``AsyncLROPoller`` driving a polling method
whose steps the test decides, so each moment is reached on purpose, on every run."""
from __future__ import annotations

import asyncio
from typing import Any, Callable, Optional

import pytest
from azure.core.polling import AsyncLROPoller, AsyncPollingMethod

from horovod_batchai import WaitTimeoutError
from horovod_batchai._shared.lro_async import AsyncMappedPoller


class Steps(AsyncPollingMethod):  # type: ignore[type-arg]
    """An operation that finishes when its ``run`` is awaited for the ``runs_to_finish``-th time;
    ``on_run`` is called at the start of every run (the test's hook into that moment)."""

    def __init__(self, *, runs_to_finish: int = 1, pause: float = 0.0,
                 on_run: Optional[Callable[[], None]] = None) -> None:
        self.runs = 0
        self._runs_to_finish = runs_to_finish
        self._pause = pause
        self._on_run = on_run

    def initialize(self, client: Any, initial_response: Any, deserialization_callback: Any) -> None:
        pass

    async def run(self) -> None:
        self.runs += 1
        if self._on_run is not None:
            self._on_run()
        if self.runs < self._runs_to_finish:
            await asyncio.sleep(self._pause)

    def status(self) -> str:
        return "Succeeded" if self.finished() else "InProgress"

    def finished(self) -> bool:
        return self.runs >= self._runs_to_finish

    def resource(self) -> str:
        return "the result"


def _poller(method: Steps) -> "AsyncMappedPoller[str, str]":
    inner: AsyncLROPoller[str] = AsyncLROPoller(None, None, lambda raw: raw, method)
    return AsyncMappedPoller(inner, str.upper, action="doing", resource="thing")


@pytest.mark.parametrize("timeout", [60.0, None])
def test_a_cancel_landing_as_the_operation_finishes_is_not_lost(timeout: Optional[float]) -> None:
    async def scenario() -> None:
        waiter: "Optional[asyncio.Task[str]]" = None

        def cancel_the_waiter() -> None:  # the caller cancels in the step that ends the operation
            assert waiter is not None
            if method.runs == 1:
                waiter.cancel()

        method = Steps(on_run=cancel_the_waiter)
        poller = _poller(method)
        waiter = asyncio.ensure_future(poller.result(timeout))
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert waiter.cancelled()
        assert poller.done() and await poller.result(0) == "THE RESULT"  # the operation itself finished

    asyncio.run(scenario())


def test_a_cancel_while_polling_ends_the_wait_and_a_later_result_resumes() -> None:
    async def scenario() -> None:
        method = Steps(runs_to_finish=3, pause=30.0)
        poller = _poller(method)
        waiter = asyncio.ensure_future(poller.result(60))
        while method.runs == 0:
            await asyncio.sleep(0)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert method.runs == 1 and not poller.done()
        method._pause = 0.0
        assert await poller.result(60) == "THE RESULT"

    asyncio.run(scenario())


def test_the_deadline_is_a_wait_timeout_and_an_outer_deadline_the_callers() -> None:
    async def scenario() -> None:
        method = Steps(runs_to_finish=3, pause=30.0)
        poller = _poller(method)
        with pytest.raises(WaitTimeoutError):
            await poller.result(0.05)
        assert not poller.done()
        with pytest.raises(TimeoutError):  # the caller's own deadline, not the poller's
            async with asyncio.timeout(0.05):
                await poller.result(60)
        assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
        method._pause = 0.0
        assert await poller.result(60) == "THE RESULT"

    asyncio.run(scenario())
