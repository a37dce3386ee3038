"""The tracking server behind the service's HTTPS front: ``https://127.0.0.1:PORT/_mlflow/<path>``
is MLflow's ``/<path>`` (its REST API, its artifact proxy, its UI), for a caller with a bearer token.

Two tokens open it: the tracking token jobs get as ``MLFLOW_TRACKING_TOKEN`` (``endpoint.py``),
and the service's own signed tokens (what ``LocalCredential`` and the token endpoint issue), so a
client of the service reads runs with the credential it already has. Anything else is 401 before
a byte goes to MLflow. Bodies stream both ways (model artifacts are large).
"""
from __future__ import annotations

import http.client
import logging
from typing import Iterator

from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wrappers import Request, Response

from ..core.routing import Call
from ..core.tokens import verify_token
from .endpoint import PATH_PREFIX, TrackingEndpoint
from .errors import (FeatureDisabled, RequestTooLarge, TemporarilyUnavailable, TrackingApiError, Unauthenticated,
                     tracking_error_response)
from .server import TrackingServerError, TrackingUnavailable, UnixHTTPConnection

__all__ = ["handle", "is_tracking_path", "MAX_BODY_BYTES"]

log = logging.getLogger(__name__)

#: largest body forwarded (an artifact upload: a trained model, event files).
MAX_BODY_BYTES = 4 * 1024 ** 3
_CHUNK = 256 * 1024
#: headers that belong to one connection, or that the front answers for itself.
_NOT_FORWARDED = frozenset({"authorization", "host", "connection", "keep-alive", "proxy-authorization",
                            "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "cookie"})
_NOT_RETURNED = frozenset({"connection", "keep-alive", "transfer-encoding", "trailer", "upgrade", "server",
                           "date"})


def is_tracking_path(path: str) -> bool:
    return path == PATH_PREFIX or path.startswith(PATH_PREFIX + "/")


def _authenticate(call: Call, endpoint: TrackingEndpoint) -> None:
    scheme, _, token = call.request.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthenticated("A bearer token is required: set MLFLOW_TRACKING_TOKEN (jobs of the local service "
                              "get it), or send a token of the local service's credential.")
    if not (endpoint.accepts(token) or verify_token(call.context.token_secret, token)):
        raise Unauthenticated("The bearer token is not valid for the local service's MLflow tracking server.")


def _upstream_path(request: Request) -> str:
    path = request.path[len(PATH_PREFIX):] or "/"
    query = request.query_string.decode("latin-1")
    return path + (f"?{query}" if query else "")


def _body(response: http.client.HTTPResponse, connection: UnixHTTPConnection) -> Iterator[bytes]:
    try:
        while True:
            chunk = response.read(_CHUNK)
            if not chunk:
                return
            yield chunk
    finally:
        connection.close()


def _forward(call: Call, endpoint: TrackingEndpoint) -> Response:
    request = call.request
    request.max_content_length = MAX_BODY_BYTES
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise RequestTooLarge(f"The request body is larger than {MAX_BODY_BYTES} bytes.")
    try:
        connection = endpoint.connection(timeout=300)
    except TrackingUnavailable as exc:
        raise FeatureDisabled(f"The MLflow tracking server is not available: {exc}") from None
    except TrackingServerError as exc:
        raise TemporarilyUnavailable(f"The MLflow tracking server is not available: {exc}") from None
    try:
        connection.putrequest(request.method, _upstream_path(request), skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", "localhost")
        for name, value in request.headers.items():
            if name.lower() not in _NOT_FORWARDED and name.lower() != "content-length":
                connection.putheader(name, value)
        stream = request.stream
        if request.content_length is not None:
            connection.putheader("Content-Length", str(request.content_length))
            connection.endheaders()
            while chunk := stream.read(_CHUNK):
                connection.send(chunk)
        else:
            data = stream.read(MAX_BODY_BYTES + 1) if request.method in ("POST", "PUT", "PATCH") else b""
            if len(data) > MAX_BODY_BYTES:
                raise RequestTooLarge(f"The request body is larger than {MAX_BODY_BYTES} bytes.")
            connection.putheader("Content-Length", str(len(data)))
            connection.endheaders(data)
        upstream = connection.getresponse()
    except (OSError, http.client.HTTPException) as exc:
        connection.close()
        raise TemporarilyUnavailable(f"The MLflow tracking server did not answer: {exc}") from None
    except BaseException:
        connection.close()
        raise
    headers = [(k, v) for k, v in upstream.getheaders() if k.lower() not in _NOT_RETURNED]
    return Response(_body(upstream, connection), status=upstream.status, headers=headers, direct_passthrough=True)


def handle(call: Call) -> Response:
    endpoint: TrackingEndpoint | None = call.context.tracking
    try:
        if endpoint is None:
            raise FeatureDisabled("MLflow tracking is switched off in this local service's settings.")
        _authenticate(call, endpoint)
        return _forward(call, endpoint)
    except TrackingApiError as err:
        return tracking_error_response(err)
    except RequestEntityTooLarge:
        return tracking_error_response(RequestTooLarge(f"The request body is larger than {MAX_BODY_BYTES} bytes."))
