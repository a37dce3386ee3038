"""Errors in Azure Resource Manager's wire format: ``{"error": {"code": ..., "message": ...}}``.

Every error code the management planes answer is a class named after the code, which knows its
HTTP status; code raises it by name (``raise InvalidParameter("...", target="properties.nodeCount")``).
The application turns any of them into a response with :func:`arm_error_response` and nowhere else.
The codes ARM itself answers, or that several planes share, are here; each plane declares its own
next to it (``resources/errors.py``, ``storage/errors.py``, ``batchai/errors.py``). (The Files data
plane's XML errors are in ``files/errors.py``.)

::

    ArmError
     ├─ 400  InvalidRequestContent, InvalidParameter, InvalidRequestPropertyValue,
     │       MissingRequiredParameter, MissingRequiredProperty, InvalidApiVersionParameter,
     │       InvalidLocation
     ├─ 401  AuthenticationFailed, InvalidAuthenticationToken
     ├─ 404  ResourceNotFound, InvalidResourceType, OperationNotFound, ShareNotFound
     ├─ 405  MethodNotAllowed
     ├─ 409  InvalidResourceLocation
     ├─ 413  RequestEntityTooLarge
     ├─ 500  InternalServerError
     ├─ 507  InsufficientStorage, StorageReadOnly (the state directory is full or read-only)
     └─ 429 | 500 | 503  InjectedFault (fault injection; the status is chosen per fault)
"""
from __future__ import annotations

import json
import uuid
from typing import Any, ClassVar, Mapping, Optional

from werkzeug.wrappers import Response

__all__ = ["JSON_CONTENT_TYPE", "ArmError", "arm_error_response", "InvalidRequestContent", "InvalidParameter",
           "InvalidRequestPropertyValue", "MissingRequiredParameter", "MissingRequiredProperty",
           "InvalidApiVersionParameter", "InvalidLocation", "AuthenticationFailed", "InvalidAuthenticationToken",
           "ResourceNotFound", "InvalidResourceType", "OperationNotFound", "ShareNotFound", "MethodNotAllowed",
           "InvalidResourceLocation", "RequestEntityTooLarge", "InternalServerError", "InsufficientStorage",
           "StorageReadOnly", "InjectedFault"]

#: the Content-Type of every JSON answer of the management planes.
JSON_CONTENT_TYPE = "application/json; charset=utf-8"


class ArmError(Exception):
    """An error answered in the ARM envelope: a subclass per code, its name the code.

    ``message`` must never contain a secret; ``target`` names the property or parameter at fault.
    """

    #: the HTTP status the code is answered with.
    status: ClassVar[int] = 500
    #: the ``error.code`` on the wire: the class's own name.
    code: ClassVar[str] = "InternalServerError"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.code = cls.__name__

    def __init__(self, message: str, *, target: Optional[str] = None,
                 headers: Optional[Mapping[str, str]] = None) -> None:
        super().__init__(f"{self.status} {self.code}: {message}")
        self.message = message
        self.target = target
        self.headers = dict(headers or {})


def arm_error_response(error: ArmError) -> Response:
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.target:
        body["target"] = error.target
    headers = {"x-ms-request-id": str(uuid.uuid4()), **error.headers}
    return Response(json.dumps({"error": body}), status=error.status,
                    content_type=JSON_CONTENT_TYPE, headers=headers)


# -- 400 ------------------------------------------------------------------------------------------

class InvalidRequestContent(ArmError):
    """The body is not JSON, or not of the shape the operation takes."""
    status = 400


class InvalidParameter(ArmError):
    """A property or query parameter has a value outside its valid form."""
    status = 400


class InvalidRequestPropertyValue(ArmError):
    status = 400


class MissingRequiredParameter(ArmError):
    """A required query parameter is absent."""
    status = 400


class MissingRequiredProperty(ArmError):
    """A required body property is absent."""
    status = 400


class InvalidApiVersionParameter(ArmError):
    status = 400


class InvalidLocation(ArmError):
    """A resource names a region the service does not know."""
    status = 400


# -- 401, 404, 405 --------------------------------------------------------------------------------

class AuthenticationFailed(ArmError):
    status = 401


class InvalidAuthenticationToken(ArmError):
    status = 401


class ResourceNotFound(ArmError):
    status = 404


class InvalidResourceType(ArmError):
    """No route has the request's path."""
    status = 404


class OperationNotFound(ArmError):
    status = 404


class ShareNotFound(ArmError):
    """A file share is gone: one Microsoft.Storage's share routes name, or the one holding a Batch AI
    job's output directory."""
    status = 404


class MethodNotAllowed(ArmError):
    status = 405


# -- 409, 413, 5xx --------------------------------------------------------------------------------

class InvalidResourceLocation(ArmError):
    """A PUT would move an existing resource to another region."""
    status = 409


class RequestEntityTooLarge(ArmError):
    status = 413


class InternalServerError(ArmError):
    """A bug of ours; the message says nothing of it."""
    status = 500


class InsufficientStorage(ArmError):
    """The state directory's disk is full: the request is fine, the service cannot store it."""
    status = 507


class StorageReadOnly(ArmError):
    """The state directory is read-only."""
    status = 507


class InjectedFault(ArmError):
    """A fault the service injects on purpose (``ServiceSettings.fault_rate``), answered with the
    status the fault drew (429, 500 or 503)."""

    def __init__(self, status: int, message: str, *, headers: Optional[Mapping[str, str]] = None) -> None:
        self.status = status  # type: ignore[misc]  # per instance: the one code with several statuses
        super().__init__(message, headers=headers)
