"""The one polling loop: waiting for a job, a cluster or more output, with a deadline.

``Job.wait``, ``GpuCluster.wait_until_ready`` and ``OutputStream`` all go through
:class:`Polling`, whose clock and sleep can be replaced (tests run it on a fake clock).
Timeouts and intervals are checked when the wait is set up, naming the argument.
"""
from __future__ import annotations

import math
import time
from typing import Callable, Optional, TypeVar

from ._errors import InvalidSpecError

__all__ = ["Polling", "check_seconds", "poll_until"]

T = TypeVar("T")


def check_seconds(value: object, name: str, *, allow_none: bool = False, allow_infinite: bool = False,
                  allow_zero: bool = True) -> Optional[float]:
    """``value`` as seconds, refusing NaN, negatives, booleans, non-numbers and (unless allowed)
    infinity, zero and None -- with an error naming ``name``."""
    if value is None:
        if allow_none:
            return None
        raise InvalidSpecError(name, "is None", "a number of seconds")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidSpecError(name, f"{value!r} is not a number of seconds", "a number of seconds >= 0")
    seconds = float(value)
    if math.isnan(seconds):
        raise InvalidSpecError(name, "is NaN", "a number of seconds >= 0")
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise InvalidSpecError(name, f"{value!r} is negative" if seconds < 0 else "is zero",
                               "a number of seconds > 0" if not allow_zero else "a number of seconds >= 0")
    if math.isinf(seconds) and not allow_infinite:
        raise InvalidSpecError(name, "is infinite", "a finite number of seconds" +
                               (", or None to wait without limit" if allow_none else ""))
    return seconds


class Polling:
    """A deadline (``timeout`` seconds from now, or none) and the pause between two polls."""

    def __init__(self, *, timeout: Optional[float], poll_interval: float, timeout_name: str = "timeout",
                 interval_name: str = "poll_interval", allow_no_timeout: bool = True,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.timeout = check_seconds(timeout, timeout_name, allow_none=allow_no_timeout, allow_infinite=allow_no_timeout)
        self.poll_interval = float(check_seconds(poll_interval, interval_name) or 0.0)
        self._clock = clock
        self._sleep = sleep
        self._started = clock()

    @property
    def elapsed(self) -> float:
        return self._clock() - self._started

    def remaining(self) -> float:
        if self.timeout is None or math.isinf(self.timeout):
            return math.inf
        return max(0.0, self.timeout - self.elapsed)

    def expired(self) -> bool:
        return self.remaining() <= 0.0

    def next_pause(self) -> float:
        """Seconds until the next poll: one interval, never past the deadline."""
        return min(self.poll_interval, self.remaining())

    def pause(self) -> None:
        """Sleep one interval, never past the deadline."""
        self._sleep(self.next_pause())


def poll_until(fetch: Callable[[], T], *, done: Callable[[T], bool], polling: Polling,
               on_timeout: Callable[[T], Exception], on_each: Optional[Callable[[T], None]] = None) -> T:
    """Call ``fetch`` until ``done`` says so (then return what it fetched); ``on_each`` sees every
    result first and may raise to stop the wait. After the deadline, raise ``on_timeout(last)``."""
    while True:
        value = fetch()
        if on_each is not None:
            on_each(value)
        if done(value):
            return value
        if polling.expired():
            raise on_timeout(value)
        polling.pause()
