"""The Azure ML backend of an aio target: the sync one (:mod:`.backend`), driven from the loop.

azure-ai-ml has no async API, so each of its calls runs in a worker thread
(``asyncio.to_thread``), and its pollers are watched from the loop
(:class:`~horovod_batchai._shared.lro_async.ThreadedPoller`).
"""
from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable

from ..._shared.lro_async import ThreadedPoller
from ..._shared.steps_async import Async
from ..storage import StorageAccountOperations

if TYPE_CHECKING:
    from ..base import Backend, RemoteFile
    from ..connection_async import AsyncConnection

__all__ = ["ThreadedBackend", "ThreadedRemoteFile"]

#: the operations that make no request: called as they are
_LOCAL_CALLS = frozenset({"workspace_id", "experiment_id", "cluster_id", "job_id", "sweep_id", "check_cluster_spec"})
_ATTRIBUTES = frozenset({"kind", "default_poll_interval", "failure_log_name", "holds_sweeps"})
#: the operations run with the aio storage clients, not in a thread
_STORAGE = frozenset(name for name in vars(StorageAccountOperations) if not name.startswith("_"))


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
    """The sync Azure ML backend driven from the event loop: its requests run in worker threads,
    its ``begin_`` pollers are awaited as :class:`ThreadedPoller`, its checks run as they are."""

    def __init__(self, connection: "AsyncConnection") -> None:
        from .backend import AzureMLBackend
        self.sync: "Backend" = AzureMLBackend(connection.sync)
        # storage accounts and their data-plane clients are the aio clients' own, as on Batch AI
        self._storage = Async(StorageAccountOperations(connection))  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        if name in _STORAGE:
            return getattr(self._storage, name)
        member = getattr(self.sync, name)
        if name in _ATTRIBUTES or name in _LOCAL_CALLS:
            return member
        if name == "open_output":
            return self._threaded(lambda url: ThreadedRemoteFile(member(url)))
        if name.startswith("begin_"):
            return self._threaded(lambda *args, **kwargs: ThreadedPoller(
                member(*args, **kwargs),
                poll_interval=kwargs.get("polling_interval") or self.sync.default_poll_interval,
                action=name[len("begin_"):].replace("_", " "), resource="on Azure ML"))
        return self._threaded(member)

    @staticmethod
    def _threaded(call: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(call)
        async def run(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(call, *args, **kwargs)
        return run

    async def close(self) -> None:
        await asyncio.to_thread(self.sync.close)
