"""Runs MLflow's tracking server for the local service and takes it down when the service goes.

``python launcher.py -- <mlflow server command ...>``. The service starts this file in a process
group of its own and holds its stdin, a pipe. ``mlflow server`` starts uvicorn as a child of its
own (and may start more), so ending the one process the service started would leave the rest
running; this file ends the whole group instead:

- when its stdin closes: the service stopped, or ended in any way at all, SIGKILL included (the
  kernel closes the pipe);
- when ``mlflow server`` exits: what it left behind goes with it, and the service, which watches
  this process, starts a new one at the next request.

Started as a file, not as a module of the package: standard library only, so it starts fast.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

__all__ = ["main"]

#: seconds the group gets to end on SIGTERM before SIGKILL.
GRACE_S = 10.0


def _end_group(server: "subprocess.Popen[bytes]") -> None:
    """SIGTERM to every process of this group but this one (it ignores SIGTERM), then SIGKILL to all of it."""
    try:
        os.killpg(os.getpgrp(), signal.SIGTERM)
    except OSError:
        pass
    try:
        server.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    os.killpg(os.getpgrp(), signal.SIGKILL)  # uvicorn and its helpers, and this process last


def _watch_stdin(server: "subprocess.Popen[bytes]") -> None:
    while os.read(sys.stdin.fileno(), 64):
        pass
    _end_group(server)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: launcher.py -- <command> [<argument> ...]", file=sys.stderr)
        return 2
    try:
        server = subprocess.Popen(argv[2:], stdin=subprocess.DEVNULL)
    except OSError as exc:
        print(f"launcher.py: cannot run {argv[2]!r}: {exc.strerror}", file=sys.stderr)
        return 127
    # Ignored from now on (the server, started already, keeps the default): this process ends its
    # group with SIGTERM and must outlive that; it goes with the group's SIGKILL.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print(f"server pid {server.pid}", flush=True)
    threading.Thread(target=_watch_stdin, args=(server,), daemon=True).start()
    code = server.wait()
    print(f"mlflow server exited with code {code}", flush=True)
    _end_group(server)
    return code  # not reached: the group's SIGKILL ends this process too


if __name__ == "__main__":
    sys.exit(main(sys.argv))
