"""The Batch AI backend of a sync target: :mod:`.operations`, run with Microsoft's sync clients."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..._shared.steps import Sync
from .operations import BatchAIOperations

if TYPE_CHECKING:
    from ..connection import Connection

__all__ = ["BatchAIBackend"]


class BatchAIBackend(Sync):
    """The Batch AI REST API, on the local service or on Azure (see :class:`.operations.BatchAIOperations`)."""

    def __init__(self, connection: "Connection") -> None:
        super().__init__(BatchAIOperations(connection))
