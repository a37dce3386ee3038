"""The local service's MLflow tracking endpoint: the tracking server started when first needed,
started again after it dies, stopped with the service; the token jobs reach it with.

The server starts at the first request to ``/_mlflow`` or the first job that needs a run (it takes
a few seconds of Python start-up, which a service that runs no job never pays). A watcher thread
waits on it; should it exit, what it left is killed and the next request starts it again. Where
MLflow is not installed, :attr:`TrackingEndpoint.problem` says what to install and every use
raises it; jobs still run, without tracking.

The tracking token (``<state dir>/mlflow/tracking-token``, 0600) is what jobs send as
``MLFLOW_TRACKING_TOKEN``: it opens ``/_mlflow`` and nothing else (the ARM planes take only the
service's signed tokens), so a job's environment cannot manage the user's resources.
"""
from __future__ import annotations

import hmac
import http.client
import json
import logging
import sys
import threading
from pathlib import Path
from typing import Any, Mapping, Optional

from ..core.tokens import ensure_random_secret_file
from .server import MlflowServer, TrackingServerError, TrackingUnavailable, UnixHTTPConnection, check_mlflow_installed

__all__ = ["TrackingEndpoint", "TrackingRequestFailed", "PATH_PREFIX"]

log = logging.getLogger(__name__)

#: where the service's HTTPS front serves the tracking server: ``https://127.0.0.1:PORT/_mlflow``.
#: An underscore cannot start a storage account's name, so no Files path is ever taken.
PATH_PREFIX = "/_mlflow"
TOKEN_FILE = "tracking-token"


class TrackingRequestFailed(TrackingServerError):
    """The tracking server answered a request of the service's own with an error."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class TrackingEndpoint:
    """The tracking server of one local service; ``state_dir/mlflow`` holds its data."""

    def __init__(self, state_dir: Path, *, python: str = sys.executable) -> None:
        self.directory = Path(state_dir) / "mlflow"
        self.python = python
        self.problem: Optional[TrackingUnavailable] = None
        self._server: Optional[MlflowServer] = None
        self._stopped = False
        self._start_lock = threading.Lock()   # one start at a time; the others wait for it
        self._watcher: Optional[threading.Thread] = None
        self._token: Optional[str] = None

    def __repr__(self) -> str:
        return f"TrackingEndpoint(directory={str(self.directory)!r}, server={self._server!r})"

    @property
    def token(self) -> str:
        """The tracking token (made on first use; read from its file once)."""
        if self._token is None:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._token = ensure_random_secret_file(self.directory / TOKEN_FILE).read_text().strip()
        return self._token

    def describe(self, base_url: str) -> str:
        """One line for ``serve``: where the tracking server is served, or why it cannot run here."""
        try:
            check_mlflow_installed(self.python)
        except TrackingUnavailable as exc:
            return f"none: {exc}"
        return f"{base_url}{PATH_PREFIX}  (MLflow's server, started at the first job or request; bearer token)"

    def accepts(self, token: str) -> bool:
        """Whether ``token`` is the tracking token (compared in constant time)."""
        return bool(token) and hmac.compare_digest(token.encode(), self.token.encode())

    @property
    def server(self) -> Optional[MlflowServer]:
        """The server while it runs, else None."""
        server = self._server
        return server if server is not None and server.running else None

    def require(self) -> MlflowServer:
        """The running server, started first if need be; raises TrackingUnavailable /
        TrackingServerError saying why there is none."""
        server = self.server
        if server is not None:
            return server
        with self._start_lock:
            if self._stopped:
                raise TrackingServerError("the local service is stopping")
            if self.problem is not None:
                raise self.problem
            server = self.server
            if server is not None:
                return server
            try:
                check_mlflow_installed(self.python)
            except TrackingUnavailable as exc:
                self.problem = exc
                log.warning("MLflow tracking is off: %s", exc)
                raise
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            server = MlflowServer(self.directory, python=self.python)
            server.start()
            self._server = server
            self._watcher = threading.Thread(target=self._watch, args=(server,), name="mlflow-watch", daemon=True)
            self._watcher.start()
            return server

    def _watch(self, server: MlflowServer) -> None:
        code = server.wait()
        server.kill_group()
        if not self._stopped:
            log.warning("the MLflow tracking server exited with code %s; the next request starts it again", code)

    def stop(self) -> None:
        with self._start_lock:
            self._stopped = True
            server, self._server = self._server, None
        if server is not None:
            server.stop()
        if self._watcher is not None:
            self._watcher.join(timeout=30)

    # -- the service's own requests -------------------------------------------------------------

    def connection(self, *, timeout: float = 60.0) -> UnixHTTPConnection:
        return UnixHTTPConnection(self.require().socket_path, timeout=timeout)

    def call(self, method: str, path: str, body: Optional[Mapping[str, Any]] = None, *,
             query: str = "") -> dict[str, Any]:
        """One request of MLflow's REST API (``/api/2.0/mlflow/...``); its JSON answer."""
        connection = self.connection(timeout=30)
        try:
            data = json.dumps(body).encode() if body is not None else None
            headers = {"Content-Type": "application/json"} if data is not None else {}
            connection.request(method, path + (f"?{query}" if query else ""), body=data, headers=headers)
            response = connection.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise TrackingServerError(f"the MLflow tracking server did not answer {method} {path}: {exc}") from None
        finally:
            connection.close()
        try:
            answer = json.loads(raw or b"{}")
        except ValueError:
            answer = {}
        if response.status != 200:
            message = answer.get("message") if isinstance(answer, dict) else None
            raise TrackingRequestFailed(response.status, f"MLflow answered {response.status} to {method} {path}: "
                                                         f"{message or raw[:200]!r}")
        return answer if isinstance(answer, dict) else {}
