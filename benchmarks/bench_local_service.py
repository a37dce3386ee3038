"""GET requests per second against the local service, 8 concurrent clients versus 1.

The service runs as its own process, exactly as ``python -m horovod_batchai.local serve`` runs it,
so the clients (separate processes) do not share its interpreter lock. Three phases, each the same
length, run back to back in this one run:

  baseline   1 client,  GET a resource group (ARM auth + routing + SQLite read + JSON)
  measured   8 clients, the same GET
  floor      8 clients, GET without a token (answered 401 before any routing or store access):
             what TLS, HTTP parsing and the WSGI stack cost on their own

werkzeug's server answers every request with ``Connection: close`` (http.server cannot drain an
unread request body before the next request line, so werkzeug never keeps connections alive); each
request therefore pays a TCP connect and a TLS handshake, for the SDK clients as for these.

Printed: requests per second, median and 95th-percentile latency per phase, and the ratio of the
measured phase to the baseline. Usage: ``python benchmarks/bench_local_service.py [--seconds 5]``.
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Optional

import requests

SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
GROUP_PATH = f"/subscriptions/{SUBSCRIPTION}/resourcegroups/bench?api-version=2018-05-01"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _client(url: str, ca_cert: str, token: Optional[str], start_at: float, seconds: float,
            expect: int) -> list[float]:
    """One client: one session (a new connection per request, see above) requesting ``url`` from
    ``start_at`` for ``seconds``;
    returns the latency of each request."""
    session = requests.Session()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    assert session.get(url, headers=headers, verify=ca_cert, timeout=30).status_code == expect  # warm: imports, CA load
    time.sleep(max(0.0, start_at - time.time()))
    latencies = []
    end = start_at + seconds
    while time.time() < end:
        t0 = time.perf_counter()
        response = session.get(url, headers=headers, verify=ca_cert, timeout=30)
        latencies.append(time.perf_counter() - t0)
        if response.status_code != expect:
            raise RuntimeError(f"unexpected status {response.status_code}: {response.text[:200]}")
    session.close()
    return latencies


def _phase(name: str, clients: int, url: str, ca_cert: str, token: Optional[str], seconds: float,
           expect: int) -> float:
    start_at = time.time() + 2.0  # time for every client to connect before the clock starts
    with ProcessPoolExecutor(max_workers=clients) as pool:
        futures = [pool.submit(_client, url, ca_cert, token, start_at, seconds, expect) for _ in range(clients)]
        latencies = [lat for f in futures for lat in f.result()]
    rate = len(latencies) / seconds
    latencies.sort()
    p50 = statistics.median(latencies) * 1000
    p95 = latencies[int(len(latencies) * 0.95) - 1] * 1000
    print(f"{name:<9} {clients:>2} client(s): {rate:8.1f} req/s   p50 {p50:6.1f} ms   p95 {p95:6.1f} ms   "
          f"({len(latencies)} requests in {seconds:.0f} s)", flush=True)
    return rate


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

            print(f"local service at {endpoint}; {os.cpu_count()} CPU(s) shared by the service and the clients")
            url = f"{endpoint}{GROUP_PATH}"
            baseline = _phase("baseline", 1, url, ca_cert, token, args.seconds, 200)
            measured = _phase("measured", args.clients, url, ca_cert, token, args.seconds, 200)
            floor = _phase("floor", args.clients, url, ca_cert, None, args.seconds, 401)
            print(f"{args.clients} clients / 1 client: {measured / baseline:.2f}x   "
                  f"resource group GET / unauthenticated 401 at {args.clients} clients: {measured / floor:.2f}x")
        finally:
            server.terminate()
            server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
