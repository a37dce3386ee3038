"""Errors of the tracking endpoint, in MLflow's own wire format: ``{"error_code": ..., "message": ...}``
with the HTTP status MLflow's server pairs with that code, so MLflow's clients report them as
they report the server's own."""
from __future__ import annotations

import json

from werkzeug.wrappers import Response

__all__ = ["TrackingApiError", "Unauthenticated", "TemporarilyUnavailable", "FeatureDisabled", "RequestTooLarge",
           "tracking_error_response"]


class TrackingApiError(Exception):
    """An answer of the tracking endpoint's front that is not the tracking server's."""

    status = 500
    error_code = "INTERNAL_ERROR"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Unauthenticated(TrackingApiError):
    status = 401
    error_code = "UNAUTHENTICATED"


class TemporarilyUnavailable(TrackingApiError):
    status = 503
    error_code = "TEMPORARILY_UNAVAILABLE"


class FeatureDisabled(TrackingApiError):
    """Tracking is switched off, or MLflow is not installed beside the service: not temporary, so
    501 (MLflow's status for the code), which clients do not retry as they retry a 503."""

    status = 501
    error_code = "FEATURE_DISABLED"


class RequestTooLarge(TrackingApiError):
    status = 413
    error_code = "INVALID_PARAMETER_VALUE"


def tracking_error_response(error: TrackingApiError) -> Response:
    headers = {"WWW-Authenticate": 'Bearer realm="horovod-batchai local MLflow"'} if error.status == 401 else {}
    return Response(json.dumps({"error_code": error.error_code, "message": error.message}), status=error.status,
                    headers=headers, content_type="application/json")
