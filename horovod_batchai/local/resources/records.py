"""Microsoft.Resources' records (see ``core/records.py``)."""
from __future__ import annotations

from dataclasses import dataclass

from ..core.records import Resource

__all__ = ["ResourceGroup"]


@dataclass(frozen=True, repr=False)
class ResourceGroup(Resource):
    @property
    def location(self) -> str:
        return str(self.doc["location"])

    @property
    def deleting(self) -> bool:
        """Whether its deletion has started (ARM refuses writes into it then)."""
        return self.properties.get("provisioningState") == "Deleting"
