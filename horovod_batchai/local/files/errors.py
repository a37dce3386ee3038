"""Errors in the Azure Files data plane's wire format: XML, ``<Error><Code>..</Code><Message>..
</Message></Error>``, with the code repeated in the ``x-ms-error-code`` header.

Data-plane handlers, authentication and the share store raise :class:`StorageError`; the application
turns it into a response with :func:`storage_error_response` and nowhere else.
"""
from __future__ import annotations

import uuid
from typing import Mapping, Optional
from xml.sax.saxutils import escape

from werkzeug.wrappers import Response

__all__ = ["StorageError", "storage_error_response"]


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
