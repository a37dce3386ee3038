"""MLflow's UI on the local runs, for the user who asks for it: ``horovod-batchai local mlflow-ui``.

A browser cannot send the service's bearer token, and it would warn about the service's own
certificate. So the command runs a small HTTP server on loopback (in its own process, for as long
as it runs) that forwards every request to the service's authenticated front (``/_mlflow``) with
a token of the service's credential, verifying the service's certificate. The UI is then
``http://127.0.0.1:PORT/``.

Any local user can connect to a loopback port, so the port alone opens nothing: the URL printed
to the calling user carries a random key (``?key=...``, as Jupyter's token); the first request
with it gets the key as a cookie (HttpOnly, SameSite=Strict) and every later one must carry that
cookie. Anything else is 403 and never reaches MLflow. The key lives only in this process and the
user's browser; it is never logged (the request log is off).
"""
from __future__ import annotations

import hmac
import http.client
import http.server
import secrets
import ssl
import threading
from pathlib import Path
from typing import Any, Callable, Optional
from urllib.parse import parse_qsl, urlencode, urlsplit

__all__ = ["MlflowUiProxy", "COOKIE"]

COOKIE = "horovod_batchai_mlflow_ui"
_PREFIX = "/_mlflow"
_CHUNK = 256 * 1024
_NOT_FORWARDED = frozenset({"authorization", "host", "connection", "keep-alive", "proxy-authorization",
                            "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "cookie"})
_NOT_RETURNED = frozenset({"connection", "keep-alive", "transfer-encoding", "trailer", "upgrade", "server", "date",
                           "set-cookie"})


class MlflowUiProxy:
    """Serves MLflow's UI from the service at ``endpoint`` (``https://127.0.0.1:PORT``) on
    ``http://127.0.0.1:port``; ``token()`` gives a bearer token of the service's credential."""

    def __init__(self, endpoint: str, ca_cert: Path, token: Callable[[], str], *, port: int = 0) -> None:
        parts = urlsplit(endpoint)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 443)
        self.context = ssl.create_default_context(cafile=str(ca_cert))
        self.token = token
        self.key = secrets.token_urlsafe(32)
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: Optional[threading.Thread] = None

    def __repr__(self) -> str:
        return f"MlflowUiProxy(url={self.url!r})"  # the key stays out

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    @property
    def login_url(self) -> str:
        """The URL to open: it carries the key (print it to the user only)."""
        return f"{self.url}?{urlencode({'key': self.key})}"

    def health(self) -> tuple[int, str]:
        """The tracking server's health through the service's front (starting it if need be):
        (status, body); 200 when the UI will work."""
        connection = http.client.HTTPSConnection(*self.upstream, context=self.context, timeout=300)
        try:
            connection.request("GET", f"{_PREFIX}/health", headers={"Authorization": f"Bearer {self.token()}"})
            response = connection.getresponse()
            return response.status, response.read().decode("utf-8", "replace")
        finally:
            connection.close()

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def start(self) -> "MlflowUiProxy":
        self._thread = threading.Thread(target=self.serve_forever, name="mlflow-ui", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()

    def _handler_class(self) -> type:
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  no log: a URL may hold the key
                pass

            def _refuse(self) -> None:
                body = b"403: open the URL that `horovod-batchai local mlflow-ui` printed (it carries a key).\n"
                self.send_response(403)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _cookie_key(self) -> str:
                for part in self.headers.get("Cookie", "").split(";"):
                    name, _, value = part.strip().partition("=")
                    if name == COOKIE:
                        return value
                return ""

            def _handle(self) -> None:
                target = urlsplit(self.path)
                query = parse_qsl(target.query, keep_blank_values=True)
                given = dict(query).get("key")
                if given is not None:
                    if not hmac.compare_digest(given.encode(), proxy.key.encode()):
                        return self._refuse()
                    rest = urlencode([(k, v) for k, v in query if k != "key"])
                    self.send_response(303)
                    self.send_header("Set-Cookie", f"{COOKIE}={proxy.key}; HttpOnly; SameSite=Strict; Path=/")
                    path = "/" + target.path.lstrip("/")  # never "//host": a redirect stays on this server
                    self.send_header("Location", path + (f"?{rest}" if rest else ""))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
                if not hmac.compare_digest(self._cookie_key().encode(), proxy.key.encode()):
                    return self._refuse()
                return self._forward()

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _NOT_FORWARDED}
                headers["Authorization"] = f"Bearer {proxy.token()}"
                connection = http.client.HTTPSConnection(*proxy.upstream, context=proxy.context, timeout=300)
                try:
                    connection.request(self.command, _PREFIX + self.path, body=body, headers=headers)
                    upstream = connection.getresponse()
                    data = upstream.read()
                except (OSError, http.client.HTTPException) as exc:
                    message = f"502: the local service did not answer: {exc}\n".encode()
                    self.send_response(502)
                    self.send_header("Content-Type", "text/plain; charset=utf-8")
                    self.send_header("Content-Length", str(len(message)))
                    self.end_headers()
                    self.wfile.write(message)
                    return
                finally:
                    connection.close()
                self.send_response(upstream.status)
                for name, value in upstream.getheaders():
                    if name.lower() not in _NOT_RETURNED and name.lower() != "content-length":
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

        return Handler
