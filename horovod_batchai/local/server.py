"""Running the local service: in a thread of this process, or as a daemon that many processes share.

Both use the same pieces: a werkzeug threaded WSGI server with TLS on loopback, the application in
``app.py`` and the job scheduler. A running service holds an exclusive lock on
``<state dir>/service.lock`` (so two services never drive one state directory) and advertises
where it listens in ``<state dir>/service.json``; :func:`ensure_running` reads that file to reuse
a running service and otherwise starts a daemon, so calling it twice is harmless.

Why werkzeug: HTTP is parsed by an established, well-kept library (Pallets' werkzeug, the server
under Flask) rather than by hand; its threaded WSGI server serves a socket we wrap in an
``ssl.SSLContext`` ourselves, so loopback TLS needs no extra component; and WSGI keeps the application (``app.py``) independent of
the server, so the same app runs in a thread here and in the daemon. Two of its behaviours matter:
its access log prints query strings (SAS signatures), so it is silenced below; and it answers every
request with ``Connection: close`` (http.server cannot drain an unread body before the next request
line), so each request opens a new TLS connection -- see ``benchmarks/bench_local_service.py``.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from .app import make_app
from .auth import LocalCredential
from .backend import LocalBackend, ServiceSettings, default_state_dir
from .tls import ensure_certificate

__all__ = ["LocalService", "ServiceInfo", "ensure_running", "find_running", "stop_daemon",
           "ServiceAlreadyRunning"]

log = logging.getLogger(__name__)

INFO_FILE = "service.json"
#: a query string inside logged text (it may carry a SAS signature).
_QUERY = re.compile(r"\?[^\s'\"]*")
LOCK_FILE = "service.lock"


class _QuietRequestHandler(WSGIRequestHandler):
    """werkzeug's handler, minus its access log: that log prints query strings, and a SAS
    signature travels in the query. The application logs method, path and status instead.

    It also does the TLS handshake itself, in its own thread and under a timeout: done in the
    accept loop (Python's default), one client that connects and never says hello would stop
    the whole service."""

    #: seconds a connection may stay silent (mid-handshake or mid-request) before it is dropped.
    timeout = 60
    _handshake_failed = False

    def setup(self) -> None:
        super().setup()  # applies the timeout to the connection
        handshake = getattr(self.connection, "do_handshake", None)
        if handshake is not None:
            try:
                handshake()
            except (ssl.SSLError, OSError):
                self._handshake_failed = True  # a client that is not speaking TLS, or went away

    def handle(self) -> None:
        if not self._handshake_failed:
            super().handle()

    def log_request(self, code: Any = "-", size: Any = "-") -> None:
        pass

    def log_error(self, format: str, *args: Any) -> None:
        # http.server reports a malformed request line by quoting the line, query string included.
        super().log_error(format, *(_QUERY.sub("?<query redacted>", a) if isinstance(a, str) else a for a in args))

    def make_environ(self) -> dict[str, Any]:
        environ = super().make_environ()
        # The environ upper-cases header names and drops those with '_'; the Files data plane
        # needs them as sent (metadata names keep their case, and Shared Key signs every x-ms-*).
        environ["horovod_batchai.raw_headers"] = tuple(self.headers.items())
        return environ


class ServiceAlreadyRunning(RuntimeError):
    """Another local service already drives this state directory."""


@dataclass(frozen=True)
class ServiceInfo:
    """Where a running local service listens and how to trust and reach it."""

    endpoint: str          # https://127.0.0.1:PORT — ARM base URL; Files accounts live at {endpoint}/{account}
    ca_cert: Path          # the loopback certificate clients pass as connection_verify
    state_dir: Path
    pid: int

    def credential(self) -> LocalCredential:
        return LocalCredential(self.state_dir)

    def files_endpoint(self, account: str) -> str:
        return f"{self.endpoint}/{account}"


class LocalService:
    """The local service in this process (tests, notebooks). Use as a context manager or
    call :meth:`start` / :meth:`stop`."""

    def __init__(self, state_dir: Optional[Path] = None, *, host: str = "127.0.0.1", port: int = 0,
                 settings: Optional[ServiceSettings] = None) -> None:
        self.state_dir = Path(state_dir) if state_dir is not None else default_state_dir()
        self.host = host
        self.port = port
        self.settings = settings or ServiceSettings()
        self.backend: Optional[LocalBackend] = None
        self._server: Optional[BaseWSGIServer] = None
        self._thread: Optional[threading.Thread] = None
        self._lock_fh: Optional[Any] = None

    def __repr__(self) -> str:
        return f"LocalService(state_dir={str(self.state_dir)!r}, endpoint={self.endpoint if self._server else None!r})"

    @property
    def endpoint(self) -> str:
        if self._server is None:
            raise RuntimeError("the local service is not started")
        return f"https://{self.host}:{self._server.server_port}"

    @property
    def info(self) -> ServiceInfo:
        return ServiceInfo(self.endpoint, self.state_dir / "tls-cert.pem", self.state_dir, os.getpid())

    def credential(self) -> LocalCredential:
        return LocalCredential(self.state_dir)

    def start(self) -> "LocalService":
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._lock_fh = open(self.state_dir / LOCK_FILE, "a+")
        try:
            fcntl.flock(self._lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_fh.close()
            self._lock_fh = None
            running = find_running(self.state_dir)
            where = f" at {running.endpoint} (pid {running.pid})" if running else ""
            raise ServiceAlreadyRunning(f"a local service is already running for {self.state_dir}{where}")
        try:
            self._start_locked()
        except BaseException:
            self._abort_start()  # a failed start must not keep the lock, the database or the port
            raise
        info = self.info
        _write_info(self.state_dir, info)
        log.info("local service listening at %s (state in %s)", info.endpoint, self.state_dir)
        return self

    def _start_locked(self) -> None:
        cert, key = ensure_certificate(self.state_dir)
        self.backend = LocalBackend(self.state_dir, self.settings)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        try:
            self._server = make_server(self.host, self.port, make_app(self.backend), threaded=True,
                                       request_handler=_QuietRequestHandler)
        except SystemExit:
            # werkzeug answers a failed bind by printing the reason to stderr and exiting the
            # process; in a library that must be an exception the caller can handle.
            raise OSError(f"the local service cannot listen on {self.host}:{self.port}: the address is in use "
                          "or not available here") from None
        # TLS without the handshake in the accept loop (see _QuietRequestHandler.setup).
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True,
                                                  do_handshake_on_connect=False)
        self._server.ssl_context = context
        self.backend.base_url = self.endpoint
        from .scheduler import Scheduler  # imported late: the scheduler pulls in process handling
        self.backend.scheduler = Scheduler(self.backend)
        self.backend.scheduler.start()
        from .resources_api import resume_deletions
        resume_deletions(self.backend)  # resource groups a stopped service left half-deleted
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="horovod-batchai-local", daemon=True)
        self._thread.start()

    def _abort_start(self) -> None:
        if self._thread is None and self._server is not None:
            self._server.server_close()  # never served, so shutdown() would wait forever
            self._server = None
        self.stop()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self.backend is not None:
            if self.backend.scheduler is not None:
                self.backend.scheduler.stop()
            self.backend.close()
        info_path = self.state_dir / INFO_FILE
        try:
            if json.loads(info_path.read_text()).get("pid") == os.getpid():
                info_path.unlink()
        except (OSError, ValueError):
            pass
        if self._lock_fh is not None:
            self._lock_fh.close()
            self._lock_fh = None
        self._server = self._thread = self.backend = None

    def __enter__(self) -> "LocalService":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _write_info(state_dir: Path, info: ServiceInfo) -> None:
    tmp = state_dir / (INFO_FILE + ".tmp")
    tmp.write_text(json.dumps({"endpoint": info.endpoint, "ca_cert": str(info.ca_cert), "pid": info.pid}))
    tmp.replace(state_dir / INFO_FILE)


def _listening(endpoint: str) -> bool:
    host, _, port = endpoint.removeprefix("https://").rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def find_running(state_dir: Optional[Path] = None) -> Optional[ServiceInfo]:
    """The service running for ``state_dir``, if one is, else None."""
    state_dir = Path(state_dir) if state_dir is not None else default_state_dir()
    try:
        data = json.loads((state_dir / INFO_FILE).read_text())
        info = ServiceInfo(data["endpoint"], Path(data["ca_cert"]), state_dir, int(data["pid"]))
    except (OSError, ValueError, KeyError):
        return None
    try:
        os.kill(info.pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return info if _listening(info.endpoint) else None


def ensure_running(state_dir: Optional[Path] = None, *, timeout: float = 30.0) -> ServiceInfo:
    """Reuse the daemon running for ``state_dir`` or start one; returns where it listens."""
    state_dir = Path(state_dir) if state_dir is not None else default_state_dir()
    running = find_running(state_dir)
    if running is not None:
        return running
    state_dir.mkdir(parents=True, exist_ok=True)
    log_path = state_dir / "service.log"
    with open(log_path, "ab") as log_fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "horovod_batchai.local", "serve", "--host", "127.0.0.1", "--port", "0",
             "--state-dir", str(state_dir), "--quiet"],
            stdin=subprocess.DEVNULL, stdout=log_fh, stderr=log_fh, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = find_running(state_dir)
        if running is not None:
            return running
        if proc.poll() is not None:
            # Lost a race with another starter: theirs is the one to use.
            running = find_running(state_dir)
            if running is not None:
                return running
            raise RuntimeError(f"the local service exited with code {proc.returncode}; see {log_path}")
        time.sleep(0.1)
    raise TimeoutError(f"the local service did not start within {timeout:.0f}s; see {log_path}")


def _exited(pid: int) -> bool:
    """Whether ``pid`` has exited. A daemon this process started stays a zombie until reaped, and a
    zombie still answers ``kill(pid, 0)``, so reap it when it is our child."""
    try:
        reaped, _ = os.waitpid(pid, os.WNOHANG)
        if reaped == pid:
            return True
    except ChildProcessError:
        pass  # not our child (or already reaped): its parent reaps it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def stop_daemon(state_dir: Optional[Path] = None, *, timeout: float = 30.0) -> bool:
    """Stop the daemon running for ``state_dir``. True if one was running."""
    running = find_running(state_dir)
    if running is None:
        return False
    os.kill(running.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _exited(running.pid):
            return True
        time.sleep(0.1)
    raise TimeoutError(f"the local service (pid {running.pid}) did not stop within {timeout:.0f}s")
