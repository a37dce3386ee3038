"""azure-core ``AsyncLROPoller``s for :mod:`horovod_batchai.aio`'s long-running operations.

The async counterparts of :mod:`horovod_batchai._shared.lro` (continuation tokens, their checks and the
error texts are that module's):

- :class:`AsyncMappedPoller` -- a Microsoft aio client's poller (or one of ours), its result
  turned into one of our types;
- :class:`AsyncDonePoller` -- an operation that had nothing left to do;
- :func:`async_background_poller` -- an operation made of several awaited steps;
- :class:`ThreadedPoller` -- a sync ``LROPoller`` (Azure ML's, whose client has no async API)
  watched from the event loop: its outcome is awaited with ``asyncio.sleep``, never by blocking.

Polling happens only while ``result()`` or ``wait()`` is awaited: a ``timeout`` (which raises
:class:`WaitTimeoutError`) or a cancellation stops it at once, with no thread left polling, and
a later ``result()`` picks the operation up where it stood. The operation itself goes on at the
service, as with the sync pollers.
"""
from __future__ import annotations

import asyncio
import inspect
import math
from typing import Any, Awaitable, Callable, Generator, Generic, Optional, TypeVar, Union

from azure.core.polling import AsyncLROPoller, AsyncNoPolling, AsyncPollingMethod, LROPoller

from .._models.errors import azure_errors
from .lro import Done, Mapped, StepsPolling, not_finished
from .polling import Polling, check_seconds

__all__ = ["accepted_async", "AsyncPoller", "AsyncMappedPoller", "AsyncDonePoller", "async_background_poller", "ThreadedPoller"]

S = TypeVar("S")
T = TypeVar("T")


async def _within(awaitable: Awaitable[Any], timeout: Optional[float]) -> None:
    """Await ``awaitable`` for at most ``timeout`` seconds (None or inf: no limit); on the
    deadline it is cancelled and this returns (the caller looks at ``done()``).

    Not ``asyncio.wait_for``: on Python 3.11 it returns the inner result when the caller's
    cancellation arrives just as the awaited operation finishes, and the cancellation is lost
    (a cancelled ``submit`` went on into ``job.wait``). ``asyncio.timeout`` runs the wait in the
    caller's task and tells its own deadline from an outside ``cancel()``."""
    check_seconds(timeout, "timeout", allow_none=True, allow_infinite=True)
    if timeout is None or math.isinf(timeout):
        await awaitable
        return
    try:
        async with asyncio.timeout(timeout):
            await awaitable
    except TimeoutError:
        pass


class AsyncPoller(AsyncLROPoller, Generic[T]):  # type: ignore[type-arg]
    """What every ``begin_<verb>`` of :mod:`horovod_batchai.aio` returns: an azure-core
    ``AsyncLROPoller`` whose ``result`` and ``wait`` take a ``timeout`` (None: no limit), as the
    sync pollers' do; awaiting the poller itself is ``await poller.result()``."""

    async def wait(self, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        raise NotImplementedError

    async def result(self, timeout: Optional[float] = None) -> T:  # type: ignore[override]
        raise NotImplementedError

    def __await__(self) -> Generator[Any, None, T]:
        return self.result().__await__()


class AsyncMappedPoller(Mapped[S, T], AsyncPoller[T]):
    """``inner``'s progress, with ``convert`` (a function or a coroutine function) applied to its
    result once. With ``same_token``, its continuation token is ``inner``'s own."""

    def __init__(self, inner: "AsyncLROPoller[S]", convert: Callable[[S], Union[T, Awaitable[T]]], *,
                 action: str, resource: str, same_token: bool = False) -> None:
        super().__init__(inner, convert, action=action, resource=resource, same_token=same_token)

    async def wait(self, timeout: Optional[float] = None) -> None:
        """Poll until the operation ends, for at most ``timeout`` seconds (None: no limit)."""
        with azure_errors(self._action, self._resource):
            await _within(self._inner.wait(), timeout)

    async def result(self, timeout: Optional[float] = None) -> T:
        """The operation's outcome; :class:`WaitTimeoutError` if it is still running after
        ``timeout`` seconds (polling then stops; ``result()`` again resumes it)."""
        await self.wait(timeout)
        if not self._inner.done():
            raise not_finished(self._action, self._resource, timeout, self._inner.status())
        if not self._converted:
            with azure_errors(self._action, self._resource):
                raw = await self._inner.result()
            value = self._convert(raw)
            self._value = await value if inspect.isawaitable(value) else value  # type: ignore[assignment]
            self._converted = True
        return self._value  # type: ignore[return-value]


class AsyncDonePoller(Done[T], AsyncPoller[T]):
    """A finished operation whose outcome is already known."""

    def __init__(self, value: T, *, action: str = "", resource: str = "", token: Optional[str] = None) -> None:
        super().__init__(value, action=action, resource=resource, method=AsyncNoPolling(), token=token)

    async def wait(self, timeout: Optional[float] = None) -> None:
        check_seconds(timeout, "timeout", allow_none=True, allow_infinite=True)

    async def result(self, timeout: Optional[float] = None) -> T:
        await self.wait(timeout)
        return self._value


class _AsyncStepsPolling(StepsPolling, AsyncPollingMethod):  # type: ignore[type-arg,misc]
    """The sync steps' polling method, its ``run`` awaited on the event loop. A cancelled run
    leaves the status in progress: the next ``run`` goes on from the step still running; a
    failed one raises its error again."""

    _error: Optional[BaseException] = None

    async def run(self) -> None:  # type: ignore[override]
        if self._error is not None:
            raise self._error
        if self.finished():
            return  # AsyncLROPoller.result() runs the method again after wait() did
        try:
            self._resource = await self._work()
        except asyncio.CancelledError:
            raise
        except BaseException as err:
            self._status, self._error = "Failed", err
            raise
        self._status = "Succeeded"


def async_background_poller(work: Callable[[], Awaitable[T]], *, action: str, resource: str,
                            token: Callable[[], Optional[str]] = lambda: None) -> "AsyncPoller[T]":
    """A poller whose operation is ``await work()``; ``token()`` is the inner token of the step
    still running (None when only state is left to watch). ``work`` must pick up where a
    cancelled run left it (its finished steps are not repeated)."""
    inner: AsyncLROPoller[T] = AsyncLROPoller(None, None, lambda raw: raw, _AsyncStepsPolling(work, token))
    return AsyncMappedPoller(inner, lambda value: value, action=action, resource=resource)


class ThreadedPoller(AsyncPoller[T]):
    """A sync ``LROPoller`` awaited from the event loop: its ``done()`` is checked every
    ``poll_interval`` seconds between ``asyncio.sleep``s, and its result is read in a worker
    thread. Cancelling the wait stops the checks; the sync poller's own thread (azure-core's)
    follows the operation to its end, as it does in the sync API."""

    def __init__(self, inner: "LROPoller[T]", *, poll_interval: float, action: str, resource: str) -> None:
        self._inner = inner
        self._poll_interval = poll_interval
        self._action = action
        self._resource = resource

    def polling_method(self) -> Any:
        return self._inner.polling_method()

    def continuation_token(self) -> str:
        return self._inner.continuation_token()

    def status(self) -> str:
        return self._inner.status()

    def done(self) -> bool:
        return self._inner.done()

    async def wait(self, timeout: Optional[float] = None) -> None:
        polling = Polling(timeout=timeout, poll_interval=min(self._poll_interval, 1.0))
        while not self._inner.done() and not polling.expired():
            await asyncio.sleep(polling.next_pause())

    async def result(self, timeout: Optional[float] = None) -> T:
        await self.wait(timeout)
        if not self._inner.done():
            raise not_finished(self._action, self._resource, timeout, self._inner.status())
        return await asyncio.to_thread(self._inner.result, 0)


def accepted_async(poller: Any, value: T) -> "AsyncDonePoller[T]":
    """The aio form of :func:`~horovod_batchai._shared.lro.accepted` (``polling=False``)."""
    return AsyncDonePoller(value, action=getattr(poller, "_action", ""), resource=getattr(poller, "_resource", ""),
                           token=poller.continuation_token())
