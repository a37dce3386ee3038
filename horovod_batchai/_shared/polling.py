"""Waiting with a deadline: for a job, a cluster or more output.

:class:`Polling` is the deadline and the pause between two polls that ``Job.wait``,
``GpuCluster.wait_until_ready`` and ``OutputStream`` time their waits with; its clock and sleep can
be replaced (tests run it on a fake clock). :func:`poll_until` is a loop for waits that only fetch
and test (the job's and the cluster's); a wait that does more between polls runs its own loop on a
:class:`Polling`. Timeouts and intervals are checked when the wait is set up, naming the argument.

Every wait can be stopped from another thread through a ``stop`` event (a ``threading.Event``):
the pause between two polls is a wait on that event, so setting it ends the pause at once, and
the loop raises :class:`StoppedError` before polling again. Ctrl-C interrupts the pause too
(both ``time.sleep`` and ``Event.wait`` give way to a signal in the main thread).
"""
from __future__ import annotations

import math
import threading
import time
from typing import Callable, Optional, TypeVar

from .._models.errors import InvalidSpecError, StoppedError

__all__ = ["Polling", "check_seconds", "check_stop_event", "poll_until"]

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


def check_stop_event(stop: object, name: str = "stop") -> Optional[threading.Event]:
    """``stop`` if it is an event the caller can set from another thread (or None), else an
    :class:`InvalidSpecError` naming ``name``."""
    if stop is None:
        return None
    if not (callable(getattr(stop, "is_set", None)) and callable(getattr(stop, "wait", None))):
        raise InvalidSpecError(name, f"{type(stop).__name__} is not an event",
                               "a threading.Event that another thread sets to stop the wait, or None")
    return stop  # type: ignore[return-value]


class Polling:
    """A deadline (``timeout`` seconds from now, or none), the pause between two polls, and the
    caller's ``stop`` event (None: the wait cannot be stopped but by its deadline or Ctrl-C)."""

    def __init__(self, *, timeout: Optional[float], poll_interval: float, timeout_name: str = "timeout",
                 interval_name: str = "poll_interval", allow_no_timeout: bool = True,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 stop: Optional[threading.Event] = None) -> None:
        self.timeout = check_seconds(timeout, timeout_name, allow_none=allow_no_timeout, allow_infinite=allow_no_timeout)
        self.poll_interval = float(check_seconds(poll_interval, interval_name) or 0.0)
        self.stop = check_stop_event(stop)
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

    def stopped(self) -> bool:
        """True once the caller has set the stop event."""
        return self.stop is not None and bool(self.stop.is_set())

    def check_stopped(self, what: str, last_state: object = None) -> None:
        """Raise :class:`StoppedError` ("<what> was stopped ...") if the stop event is set."""
        if self.stopped():
            raise StoppedError(f"{what} was stopped by the caller's stop event after {self.elapsed:.1f}s",
                               last_state=last_state)

    def pause(self) -> None:
        """Sleep one interval, never past the deadline; a stop event ends the pause when set."""
        seconds = self.next_pause()
        if self.stop is not None and self._sleep is time.sleep:
            self.stop.wait(seconds)  # returns as soon as the event is set
        else:
            self._sleep(seconds)


def poll_until(fetch: Callable[[], T], *, done: Callable[[T], bool], polling: Polling,
               on_timeout: Callable[[T], Exception], on_each: Optional[Callable[[T], None]] = None,
               what: str = "the wait") -> T:
    """Call ``fetch`` until ``done`` says so (then return what it fetched); ``on_each`` sees every
    result first and may raise to stop the wait. After the deadline, raise ``on_timeout(last)``;
    once the stop event is set, :class:`StoppedError` naming ``what``."""
    polling.check_stopped(what)
    while True:
        value = fetch()
        if on_each is not None:
            on_each(value)
        if done(value):
            return value
        if polling.expired():
            raise on_timeout(value)
        polling.pause()
        polling.check_stopped(what, value)
