"""The places requests go, a folder each, and the registry that finds a target kind's backends.

The public classes describe *what* to do; the backend that :func:`build_backend` (or
:func:`build_async_backend`) makes for their target's connection does it, through that place's
Microsoft clients (the operations are listed in :mod:`.base`):

- ``local`` and ``azure``: :mod:`.batchai`, Batch AI 2018-05-01 through azure-mgmt-batchai;
- ``azureml``: :mod:`.azureml`, Azure Machine Learning through azure-ai-ml (an optional extra).

A new place is a folder here (its conversions, ``backend.py``, ``backend_async.py``) and a line
in :data:`PLACES`; ``DEVELOPERS.md`` says what its backends must implement.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from .._models.errors import TargetError

if TYPE_CHECKING:
    from .base import Backend
    from .connection import Connection
    from .connection_async import AsyncConnection

__all__ = ["Place", "PLACES", "build_backend", "build_async_backend"]


@dataclass(frozen=True)
class Place:
    """Where a target kind's backends are: ``module:Class`` of the sync one and of the aio one
    (each built with the target's connection), and the extra that brings the place's client
    when it is optional."""

    backend: str
    backend_async: str
    extra: Optional[str] = None


_BATCHAI = Place("batchai.backend:BatchAIBackend", "batchai.backend_async:AsyncBatchAIBackend")

#: every target kind, and where its backends are
PLACES = {
    "local": _BATCHAI,
    "azure": _BATCHAI,
    "azureml": Place("azureml.backend:AzureMLBackend", "azureml.backend_async:ThreadedBackend", extra="azureml"),
}


def _backend_class(kind: str, where: str) -> Any:
    place = PLACES[kind]
    module_name, _, class_name = getattr(place, where).partition(":")
    try:
        module = importlib.import_module(f"{__name__}.{module_name}")
    except ImportError as err:
        if place.extra is None:
            raise
        raise TargetError(f"the {kind} target needs {err.name}, which is not installed: "
                          f"pip install 'horovod-batchai[{place.extra}]'") from None
    return getattr(module, class_name)


def build_backend(connection: "Connection") -> "Backend":
    """A new sync backend for ``connection``'s kind (its target keeps the one it uses)."""
    backend: "Backend" = _backend_class(connection.kind, "backend")(connection)
    return backend


def build_async_backend(connection: "AsyncConnection") -> Any:
    """A new aio backend for ``connection``'s kind (its target keeps the one it uses)."""
    return _backend_class(connection.kind, "backend_async")(connection)
