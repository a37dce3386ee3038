"""A stored ARM resource as a typed record: what planes hand each other instead of a raw dict.

A record wraps the resource's document exactly as the store keeps it and the service answers it
(``doc``: key order and all, so answers stay byte for byte what they were), and reads what the
service decides on by name. Records are frozen: a plane changes a resource only through the store
(``Store.update``), which gives back a new document and so a new record. Each plane declares its
own kinds (``resources/records.py``, ``storage/records.py``, ``batchai/records.py``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Resource"]


@dataclass(frozen=True)
class Resource:
    """A stored ARM resource: its document, as answered."""

    doc: dict[str, Any] = field(repr=False)

    @property
    def id(self) -> str:
        return str(self.doc["id"])

    @property
    def name(self) -> str:
        return str(self.doc["name"])

    @property
    def properties(self) -> dict[str, Any]:
        return self.doc.get("properties") or {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r})"
