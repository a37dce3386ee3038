"""Microsoft.Storage's records (see ``core/records.py``)."""
from __future__ import annotations

from dataclasses import dataclass

from ..core.records import Resource

__all__ = ["StorageAccount"]


@dataclass(frozen=True, repr=False)
class StorageAccount(Resource):
    @property
    def location(self) -> str:
        return str(self.doc["location"])

    @property
    def kind(self) -> str:
        return str(self.doc["kind"])
