"""The sweep resource's own error codes."""
from __future__ import annotations

from ..errors import AlreadyExists, NotFound

__all__ = ["SweepNotFound", "SweepAlreadyExists"]


class SweepNotFound(NotFound):
    pass


class SweepAlreadyExists(AlreadyExists):
    """A PUT naming an existing sweep with other settings (a sweep cannot change once created)."""
