"""Retry policies for the Files data plane.

azure-storage's own retry policies retry 408 and 5xx (and dropped connections) but hand a
``429 Too Many Requests`` straight back to the caller, because Azure Storage throttles with 503.
The management plane (azure-core's RetryPolicy) honours 429 + ``Retry-After``; these subclasses
make the data plane do the same, on top of the storage policy's own behaviour, which is kept.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from azure.core.pipeline import PipelineRequest, PipelineResponse
from azure.storage.fileshare import ExponentialRetry, LinearRetry

# The aio clients' retry policies are exported by no public module of azure-storage-file-share
# (its aio clients build them from there too); the module has been there since 12.0.
from azure.storage.fileshare._shared.policies_async import ExponentialRetry as AsyncExponentialRetry
from azure.storage.fileshare._shared.policies_async import LinearRetry as AsyncLinearRetry

__all__ = ["ThrottleAwareLinearRetry", "ThrottleAwareExponentialRetry", "AsyncThrottleAwareLinearRetry",
           "AsyncThrottleAwareExponentialRetry", "retry_after_seconds"]


log = logging.getLogger(__name__)

#: longest single wait we accept from a Retry-After header, and how many 429s in a row we ride out.
MAX_RETRY_AFTER_S = 60.0
MAX_THROTTLED_ATTEMPTS = 8


def retry_after_seconds(response: Any, default: float = 1.0) -> float:
    """The wait a ``Retry-After`` (or ``x-ms-retry-after-ms``) header asks for, capped."""
    headers = response.headers
    millis = headers.get("x-ms-retry-after-ms") or headers.get("retry-after-ms")
    try:
        if millis:
            return min(float(millis) / 1000.0, MAX_RETRY_AFTER_S)
        value = headers.get("Retry-After")
        if value:
            return min(float(value), MAX_RETRY_AFTER_S)
    except ValueError:  # an HTTP date: not worth parsing for a throttle, wait the default
        pass
    return default


def _throttle_wait(response: PipelineResponse, request: PipelineRequest, attempts: int) -> float | None:
    """How long to wait before sending ``request`` again after a 429 (None: hand the answer back);
    the request's body is rewound for the new attempt."""
    if response.http_response.status_code != 429 or attempts >= MAX_THROTTLED_ATTEMPTS:
        return None
    wait = retry_after_seconds(response.http_response)
    log.debug("throttled (429) on %s; retrying in %.1fs", request.http_request.method, wait)
    body: Any = getattr(request.http_request, "body", None)
    position = request.context.get("body_position")
    if position is not None and hasattr(body, "seek"):
        body.seek(position)
    return wait


class _ThrottleAware:
    """Mixin over a storage retry policy: after it gives up on a 429, wait as asked and go again."""

    def send(self, request: PipelineRequest) -> PipelineResponse:
        response: PipelineResponse = super().send(request)  # type: ignore[misc]
        attempts = 1
        while (wait := _throttle_wait(response, request, attempts)) is not None:
            time.sleep(wait)
            response = super().send(request)  # type: ignore[misc]
            attempts += 1
        return response


class _AsyncThrottleAware:
    """The same over an asynchronous storage retry policy (horovod_batchai.aio's clients)."""

    async def send(self, request: PipelineRequest) -> PipelineResponse:
        response: PipelineResponse = await super().send(request)  # type: ignore[misc]
        attempts = 1
        while (wait := _throttle_wait(response, request, attempts)) is not None:
            await asyncio.sleep(wait)
            response = await super().send(request)  # type: ignore[misc]
            attempts += 1
        return response


class ThrottleAwareLinearRetry(_ThrottleAware, LinearRetry):
    """LinearRetry that also rides out 429 + Retry-After (used for the local service: short waits)."""


class ThrottleAwareExponentialRetry(_ThrottleAware, ExponentialRetry):
    """ExponentialRetry (azure-storage's default) that also rides out 429 + Retry-After."""


class AsyncThrottleAwareLinearRetry(_AsyncThrottleAware, AsyncLinearRetry):  # type: ignore[misc]
    """The asynchronous :class:`ThrottleAwareLinearRetry`."""


class AsyncThrottleAwareExponentialRetry(_AsyncThrottleAware, AsyncExponentialRetry):  # type: ignore[misc]
    """The asynchronous :class:`ThrottleAwareExponentialRetry`."""
