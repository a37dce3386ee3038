"""azure-core ``LROPoller``s for the package's own long-running operations.

Microsoft's clients return pollers of their generated models; :class:`MappedPoller` gives the
same poller with its result turned into one of ours, and :class:`DonePoller` stands for an
operation that had nothing left to do (the resource existed already). ``result`` takes a
``timeout`` and raises :class:`WaitTimeoutError` when the operation has not finished by then,
instead of azure-core's silent ``None``, and a keyword-only ``stop`` (a ``threading.Event``):
setting it from another thread ends the wait within a tenth of a second with
:class:`StoppedError` -- the operation itself goes on on the service, and the poller can be
waited on again.
"""
from __future__ import annotations

import math
import threading
import time
from typing import Any, Callable, Generic, Optional, TypeVar

from azure.core.polling import LROPoller, NoPolling

from ._errors import StoppedError, WaitTimeoutError, azure_errors
from ._polling import check_seconds, check_stop_event

__all__ = ["MappedPoller", "DonePoller", "DEFAULT_LRO_TIMEOUT"]

S = TypeVar("S")
T = TypeVar("T")

#: how long the package's own blocking calls wait for a long-running operation
DEFAULT_LRO_TIMEOUT = 3600.0
#: how often a stoppable wait looks at its stop event while azure-core's thread polls
STOP_CHECK_S = 0.1


class MappedPoller(LROPoller, Generic[S, T]):  # type: ignore[type-arg]
    """``inner``'s progress, with ``convert`` applied to its result (once)."""

    def __init__(self, inner: "LROPoller[S]", convert: Callable[[S], T], *, action: str, resource: str) -> None:
        # LROPoller.__init__ would start a second polling thread: this poller only delegates.
        self._inner = inner
        self._convert = convert
        self._action = action
        self._resource = resource
        self._converted = False
        self._value: Optional[T] = None

    def polling_method(self) -> Any:
        return self._inner.polling_method()

    def continuation_token(self) -> str:
        return self._inner.continuation_token()

    def status(self) -> str:
        return self._inner.status()

    def done(self) -> bool:
        return self._inner.done()

    def wait(self, timeout: Optional[float] = None, *, stop: Optional[threading.Event] = None) -> None:
        seconds = check_seconds(timeout, "timeout", allow_none=True, allow_infinite=True)
        stop = check_stop_event(stop)
        with azure_errors(self._action, self._resource):
            if stop is None:
                self._inner.wait(timeout)
                return
            deadline = math.inf if seconds is None else time.monotonic() + seconds
            while not self._inner.done():
                if stop.is_set():
                    raise StoppedError(f"waiting for {self._action} {self._resource} was stopped by the caller's "
                                       f"stop event (status {self._inner.status()}; the operation goes on)",
                                       last_state=self._inner.status())
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._inner.wait(min(STOP_CHECK_S, left))

    def result(self, timeout: Optional[float] = None, *,  # type: ignore[override]
               stop: Optional[threading.Event] = None) -> T:
        """The operation's outcome; :class:`WaitTimeoutError` if it is still running after
        ``timeout`` seconds (None waits without limit), :class:`StoppedError` once ``stop`` is set."""
        self.wait(timeout, stop=stop)
        if not self._inner.done():
            raise WaitTimeoutError(f"{self._action} {self._resource} had not finished after {timeout:g}s "
                                   f"(status {self._inner.status()})", last_state=self._inner.status())
        if not self._converted:
            with azure_errors(self._action, self._resource):
                raw = self._inner.result()
            self._value = self._convert(raw)
            self._converted = True
        return self._value  # type: ignore[return-value]

    def add_done_callback(self, func: Callable[..., Any]) -> None:
        self._inner.add_done_callback(func)

    def remove_done_callback(self, func: Callable[..., Any]) -> None:
        self._inner.remove_done_callback(func)


class DonePoller(LROPoller, Generic[T]):  # type: ignore[type-arg]
    """A finished operation whose outcome is already known."""

    def __init__(self, value: T) -> None:
        self._value = value
        self._method: NoPolling = NoPolling()

    def polling_method(self) -> Any:
        return self._method

    def continuation_token(self) -> str:
        raise ValueError("a finished operation has no continuation token")

    def status(self) -> str:
        return "Succeeded"

    def done(self) -> bool:
        return True

    def wait(self, timeout: Optional[float] = None, *, stop: Optional[threading.Event] = None) -> None:
        check_seconds(timeout, "timeout", allow_none=True, allow_infinite=True)
        check_stop_event(stop)  # nothing to wait for: a finished operation is not stopped

    def result(self, timeout: Optional[float] = None, *,  # type: ignore[override]
               stop: Optional[threading.Event] = None) -> T:
        self.wait(timeout, stop=stop)
        return self._value

    def add_done_callback(self, func: Callable[..., Any]) -> None:
        func(self._method)

    def remove_done_callback(self, func: Callable[..., Any]) -> None:
        pass
