"""Errors in Azure Resource Manager's wire format: ``{"error": {"code": ..., "message": ...}}``.

Management-plane handlers raise :class:`ArmError`; the application turns it into a response with
:func:`arm_error_response` and nowhere else. (The Files data plane's XML errors are in
``files/errors.py``.)
"""
from __future__ import annotations

import json
import uuid
from typing import Any, Mapping, Optional

from werkzeug.wrappers import Response

__all__ = ["ArmError", "arm_error_response"]


class ArmError(Exception):
    """An error answered in the ARM envelope. ``message`` must never contain a secret."""

    def __init__(self, status: int, code: str, message: str, *, target: Optional[str] = None,
                 headers: Optional[Mapping[str, str]] = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.target = target
        self.headers = dict(headers or {})


def arm_error_response(error: ArmError) -> Response:
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.target:
        body["target"] = error.target
    headers = {"x-ms-request-id": str(uuid.uuid4()), **error.headers}
    return Response(json.dumps({"error": body}), status=error.status,
                    content_type="application/json; charset=utf-8", headers=headers)
