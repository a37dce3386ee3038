"""HTTPS on loopback for a WSGI application: werkzeug's threaded server with TLS wrapped around its
socket here.

Why werkzeug: HTTP is parsed by an established, well-kept library (Pallets' werkzeug, the server
under Flask) rather than by hand; its threaded WSGI server serves a socket we wrap in an
``ssl.SSLContext`` ourselves, so loopback TLS needs no extra component; and WSGI keeps the
application independent of the server. Two of its behaviours matter: its access log prints query
strings (SAS signatures), so it is silenced below; and it answers every request with
``Connection: close`` (http.server cannot drain an unread body before the next request line), so
each request opens a new TLS connection -- see ``benchmarks/bench_local_service.py``.
"""
from __future__ import annotations

import re
import ssl
import threading
from pathlib import Path
from typing import Any, Callable, Optional

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

__all__ = ["HttpsServer", "RAW_HEADERS_KEY"]

#: WSGI environ key holding the request headers exactly as sent (see make_environ below).
RAW_HEADERS_KEY = "horovod_batchai.raw_headers"
#: a query string inside logged text (it may carry a SAS signature).
_QUERY = re.compile(r"\?[^\s'\"]*")


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
        environ[RAW_HEADERS_KEY] = tuple(self.headers.items())
        return environ


class HttpsServer:
    """Serves ``app`` over HTTPS on ``host:port`` (0 picks a free port) with the given certificate."""

    def __init__(self, host: str, port: int, app: Callable[..., Any], *, cert: Path, key: Path) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        try:
            self._server: BaseWSGIServer = make_server(host, port, app, threaded=True,
                                                       request_handler=_QuietRequestHandler)
        except SystemExit:
            # werkzeug answers a failed bind by printing the reason to stderr and exiting the
            # process; in a library that must be an exception the caller can handle.
            raise OSError(f"the local service cannot listen on {host}:{port}: the address is in use "
                          "or not available here") from None
        # TLS without the handshake in the accept loop (see _QuietRequestHandler.setup).
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True,
                                                  do_handshake_on_connect=False)
        self._server.ssl_context = context
        self._thread: Optional[threading.Thread] = None

    @property
    def port(self) -> int:
        return int(self._server.server_port)

    def start(self) -> None:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="horovod-batchai-local", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and release the port (also when never started)."""
        if self._thread is not None:
            self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
