"""MLflow's own tracking server, run by the local service on a Unix socket in its state directory.

How it runs:

- ``python launcher.py -- python -m mlflow server --backend-store-uri sqlite:///<dir>/mlflow.db
  --artifacts-destination <dir>/artifacts --serve-artifacts --workers 1 --uvicorn-opts "--uds
  <dir>/server.sock --no-access-log"``, in a process group of its own, with umask 077, ``<dir>``
  being ``<state dir>/mlflow`` (0700). ``launcher.py`` ends the whole group when the service goes.
- A Unix socket, not a loopback port: MLflow's server has no authentication of its own that
  suits here, and any local user can connect to a loopback port. A socket inside a 0700
  directory is reachable by this user only; everybody else goes through the service's HTTPS
  front, which checks a bearer token first (``api.py``).
- MLflow's job runner (huey consumers, for its GenAI features) is switched off: a tracking server
  for training runs does not need it, and it would start seven more processes.
- The interpreter is the service's own (``sys.executable``): the ``mlflow`` package must be
  installed beside the service (``pip install 'horovod-batchai[mlflow]'``), not in the node runtime.
"""
from __future__ import annotations

import http.client
import importlib.util
import logging
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Optional

__all__ = ["TrackingUnavailable", "TrackingServerError", "UnixHTTPConnection", "MlflowServer", "INSTALL_HINT",
           "check_mlflow_installed"]

log = logging.getLogger(__name__)

LAUNCHER = Path(__file__).with_name("launcher.py")
INSTALL_HINT = ("MLflow tracking needs the mlflow package beside the local service: "
                "pip install 'horovod-batchai[mlflow]' (or `make install` in a checkout), then restart the "
                "service (`horovod-batchai local stop`). Jobs run without tracking meanwhile.")


class TrackingServerError(RuntimeError):
    """The tracking server did not start, stopped, or did not answer."""


class TrackingUnavailable(TrackingServerError):
    """MLflow is not installed beside the service; the message says what to install."""


def check_mlflow_installed(python: str) -> None:
    """Raise :class:`TrackingUnavailable` unless ``mlflow`` can be imported by ``python``. For the
    service's own interpreter the check is a look-up (no import, which takes seconds)."""
    if python == sys.executable:
        found = importlib.util.find_spec("mlflow") is not None
    else:
        found = subprocess.run([python, "-c", "import importlib.util as u; "
                                "raise SystemExit(u.find_spec('mlflow') is None)"],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=60).returncode == 0
    if not found:
        raise TrackingUnavailable(f"the mlflow package is not installed for {python}. {INSTALL_HINT}")


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 over a Unix socket (the tracking server's)."""

    def __init__(self, path: Path, *, timeout: float = 60.0) -> None:
        super().__init__("localhost", timeout=timeout)  # "localhost": a Host MLflow's middleware allows
        self.socket_path = str(path)

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.socket_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class MlflowServer:
    """One run of MLflow's tracking server; :meth:`start` waits until it answers, :meth:`stop`
    ends it (and everything it started). ``directory`` holds its database, artifacts, socket and log."""

    def __init__(self, directory: Path, *, python: str = sys.executable, start_timeout: float = 180.0) -> None:
        self.directory = Path(directory)
        self.python = python
        self.start_timeout = start_timeout
        self._proc: Optional[subprocess.Popen[bytes]] = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MlflowServer(socket={str(self.socket_path)!r}, pid={self.pid!r})"

    @property
    def socket_path(self) -> Path:
        return self.directory / "server.sock"

    @property
    def log_path(self) -> Path:
        return self.directory / "server.log"

    @property
    def pid(self) -> Optional[int]:
        """The launcher's pid, which is also the id of the server's process group."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def argv(self) -> list[str]:
        uvicorn = f"--uds {shlex.quote(str(self.socket_path))} --no-access-log"
        return [self.python, str(LAUNCHER), "--", self.python, "-m", "mlflow", "server",
                "--backend-store-uri", f"sqlite:///{self.directory / 'mlflow.db'}",
                "--artifacts-destination", str(self.directory / "artifacts"), "--serve-artifacts",
                "--workers", "1", "--uvicorn-opts", uvicorn]

    def start(self) -> "MlflowServer":
        with self._lock:
            if self.running:
                return self
            check_mlflow_installed(self.python)
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(self.directory, 0o700)  # the socket's only lock: nobody else may reach it
            try:
                self.socket_path.unlink()  # a previous server's, which would answer nobody
            except FileNotFoundError:
                pass
            env = dict(os.environ)
            env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"
            for name in [n for n in env if n.startswith("MLFLOW_TRACKING_")]:
                del env[name]  # a token in the service's environment is not the server's business
            with open(os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as out:
                self._proc = subprocess.Popen(self.argv(), stdin=subprocess.PIPE, stdout=out, stderr=out,
                                              cwd=self.directory, env=env, start_new_session=True,
                                              close_fds=True, umask=0o077)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        log.info("MLflow tracking server listening on %s, process group %s", self.socket_path, self.pid)
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while True:
            proc = self._proc
            if proc is None or proc.poll() is not None:
                raise TrackingServerError(f"the MLflow tracking server exited before it answered{self._said()}")
            if self.socket_path.exists():
                try:
                    if self.health():
                        return
                except (OSError, http.client.HTTPException):
                    pass
            if time.monotonic() > deadline:
                raise TrackingServerError(f"the MLflow tracking server did not answer within "
                                          f"{self.start_timeout:.0f} s{self._said()}")
            time.sleep(0.1)

    def health(self) -> bool:
        connection = UnixHTTPConnection(self.socket_path, timeout=10)
        try:
            connection.request("GET", "/health")
            response = connection.getresponse()
            response.read()
            return response.status == 200
        finally:
            connection.close()

    def _said(self) -> str:
        try:
            lines = [line for line in self.log_path.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            return ""
        return (": " + " | ".join(lines[-3:])) if lines else f"; see {self.log_path}"

    def wait(self) -> Optional[int]:
        """Block until the server has ended; its exit code, or None when none was started."""
        proc = self._proc
        return proc.wait() if proc is not None else None

    def stop(self, timeout: float = 20.0) -> None:
        """Close the launcher's stdin (it ends the server's whole group); SIGKILL to the group if it
        is still there after ``timeout`` seconds. Harmless when it is not running."""
        with self._lock:
            proc = self._proc
            if proc is None:
                return
            stdin: Optional[IO[bytes]] = proc.stdin
            if stdin is not None:
                try:
                    stdin.close()
                except OSError:
                    pass
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                log.warning("the MLflow tracking server (group %s) did not stop within %.0f s; killing it",
                            proc.pid, timeout)
            self.kill_group()
            proc.wait()

    def kill_group(self) -> None:
        """SIGKILL to whatever is left of the server's process group (a launcher killed from outside
        leaves uvicorn behind)."""
        proc = self._proc
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
