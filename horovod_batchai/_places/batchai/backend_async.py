"""The Batch AI backend of an aio target: :mod:`.operations`, run with Microsoft's aio clients
(``azure.mgmt.batchai.aio``, ``azure.storage.fileshare.aio``), each request awaited."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..._shared.steps_async import Async
from .operations import BatchAIOperations

if TYPE_CHECKING:
    from ..connection_async import AsyncConnection

__all__ = ["AsyncBatchAIBackend"]


class AsyncBatchAIBackend(Async):
    """The Batch AI REST API, on the local service or on Azure, from the event loop."""

    def __init__(self, connection: "AsyncConnection") -> None:
        super().__init__(BatchAIOperations(connection))  # type: ignore[arg-type]
