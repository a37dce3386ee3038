"""HTTPS on loopback for a WSGI application: cheroot's HTTP/1.1 server, with persistent connections.

Why cheroot (CherryPy's server): a production WSGI server that runs inside the current process
(the service runs in a thread of a notebook or test as well as in its daemon), parses HTTP itself,
keeps connections alive (HTTP/1.1, chunked bodies, ``Expect: 100-continue``), serves them from a
pool of threads and parks idle kept-alive connections in a selector instead of holding a thread.
werkzeug stays the WSGI toolkit the application is written with (requests, responses, routing).
Keeping connections alive is what makes the service fast: a new connection costs a TCP connect
and a TLS handshake, which dominated every request before (see
``benchmarks/bench_local_service.py``).

What is ours, around it:

* **TLS**, with our own ``ssl.SSLContext``, and the handshake done by the worker thread that
  serves the connection, under the connection's timeout: cheroot's own adapter does it in the
  accept loop, where one client that connects and never says hello would stop the whole service.
* **Socket files.** cheroot reads and writes through the pure-Python ``_pyio`` buffers, which
  for a 4 MiB Put Range body allocate a 4 MiB buffer for every 16 KiB TLS record they read; ours
  read and write the TLS socket directly, and ``wsgi.input`` has ``readinto``, so a body can be
  received into a buffer the application reuses.
* **Raw header names.** The WSGI environ upper-cases header names, and cheroot folds repeated
  ones; the Files data plane needs them as sent (metadata names keep their case, and Shared Key
  signs every ``x-ms-*``). The request line and header lines are recorded as they are read and
  handed to the application as ``environ[RAW_HEADERS_KEY]``.
* **Logging.** cheroot's error log goes to this module's logger, with query strings (SAS
  signatures) redacted; the application logs method, path and status of each request itself.
* **Start and stop**: the port is bound when the server is built, so a port in use is an
  ``OSError`` there, never an exit; :meth:`HttpsServer.stop` stops serving, releases the port
  and joins every thread. Worker threads are daemons, as the thread that serves is.
"""
from __future__ import annotations

import logging
import re
import socket
import ssl
import threading
import traceback
from pathlib import Path
from typing import Any, Callable, Optional

from cheroot import server as cheroot_server
from cheroot import wsgi
from cheroot.ssl import Adapter
from cheroot.workers import threadpool

__all__ = ["HttpsServer", "RAW_HEADERS_KEY", "SOCKET_KEY"]

log = logging.getLogger(__name__)

#: WSGI environ key holding the request headers exactly as sent: a tuple of (name, value).
RAW_HEADERS_KEY = "horovod_batchai.raw_headers"
#: WSGI environ key holding the connection's socket (to drop a connection, to bound body reads).
SOCKET_KEY = "horovod_batchai.socket"
#: a query string inside logged text (it may carry a SAS signature).
_QUERY = re.compile(r"\?[^\s'\"]*")

#: seconds a connection may stay silent (mid-handshake, mid-request, or idle between requests).
TIMEOUT_S = 60
#: worker threads: each serves one request at a time; idle kept-alive connections hold none.
THREADS = 32
#: bytes asked of the socket per read while looking for a line (a TLS record holds 16 KiB).
_READ_SIZE = 64 * 1024
#: the longest request header line taken.
_MAX_HEADER_LINE = 64 * 1024
#: header names whose repeats cheroot joins with commas (its stubs do not declare the set).
_COMMA_SEPARATED: frozenset[bytes] = frozenset(getattr(cheroot_server, "comma_separated_headers"))
#: writes up to this size are held and sent together (a TLS record holds 16 KiB).
_CORK_BYTES = 16 * 1024
#: the most of an unread request body read (and dropped) to keep its connection for the next request.
_DRAIN_LIMIT = 64 * 1024 * 1024


def _redacted(text: str) -> str:
    return _QUERY.sub("?<query redacted>", text)


# -- socket files -------------------------------------------------------------------------------

class _SocketReader:
    """What cheroot reads a connection through: lines for the request head, and bulk reads that
    go straight to the socket (a body of n bytes costs one copy, whatever its size)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buf = b""
        self._pos = 0
        self.bytes_read = 0
        self.closed = False

    def has_data(self) -> bool:
        """True if bytes of a next request are already here (read, or decrypted by TLS), so the
        connection must not wait in the selector for the socket to become readable."""
        if self._pos < len(self._buf):
            return True
        pending = getattr(self._sock, "pending", None)
        return bool(pending and pending())

    def _take(self, n: int) -> bytes:
        data = self._buf[self._pos:self._pos + n]
        self._pos += len(data)
        if self._pos >= len(self._buf):
            self._buf, self._pos = b"", 0
        self.bytes_read += len(data)
        return data

    def _fill(self) -> bool:
        data = self._sock.recv(_READ_SIZE)
        if not data:
            return False
        self._buf = self._buf[self._pos:] + data
        self._pos = 0
        return True

    def readline(self, size: Optional[int] = None) -> bytes:
        limit = size if size is not None and size >= 0 else None
        while True:
            end = self._buf.find(b"\n", self._pos, None if limit is None else self._pos + limit)
            if end >= 0:
                return self._take(end + 1 - self._pos)
            available = len(self._buf) - self._pos
            if (limit is not None and available >= limit) or not self._fill():
                return self._take(available if limit is None else min(limit, available))

    def read(self, size: Optional[int] = None) -> bytes:
        chunks = []
        available = len(self._buf) - self._pos
        if size is None or size < 0:
            chunks.append(self._take(available))
            while data := self._sock.recv(_READ_SIZE):
                chunks.append(data)
        elif available >= size:
            return self._take(size)
        else:
            chunks.append(self._take(available))
            need = size - available
            while need > 0:
                data = self._sock.recv(min(need, _READ_SIZE))
                if not data:
                    break
                chunks.append(data)
                need -= len(data)
        data = b"".join(chunks)
        self.bytes_read += len(data) - len(chunks[0])
        return data

    def readinto(self, buffer: Any) -> int:
        """Fills ``buffer`` (a writable buffer) from the socket, short only at the end of the
        stream: a body read this way into a buffer that is used again costs no allocation and no
        copy besides TLS's own."""
        view = memoryview(buffer).cast("B")
        available = len(self._buf) - self._pos
        filled = min(available, len(view))
        view[:filled] = self._take(filled)
        while filled < len(view):
            n = self._sock.recv_into(view[filled:])
            if not n:
                break
            filled += n
            self.bytes_read += n
        return filled

    def close(self) -> None:
        self.closed = True


class _KnownLengthBody(cheroot_server.KnownLengthRFile):
    """cheroot's reader of a body of known length (what ``wsgi.input`` is), with ``readinto``."""

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")[:self.remaining]
        n = self.rfile.readinto(view) if view else 0
        self.remaining -= n
        return n


class _SocketWriter:
    """What cheroot writes a connection through. Small writes are held until the response ends
    (see _Request), so that a status line with its headers and a small body leave in one TLS
    record and one system call instead of two; large ones go straight to the socket."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._pending = bytearray()
        self.bytes_written = 0
        self.closed = False

    def write(self, data: bytes) -> int:
        if len(self._pending) + len(data) <= _CORK_BYTES:
            self._pending += data
        else:
            self.flush()
            self._sock.sendall(data)
        self.bytes_written += len(data)
        return len(data)

    def flush(self) -> None:
        if self._pending:
            pending, self._pending = self._pending, bytearray()
            self._sock.sendall(pending)

    def close(self) -> None:
        self.closed = True


class _TlsAdapter(Adapter):
    """TLS with our context; the handshake is left to the worker thread (see _Connection)."""

    def __init__(self, context: ssl.SSLContext) -> None:  # noqa: super().__init__ wants files
        self.context = context

    def bind(self, sock: socket.socket) -> socket.socket:
        return sock

    def wrap(self, sock: socket.socket) -> tuple[ssl.SSLSocket, dict[str, str]]:
        tls = self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return tls, self.get_environ()

    def get_environ(self, *args: Any) -> dict[str, str]:
        return {"wsgi.url_scheme": "https", "HTTPS": "on"}

    def makefile(self, sock: socket.socket, mode: str = "r", bufsize: int = -1) -> Any:
        return _SocketReader(sock) if "r" in mode else _SocketWriter(sock)


# -- requests and connections -------------------------------------------------------------------

class _LineRecorder:
    """Passes the request line through (rewritten, see _origin_form) and keeps it as sent."""

    def __init__(self, rfile: Any, rewrite: Optional[Callable[[bytes], bytes]] = None) -> None:
        self.rfile = rfile
        self.lines: list[bytes] = []
        self._rewrite = rewrite

    def readline(self, size: Optional[int] = None) -> bytes:
        line = self.rfile.readline(size)
        self.lines.append(line)
        return self._rewrite(line) if self._rewrite else line

    def read(self, size: Optional[int] = None) -> bytes:
        return self.rfile.read(size)


def _origin_form(line: bytes) -> bytes:
    """The request line with its target in origin form (``/path?query``), which is all cheroot
    takes from a server that is not a proxy. Clients send two others that HTTP/1.1 servers must
    take: the absolute form (``https://host/path``), and a path that starts with ``//`` (the Azure
    CLI asks for ``//metadata/endpoints``), which cheroot would read as a host name."""
    parts = line.split(b" ", 2)
    if len(parts) != 3:
        return line
    target = parts[1]
    if target[:7].lower() == b"http://" or target[:8].lower() == b"https://":
        rest = target.split(b"://", 1)[1]
        slash, query = rest.find(b"/"), rest.find(b"?")
        start = slash if slash >= 0 and (query < 0 or slash < query) else query
        target = b"/" if start < 0 else (rest[start:] if start == slash else b"/" + rest[start:])
    elif target.startswith(b"//"):
        target = b"/" + target.lstrip(b"/")
    else:
        return line
    return b" ".join((parts[0], target, parts[2]))


class _HeaderReader(cheroot_server.HeaderReader):
    """cheroot's header parsing in one pass that also keeps the header lines as sent (names in
    their case, repeated names apart) for the request. Obsolete line folding is refused (RFC 7230
    allows that), as a line longer than 64 KiB is."""

    def __init__(self, request: "_Request") -> None:
        self._request = request

    def __call__(self, rfile: Any, hdict: Optional[dict[bytes, bytes]] = None) -> dict[bytes, bytes]:
        hdict = {} if hdict is None else hdict
        if isinstance(rfile, cheroot_server.SizeCheckWrapper) and not rfile.maxlen:
            rfile = rfile.rfile  # no limit to count against: read the lines straight
        pairs = []
        while True:
            line = rfile.readline(_MAX_HEADER_LINE)
            if not line:
                raise ValueError("Illegal end of headers.")
            if line == b"\r\n":
                break
            if not line.endswith(b"\r\n"):
                raise ValueError("HTTP requires CRLF terminators")
            if line[:1] in (b" ", b"\t"):
                raise ValueError("Obsolete line folding is not accepted.")
            name, sep, value = line.partition(b":")
            if not sep:
                raise ValueError("Illegal header line.")
            name, value = name.strip(), value.strip()
            pairs.append((name.decode("latin-1"), value.decode("latin-1")))
            key = name.title()
            if key in _COMMA_SEPARATED and hdict.get(key):
                value = hdict[key] + b", " + value
            hdict[key] = value
        self._request.raw_headers = tuple(pairs)
        return hdict


class _Request(cheroot_server.HTTPRequest):
    raw_headers: tuple[tuple[str, str], ...] = ()
    _request_lines: list[bytes] = []

    @property
    def request_line(self) -> bytes:
        """The request line as sent, without its line end."""
        return self._request_lines[-1].rstrip(b"\r\n") if self._request_lines else b""

    def read_request_line(self) -> bool:
        recorder = _LineRecorder(self.rfile, _origin_form)
        self.rfile, self._request_lines = recorder, recorder.lines
        try:
            return super().read_request_line()
        finally:
            self.rfile = recorder.rfile

    def read_request_headers(self) -> bool:
        self.header_reader = _HeaderReader(self)
        try:
            return super().read_request_headers()
        finally:
            self.conn.wfile.flush()  # a "100 Continue" the client waits for before it sends the body

    def respond(self) -> None:
        try:
            super().respond()
        finally:
            self.conn.wfile.flush()

    def send_headers(self) -> None:
        # Whether the connection can carry the client's next request after this answer: only once
        # the rest of this request's body has been read (cheroot would read it in one piece,
        # unbounded, and answer 408 over the application's answer if it stalls).
        if any(name.lower() == b"connection" and value.lower() == b"close" for name, value in self.outheaders):
            self.close_connection = True  # the application says the body cannot be trusted
        elif self.chunked_read:
            self.close_connection = self.close_connection or not getattr(self.rfile, "closed", False)
        elif not self.close_connection:
            remaining = getattr(self.rfile, "remaining", 0)
            try:
                while 0 < remaining <= _DRAIN_LIMIT:
                    if not self.rfile.read(min(remaining, _READ_SIZE * 16)):
                        break
                    remaining = self.rfile.remaining
            except OSError:
                pass  # stalled or gone: the answer still goes out, then the connection closes
            self.close_connection = remaining > 0
        super().send_headers()

    def simple_response(self, status: Any, msg: Any = "") -> None:
        # cheroot's own answers: a malformed request, a timeout, an internal error. Logged (the
        # request line without its query), since the application never sees these requests.
        line = self.request_line.decode("latin-1")
        log.info("%s: %s (request line %r)", status, msg, _redacted(line))
        super().simple_response(status, msg)
        self.conn.wfile.flush()


class _Connection(cheroot_server.HTTPConnection):
    RequestHandlerClass = _Request
    _handshake_done = False

    def communicate(self) -> bool:
        if not self._handshake_done:
            try:
                self.socket.do_handshake()  # under the connection's timeout, in this worker thread
            except (ssl.SSLError, OSError):
                return False  # a client that is not speaking TLS, went away or stayed silent
            self._handshake_done = True
        return bool(super().communicate())


class _Gateway(wsgi.Gateway_10):
    def get_environ(self) -> dict[str, Any]:  # type: ignore[override]  # cheroot's stub says None
        body = self.req.rfile
        if type(body) is cheroot_server.KnownLengthRFile and hasattr(body.rfile, "readinto"):
            self.req.rfile = _KnownLengthBody(body.rfile, body.remaining)
        environ = super().get_environ()
        environ[RAW_HEADERS_KEY] = self.req.raw_headers
        environ[SOCKET_KEY] = self.req.conn.socket
        parts = self.req.request_line.split(b" ", 2)
        if len(parts) == 3:  # the target as sent, in whatever form (see _origin_form): Shared Key signs it so
            environ["REQUEST_URI"] = parts[1].decode("latin-1")
        return environ


class _DaemonThreadPool(threadpool.ThreadPool):
    """Worker threads that do not keep the interpreter alive (the service may run in a thread of
    a notebook that never stops it)."""

    def _spawn_worker(self) -> threadpool.WorkerThread:
        worker = threadpool.WorkerThread(self.server)
        worker.name = f"horovod-batchai-local-{worker.name}"
        worker.daemon = True
        worker.start()
        return worker


class _Server(wsgi.Server):
    ConnectionClass = _Connection
    keep_alive_conn_limit = 256
    request_queue_size = 128   # the listen backlog: clients opening connections side by side
    expiration_interval = 0.1  # how often idle connections are checked, and how long stop() waits

    def error_log(self, msg: str = "", level: int = logging.INFO, traceback: bool = False) -> None:
        text = _redacted(str(msg))
        if traceback:
            text += "\n" + _redacted(_format_exception())
        log.log(level, "%s", text)


def _format_exception() -> str:
    return traceback.format_exc()


class HttpsServer:
    """Serves ``app`` over HTTPS on ``host:port`` (0 picks a free port) with the given certificate."""

    def __init__(self, host: str, port: int, app: Callable[..., Any], *, cert: Path, key: Path) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        self._server = _Server((host, port), app, numthreads=THREADS, timeout=TIMEOUT_S,
                               server_name="horovod-batchai-local")
        self._server.gateway = _Gateway
        self._server.requests = _DaemonThreadPool(self._server, min=THREADS, max=THREADS)
        self._server.ssl_adapter = _TlsAdapter(context)
        try:
            self._server.prepare()  # binds and listens now, so the port is known (and errors are here)
        except OSError:
            raise OSError(f"the local service cannot listen on {host}:{port}: the address is in use "
                          "or not available here") from None
        self._thread: Optional[threading.Thread] = None

    @property
    def port(self) -> int:
        return int(self._server.bind_addr[1])

    def start(self) -> None:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(target=self._server.serve, name="horovod-batchai-local", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and release the port (also when never started); waits for the threads."""
        self._server.stop()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
