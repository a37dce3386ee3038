"""The async polling loop: :func:`horovod_batchai._shared.polling.poll_until` with ``await``s, sleeping
with ``asyncio.sleep`` on the same :class:`~horovod_batchai._shared.polling.Polling` deadline. A
cancellation lands in the sleep or the request in flight, so the loop stops at once."""
from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, Optional, TypeVar

from .polling import Polling

__all__ = ["async_poll_until"]

T = TypeVar("T")


async def async_poll_until(fetch: Callable[[], Awaitable[T]], *, done: Callable[[T], bool], polling: Polling,
                           on_timeout: Callable[[T], Exception], on_each: Optional[Callable[[T], None]] = None) -> T:
    """Await ``fetch`` until ``done`` says so; see ``poll_until``."""
    while True:
        value = await fetch()
        if on_each is not None:
            on_each(value)
        if done(value):
            return value
        if polling.expired():
            raise on_timeout(value)
        await asyncio.sleep(polling.next_pause())
