"""The two wire formats of errors the local service speaks.

Azure Resource Manager answers errors as JSON, ``{"error": {"code": ..., "message": ...}}``;
the Azure Files data plane answers them as XML, ``<Error><Code>..</Code><Message>..</Message></Error>``
with the code repeated in the ``x-ms-error-code`` header. Handlers raise :class:`ArmError` or
:class:`StorageError`; the application turns them into responses here and nowhere else.
"""
from __future__ import annotations

import json
import uuid
from typing import Any, Mapping, Optional
from xml.sax.saxutils import escape

from werkzeug.wrappers import Response

__all__ = ["ArmError", "StorageError", "arm_error_response", "storage_error_response"]


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


class StorageError(Exception):
    """An error answered as the storage XML error. ``message`` must never contain a secret."""

    def __init__(self, status: int, code: str, message: str, *,
                 headers: Optional[Mapping[str, str]] = None, **details: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})
        self.details = details


def arm_error_response(error: ArmError) -> Response:
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.target:
        body["target"] = error.target
    headers = {"x-ms-request-id": str(uuid.uuid4()), **error.headers}
    return Response(json.dumps({"error": body}), status=error.status,
                    content_type="application/json; charset=utf-8", headers=headers)


def storage_error_response(error: StorageError, *, head: bool = False) -> Response:
    request_id = str(uuid.uuid4())
    headers = {"x-ms-error-code": error.code, "x-ms-request-id": request_id,
               "x-ms-version": "2025-11-05", **error.headers}
    if head:
        # HEAD answers carry no body; the code travels in x-ms-error-code only.
        return Response(b"", status=error.status, headers=headers)
    extra = "".join(f"<{k}>{escape(v)}</{k}>" for k, v in error.details.items())
    xml = ('<?xml version="1.0" encoding="utf-8"?>'
           f"<Error><Code>{escape(error.code)}</Code><Message>{escape(error.message)}\n"
           f"RequestId:{request_id}</Message>{extra}</Error>")
    return Response(xml.encode("utf-8"), status=error.status,
                    content_type="application/xml", headers=headers)
