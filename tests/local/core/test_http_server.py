"""The HTTPS server on its own: kept-alive connections, header names as sent, streamed bodies both
ways, error answers and logs without query strings, a port in use, and a clean stop."""
from __future__ import annotations

import http.client
import logging
import socket
import ssl
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from werkzeug.wrappers import Request, Response

from horovod_batchai.local.core.http_server import RAW_HEADERS_KEY, SOCKET_KEY, HttpsServer
from horovod_batchai.local.core.tls import ensure_certificate

MIB = 1024 * 1024


class _Recorder:
    """A WSGI app that answers what a request was like, and keeps each environ it saw."""

    def __init__(self) -> None:
        self.environs: list[dict[str, Any]] = []

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        self.environs.append(environ)
        request = Request(environ)
        if request.path == "/echo-length":  # reads the body in pieces, as a handler streams it
            total = 0
            while chunk := request.stream.read(256 * 1024):
                total += len(chunk)
            return Response(str(total))(environ, start_response)
        if request.path == "/stream":  # a large body produced piece by piece, length declared
            pieces = int(request.args["pieces"])
            response = Response((bytes([i % 256]) * MIB for i in range(pieces)), direct_passthrough=True)
            response.headers["Content-Length"] = str(pieces * MIB)
            return response(environ, start_response)
        if request.path == "/unsized":  # no length: the server must frame it
            return Response(iter([b"a" * 1000, b"b" * 1000]))(environ, start_response)
        return Response(b'{"ok": true}', content_type="application/json")(environ, start_response)


@pytest.fixture
def cert(tmp_path: Path) -> tuple[Path, Path]:
    return ensure_certificate(tmp_path / "state")


@pytest.fixture
def app() -> _Recorder:
    return _Recorder()


@pytest.fixture
def server(app: _Recorder, cert: tuple[Path, Path]) -> Iterator[HttpsServer]:
    served = HttpsServer("127.0.0.1", 0, app, cert=cert[0], key=cert[1])
    served.start()
    try:
        yield served
    finally:
        served.stop()


def _connection(server: HttpsServer, cert: tuple[Path, Path]) -> http.client.HTTPSConnection:
    context = ssl.create_default_context(cafile=str(cert[0]))
    return http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=30)


def test_one_connection_serves_many_requests(server, app, cert):
    conn = _connection(server, cert)
    try:
        for _ in range(5):
            conn.request("GET", "/x")
            response = conn.getresponse()
            assert response.status == 200 and response.read() == b'{"ok": true}'
            assert response.getheader("Connection", "").lower() != "close"
            assert response.getheader("Content-Length") == "12"
    finally:
        conn.close()
    sockets = {id(environ[SOCKET_KEY]) for environ in app.environs}
    assert len(app.environs) == 5 and len(sockets) == 1  # one TLS connection for all five


def test_header_names_reach_the_application_as_sent(server, app, cert):
    conn = _connection(server, cert)
    conn.putrequest("GET", "/x")
    conn.putheader("x-ms-meta-CamelCase", "v1")
    conn.putheader("X-MS-META-lower_case", "v2")
    conn.putheader("x-ms-meta-Twice", "a")
    conn.putheader("x-ms-meta-Twice", "b")
    conn.putheader("x-ms-meta-With_Underscore", "  padded value ")
    conn.endheaders()
    assert conn.getresponse().status == 200
    conn.close()
    raw = app.environs[0][RAW_HEADERS_KEY]
    assert [pair for pair in raw if pair[0].lower().startswith("x-ms-meta-")] == [
        ("x-ms-meta-CamelCase", "v1"), ("X-MS-META-lower_case", "v2"), ("x-ms-meta-Twice", "a"),
        ("x-ms-meta-Twice", "b"), ("x-ms-meta-With_Underscore", "padded value")]


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_large_request_bodies_are_streamed_to_the_application(server, cert, chunked):
    body = bytes(range(256)) * (4 * MIB // 256)  # a full Put Range
    conn = _connection(server, cert)
    for _ in range(2):  # and the connection stays usable after each
        if chunked:
            conn.request("PUT", "/echo-length", body=iter([body[:MIB], body[MIB:]]),
                         headers={"Transfer-Encoding": "chunked"}, encode_chunked=True)
        else:
            conn.request("PUT", "/echo-length", body=body)
        response = conn.getresponse()
        assert response.status == 200 and response.read() == str(len(body)).encode()
    conn.close()


def test_large_responses_are_streamed_with_their_length(server, cert):
    conn = _connection(server, cert)
    conn.request("GET", "/stream?pieces=8")
    response = conn.getresponse()
    assert response.getheader("Content-Length") == str(8 * MIB)
    data = response.read()
    assert len(data) == 8 * MIB and data[:1] == b"\x00" and data[-1:] == b"\x07"
    conn.request("GET", "/unsized")  # the same connection: a body without a length is chunked
    response = conn.getresponse()
    assert response.getheader("Transfer-Encoding") == "chunked"
    assert response.read() == b"a" * 1000 + b"b" * 1000
    conn.request("HEAD", "/stream?pieces=2")
    response = conn.getresponse()
    assert response.getheader("Content-Length") == str(2 * MIB) and response.read() == b""
    conn.close()


def test_a_malformed_request_is_answered_400_and_logged_without_its_query(server, cert, caplog):
    caplog.set_level(logging.DEBUG)
    context = ssl.create_default_context(cafile=str(cert[0]))
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as plain, \
            context.wrap_socket(plain, server_hostname="127.0.0.1") as tls:
        tls.sendall(b"GET /acct/share/f?sv=1&sig=SECRETSIG123 extra HTTP/1.1\r\n\r\n")
        assert tls.recv(12) == b"HTTP/1.1 400"
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "400 Bad Request" in text and "/acct/share/f?<query redacted>" in text
    assert "SECRETSIG123" not in text


def test_a_port_in_use_is_an_oserror(cert, app):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}"):
            HttpsServer("127.0.0.1", port, app, cert=cert[0], key=cert[1])


def test_stop_releases_the_port_and_every_thread(cert, app):
    before = set(threading.enumerate())
    served = HttpsServer("127.0.0.1", 0, app, cert=cert[0], key=cert[1])
    assert all(t.daemon for t in set(threading.enumerate()) - before)  # never keeps a process alive
    served.start()
    conn = _connection(served, cert)
    conn.request("GET", "/x")
    assert conn.getresponse().read() == b'{"ok": true}'  # a kept-alive connection is open
    served.stop()
    conn.close()
    assert not (set(threading.enumerate()) - before)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", served.port), timeout=10)
    HttpsServer("127.0.0.1", 0, app, cert=cert[0], key=cert[1]).stop()  # never started: stops too


def test_silent_and_plain_clients_do_not_hold_up_others(server, cert):
    silent = socket.create_connection(("127.0.0.1", server.port), timeout=10)  # never says hello
    plain = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    plain.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")  # not TLS
    try:
        conn = _connection(server, cert)
        conn.request("GET", "/x")
        assert conn.getresponse().status == 200
        conn.close()
        assert plain.recv(100) == b""  # dropped, not answered in the clear
    finally:
        silent.close()
        plain.close()


@pytest.mark.parametrize("target, path", [("//metadata/endpoints?a=1", "/metadata/endpoints"),
                                          ("https://127.0.0.1/acct/share/f?comp=range", "/acct/share/f"),
                                          ("HTTPS://example.test", "/"),
                                          ("/plain/path?x=y", "/plain/path")])
def test_every_request_target_form_reaches_the_application(server, app, cert, target, path):
    # Absolute form must be accepted by HTTP/1.1 servers; the Azure CLI asks for //metadata/endpoints.
    conn = _connection(server, cert)
    conn.putrequest("GET", target, skip_host=True)
    conn.putheader("Host", "127.0.0.1")
    conn.endheaders()
    assert conn.getresponse().status == 200
    conn.close()
    environ = app.environs[0]
    assert environ["PATH_INFO"] == path
    assert environ["REQUEST_URI"] == target  # as sent, for Shared Key
