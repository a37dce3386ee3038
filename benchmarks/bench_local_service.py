"""GET requests per second against the local service, next to a bare TLS keep-alive server.

The service runs as its own process, exactly as ``python -m horovod_batchai.local serve`` runs it,
so the clients (separate processes) do not share its interpreter lock. Each client is one
``requests.Session``: it keeps its connection alive whenever the server lets it. In this one run:

  bare      1 client,  GET against a bare TLS keep-alive server (the standard library's
            ``http.server`` speaking HTTP/1.1 over the service's own certificate, in a process of
            its own) answering a fixed JSON body: what TLS, HTTP and the client cost on this machine
  service   1 client,  GET a resource group from the local service (ARM auth + routing + SQLite
            read + JSON); the same client process as "bare", alternating between the two servers
            every 0.25 s, so that load from elsewhere on a shared machine falls on both alike
  service   8 clients, the same GET
  floor     8 clients, GET without a token (answered 401 before any routing or store access):
            what TLS, HTTP parsing and the WSGI stack cost on their own

Printed: requests per second, median and 95th-percentile latency and how many answers closed the
connection, per phase; then the ratio the project tracks, one service client / one bare client
(target >= 0.5), and the concurrency ratios. Usage:
``python benchmarks/bench_local_service.py [--seconds 5] [--clients 8]``.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Optional

import requests

SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
GROUP_PATH = f"/subscriptions/{SUBSCRIPTION}/resourcegroups/bench?api-version=2018-05-01"
#: what the bare server answers: about the size of the resource group the service answers.
BARE_BODY = json.dumps({"id": f"/subscriptions/{SUBSCRIPTION}/resourceGroups/bench", "name": "bench",
                        "type": "Microsoft.Resources/resourceGroups", "location": "eastus",
                        "properties": {"provisioningState": "Succeeded"}}).encode()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the bare server --------------------------------------------------------------------------------

class _BareHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms delayed-ACK stall

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(BARE_BODY)))
        self.end_headers()
        self.wfile.write(BARE_BODY)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _serve_bare(port: int, cert: str, key: str, ready: "multiprocessing.synchronize.Event") -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = ThreadingHTTPServer(("127.0.0.1", port), _BareHandler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    ready.set()
    server.serve_forever()


# -- clients ----------------------------------------------------------------------------------------

def _client(url: str, ca_cert: str, token: Optional[str], start_at: float, seconds: float,
            expect: int) -> tuple[list[float], int]:
    """One client: one session requesting ``url`` from ``start_at`` for ``seconds``; returns the
    latency of each request and how many answers closed the connection (``Connection: close``),
    so that the next request paid a new TCP connection and TLS handshake."""
    session = requests.Session()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    assert session.get(url, headers=headers, verify=ca_cert, timeout=30).status_code == expect  # warm: imports, CA load
    closed = 0
    time.sleep(max(0.0, start_at - time.time()))
    latencies = []
    end = start_at + seconds
    while time.time() < end:
        t0 = time.perf_counter()
        response = session.get(url, headers=headers, verify=ca_cert, timeout=30)
        latencies.append(time.perf_counter() - t0)
        closed += response.headers.get("Connection", "").lower() == "close"
        if response.status_code != expect:
            raise RuntimeError(f"unexpected status {response.status_code}: {response.text[:200]}")
    session.close()
    return latencies, closed


def _alternating(bare_url: str, service_url: str, ca_cert: str, token: str, seconds: float,
                 slice_s: float = 0.25) -> tuple[list[float], int, list[float], int]:
    """One client, one kept-alive session per server, alternating between the bare server and the
    service in short slices until each had ``seconds``: load from elsewhere on the machine then
    falls on both alike. Returns the latencies against each, and how many answers of each closed
    the connection."""
    sessions = {url: requests.Session() for url in (bare_url, service_url)}
    headers = {bare_url: {}, service_url: {"Authorization": f"Bearer {token}"}}
    latencies: dict[str, list[float]] = {bare_url: [], service_url: []}
    closed = {bare_url: 0, service_url: 0}
    for url, session in sessions.items():
        for _ in range(20):  # warm: imports, CA load, the connection
            assert session.get(url, headers=headers[url], verify=ca_cert, timeout=30).status_code == 200
    for _ in range(max(1, round(seconds / slice_s))):
        for url, session in sessions.items():
            end = time.perf_counter() + slice_s
            while (t0 := time.perf_counter()) < end:
                response = session.get(url, headers=headers[url], verify=ca_cert, timeout=30)
                latencies[url].append(time.perf_counter() - t0)
                closed[url] += response.headers.get("Connection", "").lower() == "close"
                if response.status_code != 200:
                    raise RuntimeError(f"unexpected status from {url}: {response.status_code}")
    for session in sessions.values():
        session.close()
    return latencies[bare_url], closed[bare_url], latencies[service_url], closed[service_url]


def _report(name: str, clients: int, latencies: list[float], seconds: float, closed: int) -> float:
    latencies = sorted(latencies)
    rate = len(latencies) / seconds
    p50 = statistics.median(latencies) * 1000
    p95 = latencies[int(len(latencies) * 0.95) - 1] * 1000
    print(f"{name:<8} {clients:>2} client(s): {rate:8.1f} req/s   p50 {p50:6.2f} ms   p95 {p95:6.2f} ms   "
          f"({len(latencies)} requests in {seconds:.0f} s, {closed} closed the connection)", flush=True)
    return rate


def _phase(name: str, clients: int, url: str, ca_cert: str, token: Optional[str], seconds: float,
           expect: int) -> float:
    start_at = time.time() + 2.0  # time for every client to connect before the clock starts
    with ProcessPoolExecutor(max_workers=clients) as pool:
        futures = [pool.submit(_client, url, ca_cert, token, start_at, seconds, expect) for _ in range(clients)]
        results = [f.result() for f in futures]
    latencies = [lat for lats, _ in results for lat in lats]
    return _report(name, clients, latencies, seconds, sum(n for _, n in results))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each phase (default 5)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    args = parser.parse_args()

    from horovod_batchai.local import LocalCredential

    with tempfile.TemporaryDirectory(prefix="bench-local-") as tmp:
        state, port = Path(tmp) / "state", _free_port()
        server = subprocess.Popen([sys.executable, "-m", "horovod_batchai.local", "serve", "--host", "127.0.0.1",
                                   "--port", str(port), "--state-dir", str(state), "--quiet"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        bare: Optional[multiprocessing.Process] = None
        try:
            line = server.stdout.readline() if server.stdout else ""
            if not line.startswith("Management endpoint:"):
                raise RuntimeError(f"the service did not start: {line}{server.stdout.read() if server.stdout else ''}")
            endpoint = line.split()[-1]
            ca_cert = str(state / "tls-cert.pem")
            token = LocalCredential(state).get_token("bench").token
            created = requests.put(f"{endpoint}{GROUP_PATH}", json={"location": "eastus"}, verify=ca_cert,
                                   headers={"Authorization": f"Bearer {token}"}, timeout=30)
            created.raise_for_status()

            # The bare server: same machine, same certificate, same kind of client.
            bare_port = _free_port()
            ready = multiprocessing.Event()
            bare = multiprocessing.Process(target=_serve_bare, daemon=True,
                                           args=(bare_port, ca_cert, str(state / "tls-key.pem"), ready))
            bare.start()
            if not ready.wait(30):
                raise RuntimeError("the bare TLS server did not start")

            print(f"local service at {endpoint}; {os.cpu_count()} CPU(s) shared by the servers and the clients; "
                  f"load average {os.getloadavg()[0]:.2f}")
            url = f"{endpoint}{GROUP_PATH}"
            with ProcessPoolExecutor(max_workers=1) as pool:
                bare_lat, bare_closed, one_lat, one_closed = pool.submit(
                    _alternating, f"https://127.0.0.1:{bare_port}{GROUP_PATH}", url, ca_cert, token,
                    args.seconds).result()
            # Rates over the time each server had: the slices are of equal length.
            bare_rate = _report("bare", 1, bare_lat, args.seconds, bare_closed)
            one = _report("service", 1, one_lat, args.seconds, one_closed)
            measured = _phase("service", args.clients, url, ca_cert, token, args.seconds, 200)
            floor = _phase("floor", args.clients, url, ca_cert, None, args.seconds, 401)
            print(f"management plane, 1 client: service / bare TLS keep-alive server: {one / bare_rate:.2f}x "
                  f"(target >= 0.5)")
            print(f"{args.clients} clients / 1 client: {measured / one:.2f}x   "
                  f"resource group GET / unauthenticated 401 at {args.clients} clients: {measured / floor:.2f}x")
        finally:
            if bare is not None:
                bare.terminate()
                bare.join(timeout=30)
            server.terminate()
            server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
