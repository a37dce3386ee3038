"""Requests follow the local service when it comes back on another port, and wait for it to come back.

The daemon a :class:`~horovod_batchai.Target` found or started may die (a crash, a laptop lid) and be
started again, by this target or anyone, on a new port. Clients, a share's account URL and SAS
download links all carry the old ``127.0.0.1:PORT``. This policy runs on every attempt: it asks the
target where the service is now and points loopback requests there. A connection refused (the
service is down, or restarting) is tried again, pointed anew each time, for ``patience`` seconds --
longer than a restart takes -- before a :class:`LocalServiceDownError` says how to start it; the
clients' own retry policies, which give up on refused connections within a fraction of a second,
never see those refusals.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Optional
from urllib.parse import urlsplit, urlunsplit

from azure.core.exceptions import ServiceRequestError
from azure.core.pipeline import PipelineRequest, PipelineResponse
from azure.core.pipeline.policies import HTTPPolicy

from .._models.errors import LocalServiceDownError

__all__ = ["FollowLocalService", "LOOPBACK_HOSTS", "RESTART_PATIENCE_S"]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
#: how long refused connections are retried: a killed daemon is back (restarted by the target, by a
#: service manager or by hand) within a few seconds
RESTART_PATIENCE_S = 10.0
_PAUSE_S = 0.2


def _refused(err: BaseException) -> bool:
    """Whether ``err`` (an azure-core error wrapping requests' and urllib3's) is a refused connection."""
    seen: set[int] = set()
    pending: list[Any] = [err]
    while pending:
        item = pending.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, ConnectionRefusedError):
            return True
        if isinstance(item, BaseException):
            pending += [item.__cause__, item.__context__, getattr(item, "inner_exception", None),
                        getattr(item, "reason", None), *[a for a in item.args if isinstance(a, BaseException)]]
    return "Connection refused" in str(err)


class FollowLocalService(HTTPPolicy):  # type: ignore[type-arg]
    """Points loopback https requests at the current service endpoint, and waits out a restart."""

    def __init__(self, current_endpoint: Callable[[], str], down_message: Callable[[str], str], *,
                 patience: Optional[float] = None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__()
        self._current_endpoint = current_endpoint
        self._down_message = down_message
        self._patience = patience  # None: RESTART_PATIENCE_S at the time of the request
        self._clock = clock
        self._sleep = sleep

    def _point(self, request: PipelineRequest[Any]) -> bool:
        """Rewrite the request's host:port to where the service is now; False for other hosts."""
        url = urlsplit(request.http_request.url)
        if url.scheme != "https" or url.hostname not in LOOPBACK_HOSTS:
            return False
        try:
            now = urlsplit(self._current_endpoint()).netloc
        except LocalServiceDownError:
            raise
        except Exception as err:  # could not be started again: say so, with the reason
            raise LocalServiceDownError(self._down_message(f"{url.netloc} is not answering and the service could "
                                                           f"not be started again ({err})")) from err
        if url.netloc != now:
            request.http_request.url = urlunsplit(url._replace(netloc=now))
        return True

    def send(self, request: PipelineRequest[Any]) -> PipelineResponse[Any, Any]:
        started = None
        while True:
            local = self._point(request)
            try:
                return self.next.send(request)
            except ServiceRequestError as err:
                if not local or not _refused(err):
                    raise
                now = self._clock()
                started = now if started is None else started
                patience = RESTART_PATIENCE_S if self._patience is None else self._patience
                if now - started >= patience:
                    where = urlsplit(request.http_request.url).netloc
                    raise LocalServiceDownError(self._down_message(
                        f"{where} refused connections for {patience:g}s")) from err
                self._sleep(_PAUSE_S)
