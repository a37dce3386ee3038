"""Finding, starting and stopping the local service's daemon: what a client needs, without the
service itself (importing this module does not import the service's planes).

A running service advertises where it listens in ``<state dir>/service.json``; :func:`ensure_running`
reads that file to reuse a running service and otherwise starts a daemon (``python -m
horovod_batchai.local serve``), so calling it twice is harmless -- also at the same time, from two
processes: starters take turns on ``<state dir>/service.start.lock``, and the one that comes second
finds the first one's service. A daemon killed with SIGKILL lingers as a zombie until it is reaped;
:func:`process_exited` reads its state from ``/proc``.
"""
from __future__ import annotations

import fcntl
import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from .core.state_dir import default_state_dir
from .core.permissions import secure_state_dir
from .core.tokens import LocalCredential
from .runner.node_runtime import NODE_RUNTIME_ENV, NodeRuntime, resolve

__all__ = ["INFO_FILE", "LOCK_FILE", "START_LOCK_FILE", "ServiceAlreadyRunning", "NodeRuntimeMismatch", "ServiceInfo",
           "is_loopback", "write_info", "find_running", "ensure_running", "stop_daemon", "process_exited"]

INFO_FILE = "service.json"
LOCK_FILE = "service.lock"
START_LOCK_FILE = "service.start.lock"


class ServiceAlreadyRunning(RuntimeError):
    """Another local service already drives this state directory."""


class NodeRuntimeMismatch(ServiceAlreadyRunning):
    """The local service running for this state directory runs jobs with another node runtime
    than the one asked for."""


@dataclass(frozen=True)
class ServiceInfo:
    """Where a running local service listens and how to trust and reach it."""

    endpoint: str          # https://127.0.0.1:PORT — ARM base URL; Files accounts live at {endpoint}/{account}
    ca_cert: Path          # the loopback certificate clients pass as connection_verify
    state_dir: Path
    pid: int
    #: the interpreter of the node runtime its jobs run with (None: a service too old to say)
    node_runtime: Optional[str] = None

    def credential(self) -> LocalCredential:
        return LocalCredential(self.state_dir)

    def files_endpoint(self, account: str) -> str:
        return f"{self.endpoint}/{account}"


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only: ``localhost`` or a loopback address."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def write_info(state_dir: Path, info: ServiceInfo) -> None:
    tmp = state_dir / (INFO_FILE + ".tmp")
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as fh:
        fh.write(json.dumps({"endpoint": info.endpoint, "ca_cert": str(info.ca_cert), "pid": info.pid,
                             "node_runtime": info.node_runtime}))
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
        info = ServiceInfo(data["endpoint"], Path(data["ca_cert"]), state_dir, int(data["pid"]),
                           data.get("node_runtime"))
    except (OSError, ValueError, KeyError):
        return None
    if process_exited(info.pid):
        return None
    return info if _listening(info.endpoint) else None


def _same_runtime(running: ServiceInfo, wanted: Optional[NodeRuntime]) -> ServiceInfo:
    """``running``, unless a node runtime was asked for and it runs jobs with another one."""
    if wanted is None or running.node_runtime == wanted.python:
        return running
    asked = "asked for" if wanted.source == "argument" else f"named by ${NODE_RUNTIME_ENV}"
    raise NodeRuntimeMismatch(
        f"the local service running for {running.state_dir} (pid {running.pid}) runs jobs with the node runtime "
        f"{running.node_runtime or '(not recorded)'}, not {wanted.python} ({asked}). It is left running, as "
        f"other programs may be using it: stop it (`horovod-batchai local stop --state-dir {running.state_dir}`) "
        "to start it again with this runtime, or use another state directory.")


def ensure_running(state_dir: Optional[Path] = None, *, timeout: float = 30.0,
                   node_runtime: Union[str, "os.PathLike[str]", None] = None) -> ServiceInfo:
    """Reuse the daemon running for ``state_dir`` or start one; returns where it listens.

    ``node_runtime`` (else ``$HOROVOD_BATCHAI_NODE_RUNTIME``) is the node runtime a daemon started
    here runs jobs with; a running daemon with another one raises :class:`NodeRuntimeMismatch`.
    With neither, a running daemon is used whatever its runtime, and a new one runs jobs on this
    process's own Python.

    Safe to call from several processes at once: they take turns, and each gets the one daemon."""
    state_dir = Path(state_dir) if state_dir is not None else default_state_dir()
    wanted: Optional[NodeRuntime] = resolve(node_runtime)
    if wanted is not None and wanted.source == "service":
        wanted = None  # nothing was asked for
    running = find_running(state_dir)
    if running is not None:
        return _same_runtime(running, wanted)
    secure_state_dir(state_dir)
    deadline = time.monotonic() + timeout
    with open(os.open(state_dir / START_LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600), "a+") as turn:
        while True:
            try:
                fcntl.flock(turn, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"another process has been starting the local service for {state_dir} "
                                       f"for more than {timeout:.0f}s; see {state_dir / 'service.log'}") from None
                time.sleep(0.1)
        running = find_running(state_dir)  # started by whoever had the turn before us
        if running is not None:
            return _same_runtime(running, wanted)
        return _start_daemon(state_dir, deadline, wanted)


def _start_daemon(state_dir: Path, deadline: float, wanted: Optional[NodeRuntime]) -> ServiceInfo:
    log_path = state_dir / "service.log"
    # An argument is passed on as one; $HOROVOD_BATCHAI_NODE_RUNTIME reaches the daemon with the environment.
    option = ["--node-runtime", wanted.python] if wanted is not None and wanted.source == "argument" else []
    with open(os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as log_fh:
        start_offset = log_fh.tell()
        proc = subprocess.Popen(
            [sys.executable, "-m", "horovod_batchai.local", "serve", "--host", "127.0.0.1", "--port", "0",
             "--state-dir", str(state_dir), "--quiet", *option],
            stdin=subprocess.DEVNULL, stdout=log_fh, stderr=log_fh, start_new_session=True)
    while time.monotonic() < deadline:
        running = find_running(state_dir)
        if running is not None:
            return _same_runtime(running, wanted)
        if proc.poll() is not None:
            # A service started by other means (``serve``) may have won the lock: use it.
            running = find_running(state_dir)
            if running is not None:
                return _same_runtime(running, wanted)
            said = _last_error_line(log_path, start_offset)
            raise RuntimeError(f"the local service exited with code {proc.returncode}"
                               + (f" ({said})" if said else "") + f"; see {log_path}")
        time.sleep(0.1)
    raise TimeoutError(f"the local service did not start in time; see {log_path}")


def _last_error_line(log_path: Path, offset: int) -> str:
    """The last ``error: ...`` line the daemon wrote to its log since ``offset``, if any."""
    try:
        with open(log_path, "rb") as fh:
            fh.seek(offset)
            lines = fh.read(64 * 1024).decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    said = [line.strip() for line in lines if line.startswith("error: ")]
    return said[-1][len("error: "):] if said else ""


def _is_zombie(pid: int) -> bool:
    """Whether ``pid`` has exited but not been reaped (Linux ``/proc``; False where there is none)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except FileNotFoundError:
        return os.path.isdir("/proc/self")  # with /proc mounted, a missing entry means it is gone
    except OSError:
        return False
    # "pid (comm) S ...": the command may hold spaces and parentheses; the state follows the last ")".
    return stat[stat.rindex(b")") + 2:stat.rindex(b")") + 3] in (b"Z", b"X")


def process_exited(pid: int) -> bool:
    """Whether ``pid`` has exited. A daemon stays a zombie until its parent reaps it (and while a
    killed process's threads are torn down), and a zombie still answers ``kill(pid, 0)``: reap it
    when it is our child, and count a zombie as exited."""
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
    except PermissionError:
        pass  # another user's process: alive unless /proc says otherwise
    return _is_zombie(pid)


def stop_daemon(state_dir: Optional[Path] = None, *, timeout: float = 30.0) -> bool:
    """Stop the daemon running for ``state_dir``. True if one was running."""
    running = find_running(state_dir)
    if running is None:
        return False
    os.kill(running.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process_exited(running.pid):
            return True
        time.sleep(0.1)
    raise TimeoutError(f"the local service (pid {running.pid}) did not stop within {timeout:.0f}s")
