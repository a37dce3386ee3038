"""The WSGI application: fault injection, the split between ARM, MLflow tracking and the Files data plane,
bearer-token checks, api-version checks, and the one place where errors become responses."""
from __future__ import annotations

import logging
import random
import socket
import threading
from typing import Any, Callable, Iterable

from werkzeug.exceptions import RequestEntityTooLarge as BodyTooLarge
from werkzeug.wrappers import Request, Response

from .batchai import api as batchai_api
from .batchai.sweeps import api as sweeps_api
from .core.arm_errors import (ArmError, AuthenticationFailed, InjectedFault, InsufficientStorage, InternalServerError,
                              InvalidApiVersionParameter, InvalidAuthenticationToken, InvalidResourceType,
                              MethodNotAllowed, RequestEntityTooLarge, StorageReadOnly, arm_error_response)
from .core.context import ServiceContext
from .core.disk import DiskProblem, disk_problem
from .core.http_server import SOCKET_KEY
from .core.identity import TOKEN_PATH, token_endpoint
from .core.routing import Call, Router, json_response
from .core.tokens import verify_token
from .files import api as files_api
from .files.errors import StorageError, storage_error_response
from .resources import api as resources_api
from .resources import subscriptions as subscriptions_api
from .resources.cloud_metadata import API_VERSIONS as METADATA_VERSIONS
from .resources.cloud_metadata import METADATA_PATH, metadata_body
from .storage import api as storage_api
from .storage import file_shares as file_shares_api
from .tracking import api as tracking_api

__all__ = ["LocalApp", "make_app"]

log = logging.getLogger(__name__)

ARM_ROUTES = [*subscriptions_api.ROUTES, *resources_api.ROUTES, *storage_api.ROUTES, *file_shares_api.ROUTES,
              *batchai_api.ROUTES, *sweeps_api.ROUTES]


class _DropConnection(Exception):
    """Raised to close the connection without an answer (fault injection)."""


class FaultInjector:
    """Decides, repeatably for a seed, which requests fail and how."""

    KINDS = ("429", "500", "503", "drop")

    def __init__(self, rate: float, seed: int) -> None:
        self.rate = rate
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def draw(self) -> str | None:
        if self.rate <= 0:
            return None
        with self._lock:
            if self._rng.random() >= self.rate:
                return None
            return self._rng.choice(self.KINDS)


def _loggable(path: str) -> str:
    """A request path fit for one log line: the path is percent-decoded, so a caller could put a
    newline in it and forge lines of its own; control characters are shown escaped instead."""
    if path.isprintable():  # nearly always: no need to look at each character
        return path
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in path)


def _is_arm(request: Request) -> bool:
    # ARM paths start with /subscriptions, /providers or /tenants and always carry api-version; the
    # Files data plane is path-style (/<account>/<share>/...) and carries x-ms-version or a SAS instead.
    first = request.path.lstrip("/").split("/", 1)[0].lower()
    return first in ("subscriptions", "providers", "tenants") and "api-version" in request.args


def _outside_arm(request: Request, path: str) -> bool:
    """A request for the token endpoint or the cloud metadata: those paths could also name an account
    and share ("msi", "metadata"), but only these requests carry an api-version and no x-ms-version."""
    return ("/" + request.path.strip("/") == path and "api-version" in request.args
            and "x-ms-version" not in request.headers)


class LocalApp:
    def __init__(self, context: ServiceContext) -> None:
        self.context = context
        self.router = Router(ARM_ROUTES)
        self.faults = FaultInjector(context.settings.fault_rate, context.settings.fault_seed)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        request = Request(environ)
        request.max_content_length = self.context.settings.max_body_bytes
        try:
            response = self.handle(request)
        except _DropConnection:
            sock = environ.get(SOCKET_KEY)
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            response = Response(b"", status=500)
        log.info("%s %s -> %s", _loggable(request.method), _loggable(request.path), response.status_code)
        return response(environ, start_response)

    def handle(self, request: Request) -> Response:
        arm = _is_arm(request)
        fault = self.faults.draw()
        if fault is not None:
            log.info("injected fault %s for %s %s", fault, _loggable(request.method), _loggable(request.path))
            if fault == "drop":
                raise _DropConnection()
            status = int(fault)
            headers = {"Retry-After": "1"} if status == 429 else {}
            if arm:
                return arm_error_response(InjectedFault(status, "Fault injected by the local service.",
                                                        headers=headers))
            return storage_error_response(StorageError(status, "ServerBusy" if status != 500 else "InternalError",
                                                       "Fault injected by the local service.", headers=headers),
                                          head=request.method == "HEAD")
        call = Call(request=request, context=self.context, base_url=self.context.base_url or request.host_url.rstrip("/"))
        if _outside_arm(request, TOKEN_PATH):
            return token_endpoint(request, self.context.state_dir, self.context.token_secret)
        if _outside_arm(request, METADATA_PATH):
            return self._metadata(call)
        if arm:
            return self._handle_arm(call)
        if tracking_api.is_tracking_path(request.path):
            return tracking_api.handle(call)
        try:
            return files_api.handle(call)
        except StorageError as err:
            return storage_error_response(err, head=request.method == "HEAD")
        except BodyTooLarge:
            return storage_error_response(StorageError(413, "RequestBodyTooLarge",
                                                       "The request body is too large."), head=request.method == "HEAD")
        except Exception as err:
            problem = disk_problem(err, self.context.state_dir)
            if problem is not None:
                log.warning("%s %s failed: %s", _loggable(request.method), _loggable(request.path), problem.describe())
                return storage_error_response(_storage_disk_error(problem), head=request.method == "HEAD")
            # a bug of ours: answer 500 rather than drop the connection
            log.exception("unhandled error in Files data plane for %s %s", _loggable(request.method),
                          _loggable(request.path))
            return storage_error_response(StorageError(500, "InternalError", "The server encountered an internal error."))

    def _metadata(self, call: Call) -> Response:
        # ARM answers its cloud metadata without authentication.
        if call.request.method != "GET":
            return arm_error_response(MethodNotAllowed(f"The requested method {call.request.method} "
                                                       f"is not allowed for {METADATA_PATH}."))
        if call.api_version not in METADATA_VERSIONS:
            supported = ", ".join(sorted(METADATA_VERSIONS))
            return arm_error_response(InvalidApiVersionParameter(
                f"The api-version '{call.api_version}' is invalid. The supported "
                f"versions are '{supported}'."))
        return json_response(metadata_body(call.api_version, call.base_url))

    def _handle_arm(self, call: Call) -> Response:
        request = call.request
        try:
            self._authenticate(request)
            route, params, path_known = self.router.match(request.method, request.path)
            if route is None:
                if path_known:
                    raise MethodNotAllowed(
                        f"The requested method {request.method} is not allowed for {request.path}.")
                raise InvalidResourceType(
                    f"The resource type could not be found for the path '{request.path}'.")
            if route.api_versions and call.api_version not in route.api_versions:
                supported = ", ".join(sorted(route.api_versions))
                raise InvalidApiVersionParameter(
                    f"The api-version '{call.api_version}' is invalid. The supported versions are '{supported}'.")
            call.route = route
            return route.handler(call, **params)
        except ArmError as err:
            return arm_error_response(err)
        except BodyTooLarge:
            return arm_error_response(RequestEntityTooLarge(
                f"The request content exceeds {self.context.settings.max_body_bytes} bytes."))
        except Exception as err:
            problem = disk_problem(err, self.context.state_dir / "state.db")
            if problem is not None:
                log.warning("%s %s failed: %s", _loggable(request.method), _loggable(request.path), problem.describe())
                return arm_error_response(_arm_disk_error(problem))
            log.exception("unhandled error for %s %s", _loggable(request.method), _loggable(request.path))
            return arm_error_response(InternalServerError("The server encountered an internal error."))

    def _authenticate(self, request: Request) -> None:
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if not header:
            raise AuthenticationFailed("Authentication failed. The 'Authorization' header is missing.",
                                       headers={"WWW-Authenticate": 'Bearer authorization_uri="local", error="invalid_token"'})
        if scheme.lower() != "bearer" or not verify_token(self.context.token_secret, token.strip()):
            raise InvalidAuthenticationToken(
                "The access token is invalid or has expired.",
                headers={"WWW-Authenticate": 'Bearer authorization_uri="local", error="invalid_token"'})


def _arm_disk_error(problem: DiskProblem) -> ArmError:
    """507, which no client retries: the request is fine, the service cannot store what it asks."""
    refused = StorageReadOnly if problem.read_only else InsufficientStorage
    return refused(f"The local service cannot store the change: {problem.describe()}. "
                   + ("Make it writable" if problem.read_only else "Free some space") + " and try again.")


def _storage_disk_error(problem: DiskProblem) -> StorageError:
    """A full share is Azure Files' ShareSizeLimitReached (403). Azure has no error for a share on a
    read-only disk: 403 too, with a code of ours (Azure's 409 ReadOnlyAttribute would read as "already
    exists" to the storage clients, and a create-if-missing would pass silently). Neither is retried."""
    if problem.read_only:
        return StorageError(403, "ReadOnlyFileSystem", f"The share cannot be changed: {problem.describe()}.")
    return StorageError(403, "ShareSizeLimitReached", f"The share is full: {problem.describe()}. Free some space "
                                                      "and try again.")


def make_app(context: ServiceContext) -> LocalApp:
    return LocalApp(context)
