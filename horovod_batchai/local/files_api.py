"""(being written) Azure Files data plane."""
from __future__ import annotations

from werkzeug.wrappers import Response

from .errors import StorageError
from .routing import Call


def handle(call: Call) -> Response:
    raise StorageError(400, "InvalidUri", "The Files data plane is not implemented yet.")
