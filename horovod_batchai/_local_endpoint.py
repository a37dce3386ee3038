"""Requests follow the local service when it comes back on another port.

The daemon a :class:`~horovod_batchai.Target` found or started may die (a crash, a laptop lid) and be
started again, by this target or anyone, on a new port. Clients, a share's account URL and SAS
download links all carry the old ``127.0.0.1:PORT``. This policy runs on every attempt: it asks the
target where the service is now and points loopback requests there, so the retry of a request
refused by the dead port reaches the new one.
"""
from __future__ import annotations

from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

from azure.core.pipeline import PipelineRequest
from azure.core.pipeline.policies import SansIOHTTPPolicy

__all__ = ["FollowLocalService", "LOOPBACK_HOSTS"]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


class FollowLocalService(SansIOHTTPPolicy):  # type: ignore[type-arg]
    """Rewrites the host:port of loopback https requests to the current service endpoint."""

    def __init__(self, current_endpoint: Callable[[], str]) -> None:
        self._current_endpoint = current_endpoint

    def on_request(self, request: PipelineRequest[Any]) -> None:
        url = urlsplit(request.http_request.url)
        if url.scheme != "https" or url.hostname not in LOOPBACK_HOSTS:
            return
        now = urlsplit(self._current_endpoint()).netloc
        if url.netloc != now:
            request.http_request.url = urlunsplit(url._replace(netloc=now))
