"""azure-core ``LROPoller``s for the package's long-running operations.

Every ``begin_<verb>`` of the public classes returns one of these, and every blocking form is
``begin_<verb>(...).result(timeout)``:

- :class:`MappedPoller` -- a Microsoft client's poller (or one of ours), its result turned into
  one of our types;
- :class:`DonePoller` -- an operation that had nothing left to do (the resource existed already);
- :func:`background_poller` -- an operation made of several steps (a scale request, then nodes
  coming and going), run on azure-core's own poller thread as its polling method.

``result`` takes a ``timeout`` and raises :class:`WaitTimeoutError` when the operation has not
finished by then, instead of azure-core's silent ``None``; the operation goes on (as azure-core's
pollers do), and ``result`` may be called again. ``result`` and ``wait`` also take a keyword-only
``stop`` (a ``threading.Event``): setting it from another thread ends the wait within a tenth of a
second with :class:`StoppedError` -- the operation goes on likewise.

Continuation tokens: each poller's token names the operation and its resource and wraps the token
of the step still running (Microsoft's own, or the layer below's), or none when only state is left
to watch. ``begin_<verb>(..., continuation_token=token)`` reads it back with :func:`resume_token`,
which refuses a token of another operation or resource before anything is sent.
"""
from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import threading
import time
from typing import Any, Callable, Generic, Optional, TypeVar

from azure.core.polling import LROPoller, NoPolling, PollingMethod

from .._models.errors import HorovodBatchAIError, InvalidSpecError, StoppedError, WaitTimeoutError, azure_errors
from .polling import check_seconds, check_stop_event

log = logging.getLogger(__name__)

__all__ = ["check_polling", "poll_options", "accepted", "MappedPoller", "DonePoller", "background_poller", "resume_token", "check_timeout", 
           "not_finished", "wrap_token", "inner_token", "StepsPolling", "Done", "Mapped"]

S = TypeVar("S")
T = TypeVar("T")

#: how often a stoppable wait looks at its stop event while azure-core's thread polls
STOP_CHECK_S = 0.1

_TOKEN_VERSION = 1


def check_timeout(timeout: object) -> None:
    """Refuse a bad ``timeout`` of a blocking form before its operation starts."""
    check_seconds(timeout, "timeout", allow_none=True, allow_infinite=True)


def check_polling(polling: object, polling_interval: object) -> Optional[float]:
    """Refuse a ``begin_`` method's ``polling`` and ``polling_interval`` before anything is sent;
    the interval as checked (None: the target's default)."""
    if not isinstance(polling, bool):
        raise InvalidSpecError("polling", f"{polling!r} is not True or False",
                               "True (the poller follows the operation to its end) or False (it is done once "
                               "the service has accepted the request)")
    return check_seconds(polling_interval, "polling_interval", allow_none=True, allow_zero=False)


def poll_options(polling_interval: Optional[float] = None) -> dict[str, Any]:
    """What a Microsoft client's ``begin_`` method is told: the interval, when one is given.
    (``polling=False`` is not passed on: a client poller that does not poll gives no continuation
    token, so the client's poller is made as usual and simply not waited on.)"""
    return {} if polling_interval is None else {"polling_interval": polling_interval}


def wrap_token(action: str, resource: str, inner: Optional[str]) -> str:
    body = {"v": _TOKEN_VERSION, "operation": action, "resource": resource, "inner": inner}
    return base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).decode("ascii")


def resume_token(token: object, *, action: str, resource: str) -> Optional[str]:
    """The inner token ``token`` wraps (None: the step that remains is only watching state), after
    checking that it was given by ``action`` on ``resource``; :class:`InvalidSpecError` naming
    ``continuation_token`` otherwise."""
    valid = f"the continuation_token() of a poller that was {action} {resource}"
    if not isinstance(token, str) or not token:
        raise InvalidSpecError("continuation_token", f"{type(token).__name__} is not a continuation token", valid)
    try:
        body = json.loads(base64.urlsafe_b64decode(token.encode("ascii")))
    except (binascii.Error, UnicodeError, ValueError):
        raise InvalidSpecError("continuation_token", "is not a token this package gave", valid) from None
    if not isinstance(body, dict) or body.get("v") != _TOKEN_VERSION:
        raise InvalidSpecError("continuation_token", "is not a token this version of the package gave", valid)
    if body.get("operation") != action or str(body.get("resource", "")).lower() != resource.lower():
        raise InvalidSpecError("continuation_token", f"was given by {body.get('operation')} "
                               f"{body.get('resource')}", valid)
    inner = body.get("inner")
    return inner if isinstance(inner, str) else None


def not_finished(action: str, resource: str, timeout: Optional[float], status: str) -> WaitTimeoutError:
    return WaitTimeoutError(f"{action} {resource} had not finished after {timeout:g}s (status {status})",
                            last_state=status)


def inner_token(poller: Any, action: str, resource: str) -> Optional[str]:
    try:
        token = poller.continuation_token()
    except (TypeError, NotImplementedError) as err:  # azure-core's answer for a polling method without tokens
        raise HorovodBatchAIError(f"{action} {resource} cannot be resumed from a continuation token: the "
                                  f"service's client gives none ({err})") from None
    return token if isinstance(token, str) and token else None


class Mapped(Generic[S, T]):
    """What a poller that converts another's result answers (the sync and the async ones):
    ``inner``'s progress, and with ``same_token`` its continuation token (a conversion adds no
    step to resume), else ours wrapping it."""

    def __init__(self, inner: Any, convert: Callable[[S], Any], *, action: str, resource: str,
                 same_token: bool = False) -> None:
        # LROPoller.__init__ would start a second polling thread: this poller only delegates.
        self._inner = inner
        self._same_token = same_token
        self._convert = convert
        self._action = action
        self._resource = resource
        self._converted = False
        self._value: Optional[T] = None

    def polling_method(self) -> Any:
        return self._inner.polling_method()

    def continuation_token(self) -> str:
        """A token that ``begin_<verb>(..., continuation_token=token)`` resumes from, in this
        process or another one."""
        if self._same_token:
            token: str = self._inner.continuation_token()
            return token
        return wrap_token(self._action, self._resource, inner_token(self._inner, self._action, self._resource))

    def status(self) -> str:
        status: str = self._inner.status()
        return status

    def done(self) -> bool:
        return bool(self._inner.done())


class MappedPoller(Mapped[S, T], LROPoller):  # type: ignore[type-arg]
    """``inner``'s progress, with ``convert`` applied to its result (once)."""

    def __init__(self, inner: "LROPoller[S]", convert: Callable[[S], T], *, action: str, resource: str,
                 same_token: bool = False) -> None:
        super().__init__(inner, convert, action=action, resource=resource, same_token=same_token)

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
            raise not_finished(self._action, self._resource, timeout, self._inner.status())
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


class Done(Generic[T]):
    """What a finished operation's poller answers (the sync and the async ones): its outcome is
    known, and its token resumes by reading the resource again."""

    def __init__(self, value: T, *, action: str = "", resource: str = "", method: Any = None,
                 token: Optional[str] = None) -> None:
        self._value = value
        self._action = action
        self._resource = resource
        self._method = method
        self._token = token

    def polling_method(self) -> Any:
        return self._method

    def continuation_token(self) -> str:
        """A token whose resumption only reads the resource again: nothing is left to wait for
        (or, for a poller made with ``polling=False``, the token of the operation it did not wait for)."""
        return self._token or wrap_token(self._action, self._resource, None)

    def status(self) -> str:
        return "Succeeded"

    def done(self) -> bool:
        return True


class DonePoller(Done[T], LROPoller):  # type: ignore[type-arg]
    """A finished operation whose outcome is already known."""

    def __init__(self, value: T, *, action: str = "", resource: str = "", token: Optional[str] = None) -> None:
        super().__init__(value, action=action, resource=resource, method=NoPolling(), token=token)

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


class StepsPolling(PollingMethod):  # type: ignore[type-arg]
    """A polling method that runs ``work`` -- the operation's remaining steps, which wait on
    pollers and on the service's state -- on the ``LROPoller``'s thread."""

    def __init__(self, work: Callable[[], Any], token: Callable[[], Optional[str]]) -> None:
        self._work = work
        self._token = token
        self._status = "InProgress"
        self._resource: Any = None

    def initialize(self, client: Any, initial_response: Any, deserialization_callback: Any) -> None:
        pass

    def run(self) -> None:
        try:
            self._resource = self._work()
        except BaseException:
            self._status = "Failed"
            raise
        self._status = "Succeeded"

    def status(self) -> str:
        return self._status

    def finished(self) -> bool:
        return self._status != "InProgress"

    def resource(self) -> Any:
        return self._resource

    def get_continuation_token(self) -> str:
        return self._token() or ""

    @classmethod
    def from_continuation_token(cls, continuation_token: str, **kwargs: Any) -> Any:
        raise ValueError("resume through the begin_ method that gave the token (continuation_token=...)")


def background_poller(work: Callable[[], T], *, action: str, resource: str,
                      token: Callable[[], Optional[str]] = lambda: None) -> "LROPoller[T]":
    """A poller whose operation is ``work()``, run on azure-core's poller thread; ``token()`` is
    the inner token of the step still running (None when only state is left to watch)."""
    inner: LROPoller[T] = LROPoller(None, None, lambda raw: raw, StepsPolling(work, token))
    return MappedPoller(inner, lambda value: value, action=action, resource=resource)


def accepted(poller: Any, value: T) -> "DonePoller[T]":
    """What a ``begin_`` method made with ``polling=False`` returns: a poller that is done (the
    operation's first request was accepted when ``poller`` was made), whose result is ``value``
    and whose continuation token resumes ``poller``'s operation, to follow it to its end later."""
    return DonePoller(value, action=getattr(poller, "_action", ""), resource=getattr(poller, "_resource", ""),
                      token=poller.continuation_token())
