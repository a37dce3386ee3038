"""The backend of an aio :class:`~horovod_batchai.aio.Target`: the same operations as
:mod:`horovod_batchai._places.base`, awaited.

- ``local`` and ``azure``: :class:`.batchai.AsyncBatchAIBackend`, on ``azure.mgmt.batchai.aio``;
- ``azureml``: :class:`ThreadedBackend` over the sync Azure ML backend. azure-ai-ml has no async
  API, so each of its calls runs in a worker thread (``asyncio.to_thread``), and its pollers are
  watched from the loop (:class:`~horovod_batchai._shared.lro_async.ThreadedPoller`).
"""
from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Union

from ..._shared.lro_async import ThreadedPoller

if TYPE_CHECKING:
    from ..base import Backend, RemoteFile
    from ...aio._target import Target
    from ..batchai.backend_async import AsyncBatchAIBackend

__all__ = ["build_backend", "AsyncBackend", "ThreadedBackend", "ThreadedRemoteFile"]

#: what the aio classes delegate to
AsyncBackend = Union["AsyncBatchAIBackend", "ThreadedBackend"]

#: the operations that make no request: called as they are
_LOCAL_CALLS = frozenset({"workspace_id", "experiment_id", "cluster_id", "job_id", "check_cluster_spec"})
_ATTRIBUTES = frozenset({"kind", "default_poll_interval", "failure_log_name"})


def build_backend(target: "Target") -> AsyncBackend:
    """A new backend for ``target``'s kind (the target keeps the one it uses: ``target.backend``)."""
    if target.kind == "azureml":
        return ThreadedBackend(target.sync.backend)
    from ..batchai.backend_async import AsyncBatchAIBackend
    return AsyncBatchAIBackend(target)


class ThreadedRemoteFile:
    """A sync :class:`RemoteFile` read from the loop: each request in a worker thread."""

    def __init__(self, remote: "RemoteFile") -> None:
        self._remote = remote

    async def size(self) -> int:
        return await asyncio.to_thread(self._remote.size)

    async def read(self, offset: int, length: int) -> bytes:
        return await asyncio.to_thread(self._remote.read, offset, length)

    async def chunks(self) -> AsyncIterator[bytes]:
        iterator = await asyncio.to_thread(self._remote.chunks)
        end = object()
        while (chunk := await asyncio.to_thread(next, iterator, end)) is not end:
            yield chunk  # type: ignore[misc]

    async def close(self) -> None:
        pass


class ThreadedBackend:
    """A sync backend driven from the event loop: its requests run in worker threads, its
    ``begin_`` pollers are awaited as :class:`ThreadedPoller`, its checks run as they are."""

    def __init__(self, backend: "Backend") -> None:
        self.sync = backend

    def __getattr__(self, name: str) -> Any:
        member = getattr(self.sync, name)
        if name in _ATTRIBUTES or name in _LOCAL_CALLS:
            return member
        if name == "open_output":
            return self._threaded(lambda url: ThreadedRemoteFile(member(url)))
        if name.startswith("begin_"):
            return self._threaded(lambda *args, **kwargs: ThreadedPoller(
                member(*args, **kwargs), poll_interval=self.sync.default_poll_interval,
                action=name[len("begin_"):].replace("_", " "), resource="on Azure ML"))
        return self._threaded(member)

    @staticmethod
    def _threaded(call: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(call)
        async def run(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(call, *args, **kwargs)
        return run

    async def close(self) -> None:
        pass  # the sync backend belongs to the sync target, which closes it
